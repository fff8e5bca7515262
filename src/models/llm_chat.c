/* llm_chat.c - chat sessions: a conversation rendered in its template,
 * tokenized with the template's specials parsed and the messages' text
 * not, its replies kept as the tokens they were generated as, and only
 * the tokens after the longest common prefix with the KV cache evaluated
 * (the cache cut back to the divergence first).  The context-full policy
 * (refuse, or drop the oldest turns after the system prompt) is applied
 * before anything runs. */
#include <stdio.h>
#include <string.h>

#include "chat_template.h"
#include "llm.h"

typedef struct {
  char *text;
  size_t len;
  int32_t *ids;
  size_t n;
  int used;
} kept_reply;

#define MAX_KEPT 256

typedef struct {
  int32_t *p;
  size_t n, cap;
} ids_buf;

struct rlx_llm_chat {
  rlx_llm *m;
  int32_t tmpl;
  char why[160];
  rlx_llm_chat_overflow overflow;
  char *bos, *eos;         /* the texts of those tokens */
  size_t bos_cap, eos_cap;
  ids_buf cache;           /* what the KV cache holds, [0, cache.n) */
  uint64_t epoch;          /* the model's ctx_epoch when cache was last right */
  ids_buf prompt, reply_ids;
  char *reply;
  size_t reply_len, reply_cap;
  kept_reply kept[MAX_KEPT];
  int32_t n_kept;
  chat_text rendered;
};

static int ids_reserve(ids_buf *b, size_t need) {
  if (need <= b->cap) return 1;
  size_t c = b->cap ? b->cap : 256;
  while (c < need) {
    if (c > SIZE_MAX / 8 / sizeof(int32_t)) return 0;
    c *= 2;
  }
  int32_t *p = rlx_realloc(b->p, b->cap * sizeof *p, c * sizeof *p);
  if (!p) return 0;
  b->p = p;
  b->cap = c;
  return 1;
}

static void ids_free(ids_buf *b) {
  rlx_free(b->p, b->cap * sizeof *b->p);
  memset(b, 0, sizeof *b);
}

static char *token_text_copy(const rlx_llm *m, int32_t id, size_t *cap) {
  const char *t = "";
  size_t n = 0;
  if (id >= 0 && rlx_tokenizer_token_text(m->tok, id, &t, &n) != RLX_OK) t = "", n = 0;
  char *s = rlx_malloc(n + 1);
  if (s) memcpy(s, t, n), s[n] = 0;
  *cap = n + 1;
  return s;
}

static void kept_free(kept_reply *k) {
  rlx_free(k->text, k->len + 1);
  rlx_free(k->ids, k->n * sizeof *k->ids);
  memset(k, 0, sizeof *k);
}

void rlx_llm_chat_free(rlx_llm_chat *c) {
  if (!c) return;
  rlx_free(c->bos, c->bos_cap);
  rlx_free(c->eos, c->eos_cap);
  ids_free(&c->cache);
  ids_free(&c->prompt);
  ids_free(&c->reply_ids);
  rlx_free(c->reply, c->reply_cap);
  for (int32_t i = 0; i < c->n_kept; i++) kept_free(&c->kept[i]);
  chat_text_free(&c->rendered);
  rlx_free(c, sizeof *c);
}

rlx_status rlx_llm_chat_new(rlx_llm *m, const rlx_llm_chat_options *opt, rlx_llm_chat **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_new: out is NULL");
  *out = NULL;
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_new: model is NULL");
  rlx_llm_chat_options def = {NULL, RLX_LLM_CHAT_REFUSE};
  if (!opt) opt = &def;
  if (opt->overflow != RLX_LLM_CHAT_REFUSE && opt->overflow != RLX_LLM_CHAT_DROP_OLDEST)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_new: overflow %d is neither RLX_LLM_CHAT_REFUSE (0) nor "
                     "RLX_LLM_CHAT_DROP_OLDEST (1)", (int)opt->overflow);
  rlx_llm_chat *c = rlx_calloc(1, sizeof *c);
  if (!c) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_chat_new: out of memory");
  const char *name;
  rlx_status st = rlx_llm_chat_template_for(m, opt->template_name, &name, c->why, sizeof c->why);
  if (st != RLX_OK) {
    rlx_llm_chat_free(c);
    return st;
  }
  c->m = m;
  c->tmpl = chat_template_find(name);
  c->overflow = opt->overflow;
  c->bos = token_text_copy(m, m->info.bos, &c->bos_cap);
  c->eos = token_text_copy(m, m->info.eos, &c->eos_cap);
  c->epoch = m->ctx_epoch - 1; /* the cache's contents are unknown until the first turn */
  if (!c->bos || !c->eos) {
    rlx_llm_chat_free(c);
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_chat_new: out of memory");
  }
  *out = c;
  return RLX_OK;
}

