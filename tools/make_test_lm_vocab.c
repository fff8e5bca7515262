/* make_test_lm_vocab.c - trains the small tokenizer vocabularies of
 * build/make_test_lm from a corpus (see make_test_lm.h).  Both trainers
 * split the text into words, count them, then repeatedly merge the most
 * frequent adjacent pair of symbols (ties: the smaller concatenation in
 * byte order), which makes the result the same on every machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "make_test_lm.h"

#define SPACE_MARK "\xe2\x96\x81" /* U+2581, SentencePiece's space */

/* ---- symbols and words ---------------------------------------------------- */
typedef struct {
  char **sym;      /* interned symbol strings */
  int32_t n_sym, cap_sym;
  int32_t **word;  /* unique words as symbol ids */
  int32_t *wlen, *wcount;
  char **wtext;    /* the words' text, to find duplicates */
  int32_t n_word, cap_word;
} corpus;

static void *xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (!q) {
    fprintf(stderr, "make_test_lm: out of memory\n");
    exit(1);
  }
  return q;
}

static char *xstrndup(const char *s, size_t n) {
  char *d = xrealloc(NULL, n + 1);
  memcpy(d, s, n);
  d[n] = 0;
  return d;
}

static int32_t sym_find(const corpus *c, const char *s) {
  for (int32_t i = 0; i < c->n_sym; i++)
    if (strcmp(c->sym[i], s) == 0) return i;
  return -1;
}

static int32_t sym_intern(corpus *c, const char *s, size_t n) {
  char *t = xstrndup(s, n);
  int32_t i = sym_find(c, t);
  if (i >= 0) {
    free(t);
    return i;
  }
  if (c->n_sym == c->cap_sym) {
    c->cap_sym = c->cap_sym ? 2 * c->cap_sym : 512;
    c->sym = xrealloc(c->sym, (size_t)c->cap_sym * sizeof *c->sym);
  }
  c->sym[c->n_sym] = t;
  return c->n_sym++;
}

/* Adds one occurrence of a word given as symbol strings s[0..n) (each
 * NUL-terminated in one buffer, lens given). */
static void word_add(corpus *c, const char *text, size_t tlen, const int32_t *syms, int32_t n) {
  for (int32_t i = 0; i < c->n_word; i++)
    if (strlen(c->wtext[i]) == tlen && memcmp(c->wtext[i], text, tlen) == 0) {
      c->wcount[i]++;
      return;
    }
  if (c->n_word == c->cap_word) {
    c->cap_word = c->cap_word ? 2 * c->cap_word : 256;
    c->word = xrealloc(c->word, (size_t)c->cap_word * sizeof *c->word);
    c->wlen = xrealloc(c->wlen, (size_t)c->cap_word * sizeof *c->wlen);
    c->wcount = xrealloc(c->wcount, (size_t)c->cap_word * sizeof *c->wcount);
    c->wtext = xrealloc(c->wtext, (size_t)c->cap_word * sizeof *c->wtext);
  }
  c->word[c->n_word] = xrealloc(NULL, (size_t)n * sizeof(int32_t));
  memcpy(c->word[c->n_word], syms, (size_t)n * sizeof(int32_t));
  c->wlen[c->n_word] = n;
  c->wcount[c->n_word] = 1;
  c->wtext[c->n_word] = xstrndup(text, tlen);
  c->n_word++;
}

static void corpus_free(corpus *c) {
  for (int32_t i = 0; i < c->n_sym; i++) free(c->sym[i]);
  for (int32_t i = 0; i < c->n_word; i++) {
    free(c->word[i]);
    free(c->wtext[i]);
  }
  free(c->sym);
  free(c->word);
  free(c->wlen);
  free(c->wcount);
  free(c->wtext);
}

/* ---- merging ------------------------------------------------------------------ */
typedef struct {
  int32_t a, b, count;
} pair;

static int pair_cmp_ids(const void *x, const void *y) {
  const pair *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  return p->b < q->b ? -1 : p->b > q->b;
}

/* The most frequent pair (count >= 2) whose symbols both have ok[] set;
 * 0 when none. */
