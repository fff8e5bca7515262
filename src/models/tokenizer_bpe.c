/* tokenizer_bpe.c - the byte-level BPE ("gpt2") tokenizer body, as
 * llama.cpp's llm_tokenizer_bpe_session with unicode_regex_split:
 *   1. the text is decoded leniently into code points and split into words
 *      by the pre-tokenizer of tokenizer.ggml.pre, hand-written here over
 *      Unicode classes (unicode_tables.c) exactly as llama.cpp runs them:
 *        gpt-2:  's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *        llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *                 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *        qwen2:  the same with \p{N} (one digit per word)
 *        default: [\p{P}\$\+<=>\^~\|]+ then gpt-2 then \p{N}+ then [0-9][0-9][0-9],
 *                 each splitting the pieces of the one before (a regex's
 *                 matches and the text between them all become pieces);
 *   2. each word's UTF-8 bytes are mapped to GPT-2's byte-level characters;
 *   3. one symbol per character; the adjacent pair of lowest merge rank is
 *      merged (leftmost on ties) until none is left;
 *   4. a final symbol that is not a token becomes the tokens of its single
 *      bytes where those exist (others are dropped, as in llama.cpp).
 * llama3-style vocabs take a whole word that is a token as it is. */
#include <string.h>

#include "tokenizer_impl.h"
#include "unicode_tables.h"
#include "../core/core.h"

#define F_WS 0x100 /* Unicode White_Space, besides the class bits */
#define OOR 0xFFFFFFFFu

