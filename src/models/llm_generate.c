/* llm_generate.c - text generation: the generator samples a token, turns
 * it into text that is always whole UTF-8 (rlx_detok), holds back text that
 * could be the start of a stop string, and ends at max_tokens, an
 * end-of-generation token, a stop string or a full context.  Under a
 * grammar (rlx_llm_sampling.grammar) the tokens are drawn by
 * grammar_sample.c. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 (wasm builds) */
#endif
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "llm.h"
#include "sampler.h"
#include "grammar.h"

struct rlx_llm_generator {
  rlx_llm *m;
  rlx_sampler *sampler;
  rlx_llm_sampling s;
  char **stop;            /* copies of the stop strings */
  int32_t n_stop_alloc;
  int32_t *history;       /* prompt then generated ids */
  size_t n_history, cap_history;
  int32_t pending;        /* sampled, not yet evaluated; -1 none */
  rlx_detok detok;
  char *held;             /* text not yet handed out */
  size_t n_held, cap_held;
  char *text;             /* what next() returns */
  size_t cap_text;
  int done;
  rlx_llm_stats stats;
  int external;           /* the caller evaluates (rlx_llm_generator_new_external) */
  rlx_gsampler *grammar;  /* NULL: no grammar */
};

static double now_seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

rlx_llm_sampling rlx_llm_sampling_default(void) {
  rlx_llm_sampling s;
  memset(&s, 0, sizeof s);
  s.temperature = 0.0f;
  s.top_p = 1.0f;
  s.repeat_penalty = 1.0f;
  s.repeat_last_n = 64;
  s.max_tokens = 64;
  return s;
}

/* *p holding at least need elements (0: out of memory, or a size that
 * would wrap size_t: need is counted in 64 bits, for wasm32). */
static int grow(void **p, size_t *cap, uint64_t need, size_t elem) {
  if (need <= *cap) return 1;
  if (need > SIZE_MAX / 2 / elem) return 0;
  size_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = rlx_realloc(*p, *cap * elem, c * elem);
  if (!q) return 0;
  *p = q;
  *cap = c;
  return 1;
}

void rlx_llm_generator_free(rlx_llm_generator *gen) {
  if (!gen) return;
  rlx_sampler_free(gen->sampler);
  rlx_gsampler_free(gen->grammar);
  for (int32_t i = 0; gen->stop && i < gen->s.n_stop; i++) rlx_free(gen->stop[i], strlen(gen->stop[i]) + 1);
  rlx_free(gen->stop, (size_t)gen->n_stop_alloc * sizeof *gen->stop);
  rlx_free(gen->history, gen->cap_history * sizeof *gen->history);
  rlx_free(gen->held, gen->cap_held);
  rlx_free(gen->text, gen->cap_text);
  rlx_free(gen, sizeof *gen);
}