static int best_pair(const corpus *c, const unsigned char *ok, pair *best) {
  size_t n = 0, cap = 0;
  pair *ps = NULL;
  for (int32_t w = 0; w < c->n_word; w++)
    for (int32_t i = 0; i + 1 < c->wlen[w]; i++) {
      int32_t a = c->word[w][i], b = c->word[w][i + 1];
      if (!ok[a] || !ok[b]) continue;
      if (n == cap) {
        cap = cap ? 2 * cap : 1024;
        ps = xrealloc(ps, cap * sizeof *ps);
      }
      ps[n++] = (pair){a, b, c->wcount[w]};
    }
  qsort(ps, n, sizeof *ps, pair_cmp_ids);
  int found = 0;
  char cat_best[256] = "", cat[256];
  for (size_t i = 0; i < n;) {
    size_t j = i;
    int32_t count = 0;
    while (j < n && ps[j].a == ps[i].a && ps[j].b == ps[i].b) count += ps[j++].count;
    snprintf(cat, sizeof cat, "%s%s", c->sym[ps[i].a], c->sym[ps[i].b]);
    if (count >= 2 && (!found || count > best->count || (count == best->count && strcmp(cat, cat_best) < 0))) {
      *best = (pair){ps[i].a, ps[i].b, count};
      memcpy(cat_best, cat, sizeof cat);
      found = 1;
    }
    i = j;
  }
  free(ps);
  return found;
}

/* Replaces every (a, b) in the words, left to right, by m. */
static void apply_merge(corpus *c, int32_t a, int32_t b, int32_t m) {
  for (int32_t w = 0; w < c->n_word; w++) {
    int32_t *s = c->word[w], k = 0;
    for (int32_t i = 0; i < c->wlen[w]; i++) {
      if (i + 1 < c->wlen[w] && s[i] == a && s[i + 1] == b) {
        s[k++] = m;
        i++;
      } else {
        s[k++] = s[i];
      }
    }
    c->wlen[w] = k;
  }
}

/* ---- output vocab ----------------------------------------------------------------- */
static int32_t vocab_find(const lm_vocab *v, const char *s) {
  for (int32_t i = 0; i < v->n_tokens; i++)
    if (strcmp(v->tokens[i], s) == 0) return i;
  return -1;
}

static void vocab_push(lm_vocab *v, int32_t cap, const char *s, float score, int32_t type) {
  if (v->n_tokens >= cap) return;
  v->tokens[v->n_tokens] = xstrndup(s, strlen(s));
  if (v->scores) v->scores[v->n_tokens] = score;
  v->types[v->n_tokens] = type;
  v->n_tokens++;
}

static void vocab_alloc(lm_vocab *v, int32_t cap, int with_scores) {
  memset(v, 0, sizeof *v);
  v->tokens = xrealloc(NULL, (size_t)cap * sizeof *v->tokens);
  v->types = xrealloc(NULL, (size_t)cap * sizeof *v->types);
  v->scores = with_scores ? xrealloc(NULL, (size_t)cap * sizeof *v->scores) : NULL;
  v->bos = v->eos = v->unk = v->pad = -1;
}

void lm_vocab_free(lm_vocab *v) {
  for (int32_t i = 0; i < v->n_tokens; i++) free(v->tokens[i]);
  for (int32_t i = 0; i < v->n_merges; i++) free(v->merges[i]);
  free(v->tokens);
  free(v->scores);
  free(v->types);
  free(v->merges);
  memset(v, 0, sizeof *v);
}

static size_t utf8_len(unsigned char b) {
  return b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 1;
}

/* ---- SentencePiece ("llama") --------------------------------------------------------- */
/* Each line becomes '▁' + the line with spaces as '▁' (add_space_prefix);
 * words start where a '▁' follows another character. */
