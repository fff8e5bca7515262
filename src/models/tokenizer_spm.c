/* tokenizer_spm.c - the SentencePiece-style ("llama") tokenizer body, as
 * llama.cpp's llm_tokenizer_spm_session: an optional space prefix, every
 * ' ' written as U+2581, one symbol per UTF-8 character (by its lead byte,
 * cut at the end of the text), then repeatedly the adjacent pair whose
 * concatenation is a token with the highest score is merged (leftmost on
 * ties).  A final symbol that is not a token falls back to its bytes'
 * <0xNN> tokens (or the single-byte token); a byte with neither gives the
 * unknown token (llama.cpp throws there), once per symbol. */
#include <string.h>

#include "tokenizer_impl.h"
#include "../core/core.h"

typedef struct {
  const rlx_tokenizer *t;
  const char *s;
  tok_sym *sym;
  tok_heap heap;
} spm;

static int try_bigram(spm *p, int32_t left, int32_t right) {
  if (left < 0 || right < 0) return 1;
  const tok_sym *l = &p->sym[left], *r = &p->sym[right];
  int32_t id = tok_find(p->t, p->s + l->off, (size_t)l->n + r->n);
  if (id == RLX_TOKEN_NULL) return 1;
  tok_bigram b = {-(double)p->t->scores[id], left, right, l->n, r->n};
  return tok_heap_push(&p->heap, b);
}

static rlx_status emit_symbol(const rlx_tokenizer *t, const char *s, size_t n, tok_out *o) {
  int32_t id = tok_find(t, s, n);
  if (id != RLX_TOKEN_NULL) {
    tok_emit(o, id);
    return RLX_OK;
  }
  int unk_done = 0;
  for (size_t j = 0; j < n; j++) {
    int32_t b = t->byte_tok[(unsigned char)s[j]];
    if (b != RLX_TOKEN_NULL) {
      tok_emit(o, b);
      unk_done = 0;
    } else if (t->unk != RLX_TOKEN_NULL) {
      if (!unk_done) tok_emit(o, t->unk);
      unk_done = 1;
    } else {
      return rlx_error(RLX_ERR_INVALID_ARG,
                       "rlx_tokenizer_encode: byte 0x%02X has no <0x%02X> token and the vocab has no unknown token",
                       (unsigned char)s[j], (unsigned char)s[j]);
    }
  }
  return RLX_OK;
}

rlx_status tok_spm_fragment(const rlx_tokenizer *t, const char *text, size_t len, int space_prefix, tok_out *o) {
  static const char SP[3] = {'\xE2', '\x96', '\x81'};
  size_t n_sp = space_prefix ? 1 : 0;
  for (size_t i = 0; i < len; i++) n_sp += text[i] == ' ';
  size_t bytes = len + (space_prefix ? 1 : 0) + 2 * n_sp;
  if (bytes > UINT32_MAX) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_encode: text too long");
  tok_buf sbuf = {0}, symbuf = {0};
  spm p = {t, NULL, NULL, {{0}, 0}};
  rlx_status st = RLX_OK;
  if (!tok_reserve(&sbuf, bytes + 1) || !tok_reserve(&symbuf, (bytes + 1) * sizeof(tok_sym))) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_encode: out of memory");
    goto done;
  }
  char *s = sbuf.p;
  size_t w = 0;
  if (space_prefix) {
    memcpy(s, SP, 3);
    w = 3;
  }
  for (size_t i = 0; i < len; i++) {
    if (text[i] == ' ') {
      memcpy(s + w, SP, 3);
      w += 3;
    } else {
      s[w++] = text[i];
    }
  }
  p.s = s;
  p.sym = symbuf.p;
  int32_t n_sym = 0;
  for (size_t off = 0; off < w;) {
    size_t n = tok_utf8_len((unsigned char)s[off]);
    if (n > w - off) n = w - off;
    p.sym[n_sym] = (tok_sym){(uint32_t)off, (uint32_t)n, n_sym - 1, off + n == w ? -1 : n_sym + 1, -1};
    n_sym++;
    off += n;
  }
  for (int32_t i = 1; i < n_sym; i++)
    if (!try_bigram(&p, i - 1, i)) goto oom;
  tok_bigram b;
  while (tok_heap_pop(&p.heap, &b)) {
    tok_sym *l = &p.sym[b.left], *r = &p.sym[b.right];
    if (l->n == 0 || r->n == 0 || l->n != b.n_left || r->n != b.n_right) continue; /* stale */
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) p.sym[r->next].prev = b.left;
    if (!try_bigram(&p, l->prev, b.left) || !try_bigram(&p, b.left, l->next)) goto oom;
  }
  for (int32_t i = n_sym ? 0 : -1; i != -1 && st == RLX_OK; i = p.sym[i].next)
    st = emit_symbol(t, s + p.sym[i].off, p.sym[i].n, o);
  goto done;
oom:
  st = rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_encode: out of memory");
done:
  tok_buf_free(&p.heap.buf);
  tok_buf_free(&symbuf);
  tok_buf_free(&sbuf);
  return st;
}
