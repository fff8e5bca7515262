/* tokenizer.c - the tokenizer's common parts: lookups (text -> id, merge
 * ranks), scratch buffers and the merge heap, lenient UTF-8, accessors, and
 * encode: special tokens are split out of the text first (llama.cpp's
 * tokenizer_st_partition: longest special text first, each occurrence
 * leftmost), then each piece of plain text goes to the SPM or BPE body.
 * Loading is in tokenizer_load.c, pieces and decoding in tokenizer_text.c. */
#include <string.h>

#include "tokenizer_impl.h"
#include "../core/core.h"

/* ---- lookups ----------------------------------------------------------------- */
static uint64_t hash_bytes(const char *s, size_t len) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h ^ (h >> 29);
}

int32_t tok_find(const rlx_tokenizer *t, const char *s, size_t len) {
  uint32_t mask = t->n_slots - 1, i = (uint32_t)hash_bytes(s, len) & mask;
  for (;; i = (i + 1) & mask) {
    int32_t id = t->slots[i];
    if (id < 0) return RLX_TOKEN_NULL;
    size_t n;
    const char *x = tok_text(t, id, &n);
    if (n == len && memcmp(x, s, len) == 0) return id;
  }
}

static uint32_t hash_pair(uint64_t key) {
  key ^= key >> 33;
  key *= 0xff51afd7ed558ccdull;
  key ^= key >> 33;
  return (uint32_t)key;
}

int32_t tok_merge_rank(const rlx_tokenizer *t, int32_t left, int32_t right) {
  if (!t->n_merge_slots || left < 0 || right < 0) return -1;
  uint64_t key = (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
  uint32_t mask = t->n_merge_slots - 1, i = hash_pair(key) & mask;
  for (;; i = (i + 1) & mask) {
    if (t->merge_keys[i] == 0) return -1;
    if (t->merge_keys[i] == key) return t->merge_rank[i];
  }
}

/* ---- scratch and the heap -------------------------------------------------------- */
int tok_reserve(tok_buf *b, size_t bytes) {
  if (bytes <= b->bytes) return 1;
  size_t n = b->bytes ? b->bytes : 64;
  while (n < bytes) {
    if (n > SIZE_MAX / 2) return 0;
    n *= 2;
  }
  void *p = rlx_realloc(b->p, b->bytes, n);
  if (!p) return 0;
  b->p = p;
  b->bytes = n;
  return 1;
}

void tok_buf_free(tok_buf *b) {
  rlx_free(b->p, b->bytes);
  b->p = NULL;
  b->bytes = 0;
}

static int before(const tok_bigram *a, const tok_bigram *b) {
  return a->key < b->key || (a->key == b->key && a->left < b->left);
}

int tok_heap_push(tok_heap *h, tok_bigram b) {
  if (h->n + 1 > SIZE_MAX / sizeof b || !tok_reserve(&h->buf, (h->n + 1) * sizeof b)) return 0;
  tok_bigram *a = h->buf.p;
  size_t i = h->n++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!before(&b, &a[p])) break;
    a[i] = a[p];
    i = p;
  }
  a[i] = b;
  return 1;
}

int tok_heap_pop(tok_heap *h, tok_bigram *out) {
  if (!h->n) return 0;
  tok_bigram *a = h->buf.p;
  *out = a[0];
  tok_bigram last = a[--h->n];
  size_t i = 0, n = h->n;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    if (c + 1 < n && before(&a[c + 1], &a[c])) c++;
    if (!before(&a[c], &last)) break;
    a[i] = a[c];
    i = c;
  }
  if (n) a[i] = last;
  return 1;
}

/* ---- UTF-8 ------------------------------------------------------------------------- */
uint32_t tok_utf8_decode(const unsigned char *s, size_t len, size_t *i) {
  size_t o = *i;
  unsigned c = s[o];
  uint32_t cp;
  if (!(c & 0x80)) {
    *i = o + 1;
    return c;
  }
  if (!(c & 0x40)) goto bad;
  if (!(c & 0x20)) {
    if (o + 1 >= len || (s[o + 1] & 0xC0) != 0x80) goto bad;
    *i = o + 2;
    return ((c & 0x1Fu) << 6) | (s[o + 1] & 0x3Fu);
  }
  if (!(c & 0x10)) {
    if (o + 2 >= len || (s[o + 1] & 0xC0) != 0x80 || (s[o + 2] & 0xC0) != 0x80) goto bad;
    *i = o + 3;
    return ((c & 0x0Fu) << 12) | ((s[o + 1] & 0x3Fu) << 6) | (s[o + 2] & 0x3Fu);
  }
  if (!(c & 0x08)) {
    if (o + 3 >= len || (s[o + 1] & 0xC0) != 0x80 || (s[o + 2] & 0xC0) != 0x80 || (s[o + 3] & 0xC0) != 0x80)
      goto bad;
    cp = ((c & 0x07u) << 18) | ((s[o + 1] & 0x3Fu) << 12) | ((s[o + 2] & 0x3Fu) << 6) | (s[o + 3] & 0x3Fu);
    if (cp > 0x10FFFF) goto bad;
    *i = o + 4;
    return cp;
  }
bad:
  *i = o + 1;
  return 0xFFFD;
}