const char *rlx_llm_chat_template(const rlx_llm_chat *c, const char **why) {
  if (why) *why = c ? c->why : "";
  return c ? rlx_llm_chat_template_name(c->tmpl) : NULL;
}

const char *rlx_llm_chat_reply(const rlx_llm_chat *c, size_t *len) {
  if (len) *len = c ? c->reply_len : 0;
  return c && c->reply ? c->reply : "";
}

const int32_t *rlx_llm_chat_reply_ids(const rlx_llm_chat *c, size_t *n) {
  if (n) *n = c ? c->reply_ids.n : 0;
  return c ? c->reply_ids.p : NULL;
}

const int32_t *rlx_llm_chat_prompt_ids(const rlx_llm_chat *c, size_t *n) {
  if (n) *n = c ? c->prompt.n : 0;
  return c ? c->prompt.p : NULL;
}

rlx_status rlx_llm_chat_prompt(const rlx_llm_chat *c, const rlx_llm_chat_message *msgs, int32_t n,
                               int add_generation_prompt, char *out, size_t cap, size_t *len) {
  if (!c || !len) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_prompt: %s is NULL", c ? "len" : "chat");
  return rlx_llm_chat_render(rlx_llm_chat_template_name(c->tmpl), msgs, n, add_generation_prompt, c->bos, c->eos, out,
                             cap, len);
}

/* The kept reply an assistant message's content stands for, or NULL. */
static kept_reply *find_kept(rlx_llm_chat *c, const char *content) {
  const size_t len = strlen(content);
  for (int32_t i = c->n_kept - 1; i >= 0; i--)
    if (c->kept[i].len == len && memcmp(c->kept[i].text, content, len) == 0) return &c->kept[i];
  return NULL;
}

/* Appends the ids of text parts [p0, p1) of c->rendered to c->prompt. */
static rlx_status encode_span(rlx_llm_chat *c, size_t p0, size_t p1, int continued) {
  const chat_text *r = &c->rendered;
  const size_t off = p0 ? r->ends[p0 - 1] : 0, len = r->ends[p1 - 1] - off;
  size_t *ends = rlx_malloc((p1 - p0) * sizeof *ends);
  if (!ends) return rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory");
  for (size_t i = p0; i < p1; i++) ends[i - p0] = r->ends[i] - off;
  size_t n = 0;
  rlx_status st = rlx_tokenizer_encode_parts(c->m->tok, r->text + off, len, ends, r->special + p0, p1 - p0, 0,
                                             continued, NULL, 0, &n);
  if ((st == RLX_OK || st == RLX_ERR_INVALID_ARG) && n > 0) {
    if (!ids_reserve(&c->prompt, c->prompt.n + n)) st = rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory");
    else st = rlx_tokenizer_encode_parts(c->m->tok, r->text + off, len, ends, r->special + p0, p1 - p0, 0,
                                         continued, c->prompt.p + c->prompt.n, n, &n);
    if (st == RLX_OK) c->prompt.n += n;
  }
  rlx_free(ends, (p1 - p0) * sizeof *ends);
  return st;
}

/* c->prompt: msgs[0, n) rendered with the generation prompt and tokenized;
 * an assistant message that is a kept reply becomes its generated ids. */