static rlx_status check_sampling(const rlx_llm_sampling *s) {
  if (s->max_tokens < 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generate: max_tokens must be >= 0 (got %d)", (int)s->max_tokens);
  if (s->n_stop < 0 || (s->n_stop > 0 && !s->stop))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generate: stop must hold n_stop (%d) strings", (int)s->n_stop);
  for (int32_t i = 0; i < s->n_stop; i++)
    if (!s->stop[i] || !s->stop[i][0])
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generate: stop[%d] is %s", (int)i, s->stop[i] ? "empty" : "NULL");
  return RLX_OK;
}

static rlx_status generator_new(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, size_t keep,
                                const rlx_llm_sampling *s, int external, rlx_llm_generator **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generator_new: out is NULL");
  *out = NULL;
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generator_new: model is NULL");
  if (!prompt_ids || n_prompt == 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generator_new: the prompt has no tokens");
  if (n_prompt > (size_t)m->info.n_ctx)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generator_new: a prompt of %zu tokens does not fit the context of %d "
                     "tokens", n_prompt, (int)m->info.n_ctx);
  if (keep >= n_prompt || keep > (size_t)m->pos)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generator_new: %zu cached tokens of a %zu-token prompt (%d in the "
                     "context): at least the last prompt token is evaluated", keep, n_prompt, (int)m->pos);
  rlx_llm_sampling def = rlx_llm_sampling_default();
  if (!s) s = &def;
  rlx_status st = check_sampling(s);
  if (st != RLX_OK) return st;
  rlx_llm_generator *gen = rlx_calloc(1, sizeof *gen);
  if (!gen) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_generator_new: out of memory");
  gen->m = m;
  gen->s = *s;
  gen->pending = -1;
  gen->external = external;
  rlx_detok_init(&gen->detok, 0);
  rlx_sampler_params sp = {s->temperature, s->top_k, s->top_p, s->min_p, s->repeat_penalty, s->repeat_last_n, s->seed};
  st = rlx_sampler_new(&sp, &gen->sampler);
  if (st == RLX_OK && s->grammar) st = rlx_gsampler_new(s->grammar, m->tok, m->info.n_vocab, &gen->grammar);
  if (st == RLX_OK && s->n_stop > 0) {
    gen->s.n_stop = 0; /* counts the copies made, for free */
    if (!(gen->stop = rlx_calloc((size_t)s->n_stop, sizeof *gen->stop))) st = RLX_ERR_NO_MEMORY;
    else gen->n_stop_alloc = s->n_stop;
    for (int32_t i = 0; st == RLX_OK && i < s->n_stop; i++) {
      size_t len = strlen(s->stop[i]);
      if (!(gen->stop[i] = rlx_malloc(len + 1))) st = RLX_ERR_NO_MEMORY;
      else memcpy(gen->stop[i], s->stop[i], len + 1), gen->s.n_stop++;
    }
    if (st == RLX_ERR_NO_MEMORY) rlx_error(st, "rlx_llm_generator_new: out of memory");
  }
  /* The history ends within the context: after the prompt, one token per
   * free position plus the last one sampled (never max_tokens ids); every
   * next() and next_chosen() ends generation at a full context. */
  const size_t room = (size_t)m->info.n_ctx - n_prompt + 1;
  const size_t most = (size_t)s->max_tokens < room ? (size_t)s->max_tokens : room;
  if (st == RLX_OK && !grow((void **)&gen->history, &gen->cap_history, (uint64_t)n_prompt + most + 1, sizeof(int32_t)))
    st = rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_generator_new: out of memory");
  if (st == RLX_OK) {
    memcpy(gen->history, prompt_ids, n_prompt * sizeof(int32_t));
    gen->n_history = n_prompt;
    if (keep) st = rlx_llm_truncate(m, (int32_t)keep);
    else rlx_llm_reset(m);
    double t0 = now_seconds();
    if (st == RLX_OK && !external) st = rlx_llm_eval(m, prompt_ids + keep, n_prompt - keep, NULL);
    gen->stats.prompt_seconds = now_seconds() - t0;
    gen->stats.prompt_tokens = (int32_t)(n_prompt - keep);
  }
  if (st != RLX_OK) {
    rlx_llm_generator_free(gen);
    return st;
  }
  *out = gen;
  return RLX_OK;
}

rlx_status rlx_llm_generator_new(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, const rlx_llm_sampling *s,
                                 rlx_llm_generator **out) {
  return generator_new(m, prompt_ids, n_prompt, 0, s, 0, out);
}

rlx_status rlx_llm_generator_new_cached(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, size_t keep,
                                        const rlx_llm_sampling *s, rlx_llm_generator **out) {
  return generator_new(m, prompt_ids, n_prompt, keep, s, 0, out);
}

rlx_status rlx_llm_generator_new_kept(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, size_t keep,
                                      const rlx_llm_sampling *s, int external, rlx_llm_generator **out) {
  return generator_new(m, prompt_ids, n_prompt, keep, s, external != 0, out);
}

rlx_status rlx_llm_generator_new_external(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt,
                                          const rlx_llm_sampling *s, rlx_llm_generator **out) {
  return generator_new(m, prompt_ids, n_prompt, 0, s, 1, out);
}

int32_t rlx_llm_generator_pending(const rlx_llm_generator *gen) { return gen && !gen->done ? gen->pending : -1; }

static rlx_status hold(rlx_llm_generator *gen, const char *p, size_t n) {
  if (!grow((void **)&gen->held, &gen->cap_held, (uint64_t)gen->n_held + n + 1, 1))
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_generator_next: out of memory");
  memcpy(gen->held + gen->n_held, p, n);
  gen->n_held += n;
  return RLX_OK;
}

/* Moves held[0, n) to text (NUL-terminated); keeps the rest held. */
static rlx_status release(rlx_llm_generator *gen, size_t n, const char **text, size_t *len) {
  if (!grow((void **)&gen->text, &gen->cap_text, (uint64_t)n + 1, 1))
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_generator_next: out of memory");
  memcpy(gen->text, gen->held, n);
  gen->text[n] = 0;
  memmove(gen->held, gen->held + n, gen->n_held - n);
  gen->n_held -= n;
  *text = gen->text;
  *len = n;
  return RLX_OK;
}

/* Where held text stops being safe to hand out: the first position from
 * which the rest could begin a stop string; *found is set when a whole stop
 * string starts there. */
static size_t safe_prefix(const rlx_llm_generator *gen, int *found) {
  *found = 0;
  for (size_t at = 0; at < gen->n_held; at++) {
    const size_t rest = gen->n_held - at;
    for (int32_t i = 0; i < gen->s.n_stop; i++) {
      const size_t sl = strlen(gen->stop[i]);
      const size_t cmp = rest < sl ? rest : sl;
      if (memcmp(gen->held + at, gen->stop[i], cmp) == 0) {
        if (rest >= sl) *found = 1;
        return at;
      }
    }
  }
  return gen->n_held;
}

/* Ends generation for `why`, handing out what is held (and any partial
 * character, as U+FFFD). */
static rlx_status finish(rlx_llm_generator *gen, int32_t why, const char **text, size_t *len, int *done) {
  char tail[16];
  size_t n = 0;
  rlx_status st = rlx_detok_flush(&gen->detok, tail, sizeof tail, &n);
  if (st == RLX_OK) st = hold(gen, tail, n);
  gen->done = 1;
  gen->stats.stopped_by = why;
  *done = 1;
  return st == RLX_OK ? release(gen, gen->n_held, text, len) : st;
}

/* The argument checks and resets of next() and next_chosen(); 0 when
 * generation has already ended (nothing more to do). */
static rlx_status begin_next(const char *fn, rlx_llm_generator *gen, int32_t *id, const char **text, size_t *len,
                             int *done) {
  if (!gen || !id || !text || !len || !done)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                     !gen ? "gen" : !id ? "id" : !text ? "text" : !len ? "len" : "done");
  *id = -1;
  *text = "";
  *len = 0;
  *done = gen->done;
  return RLX_OK;
}