static void spm_words(corpus *c, const char *text, size_t len) {
  size_t cap = 4 * len + 8;
  char *buf = xrealloc(NULL, cap);
  int32_t *syms = xrealloc(NULL, cap * sizeof(int32_t));
  size_t *starts = xrealloc(NULL, cap * sizeof(size_t));
  for (size_t p = 0; p < len;) {
    size_t e = p;
    while (e < len && text[e] != '\n') e++;
    size_t n = 0;
    memcpy(buf, SPACE_MARK, 3);
    n = 3;
    for (size_t i = p; i < e; i++) {
      if (text[i] == ' ') {
        memcpy(buf + n, SPACE_MARK, 3);
        n += 3;
      } else {
        buf[n++] = text[i];
      }
    }
    /* characters, then words */
    size_t nch = 0;
    for (size_t i = 0; i < n; i += utf8_len((unsigned char)buf[i])) starts[nch++] = i;
    size_t w0 = 0;
    for (size_t k = 1; k <= nch; k++) {
      int boundary = k == nch;
      if (!boundary) {
        int is_mark = memcmp(buf + starts[k], SPACE_MARK, 3) == 0;
        int prev_mark = memcmp(buf + starts[k - 1], SPACE_MARK, 3) == 0;
        boundary = is_mark && !prev_mark;
      }
      if (!boundary) continue;
      int32_t ns = 0;
      for (size_t j = w0; j < k; j++) {
        size_t end = j + 1 < nch ? starts[j + 1] : n;
        syms[ns++] = sym_intern(c, buf + starts[j], end - starts[j]);
      }
      size_t tend = k < nch ? starts[k] : n;
      word_add(c, buf + starts[w0], tend - starts[w0], syms, ns);
      w0 = k;
    }
    p = e + 1;
  }
  free(buf);
  free(syms);
  free(starts);
}

int lm_vocab_train_spm(const char *text, size_t len, int32_t n_vocab, lm_vocab *v) {
  if (n_vocab < 259 + 16) {
    fprintf(stderr, "make_test_lm: --n-vocab must be at least %d for the llama tokenizer\n", 259 + 16);
    return 0;
  }
  corpus c = {0};
  spm_words(&c, text, len);
  /* base characters: printable ones seen at least twice */
  int32_t *freq = calloc((size_t)c.n_sym + 1, sizeof(int32_t));
  for (int32_t w = 0; w < c.n_word; w++)
    for (int32_t i = 0; i < c.wlen[w]; i++) freq[c.word[w][i]] += c.wcount[w];
  int32_t n_base = 0, n_chars = c.n_sym;
  int32_t max_sym = n_chars + n_vocab;
  unsigned char *ok = calloc((size_t)max_sym, 1);
  int32_t *base = xrealloc(NULL, (size_t)n_chars * sizeof(int32_t));
  for (int32_t s = 0; s < n_chars; s++)
    if (freq[s] >= 2 && (unsigned char)c.sym[s][0] >= 0x20) {
      ok[s] = 1;
      base[n_base++] = s;
    }
  /* most frequent first, then by bytes */
  for (int32_t i = 1; i < n_base; i++)
    for (int32_t j = i; j > 0; j--) {
      int32_t x = base[j - 1], y = base[j];
      if (freq[x] > freq[y] || (freq[x] == freq[y] && strcmp(c.sym[x], c.sym[y]) < 0)) break;
      base[j - 1] = y;
      base[j] = x;
    }
  vocab_alloc(v, n_vocab, 1);
  vocab_push(v, n_vocab, "<unk>", 0.0f, TOK_UNKNOWN);
  vocab_push(v, n_vocab, "<s>", 0.0f, TOK_CONTROL);
  vocab_push(v, n_vocab, "</s>", 0.0f, TOK_CONTROL);
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof name, "<0x%02X>", b);
    vocab_push(v, n_vocab, name, 0.0f, TOK_BYTE);
  }
  v->unk = 0;
  v->bos = 1;
  v->eos = 2;
  int32_t want_merges = n_vocab - 259 - n_base, rank = 0;
  pair p;
  char **pieces = xrealloc(NULL, (size_t)(want_merges > 0 ? want_merges : 1) * sizeof(char *));
  int32_t n_pieces = 0;
  while (n_pieces < want_merges && c.n_sym < max_sym && best_pair(&c, ok, &p)) {
    char cat[256];
    snprintf(cat, sizeof cat, "%s%s", c.sym[p.a], c.sym[p.b]);
    int32_t m = sym_intern(&c, cat, strlen(cat));
    ok[m] = 1;
    apply_merge(&c, p.a, p.b, m);
    int dup = 0;
    for (int32_t i = 0; i < n_pieces; i++) dup |= strcmp(pieces[i], cat) == 0;
    if (!dup && m >= n_chars) pieces[n_pieces++] = c.sym[m];
  }
  for (int32_t i = 0; i < n_pieces; i++) vocab_push(v, n_vocab, pieces[i], (float)-rank++, TOK_NORMAL);
  for (int32_t i = 0; i < n_base; i++)
    if (vocab_find(v, c.sym[base[i]]) < 0) vocab_push(v, n_vocab, c.sym[base[i]], (float)-rank++, TOK_NORMAL);
  free(pieces);
  free(freq);
  free(ok);
  free(base);
  corpus_free(&c);
  return 1;
}