static rlx_status tokenize_prompt(rlx_llm_chat *c, const rlx_llm_chat_message *msgs, int32_t n) {
  rlx_status st = chat_template_render(c->tmpl, msgs, n, 1, c->bos, c->eos, &c->rendered);
  if (st != RLX_OK) return st;
  c->prompt.n = 0;
  if (!chat_template_writes_bos(c->tmpl) && rlx_tokenizer_add_bos(c->m->tok) && c->m->info.bos >= 0) {
    if (!ids_reserve(&c->prompt, 1)) return rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory");
    c->prompt.p[c->prompt.n++] = c->m->info.bos;
  }
  const chat_text *r = &c->rendered;
  size_t from = 0;
  int continued = 0;
  for (size_t i = 0; i <= r->n && st == RLX_OK; i++) {
    kept_reply *k = NULL;
    if (i < r->n && r->msg[i] >= 0 && strcmp(msgs[r->msg[i]].role, "assistant") == 0) {
      const char *content = msgs[r->msg[i]].content;
      const size_t plen = r->ends[i] - (i ? r->ends[i - 1] : 0);
      if (strlen(content) == plen) k = find_kept(c, content); /* not when trimming changed it */
    }
    if (i < r->n && !k) continue;
    if (i > from) st = encode_span(c, from, i, continued);
    if (st == RLX_OK && k) {
      if (!ids_reserve(&c->prompt, c->prompt.n + k->n)) return rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory");
      memcpy(c->prompt.p + c->prompt.n, k->ids, k->n * sizeof *k->ids);
      c->prompt.n += k->n;
      k->used = 1;
    }
    from = i + 1;
    continued = 1;
  }
  return st;
}

/* Tokenizes msgs under the overflow policy: the system prompt, then the
 * turns from the first user message kept; *dropped counts those left out. */
static rlx_status fit_prompt(rlx_llm_chat *c, const rlx_llm_chat_message *msgs, int32_t n, int32_t max_tokens,
                             int32_t *dropped) {
  const int has_sys = strcmp(msgs[0].role, "system") == 0;
  const int32_t n_ctx = c->m->info.n_ctx;
  rlx_llm_chat_message *view = rlx_malloc((size_t)n * sizeof *view);
  if (!view) return rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory");
  int32_t first = has_sys;
  rlx_status st;
  for (;;) {
    int32_t k = 0;
    if (has_sys) view[k++] = msgs[0];
    for (int32_t i = first; i < n; i++) view[k++] = msgs[i];
    st = tokenize_prompt(c, view, k);
    if (st != RLX_OK || c->overflow != RLX_LLM_CHAT_DROP_OLDEST) break;
    if ((int64_t)c->prompt.n + max_tokens <= n_ctx) break;
    int32_t next = first + 1; /* the next user message: a whole turn goes */
    while (next < n && strcmp(msgs[next].role, "user") != 0) next++;
    if (next >= n) break;
    first = next;
  }
  rlx_free(view, (size_t)n * sizeof *view);
  *dropped = first - has_sys;
  if (st == RLX_OK && c->prompt.n >= (size_t)n_ctx)
    st = rlx_error(RLX_ERR_INVALID_ARG, "chat: the conversation needs %zu tokens and the context holds %d%s: start a "
                   "new conversation, shorten it, open the model with a larger context%s", c->prompt.n, (int)n_ctx,
                   *dropped ? " even without its oldest turns" : "",
                   c->overflow == RLX_LLM_CHAT_REFUSE ? " or let the oldest turns be dropped (RLX_LLM_CHAT_DROP_OLDEST)"
                                                      : "");
  return st;
}

static rlx_status append_reply(rlx_llm_chat *c, int32_t id, const char *text, size_t len) {
  if (c->reply_len + len + 1 > c->reply_cap) {
    size_t cap = c->reply_cap ? c->reply_cap : 256;
    while (cap < c->reply_len + len + 1) cap *= 2;
    char *p = rlx_realloc(c->reply, c->reply_cap, cap);
    if (!p) return rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory");
    c->reply = p;
    c->reply_cap = cap;
  }
  memcpy(c->reply + c->reply_len, text, len);
  c->reply_len += len;
  c->reply[c->reply_len] = 0;
  if (id >= 0) {
    if (!ids_reserve(&c->reply_ids, c->reply_ids.n + 1)) return rlx_error(RLX_ERR_NO_MEMORY, "chat: out of memory");
    c->reply_ids.p[c->reply_ids.n++] = id;
  }
  return RLX_OK;
}

/* Keeps the replies the last prompt used, plus this one (when its tokens
 * stand for its text: not cut by a stop string). */
