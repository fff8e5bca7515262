/* grammar_sample.c - sampling under a grammar.  Each token's text (its
 * piece, as generated text shows it) is read once per generation.  Before
 * a token is drawn, a token is allowed when the grammar state takes its
 * bytes (a code point may stay partial across tokens); an end-of-generation
 * token only where the text so far is complete; a token with no text
 * (control tokens) never.  Tokens are matched by walking the grammar's
 * byte automaton (grammar_dfa.c), built as generation goes: each state's
 * step on a byte is matched once, then looked up.
 *
 * Greedy (a temperature below RLX_LLM_MIN_TEMPERATURE): the sampler picks
 * from the unmasked logits first; when the grammar takes that token it is
 * the masked argmax too, so only one token is checked on most steps; else
 * every token is checked and the pick is made again.  With a temperature,
 * every token is checked and the disallowed ones are set to -inf before the
 * whole sampler chain (penalties, top-k, top-p, min-p, temperature, draw),
 * so the draw follows the chain's distribution over the allowed tokens.
 * The masks of the last MASKS states are kept (generation comes back to
 * the same states again and again: inside a string, after a comma).  The
 * drawn token's walk gives the next state, which rlx_gsampler_accept takes
 * without matching the token again.  A state that no token of the vocab
 * continues (and that is not complete) is an error. */
#include <math.h>
#include <string.h>

#include "grammar.h"
#include "rlx_llm.h"
#include "sampler.h"
#include "tokenizer.h"
#include "../core/core.h"

#define MASKS 16

struct rlx_gsampler {
  const rlx_tokenizer *t;
  int32_t n_vocab;
  rlx_llm_grammar_state *st;
  char *bytes;      /* every piece, one after another */
  size_t cap_bytes;
  uint32_t *off;    /* piece i: bytes[off[i], off[i+1]) */
  float *masked;    /* n_vocab logits */
  rlx_gdfa *dfa;
  int32_t now;      /* the automaton's state for st (valid in this step) */
  int32_t kept_id, kept_to; /* the drawn token and the state after it (-1: none) */
  struct mask {     /* a state's allowed tokens, one bit each */
    uint64_t epoch, used;
    int32_t state;
    uint32_t *bits;
  } masks[MASKS];
  uint64_t clock;
};

static size_t mask_words(const rlx_gsampler *gs) { return ((size_t)gs->n_vocab + 31) / 32; }

void rlx_gsampler_free(rlx_gsampler *gs) {
  if (!gs) return;
  rlx_llm_grammar_state_free(gs->st);
  rlx_gdfa_free(gs->dfa);
  rlx_free(gs->bytes, gs->cap_bytes);
  rlx_free(gs->off, ((size_t)gs->n_vocab + 1) * sizeof *gs->off);
  rlx_free(gs->masked, (size_t)gs->n_vocab * sizeof *gs->masked);
  for (int k = 0; k < MASKS; k++)
    rlx_free(gs->masks[k].bits, gs->masks[k].bits ? mask_words(gs) * sizeof *gs->masks[k].bits : 0);
  rlx_free(gs, sizeof *gs);
}

rlx_status rlx_gsampler_new(const rlx_llm_grammar *g, const rlx_tokenizer *t, int32_t n_vocab,
                            rlx_gsampler **out) {
  *out = NULL;
  rlx_gsampler *gs = rlx_calloc(1, sizeof *gs);
  if (!gs) return rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory");
  gs->t = t;
  gs->n_vocab = n_vocab;
  gs->kept_id = -1;
  rlx_status st = rlx_llm_grammar_state_new(g, &gs->st);
  if (st == RLX_OK) st = rlx_gdfa_new(g, &gs->dfa);
  gs->off = st == RLX_OK ? rlx_malloc(((size_t)n_vocab + 1) * sizeof *gs->off) : NULL;
  gs->masked = gs->off ? rlx_malloc((size_t)n_vocab * sizeof *gs->masked) : NULL;
  if (st == RLX_OK && !gs->masked) st = rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory");
  size_t cap = 0, used = 0;
  for (int32_t i = 0; st == RLX_OK && i < n_vocab; i++) {
    size_t len = 0;
    gs->off[i] = (uint32_t)used;
    for (;;) { /* the piece, growing the buffer when it does not fit */
      st = rlx_tokenizer_piece(t, i, gs->bytes ? gs->bytes + used : NULL, cap - used, &len, 0);
      if (st == RLX_OK || used + len + 1 <= cap) break;
      size_t c = cap ? cap * 2 : 1 << 16;
      while (c < used + len + 1) c *= 2;
      char *q = rlx_realloc(gs->bytes, cap, c);
      if (!q) {
        st = rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory for the vocab's pieces");
        break;
      }
      gs->bytes = q;
      cap = c;
    }
    used += len;
  }
  if (st == RLX_OK) gs->off[n_vocab] = (uint32_t)used;
  gs->cap_bytes = cap;
  if (st != RLX_OK) {
    rlx_gsampler_free(gs);
    return st;
  }
  *out = gs;
  return RLX_OK;
}

