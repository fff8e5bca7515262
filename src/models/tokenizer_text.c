/* tokenizer_text.c - token ids back to text: each token's piece (llama.cpp's
 * token_to_piece, cached per token at load), detokenize (the leading-space
 * rule after BOS and the clean-up of spaces before punctuation), and the
 * streaming detokenizer that only ever emits whole, well-formed UTF-8. */
#include <string.h>

#include "tokenizer_impl.h"
#include "../core/core.h"

/* Appends s[len] at buf + *n when it fits in cap; counts it always (in 64
 * bits: a count past 4 GiB does not wrap in wasm32, see TOK_PIECE_SLACK). */
static void put(char *buf, size_t cap, uint64_t *n, const void *s, size_t len) {
  if (buf && *n + len <= cap) memcpy(buf + *n, s, len);
  *n += len;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Byte-level text back to bytes; a character outside the 256 gives
 * "[UNK_BYTE_0x<its utf-8 in hex><the token's text>]" as llama.cpp does. */
static uint64_t decode_byte_level(const char *s, size_t len, char *buf, size_t cap) {
  uint64_t n = 0;
  for (size_t i = 0; i < len;) {
    uint32_t cp = tok_utf8_decode((const unsigned char *)s, len, &i);
    int b = tok_cpt_to_byte(cp);
    if (b >= 0) {
      char c = (char)b;
      put(buf, cap, &n, &c, 1);
      continue;
    }
    unsigned char u[4];
    size_t m = tok_utf8_encode(cp, u);
    put(buf, cap, &n, "[UNK_BYTE_0x", 12);
    for (size_t j = 0; j < m; j++) {
      static const char HEX[] = "0123456789abcdef";
      char h[2] = {HEX[u[j] >> 4], HEX[u[j] & 15]};
      put(buf, cap, &n, h, 2);
    }
    put(buf, cap, &n, s, len);
    put(buf, cap, &n, "]", 1);
  }
  return n;
}

uint64_t tok_render_piece(const rlx_tokenizer *t, int32_t id, char *buf, size_t cap) {
  size_t len;
  uint64_t n = 0;
  const char *s = tok_text(t, id, &len);
  uint16_t a = t->attr[id];
  if (a & (TOK_UNKNOWN | TOK_CONTROL | TOK_USER_DEFINED)) {
    put(buf, cap, &n, s, len);
  } else if (a & TOK_NORMAL) {
    if (t->type == TOK_BPE) return decode_byte_level(s, len, buf, cap);
    for (size_t i = 0; i < len; i++) {
      if (i + 2 < len && memcmp(s + i, "\xE2\x96\x81", 3) == 0) {
        put(buf, cap, &n, " ", 1);
        i += 2;
      } else {
        put(buf, cap, &n, s + i, 1);
      }
    }
  } else if (a & TOK_BYTE) {
    int v = 0; /* strtol of the two characters after "<0x" */
    for (size_t i = 3; i < 5 && i < len && hexval(s[i]) >= 0; i++) v = v * 16 + hexval(s[i]);
    char c = (char)v;
    put(buf, cap, &n, &c, 1);
  }
  return n;
}

/* The cached piece of id as the caller asks for it. */
static const char *piece_of(const rlx_tokenizer *t, int32_t id, int special, size_t *len) {
  if (!special && (t->attr[id] & (TOK_UNKNOWN | TOK_CONTROL))) {
    *len = 0;
    return t->piece;
  }
  *len = t->piece_off[id + 1] - t->piece_off[id];
  return t->piece + t->piece_off[id];
}

/* need counted in 64 bits: past what size_t holds (wasm32), *len says
 * SIZE_MAX and the call is refused as not fitting. */
static rlx_status finish(const char *fn, char *buf, size_t cap, uint64_t need, size_t *len) {
  *len = need < SIZE_MAX ? (size_t)need : SIZE_MAX;
  if (need > cap)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: %llu bytes do not fit in %zu", fn, (unsigned long long)need, cap);
  if (need < cap) buf[need] = 0;
  return RLX_OK;
}

rlx_status rlx_tokenizer_piece(const rlx_tokenizer *t, int32_t id, char *buf, size_t cap, size_t *len,
                               int special) {
  if (len) *len = 0;
  if (!t || !len || (!buf && cap)) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_piece: null argument");
  if (id < 0 || id >= t->n_vocab)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_piece: id %d outside the vocab (%d tokens)", id, t->n_vocab);
  size_t n;
  const char *p = piece_of(t, id, special, &n);
  if (n <= cap && n) memcpy(buf, p, n);
  return finish("rlx_tokenizer_piece", buf, cap, n, len);
}

/* llama.cpp's clean_up_tokenization_spaces passes, in place; the new length. */
static size_t clean_spaces(char *text, size_t total) {
  size_t total1 = total;
  total = total ? 1 : 0;
  for (size_t i = 1; i < total1; i++) {
    char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) total--;
    text[total++] = x;
  }
  size_t total2 = total;
  total = total ? 1 : 0;
  for (size_t i = 1; i < total2; i++) {
    char x = text[i];
    if (x == '\'' && i + 1 < total2 && text[i - 1] == ' ' && text[i + 1] == ' ') {
      total--;
      text[++i] = 0;
    }
    text[total++] = x;
  }
  size_t total3 = total;
  total = total ? 1 : 0;
  for (size_t i = 1; i < total3; i++) {
    char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < total3) {
      char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') total--;
      else if (x1 != 't' && x1 != 'd' && i + 2 < total3) {
        char x2 = text[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) total--;
      }
    }
    text[total++] = x;
  }
  return total;
}