static void keep_replies(rlx_llm_chat *c, int keep_new) {
  int32_t k = 0;
  for (int32_t i = 0; i < c->n_kept; i++) {
    if (c->kept[i].used && k < MAX_KEPT - 1) {
      c->kept[k] = c->kept[i];
      c->kept[k++].used = 0;
    } else {
      kept_free(&c->kept[i]);
    }
  }
  c->n_kept = k;
  if (!keep_new || c->reply_ids.n == 0) return;
  kept_reply *r = &c->kept[k];
  r->text = rlx_malloc(c->reply_len + 1);
  r->ids = rlx_malloc(c->reply_ids.n * sizeof *r->ids);
  if (!r->text || !r->ids) {
    rlx_free(r->text, r->text ? c->reply_len + 1 : 0);
    rlx_free(r->ids, r->ids ? c->reply_ids.n * sizeof *r->ids : 0);
    memset(r, 0, sizeof *r);
    return; /* only reuse is lost */
  }
  memcpy(r->text, c->reply, c->reply_len + 1);
  r->len = c->reply_len;
  memcpy(r->ids, c->reply_ids.p, c->reply_ids.n * sizeof *r->ids);
  r->n = c->reply_ids.n;
  c->n_kept++;
}

rlx_status rlx_llm_chat_respond(rlx_llm_chat *c, const rlx_llm_chat_message *msgs, int32_t n,
                                const rlx_llm_sampling *s, rlx_llm_on_token on_token, void *user,
                                rlx_llm_chat_stats *stats) {
  if (stats) memset(stats, 0, sizeof *stats);
  if (!c) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_respond: chat is NULL");
  if (n < 1 || !msgs) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_respond: no messages");
  if (!msgs[n - 1].role || strcmp(msgs[n - 1].role, "user") != 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_chat_respond: the last message must be a user message (it is "
                     "'%s')", msgs[n - 1].role ? msgs[n - 1].role : "(no role)");
  if (!msgs[0].role) return rlx_error(RLX_ERR_INVALID_ARG, "chat: message 0 has no role");
  rlx_llm *m = c->m;
  rlx_llm_sampling def = rlx_llm_sampling_default();
  if (!s) s = &def;
  c->reply_len = 0;
  c->reply_ids.n = 0;
  if (c->reply) c->reply[0] = 0;
  int32_t dropped = 0;
  rlx_status st = fit_prompt(c, msgs, n, s->max_tokens, &dropped);
  if (st != RLX_OK) {
    for (int32_t i = 0; i < c->n_kept; i++) c->kept[i].used = 1; /* nothing changed: keep them all */
    keep_replies(c, 0);
    return st;
  }
  /* What the cache still holds in common with the prompt; at least the
   * last prompt token is evaluated (its logits start the reply). */
  if (c->epoch != m->ctx_epoch || c->cache.n > (size_t)m->pos) c->cache.n = 0;
  size_t keep = 0;
  while (keep < c->cache.n && keep < c->prompt.n && c->cache.p[keep] == c->prompt.p[keep]) keep++;
  if (keep >= c->prompt.n) keep = c->prompt.n - 1;
  rlx_llm_generator *gen = NULL;
  st = rlx_llm_generator_new_cached(m, c->prompt.p, c->prompt.n, keep, s, &gen);
  int done = 0, by_callback = 0;
  while (st == RLX_OK && !done) {
    int32_t id;
    const char *text;
    size_t len;
    if ((st = rlx_llm_generator_next(gen, &id, &text, &len, &done)) != RLX_OK) break;
    if ((st = append_reply(c, id, text, len)) != RLX_OK) break;
    if ((id >= 0 || len) && on_token && on_token(user, id, text, len)) by_callback = 1, done = 1;
  }
  rlx_llm_stats gs = {0};
  if (gen) rlx_llm_generator_stats(gen, &gs);
  if (by_callback) gs.stopped_by = 3;
  rlx_llm_generator_free(gen);
  /* The cache now holds the prompt and the reply's evaluated tokens. */
  c->cache.n = 0;
  if (st == RLX_OK && m->pos >= (int32_t)c->prompt.n && ids_reserve(&c->cache, (size_t)m->pos)) {
    const size_t n_rep = (size_t)m->pos - c->prompt.n;
    memcpy(c->cache.p, c->prompt.p, c->prompt.n * sizeof *c->cache.p);
    memcpy(c->cache.p + c->prompt.n, c->reply_ids.p, (n_rep < c->reply_ids.n ? n_rep : c->reply_ids.n) * sizeof(int32_t));
    c->cache.n = n_rep <= c->reply_ids.n ? (size_t)m->pos : 0;
    c->epoch = m->ctx_epoch;
  }
  keep_replies(c, st == RLX_OK && gs.stopped_by != 2);
  if (stats) {
    stats->gen = gs;
    stats->prompt_tokens = (int32_t)c->prompt.n;
    stats->cached_tokens = (int32_t)keep;
    stats->dropped_messages = dropped;
  }
  return st;
}