/* ---- byte-level BPE ("gpt2", pre-tokenizer "qwen2") ----------------------------------------- */
/* GPT-2's byte -> character map: printable bytes map to themselves, the
 * others to U+0100 and up in byte order.  order[i] is the byte of token i. */
static void byte_map(char sym[256][3], int order[256]) {
  int n = 0, extra = 0;
  for (int b = 0; b < 256; b++) {
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    if (printable) order[n++] = b;
  }
  for (int b = 0; b < 256; b++) {
    int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    unsigned cp = printable ? (unsigned)b : 256u + (unsigned)extra++;
    if (!printable) order[n++] = b;
    sym[b][0] = (char)(0xC0 | (cp >> 6));
    sym[b][1] = (char)(0x80 | (cp & 0x3F));
    sym[b][2] = 0;
    if (cp < 0x80) {
      sym[b][0] = (char)cp;
      sym[b][1] = 0;
    }
  }
}

static uint32_t decode_cp(const char *s, size_t len, size_t i, size_t *n) {
  const unsigned char *u = (const unsigned char *)s + i;
  size_t k = utf8_len(u[0]);
  if (i + k > len) k = 1;
  *n = k;
  if (k == 1) return u[0];
  uint32_t cp = u[0] & (0x7F >> k);
  for (size_t j = 1; j < k; j++) cp = (cp << 6) | (u[j] & 0x3F);
  return cp;
}