rlx_status rlx_tokenizer_decode(const rlx_tokenizer *t, const int32_t *ids, size_t n, char *buf, size_t cap,
                                size_t *len, int skip_special) {
  if (len) *len = 0;
  if (!t || !len || (!ids && n) || (!buf && cap))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_decode: null argument");
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= t->n_vocab)
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_decode: ids[%zu] = %d outside the vocab (%d tokens)", i,
                       ids[i], t->n_vocab);
  int remove_space = t->add_space_prefix, special = !skip_special;
  if (skip_special && t->add_bos && n > 0 && ids[0] == t->bos) {
    remove_space = 0;
    ids++;
    n--;
  }
  if (skip_special && t->add_eos && n > 0 && ids[n - 1] == t->eos) n--;
  /* the text before clean-up: into buf when it fits, else a scratch buffer */
  uint64_t total = 0; /* 64-bit: many long pieces do not wrap in wasm32 */
  for (size_t i = 0; i < n; i++) {
    size_t m;
    const char *p = piece_of(t, ids[i], special, &m);
    if (i == 0 && remove_space && m && p[0] == ' ') m--;
    total += m;
  }
  tok_buf scratch = {0};
  char *out = buf;
  if (total > cap) {
    if (!t->clean_spaces) return finish("rlx_tokenizer_decode", buf, cap, total, len);
    if (total > SIZE_MAX / 2 || !tok_reserve(&scratch, (size_t)total))
      return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_decode: out of memory for %llu bytes of text",
                       (unsigned long long)total);
    out = scratch.p;
  }
  size_t w = 0;
  for (size_t i = 0; i < n; i++) {
    size_t m;
    const char *p = piece_of(t, ids[i], special, &m);
    if (i == 0 && remove_space && m && p[0] == ' ') p++, m--;
    if (m) memcpy(out + w, p, m);
    w += m;
  }
  if (t->clean_spaces) w = clean_spaces(out, w);
  if (out != buf && w <= cap && w) memcpy(buf, out, w);
  tok_buf_free(&scratch);
  return finish("rlx_tokenizer_decode", buf, cap, w, len);
}

/* ---- streaming ---------------------------------------------------------------------- */
void rlx_detok_init(rlx_detok *d, int special) {
  if (!d) return;
  memset(d, 0, sizeof *d);
  d->special = special != 0;
}

/* Length of the well-formed sequence led by c (0: c cannot lead one), and
 * the range its second byte must fall in. */
