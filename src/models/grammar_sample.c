/* grammar_sample.c - sampling under a grammar.  Each token's text (its
 * piece, as generated text shows it) is read once per generation.  Before
 * a token is drawn, a token is allowed when the grammar state takes its
 * bytes (a code point may stay partial across tokens); an end-of-generation
 * token only where the text so far is complete; a token with no text
 * (control tokens) never.
 *
 * Greedy (a temperature below RLX_LLM_MIN_TEMPERATURE): the sampler picks
 * from the unmasked logits first; when the grammar takes that token it is
 * the masked argmax too, so only one token is checked on most steps, and
 * the state that check reached is kept for rlx_gsampler_accept (the token
 * is matched once); else every token is checked and the pick is made again.
 * A full check first finds which first bytes the state takes (from the
 * classes atop its stacks, when no code point is partial): a token whose
 * first byte is refused is refused whole, without matching it (a text the
 * grammar refuses stays refused as it grows), and a one-byte token is
 * decided by that table alone.  With a temperature,
 * every token is checked and the disallowed ones are set to -inf before the
 * whole sampler chain (penalties, top-k, top-p, min-p, temperature, draw),
 * so the draw follows the chain's distribution over the allowed tokens.
 * A state that no token of the vocab continues (and that is not complete)
 * is an error. */
#include <math.h>
#include <string.h>

#include "grammar.h"
#include "rlx_llm.h"
#include "sampler.h"
#include "tokenizer.h"
#include "../core/core.h"

struct rlx_gsampler {
  const rlx_tokenizer *t;
  int32_t n_vocab;
  rlx_llm_grammar_state *st;
  char *bytes;      /* every piece, one after another */
  size_t cap_bytes;
  uint32_t *off;    /* piece i: bytes[off[i], off[i+1]) */
  float *masked;    /* n_vocab logits */
  rlx_gscratch w;
  rlx_llm_grammar_state *kept; /* the state after token kept_id (-1: none) */
  int32_t kept_id;
};

void rlx_gsampler_free(rlx_gsampler *gs) {
  if (!gs) return;
  rlx_llm_grammar_state_free(gs->st);
  rlx_llm_grammar_state_free(gs->kept);
  rlx_free(gs->bytes, gs->cap_bytes);
  rlx_free(gs->off, ((size_t)gs->n_vocab + 1) * sizeof *gs->off);
  rlx_free(gs->masked, (size_t)gs->n_vocab * sizeof *gs->masked);
  rlx_gscratch_free(&gs->w);
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
  if (st == RLX_OK) st = rlx_llm_grammar_state_new(g, &gs->kept);
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

/* 1 when the state takes bytes b[0, n), 0 not, or the (negative) status
 * of an error; with keep, the state it reaches is kept for token id. */
static int takes(rlx_gsampler *gs, const unsigned char *b, size_t n, int keep, int32_t id) {
  rlx_gutf8 u, u2;
  const rlx_gstacks *in = rlx_gstate_stacks(gs->st, &u), *res;
  int ok = rlx_gmatch_try(rlx_gstate_grammar(gs->st), in, u, b, n, &gs->w, &res, &u2);
  if (ok > 0 && keep) {
    rlx_status st = rlx_gstate_set(gs->kept, res, u2);
    if (st != RLX_OK) return (int)st;
    gs->kept_id = id;
  }
  return ok;
}

/* 1 allowed, 0 not, or the (negative) status of an error; first: the
 * first-byte table, or NULL. */
static int allowed(rlx_gsampler *gs, int32_t id, const uint8_t *first, int keep) {
  if (rlx_tokenizer_is_eog(gs->t, id)) return rlx_llm_grammar_state_complete(gs->st);
  const uint32_t a = gs->off[id], b = gs->off[id + 1];
  const unsigned char *bytes = (const unsigned char *)gs->bytes + a;
  if (a == b) return 0;
  if (first && (!first[bytes[0]] || b - a == 1)) return first[bytes[0]];
  return takes(gs, bytes, b - a, keep, id);
}

rlx_status rlx_gsampler_sample(rlx_gsampler *gs, rlx_sampler *s, int greedy, const float *logits,
                               const int32_t *history, size_t n_history, int32_t *id) {
  rlx_status st;
  gs->kept_id = -1;
  if (greedy) {
    if ((st = rlx_sampler_sample(s, logits, gs->n_vocab, history, n_history, id)) != RLX_OK) return st;
    int ok = allowed(gs, *id, NULL, 1);
    if (ok < 0) return (rlx_status)ok;
    if (ok) return RLX_OK;
  }
  uint8_t first[256];
  rlx_gutf8 u;
  const rlx_gstacks *now = rlx_gstate_stacks(gs->st, &u);
  if (!u.need) rlx_gmatch_first_bytes(rlx_gstate_grammar(gs->st), now, first);
  int any = 0;
  for (int32_t i = 0; i < gs->n_vocab; i++) {
    int ok = logits[i] > -INFINITY ? allowed(gs, i, u.need ? NULL : first, 0) : 0;
    if (ok < 0) return (rlx_status)ok;
    gs->masked[i] = ok ? logits[i] : -INFINITY;
    any |= ok;
  }
  if (!any)
    return rlx_error(RLX_ERR_STATE, "grammar: no token of the vocabulary can continue the text, and the text is not "
                     "complete under the grammar");
  return rlx_sampler_sample(s, gs->masked, gs->n_vocab, history, n_history, id);
}

rlx_status rlx_gsampler_accept(rlx_gsampler *gs, int32_t id) {
  if (rlx_tokenizer_is_eog(gs->t, id)) return RLX_OK;
  if (id == gs->kept_id) { /* matched when it was drawn: take that state */
    rlx_llm_grammar_state *t = gs->st;
    gs->st = gs->kept, gs->kept = t, gs->kept_id = -1;
    return RLX_OK;
  }
  int ok;
  rlx_status st = rlx_llm_grammar_state_accept(gs->st, gs->bytes + gs->off[id], gs->off[id + 1] - gs->off[id], &ok);
  if (st == RLX_OK && !ok) st = rlx_error(RLX_ERR_STATE, "grammar: token %d does not continue the text", (int)id);
  return st;
}