/* Takes token tok as the next one: end of generation, history, text, stop
 * strings and max_tokens. */
static rlx_status accept(rlx_llm_generator *gen, int32_t tok, int32_t *id, const char **text, size_t *len,
                         int *done) {
  rlx_llm *m = gen->m;
  if (rlx_tokenizer_is_eog(m->tok, tok)) return finish(gen, 1, text, len, done);
  if (gen->n_history >= gen->cap_history) return finish(gen, 4, text, len, done); /* sized for the context */
  gen->history[gen->n_history++] = tok;
  gen->stats.generated_tokens++;
  gen->pending = tok;
  *id = tok;
  char piece[256];
  size_t n = 0;
  rlx_status st = rlx_detok_push(&gen->detok, m->tok, tok, piece, sizeof piece, &n);
  if (st != RLX_OK) { /* a long piece: size it and push again */
    const size_t cap = n + 1;
    char *big = n > sizeof piece ? rlx_malloc(cap) : NULL;
    if (!big) return st;
    st = rlx_detok_push(&gen->detok, m->tok, tok, big, cap, &n);
    if (st == RLX_OK) st = hold(gen, big, n);
    rlx_free(big, cap);
  } else {
    st = hold(gen, piece, n);
  }
  if (st != RLX_OK) return st;
  int found;
  size_t safe = safe_prefix(gen, &found);
  if (found) {
    gen->n_held = safe; /* the stop string and what follows it are dropped */
    gen->done = 1;
    gen->stats.stopped_by = 2;
    *done = 1;
    return release(gen, safe, text, len);
  }
  if (gen->stats.generated_tokens >= gen->s.max_tokens) return finish(gen, 0, text, len, done);
  return release(gen, safe, text, len);
}

rlx_status rlx_llm_generator_next(rlx_llm_generator *gen, int32_t *id, const char **text, size_t *len, int *done) {
  rlx_status st = begin_next("rlx_llm_generator_next", gen, id, text, len, done);
  if (st != RLX_OK || gen->done) return st;
  rlx_llm *m = gen->m;
  const double t0 = now_seconds();
  if (gen->stats.generated_tokens >= gen->s.max_tokens) return finish(gen, 0, text, len, done);
  if (!gen->external && (size_t)m->pos + (gen->pending >= 0) != gen->n_history)
    return rlx_error(RLX_ERR_STATE, "rlx_llm_generator_next: the model's context moved under the generator (%zu tokens "
                     "in it, %d evaluated): rlx_llm_eval or rlx_llm_reset was called since it began", gen->n_history,
                     (int)m->pos);
  if (gen->pending >= 0) {
    const int evaluated = gen->external && (size_t)m->pos == gen->n_history; /* by the caller */
    if (!evaluated && m->pos >= m->info.n_ctx) return finish(gen, 4, text, len, done);
    if (!gen->external && (st = rlx_llm_eval(m, &gen->pending, 1, NULL)) != RLX_OK) return st;
  }
  if (gen->external && (size_t)m->pos != gen->n_history)
    return rlx_error(RLX_ERR_STATE, "rlx_llm_generator_next: %zu tokens are in the context, %d evaluated (hand the "
                     "logits of the pending ones over with rlx_llm_set_logits first)", gen->n_history, (int)m->pos);
  gen->pending = -1;
  int32_t tok;
  if (gen->grammar) {
    st = rlx_gsampler_sample(gen->grammar, gen->sampler, gen->s.temperature < RLX_LLM_MIN_TEMPERATURE, m->logits,
                             gen->history, gen->n_history, &tok);
    if (st == RLX_OK) st = rlx_gsampler_accept(gen->grammar, tok);
  } else
    st = rlx_sampler_sample(gen->sampler, m->logits, m->info.n_vocab, gen->history, gen->n_history, &tok);
  gen->stats.generate_seconds += now_seconds() - t0;
  if (st != RLX_OK) return st;
  return accept(gen, tok, id, text, len, done);
}