static size_t seq_len(unsigned c, unsigned *lo, unsigned *hi) {
  *lo = 0x80, *hi = 0xBF;
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return 2;
  if (c >= 0xE0 && c <= 0xEF) {
    if (c == 0xE0) *lo = 0xA0;
    if (c == 0xED) *hi = 0x9F;
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (c == 0xF0) *lo = 0x90;
    if (c == 0xF4) *hi = 0x8F;
    return 4;
  }
  return 0;
}

/* Runs held + piece through the validator; writes to out when write is set.
 * Returns the output size (64-bit: three bytes per bad byte do not wrap in
 * wasm32); *keep is how many trailing bytes to hold. */
static uint64_t detok_run(const rlx_detok *d, const char *piece, size_t plen, char *out, int write, size_t *keep) {
  size_t total = d->n_held + plen, i = 0;
  uint64_t o = 0;
#define AT(k) ((k) < d->n_held ? d->held[k] : (unsigned char)piece[(k) - d->n_held])
  *keep = 0;
  while (i < total) {
    unsigned lo, hi, c = AT(i);
    size_t L = seq_len(c, &lo, &hi), k = 1;
    for (; L > 1 && k < L && i + k < total; k++) {
      unsigned x = AT(i + k);
      if (k == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF)) break;
    }
    if (L && k == L) {
      for (size_t j = 0; j < L; j++, o++)
        if (write) out[o] = (char)AT(i + j);
      i += L;
    } else if (L && i + k == total) {
      *keep = total - i; /* a valid prefix cut by the end: wait for more */
      break;
    } else {
      if (write) memcpy(out + o, "\xEF\xBF\xBD", 3);
      o += 3;
      i++;
    }
  }
  return o;
#undef AT
}

rlx_status rlx_detok_push(rlx_detok *d, const rlx_tokenizer *t, int32_t id, char *out, size_t cap, size_t *len) {
  if (len) *len = 0;
  if (!d || !t || !len || (!out && cap)) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_detok_push: null argument");
  if (id < 0 || id >= t->n_vocab)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_detok_push: id %d outside the vocab (%d tokens)", id, t->n_vocab);
  if (d->n_held > 3) return rlx_error(RLX_ERR_STATE, "rlx_detok_push: the detokenizer was not initialised");
  size_t plen, keep;
  const char *p = piece_of(t, id, d->special, &plen);
  const uint64_t need = detok_run(d, p, plen, NULL, 0, &keep);
  if (need > cap) return finish("rlx_detok_push", out, cap, need, len);
  detok_run(d, p, plen, out, 1, &keep);
  unsigned char held[4];
  size_t total = d->n_held + plen;
  for (size_t k = 0; k < keep; k++) {
    size_t at = total - keep + k;
    held[k] = at < d->n_held ? d->held[at] : (unsigned char)p[at - d->n_held];
  }
  memcpy(d->held, held, keep);
  d->n_held = (uint32_t)keep;
  return finish("rlx_detok_push", out, cap, need, len);
}

rlx_status rlx_text_as_streamed(const char *in, size_t n, char *out, size_t cap, size_t *len) {
  if (len) *len = 0;
  if (!len || (!in && n) || (!out && cap)) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_text_as_streamed: null argument");
  rlx_detok d;
  rlx_detok_init(&d, 0);
  size_t keep;
  const uint64_t body = detok_run(&d, in ? in : "", n, NULL, 0, &keep), need = body + (keep ? 3 : 0);
  if (need > cap) return finish("rlx_text_as_streamed", out, cap, need, len);
  detok_run(&d, in ? in : "", n, out, 1, &keep);
  if (keep) memcpy(out + body, "\xEF\xBF\xBD", 3); /* a character cut by the end, as flush gives it */
  return finish("rlx_text_as_streamed", out, cap, need, len);
}

rlx_status rlx_detok_flush(rlx_detok *d, char *out, size_t cap, size_t *len) {
  if (len) *len = 0;
  if (!d || !len || (!out && cap)) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_detok_flush: null argument");
  size_t need = d->n_held ? 3 : 0;
  if (need > cap) return finish("rlx_detok_flush", out, cap, need, len);
  if (need) memcpy(out, "\xEF\xBF\xBD", 3);
  d->n_held = 0;
  return finish("rlx_detok_flush", out, cap, need, len);
}