/* Rough \p{L} and \p{N}: enough to split a training corpus into words. */
static int is_letter(uint32_t c) {
  if (c < 0x80) return (c | 32) >= 'a' && (c | 32) <= 'z';
  if (c < 0xC0 || c == 0xD7 || c == 0xF7) return 0;
  if ((c >= 0x2000 && c <= 0x2BFF) || (c >= 0x3000 && c <= 0x303F) || (c >= 0xFE00 && c <= 0xFE0F) ||
      (c >= 0xFF00 && c <= 0xFF20) || c >= 0x1F000)
    return 0;
  return 1;
}
static int is_digit(uint32_t c) { return c >= '0' && c <= '9'; }
static int is_space(uint32_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static int is_nl(uint32_t c) { return c == '\n' || c == '\r'; }
static int is_other(uint32_t c) { return !is_space(c) && !is_letter(c) && !is_digit(c); }

/* Length in bytes of the qwen2 pre-tokenizer's match at i (cp[] holds the
 * code points, off[] their byte offsets, off[n] the end). */
static size_t qwen2_chunk(const uint32_t *cp, const size_t *off, size_t n, size_t i) {
  size_t j = i;
  if (cp[i] == '\'' && i + 1 < n) { /* contractions */
    uint32_t a = cp[i + 1] | 32, b = i + 2 < n ? cp[i + 2] | 32 : 0;
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return off[i + 2] - off[i];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return off[i + 3] - off[i];
  }
  if (is_letter(cp[i]) || (!is_nl(cp[i]) && !is_letter(cp[i]) && !is_digit(cp[i]) && i + 1 < n && is_letter(cp[i + 1]))) {
    j = is_letter(cp[i]) ? i : i + 1;
    while (j < n && is_letter(cp[j])) j++;
    return off[j] - off[i];
  }
  if (is_digit(cp[i])) return off[i + 1] - off[i];
  j = cp[i] == ' ' && i + 1 < n && is_other(cp[i + 1]) ? i + 1 : i;
  if (is_other(cp[j])) {
    while (j < n && is_other(cp[j])) j++;
    while (j < n && is_nl(cp[j])) j++;
    return off[j] - off[i];
  }
  /* whitespace */
  j = i;
  size_t last_nl = n;
  while (j < n && is_space(cp[j])) {
    if (is_nl(cp[j])) last_nl = j;
    j++;
  }
  if (last_nl < n) return off[last_nl + 1] - off[i];
  if (j == n || j - i == 1) return off[j] - off[i];
  return off[j - 1] - off[i];
}

int lm_vocab_train_bpe(const char *text, size_t len, int32_t n_vocab, lm_vocab *v) {
  static const char *const specials[3] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
  if (n_vocab < 256 + 3 + 16) {
    fprintf(stderr, "make_test_lm: --n-vocab must be at least %d for the gpt2 tokenizer\n", 256 + 3 + 16);
    return 0;
  }
  char bsym[256][3];
  int order[256];
  byte_map(bsym, order);
  corpus c = {0};
  for (int i = 0; i < 256; i++) sym_intern(&c, bsym[order[i]], strlen(bsym[order[i]]));
  int32_t byte_id[256];
  for (int i = 0; i < 256; i++) byte_id[order[i]] = i;
  /* chunks */
  uint32_t *cp = xrealloc(NULL, (len + 1) * sizeof *cp);
  size_t *off = xrealloc(NULL, (len + 1) * sizeof *off), n = 0;
  for (size_t i = 0, k; i < len; i += k) {
    off[n] = i;
    cp[n++] = decode_cp(text, len, i, &k);
  }
  off[n] = len;
  int32_t *syms = xrealloc(NULL, (len + 1) * sizeof *syms);
  char *wtext = xrealloc(NULL, 2 * len + 1);
  for (size_t i = 0; i < n;) {
    size_t bytes = qwen2_chunk(cp, off, n, i), tl = 0;
    int32_t ns = 0;
    for (size_t b = 0; b < bytes; b++) {
      unsigned char u = (unsigned char)text[off[i] + b];
      syms[ns++] = byte_id[u];
      size_t sl = strlen(bsym[u]);
      memcpy(wtext + tl, bsym[u], sl);
      tl += sl;
    }
    word_add(&c, wtext, tl, syms, ns);
    size_t e = off[i] + bytes;
    while (i < n && off[i] < e) i++;
  }
  free(cp);
  free(off);
  free(syms);
  free(wtext);
  int32_t max_sym = 256 + n_vocab;
  unsigned char *ok = xrealloc(NULL, (size_t)max_sym);
  memset(ok, 1, (size_t)max_sym);
  vocab_alloc(v, n_vocab, 0);
  for (int i = 0; i < 256; i++) vocab_push(v, n_vocab, c.sym[i], 0.0f, TOK_NORMAL);
  v->merges = xrealloc(NULL, (size_t)n_vocab * sizeof *v->merges);
  pair p;
  while (v->n_tokens < n_vocab - 3 && v->n_merges < n_vocab && best_pair(&c, ok, &p)) {
    char cat[256], rule[256];
    snprintf(cat, sizeof cat, "%s%s", c.sym[p.a], c.sym[p.b]);
    snprintf(rule, sizeof rule, "%s %s", c.sym[p.a], c.sym[p.b]);
    int32_t m = sym_intern(&c, cat, strlen(cat));
    apply_merge(&c, p.a, p.b, m);
    v->merges[v->n_merges++] = xstrndup(rule, strlen(rule));
    if (vocab_find(v, cat) < 0) vocab_push(v, n_vocab, cat, 0.0f, TOK_NORMAL);
  }
  for (int i = 0; i < 3; i++) vocab_push(v, n_vocab, specials[i], 0.0f, TOK_CONTROL);
  v->bos = v->n_tokens - 3; /* <|endoftext|>, as Qwen's files set it */
  v->pad = v->n_tokens - 3;
  v->eos = v->n_tokens - 1; /* <|im_end|> */
  free(ok);
  corpus_free(&c);
  return 1;
}