size_t tok_utf8_encode(uint32_t cp, unsigned char out[4]) {
  if (cp <= 0x7F) {
    out[0] = (unsigned char)cp;
    return 1;
  }
  if (cp <= 0x7FF) {
    out[0] = (unsigned char)(0xC0 | (cp >> 6));
    out[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp <= 0xFFFF) {
    out[0] = (unsigned char)(0xE0 | (cp >> 12));
    out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = (unsigned char)(0xF0 | ((cp >> 18) & 0x07));
  out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  out[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* ---- accessors ------------------------------------------------------------------------ */
int32_t rlx_tokenizer_n_vocab(const rlx_tokenizer *t) { return t ? t->n_vocab : 0; }
int32_t rlx_tokenizer_bos(const rlx_tokenizer *t) { return t ? t->bos : RLX_TOKEN_NULL; }
int32_t rlx_tokenizer_eos(const rlx_tokenizer *t) { return t ? t->eos : RLX_TOKEN_NULL; }
int32_t rlx_tokenizer_eot(const rlx_tokenizer *t) { return t ? t->eot : RLX_TOKEN_NULL; }
int32_t rlx_tokenizer_eom(const rlx_tokenizer *t) { return t ? t->eom : RLX_TOKEN_NULL; }
int32_t rlx_tokenizer_unk(const rlx_tokenizer *t) { return t ? t->unk : RLX_TOKEN_NULL; }
int32_t rlx_tokenizer_pad(const rlx_tokenizer *t) { return t ? t->pad : RLX_TOKEN_NULL; }
int rlx_tokenizer_add_bos(const rlx_tokenizer *t) { return t ? t->add_bos : 0; }
const char *rlx_tokenizer_model(const rlx_tokenizer *t) { return t ? t->model_name : NULL; }
const char *rlx_tokenizer_pre(const rlx_tokenizer *t) { return t ? t->pre_name : NULL; }

int rlx_tokenizer_is_eog(const rlx_tokenizer *t, int32_t id) {
  return t && id >= 0 && id < t->n_vocab && (t->attr[id] & TOK_EOG) != 0;
}

int rlx_tokenizer_is_control(const rlx_tokenizer *t, int32_t id) {
  return t && id >= 0 && id < t->n_vocab && (t->attr[id] & (TOK_CONTROL | TOK_UNKNOWN)) != 0;
}

rlx_status rlx_tokenizer_token_text(const rlx_tokenizer *t, int32_t id, const char **text, size_t *len) {
  if (!t || !text || !len) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_token_text: null argument");
  if (id < 0 || id >= t->n_vocab)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_token_text: id %d outside the vocab (%d tokens)", id,
                     t->n_vocab);
  *text = tok_text(t, id, len);
  return RLX_OK;
}

/* ---- encode ------------------------------------------------------------------------------- */
typedef struct {
  size_t off, len;
  int32_t id; /* RLX_TOKEN_NULL: raw text */
} fragment;

static const char *find_bytes(const char *h, size_t hn, const char *n, size_t nn) {
  if (nn == 0 || nn > hn) return NULL;
  const char *end = h + (hn - nn) + 1;
  for (const char *p = h; p < end; p++) {
    p = memchr(p, (unsigned char)n[0], (size_t)(end - p));
    if (!p) return NULL;
    if (memcmp(p, n, nn) == 0) return p;
  }
  return NULL;
}

/* Splits the raw fragments at every occurrence of each special token, in the
 * order of t->special, like llama.cpp (control and unknown tokens only when
 * parse_special).  *frags holds *n fragments. */
static rlx_status partition(const rlx_tokenizer *t, const char *text, size_t len, int parse_special,
                            tok_buf *a, tok_buf *b, size_t *n_out) {
  if (!tok_reserve(a, sizeof(fragment))) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_encode: out of memory");
  ((fragment *)a->p)[0] = (fragment){0, len, RLX_TOKEN_NULL};
  size_t n = 1;
  for (int32_t s = 0; s < t->n_special; s++) {
    int32_t id = t->special[s];
    if (!parse_special && (t->attr[id] & (TOK_CONTROL | TOK_UNKNOWN))) continue;
    size_t slen;
    const char *stext = tok_text(t, id, &slen);
    size_t m = 0;
    for (size_t f = 0; f < n; f++) {
      fragment fr = ((fragment *)a->p)[f];
      /* at most 2 new fragments per occurrence, plus the rest */
      const char *base = text + fr.off, *hit;
      size_t pos = 0;
      while (fr.id == RLX_TOKEN_NULL && (hit = find_bytes(base + pos, fr.len - pos, stext, slen)) != NULL) {
        size_t at = (size_t)(hit - base);
        if (!tok_reserve(b, (m + 3) * sizeof(fragment)))
          return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_encode: out of memory");
        fragment *o = b->p;
        if (at > pos) o[m++] = (fragment){fr.off + pos, at - pos, RLX_TOKEN_NULL};
        o[m++] = (fragment){fr.off + at, slen, id};
        pos = at + slen;
      }
      if (!tok_reserve(b, (m + 1) * sizeof(fragment)))
        return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_encode: out of memory");
      if (fr.id != RLX_TOKEN_NULL) ((fragment *)b->p)[m++] = fr;
      else if (pos < fr.len) ((fragment *)b->p)[m++] = (fragment){fr.off + pos, fr.len - pos, RLX_TOKEN_NULL};
    }
    tok_buf tmp = *a;
    *a = *b;
    *b = tmp;
    n = m;
  }
  *n_out = n;
  return RLX_OK;
}

/* Appends part [off, off + plen) of text to the fragments in *all (*n of
 * them), its special tokens split out as partition() does; plain text that
 * continues plain text of the previous part joins that fragment, so parts
 * cut only where specials may be parsed, never how text is tokenized. */
static rlx_status add_part(const rlx_tokenizer *t, const char *text, size_t off, size_t plen, int parse_special,
                           tok_buf *all, size_t *n, tok_buf *a, tok_buf *b) {
  size_t n_frag = 0;
  rlx_status st = partition(t, text + off, plen, parse_special, a, b, &n_frag);
  if (st != RLX_OK) return st;
  if (!tok_reserve(all, (*n + n_frag) * sizeof(fragment)))
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_encode: out of memory");
  fragment *o = all->p;
  for (size_t f = 0; f < n_frag; f++) {
    fragment fr = ((fragment *)a->p)[f];
    fr.off += off;
    if (fr.id == RLX_TOKEN_NULL && *n > 0 && o[*n - 1].id == RLX_TOKEN_NULL && o[*n - 1].off + o[*n - 1].len == fr.off)
      o[*n - 1].len += fr.len;
    else
      o[(*n)++] = fr;
  }
  return RLX_OK;
}

rlx_status rlx_tokenizer_encode(const rlx_tokenizer *t, const char *text, size_t len, int add_special,
                                int parse_special, int32_t *ids, size_t cap, size_t *n_ids) {
  const unsigned char sp = parse_special != 0;
  return rlx_tokenizer_encode_parts(t, text, len, &len, &sp, 1, add_special, 0, ids, cap, n_ids);
}

rlx_status rlx_tokenizer_encode_parts(const rlx_tokenizer *t, const char *text, size_t len, const size_t *ends,
                                      const unsigned char *parse_special, size_t n_parts, int add_special,
                                      int continued, int32_t *ids, size_t cap, size_t *n_ids) {
  if (n_ids) *n_ids = 0;
  if (!t || !n_ids || (!text && len) || (!ids && cap) || (n_parts && (!ends || !parse_special)))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_encode: null argument");
  if (add_special < -1 || add_special > 1)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_encode: add_special must be -1, 0 or 1 (is %d)",
                     add_special);
  for (size_t i = 0; i < n_parts; i++)
    if (ends[i] > len || (i > 0 && ends[i] < ends[i - 1]) || (i + 1 == n_parts && ends[i] != len))
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_encode: part %zu ends at %zu, outside the text's %zu bytes "
                       "or before the part before it", i, ends[i], len);
  int add_bos = add_special == 1 || (add_special == -1 && t->add_bos);
  int add_eos = add_special != 0 && t->add_eos;
  if (add_bos && t->bos == RLX_TOKEN_NULL)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_encode: BOS requested but the vocab has no BOS token");
  tok_out o = {ids, cap, 0};
  tok_buf all = {0}, a = {0}, b = {0};
  size_t n_frag = 0;
  rlx_status st = RLX_OK;
  for (size_t i = 0, off = 0; st == RLX_OK && i < n_parts; off = ends[i++])
    if (ends[i] > off) st = add_part(t, text, off, ends[i] - off, parse_special[i] != 0, &all, &n_frag, &a, &b);
  if (st == RLX_OK) {
    int prev_special = !continued; /* SPM: a space prefix before the first text and after every special token */
    if (add_bos) tok_emit(&o, t->bos);
    for (size_t f = 0; f < n_frag && st == RLX_OK; f++) {
      fragment fr = ((fragment *)all.p)[f];
      if (fr.id != RLX_TOKEN_NULL) {
        tok_emit(&o, fr.id);
        prev_special = 1;
      } else if (t->type == TOK_SPM) {
        st = tok_spm_fragment(t, text + fr.off, fr.len, t->add_space_prefix && prev_special, &o);
        prev_special = 0;
      } else {
        st = tok_bpe_fragment(t, text + fr.off, fr.len, &o);
      }
    }
    if (st == RLX_OK && add_eos) tok_emit(&o, t->eos);
  }
  tok_buf_free(&all);
  tok_buf_free(&a);
  tok_buf_free(&b);
  if (st != RLX_OK) return st;
  *n_ids = o.n;
  if (o.n > cap)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_encode: %zu ids do not fit in %zu", o.n, cap);
  return RLX_OK;
}