static uint16_t uc_flags(uint32_t cp) {
  uint16_t ws = 0;
  if ((cp >= 9 && cp <= 13) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
      (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
      cp == 0x3000)
    ws = F_WS;
  if (cp > 0x10FFFF) return RLX_UC_UNDEFINED;
  uint32_t lo = 0, hi = rlx_uc_count; /* last start <= cp */
  while (hi - lo > 1) {
    uint32_t mid = (lo + hi) / 2;
    if (rlx_uc_starts[mid] <= cp) lo = mid;
    else hi = mid;
  }
  return (uint16_t)(rlx_uc_classes[lo] | ws);
}

/* ---- GPT-2 byte-level mapping --------------------------------------------------- */
static int byte_is_printable(unsigned b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE; }

/* The 68 other bytes map, in order, to U+0100..U+0143: 0x00-0x20, 0x7F-0xA0, 0xAD. */
uint32_t tok_byte_to_cpt(unsigned char b) {
  if (byte_is_printable(b)) return b;
  if (b <= 0x20) return 256u + b;
  if (b >= 0x7F && b <= 0xA0) return 256u + 33 + (b - 0x7Fu);
  return 256u + 67; /* 0xAD */
}

int tok_cpt_to_byte(uint32_t cp) {
  if (cp < 256) return byte_is_printable(cp) ? (int)cp : -1;
  if (cp >= 256 + 68) return -1;
  uint32_t n = cp - 256;
  if (n < 33) return (int)n;
  if (n < 67) return (int)(0x7F + n - 33);
  return 0xAD;
}

/* ---- the splitters ---------------------------------------------------------------- */
typedef struct {
  const uint32_t *cp;
  const uint16_t *fl;
  tok_buf *out; /* uint32_t piece lengths */
  size_t n_out;
  int oom;
} split;

static void add_len(split *s, size_t n) {
  if (!n) return;
  if (!tok_reserve(s->out, (s->n_out + 1) * sizeof(uint32_t))) {
    s->oom = 1;
    return;
  }
  ((uint32_t *)s->out->p)[s->n_out++] = (uint32_t)n;
}

#define FL(p) ((p) >= a && (p) < b ? s->fl[p] : 0)
#define CP(p) ((p) >= a && (p) < b ? s->cp[p] : OOR)
#define LNW (RLX_UC_LETTER | RLX_UC_NUMBER | F_WS)
static uint32_t ascii_lower(uint32_t c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Contraction at pos ('s 't 'm 'd 're 've 'll): its length, or 0. */
static size_t contraction(const split *s, size_t a, size_t b, size_t pos, int icase) {
  if (CP(pos) != '\'' || pos + 1 >= b) return 0;
  uint32_t n1 = CP(pos + 1);
  if (icase) n1 = ascii_lower(n1);
  if (n1 == 's' || n1 == 't' || n1 == 'm' || n1 == 'd') return 2;
  if (pos + 2 >= b) return 0;
  uint32_t n2 = CP(pos + 2);
  if (icase) n2 = ascii_lower(n2);
  if ((n1 == 'r' && n2 == 'e') || (n1 == 'v' && n2 == 'e') || (n1 == 'l' && n2 == 'l')) return 3;
  return 0;
}

/* The whitespace alternatives; llama3/qwen2 also \s*[\r\n]+ first. */
static size_t spaces(const split *s, size_t a, size_t b, size_t pos, int newline_rule) {
  size_t n = 0, last_rn = 0;
  while (FL(pos + n) & F_WS) {
    uint32_t c = CP(pos + n);
    if (c == '\r' || c == '\n') last_rn = pos + n + 1;
    n++;
  }
  if (newline_rule && last_rn) return last_rn - pos;
  if (n > 1 && CP(pos + n) != OOR) return n - 1; /* \s+(?!\S) */
  return n;                                       /* \s+ */
}

static void split_gpt2(split *s, size_t a, size_t b) {
  for (size_t pos = a; pos < b;) {
    uint32_t c = CP(pos);
    uint16_t f2 = c == ' ' ? FL(pos + 1) : FL(pos);
    size_t start = pos, n = contraction(s, a, b, pos, 0);
    if (n) {
      pos += n;
    } else if (f2 & (RLX_UC_LETTER | RLX_UC_NUMBER)) {
      uint16_t cls = f2 & RLX_UC_LETTER ? RLX_UC_LETTER : RLX_UC_NUMBER;
      pos += c == ' ';
      while (FL(pos) & cls) pos++;
    } else if (!(f2 & LNW) && f2) {
      pos += c == ' ';
      while (!(FL(pos) & LNW) && FL(pos)) pos++;
    } else if ((n = spaces(s, a, b, pos, 0)) != 0) {
      pos += n;
    } else {
      pos++;
    }
    add_len(s, pos - start);
  }
}

static void split_llama3(split *s, size_t a, size_t b, size_t max_digits) {
  for (size_t pos = a; pos < b;) {
    uint32_t c = CP(pos);
    uint16_t f = FL(pos);
    size_t start = pos, n = contraction(s, a, b, pos, 1);
    if (n) {
      pos += n;
    } else if (!(c == '\r' || c == '\n' || (f & RLX_UC_NUMBER)) &&
               ((f & RLX_UC_LETTER) || (FL(pos + 1) & RLX_UC_LETTER))) {
      pos++;
      while (FL(pos) & RLX_UC_LETTER) pos++;
    } else if (f & RLX_UC_NUMBER) {
      while ((FL(pos) & RLX_UC_NUMBER) && pos - start < max_digits) pos++;
    } else {
      uint16_t f2 = c == ' ' ? FL(pos + 1) : f;
      if (!(f2 & LNW) && f) {
        pos += c == ' ';
        while (!(FL(pos) & LNW) && FL(pos)) pos++;
        while (CP(pos) == '\r' || CP(pos) == '\n') pos++;
      } else if ((n = spaces(s, a, b, pos, 1)) != 0) {
        pos += n;
      } else {
        pos++;
      }
    }
    add_len(s, pos - start);
  }
}

/* Maximal runs of in-class and out-of-class code points alternate. */
static void split_runs(split *s, size_t a, size_t b, int (*in)(uint32_t, uint16_t)) {
  for (size_t pos = a; pos < b;) {
    size_t start = pos;
    int k = in(s->cp[pos], s->fl[pos]);
    while (pos < b && in(s->cp[pos], s->fl[pos]) == k) pos++;
    add_len(s, pos - start);
  }
}
static int in_punct(uint32_t c, uint16_t f) { return (f & RLX_UC_PUNCT) || (c < 128 && c && strchr("$+<=>^~|", (int)c)); }
static int in_number(uint32_t c, uint16_t f) { (void)c; return (f & RLX_UC_NUMBER) != 0; }

/* [0-9][0-9][0-9]: leftmost matches, the text between them kept. */
static void split_triples(split *s, size_t a, size_t b) {
  size_t gap = a, pos = a;
  while (pos + 3 <= b) {
    const uint32_t *c = s->cp + pos;
    if (c[0] >= '0' && c[0] <= '9' && c[1] >= '0' && c[1] <= '9' && c[2] >= '0' && c[2] <= '9') {
      add_len(s, pos - gap);
      add_len(s, 3);
      pos += 3;
      gap = pos;
    } else {
      pos++;
    }
  }
  add_len(s, b - gap);
}

/* Runs one stage over every piece in *in (lengths), writing into out. */
static void stage(split *s, const tok_buf *in, size_t n_in, int which) {
  size_t a = 0;
  s->n_out = 0;
  for (size_t i = 0; i < n_in && !s->oom; i++) {
    size_t b = a + ((const uint32_t *)in->p)[i];
    switch (which) {
      case 0: split_runs(s, a, b, in_punct); break;
      case 1: split_gpt2(s, a, b); break;
      case 2: split_runs(s, a, b, in_number); break;
      case 3: split_triples(s, a, b); break;
      case 4: split_llama3(s, a, b, 3); break;
      default: split_llama3(s, a, b, 1); break;
    }
    a = b;
  }
}

/* Words of cp[0, n) as piece lengths in *res (one of bufs). */
static int pre_split(const rlx_tokenizer *t, const uint32_t *cp, const uint16_t *fl, size_t n, tok_buf bufs[2],
                     tok_buf **res, size_t *n_res) {
  static const int CHAIN_DEFAULT[] = {0, 1, 2, 3}, CHAIN_GPT2[] = {1}, CHAIN_LLAMA3[] = {4}, CHAIN_QWEN2[] = {5};
  const int *chain = CHAIN_DEFAULT;
  size_t n_chain = 4;
  if (t->pre == PRE_GPT2) chain = CHAIN_GPT2, n_chain = 1;
  if (t->pre == PRE_LLAMA3) chain = CHAIN_LLAMA3, n_chain = 1;
  if (t->pre == PRE_QWEN2) chain = CHAIN_QWEN2, n_chain = 1;
  if (!tok_reserve(&bufs[0], sizeof(uint32_t))) return 0;
  ((uint32_t *)bufs[0].p)[0] = (uint32_t)n;
  size_t n_cur = 1, cur = 0;
  split s = {cp, fl, NULL, 0, 0};
  for (size_t k = 0; k < n_chain; k++) {
    s.out = &bufs[cur ^ 1];
    stage(&s, &bufs[cur], n_cur, chain[k]);
    if (s.oom) return 0;
    n_cur = s.n_out;
    cur ^= 1;
  }
  *res = &bufs[cur];
  *n_res = n_cur;
  return 1;
}

/* ---- merges ------------------------------------------------------------------------ */
static int add_bigram(const rlx_tokenizer *t, tok_sym *sym, tok_heap *h, int32_t l, int32_t r) {
  if (l < 0 || r < 0) return 1;
  int32_t rank = tok_merge_rank(t, sym[l].id, sym[r].id);
  if (rank < 0) return 1;
  tok_bigram bg = {(double)rank, l, r, sym[l].n, sym[r].n};
  return tok_heap_push(h, bg);
}

static int bpe_word(const rlx_tokenizer *t, const char *w, size_t len, tok_buf *symbuf, tok_heap *h, tok_out *o) {
  if (t->ignore_merges) {
    int32_t id = tok_find(t, w, len);
    if (id != RLX_TOKEN_NULL) {
      tok_emit(o, id);
      return 1;
    }
  }
  if (!tok_reserve(symbuf, (len + 1) * sizeof(tok_sym))) return 0;
  tok_sym *sym = symbuf->p;
  int32_t n_sym = 0;
  for (size_t off = 0; off < len;) {
    size_t n = tok_utf8_len((unsigned char)w[off]);
    if (n > len - off) n = len - off;
    sym[n_sym] = (tok_sym){(uint32_t)off, (uint32_t)n, n_sym - 1, off + n == len ? -1 : n_sym + 1,
                           tok_find(t, w + off, n)};
    n_sym++;
    off += n;
  }
  h->n = 0;
  for (int32_t i = 1; i < n_sym; i++)
    if (!add_bigram(t, sym, h, i - 1, i)) return 0;
  tok_bigram b;
  while (tok_heap_pop(h, &b)) {
    tok_sym *l = &sym[b.left], *r = &sym[b.right];
    if (l->n == 0 || r->n == 0 || l->n != b.n_left || r->n != b.n_right) continue; /* stale */
    l->n += r->n;
    l->id = tok_find(t, w + l->off, l->n);
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) sym[r->next].prev = b.left;
    if (!add_bigram(t, sym, h, l->prev, b.left) || !add_bigram(t, sym, h, b.left, l->next)) return 0;
  }
  for (int32_t i = n_sym ? 0 : -1; i != -1; i = sym[i].next) {
    if (sym[i].id != RLX_TOKEN_NULL) {
      tok_emit(o, sym[i].id);
      continue;
    }
    for (uint32_t j = 0; j < sym[i].n; j++) {
      int32_t id = t->byte_tok[(unsigned char)w[sym[i].off + j]];
      if (id != RLX_TOKEN_NULL) tok_emit(o, id);
    }
  }
  return 1;
}

rlx_status tok_bpe_fragment(const rlx_tokenizer *t, const char *text, size_t len, tok_out *o) {
  tok_buf cpbuf = {0}, flbuf = {0}, bufs[2] = {{0}, {0}}, word = {0}, symbuf = {0};
  tok_heap heap = {{0}, 0};
  rlx_status st = RLX_OK;
  if (len > UINT32_MAX / 8) {
    st = rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_encode: text too long");
    goto done;
  }
  if (!tok_reserve(&cpbuf, (len + 1) * sizeof(uint32_t)) || !tok_reserve(&flbuf, (len + 1) * sizeof(uint16_t)))
    goto oom;
  uint32_t *cp = cpbuf.p;
  uint16_t *fl = flbuf.p;
  size_t n = 0;
  for (size_t i = 0; i < len;) {
    cp[n] = tok_utf8_decode((const unsigned char *)text, len, &i);
    fl[n] = uc_flags(cp[n]);
    n++;
  }
  tok_buf *pieces;
  size_t n_pieces;
  if (!pre_split(t, cp, fl, n, bufs, &pieces, &n_pieces)) goto oom;
  size_t a = 0;
  for (size_t k = 0; k < n_pieces; k++) {
    size_t b = a + ((uint32_t *)pieces->p)[k];
    /* each code point: up to 4 bytes, each byte up to 2 bytes byte-level */
    if (!tok_reserve(&word, (b - a) * 8 + 1)) goto oom;
    char *w = word.p;
    size_t wl = 0;
    for (size_t i = a; i < b; i++) {
      unsigned char u[4];
      size_t m = tok_utf8_encode(cp[i], u);
      for (size_t j = 0; j < m; j++) wl += tok_utf8_encode(tok_byte_to_cpt(u[j]), (unsigned char *)w + wl);
    }
    if (!bpe_word(t, w, wl, &symbuf, &heap, o)) goto oom;
    a = b;
  }
  goto done;
oom:
  st = rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_encode: out of memory");
done:
  tok_buf_free(&cpbuf);
  tok_buf_free(&flbuf);
  tok_buf_free(&bufs[0]);
  tok_buf_free(&bufs[1]);
  tok_buf_free(&word);
  tok_buf_free(&symbuf);
  tok_buf_free(&heap.buf);
  return st;
}

rlx_status tok_bpe_split(const rlx_tokenizer *t, const char *text, size_t len, uint32_t *lens, size_t cap,
                         size_t *n_words) {
  tok_buf cpbuf = {0}, flbuf = {0}, bufs[2] = {{0}, {0}};
  rlx_status st = RLX_OK;
  *n_words = 0;
  if (!tok_reserve(&cpbuf, (len + 1) * sizeof(uint32_t)) || !tok_reserve(&flbuf, (len + 1) * sizeof(uint16_t))) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "tok_bpe_split: out of memory");
  } else {
    uint32_t *cp = cpbuf.p;
    uint16_t *fl = flbuf.p;
    size_t n = 0;
    for (size_t i = 0; i < len; n++) {
      cp[n] = tok_utf8_decode((const unsigned char *)text, len, &i);
      fl[n] = uc_flags(cp[n]);
    }
    tok_buf *pieces;
    size_t n_pieces;
    if (!pre_split(t, cp, fl, n, bufs, &pieces, &n_pieces)) {
      st = rlx_error(RLX_ERR_NO_MEMORY, "tok_bpe_split: out of memory");
    } else {
      for (size_t k = 0; k < n_pieces && k < cap; k++) lens[k] = ((uint32_t *)pieces->p)[k];
      *n_words = n_pieces;
      if (n_pieces > cap) st = rlx_error(RLX_ERR_INVALID_ARG, "tok_bpe_split: %zu words", n_pieces);
    }
  }
  tok_buf_free(&cpbuf);
  tok_buf_free(&flbuf);
  tok_buf_free(&bufs[0]);
  tok_buf_free(&bufs[1]);
  return st;
}