/* The state after token id from the state now (-1: refused; an
 * end-of-generation token: now itself where the text is complete). */
static rlx_status walk(rlx_gsampler *gs, int32_t id, int32_t *to) {
  *to = -1;
  if (rlx_tokenizer_is_eog(gs->t, id)) {
    if (rlx_gdfa_complete(gs->dfa, gs->now)) *to = gs->now;
    return RLX_OK;
  }
  const uint32_t a = gs->off[id], b = gs->off[id + 1];
  if (a == b) return RLX_OK;
  return rlx_gdfa_walk(gs->dfa, gs->now, (const unsigned char *)gs->bytes + a, b - a, to);
}

/* The allowed tokens of the state now, from the kept masks or made (then
 * kept in place of the least recently used). */
static rlx_status mask_of(rlx_gsampler *gs, const uint32_t **bits) {
  const uint64_t epoch = rlx_gdfa_epoch(gs->dfa);
  struct mask *e = &gs->masks[0];
  for (int k = 0; k < MASKS; k++) {
    struct mask *x = &gs->masks[k];
    if (x->used && x->epoch == epoch && x->state == gs->now) {
      x->used = ++gs->clock;
      *bits = x->bits;
      return RLX_OK;
    }
    if (x->used < e->used) e = x;
  }
  if (!e->bits && !(e->bits = rlx_malloc(mask_words(gs) * sizeof *e->bits)))
    return rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory");
  e->used = 0; /* not valid until made whole */
  memset(e->bits, 0, mask_words(gs) * sizeof *e->bits);
  for (int32_t i = 0; i < gs->n_vocab; i++) {
    int32_t to;
    rlx_status st = walk(gs, i, &to);
    if (st != RLX_OK) return st;
    e->bits[i >> 5] |= (uint32_t)(to >= 0) << (i & 31);
  }
  e->epoch = epoch, e->state = gs->now, e->used = ++gs->clock;
  *bits = e->bits;
  return RLX_OK;
}

rlx_status rlx_gsampler_sample(rlx_gsampler *gs, rlx_sampler *s, int greedy, const float *logits,
                               const int32_t *history, size_t n_history, int32_t *id) {
  rlx_gutf8 u;
  const rlx_gstacks *stacks = rlx_gstate_stacks(gs->st, &u);
  rlx_status st = rlx_gdfa_intern(gs->dfa, stacks, u, &gs->now);
  gs->kept_id = -1;
  if (st != RLX_OK) return st;
  int32_t to = -1;
  if (greedy) {
    if ((st = rlx_sampler_sample(s, logits, gs->n_vocab, history, n_history, id)) != RLX_OK) return st;
    if ((st = walk(gs, *id, &to)) != RLX_OK) return st;
  }
  if (to < 0) {
    const uint32_t *bits = NULL;
    if ((st = mask_of(gs, &bits)) != RLX_OK) return st;
    int any = 0;
    for (int32_t i = 0; i < gs->n_vocab; i++) {
      const int ok = (bits[i >> 5] >> (i & 31) & 1) && logits[i] > -INFINITY;
      gs->masked[i] = ok ? logits[i] : -INFINITY;
      any |= ok;
    }
    if (!any)
      return rlx_error(RLX_ERR_STATE, "grammar: no token of the vocabulary can continue the text, and the text is "
                       "not complete under the grammar");
    if ((st = rlx_sampler_sample(s, gs->masked, gs->n_vocab, history, n_history, id)) != RLX_OK) return st;
    if ((st = walk(gs, *id, &to)) != RLX_OK) return st; /* looked up: the mask walked it */
  }
  gs->kept_id = *id, gs->kept_to = to;
  return RLX_OK;
}

rlx_status rlx_gsampler_accept(rlx_gsampler *gs, int32_t id) {
  if (rlx_tokenizer_is_eog(gs->t, id)) return RLX_OK;
  if (id == gs->kept_id && gs->kept_to >= 0) { /* walked when it was drawn: take that state */
    rlx_gutf8 u;
    rlx_gstacks view;
    const rlx_gstacks *next = rlx_gdfa_stacks(gs->dfa, gs->kept_to, &u, &view);
    gs->kept_id = -1;
    return rlx_gstate_set(gs->st, next, u);
  }
  int ok;
  rlx_status st = rlx_llm_grammar_state_accept(gs->st, gs->bytes + gs->off[id], gs->off[id + 1] - gs->off[id], &ok);
  if (st == RLX_OK && !ok) st = rlx_error(RLX_ERR_STATE, "grammar: token %d does not continue the text", (int)id);
  return st;
}