int rlx_llm_generator_greedy(const rlx_llm_generator *gen) {
  if (gen && gen->grammar) return 0; /* the grammar picks among the logits: no device argmax */
  return gen && gen->s.temperature < RLX_LLM_MIN_TEMPERATURE &&
         (gen->s.repeat_penalty == 1.0f || gen->s.repeat_last_n == 0);
}

rlx_status rlx_llm_generator_next_chosen(rlx_llm_generator *gen, int32_t tok, int32_t *id, const char **text,
                                         size_t *len, int *done) {
  static const char fn[] = "rlx_llm_generator_next_chosen";
  rlx_status st = begin_next(fn, gen, id, text, len, done);
  if (st != RLX_OK || gen->done) return st;
  rlx_llm *m = gen->m;
  if (!gen->external || !rlx_llm_generator_greedy(gen))
    return rlx_error(RLX_ERR_STATE, "%s: only for a greedy generator whose model the caller evaluates", fn);
  if (gen->pending < 0 || (size_t)m->pos + 1 != gen->n_history)
    return rlx_error(RLX_ERR_STATE, "%s: the pending token must be the only one not evaluated (%zu in the context, "
                     "%d evaluated)", fn, gen->n_history, (int)m->pos);
  if (tok < 0 || tok >= m->info.n_vocab)
    return rlx_error(tok == -1 ? RLX_ERR_NUMERIC : RLX_ERR_INVALID_ARG,
                     tok == -1 ? "%s: the logits after token %d hold NaN or +inf, or are all -inf"
                               : "%s: token %d is outside the vocabulary", fn, tok == -1 ? (int)gen->pending : (int)tok);
  if (gen->stats.generated_tokens >= gen->s.max_tokens) return finish(gen, 0, text, len, done);
  /* The pending token had no room in the context: nothing was evaluated. */
  if (m->pos >= m->info.n_ctx) return finish(gen, 4, text, len, done);
  m->pos++; /* the caller evaluated the pending token (its logits stay with the caller) */
  m->n_evaluated++;
  m->ctx_epoch++;
  gen->pending = -1;
  return accept(gen, tok, id, text, len, done);
}

void rlx_llm_generator_stats(const rlx_llm_generator *gen, rlx_llm_stats *stats) {
  if (gen && stats) *stats = gen->stats;
}

rlx_status rlx_llm_generate_ids(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, const rlx_llm_sampling *s,
                                rlx_llm_on_token on_token, void *user, rlx_llm_stats *stats) {
  rlx_llm_generator *gen;
  rlx_status st = rlx_llm_generator_new(m, prompt_ids, n_prompt, s, &gen);
  if (st != RLX_OK) return st;
  int done = 0;
  while (!done) {
    int32_t id;
    const char *text;
    size_t len;
    if ((st = rlx_llm_generator_next(gen, &id, &text, &len, &done)) != RLX_OK) break;
    if ((id >= 0 || len) && on_token && on_token(user, id, text, len)) {
      gen->stats.stopped_by = 3;
      break;
    }
  }
  if (stats) rlx_llm_generator_stats(gen, stats);
  rlx_llm_generator_free(gen);
  return st;
}

rlx_status rlx_llm_generate(rlx_llm *m, const char *prompt, const rlx_llm_sampling *s, rlx_llm_on_token on_token,
                            void *user, rlx_llm_stats *stats) {
  if (!m || !prompt) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_generate: %s is NULL", m ? "prompt" : "model");
  size_t len = strlen(prompt), n = 0;
  rlx_status st = rlx_llm_tokenize(m, prompt, len, -1, 1, NULL, 0, &n);
  if (st != RLX_OK && st != RLX_ERR_INVALID_ARG) return st;
  const size_t cap = n ? n : 1;
  int32_t *ids = rlx_malloc(cap * sizeof *ids);
  if (!ids) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_generate: out of memory");
  st = rlx_llm_tokenize(m, prompt, len, -1, 1, ids, cap, &n);
  if (st == RLX_OK) st = rlx_llm_generate_ids(m, ids, n, s, on_token, user, stats);
  rlx_free(ids, cap * sizeof *ids);
  return st;
}
