/* json_value.c - a JSON text read into a tree of rlx_jv (json_value.h).
 * Strict JSON: escapes decoded to UTF-8 with surrogate pairs joined; a
 * lone surrogate, \u0000, a control character in a string, invalid UTF-8,
 * a malformed number or value, text after the value or nesting deeper than
 * MAX_DEPTH is refused naming the byte offset.  The nodes and strings live
 * in blocks freed together with the document. */
#include <string.h>

#include "json_value.h"
#include "../core/core.h"

#define MAX_DEPTH 64
#define BLOCK 4096

typedef struct block {
  struct block *prev;
  size_t size, used;
} block;

struct rlx_jdoc {
  block *last;
  rlx_jv *root;
};

typedef struct {
  const char *s;
  size_t len, i;
  const char *what;
  rlx_jdoc *d;
} reader;

static void *arena(rlx_jdoc *d, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!d->last || d->last->size - d->last->used < n) {
    size_t size = sizeof(block) + 16 + (n > BLOCK ? n : BLOCK);
    block *b = rlx_malloc(size);
    if (!b) return NULL;
    b->prev = d->last, b->size = size, b->used = (sizeof(block) + 15) & ~(size_t)15;
    d->last = b;
  }
  void *p = (char *)d->last + d->last->used;
  d->last->used += n;
  memset(p, 0, n);
  return p;
}

static rlx_status bad(const reader *r, const char *problem) {
  return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s at byte %zu", r->what, problem, r->i);
}

static rlx_status oom(const reader *r) { return rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory", r->what); }

static void ws(reader *r) {
  while (r->i < r->len && (r->s[r->i] == ' ' || r->s[r->i] == '\t' || r->s[r->i] == '\n' || r->s[r->i] == '\r'))
    r->i++;
}

static int eat(reader *r, char c) {
  ws(r);
  if (r->i < r->len && r->s[r->i] == c) return r->i++, 1;
  return 0;
}

static int hex4(reader *r, uint32_t *v) {
  if (r->len - r->i < 4) return 0;
  *v = 0;
  for (int k = 0; k < 4; k++) {
    char c = r->s[r->i++];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0) return 0;
    *v = *v * 16 + (uint32_t)d;
  }
  return 1;
}

/* Bytes of the valid UTF-8 sequence at s[0 .. n), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n) {
  size_t k = s[0] < 0x80 ? 1 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3
             : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
  if (!k || k > n) return 0;
  for (size_t i = 1; i < k; i++)
    if ((s[i] & 0xC0) != 0x80) return 0;
  if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] >= 0xA0) || (s[0] == 0xF0 && s[1] < 0x90) ||
      (s[0] == 0xF4 && s[1] >= 0x90))
    return 0; /* overlong, a surrogate, past U+10FFFF */
  return k;
}

/* A string at r (after whitespace) decoded into the arena. */
static rlx_status string(reader *r, const char **out, size_t *out_len) {
  ws(r);
  if (r->i >= r->len || r->s[r->i] != '"') return bad(r, "a string expected");
  size_t end = ++r->i;
  while (end < r->len && r->s[end] != '"') end += r->s[end] == '\\' ? 2 : 1;
  if (end >= r->len) return bad(r, "an unterminated string");
  char *buf = arena(r->d, end - r->i + 1); /* decoded text is never longer than its JSON form */
  if (!buf) return oom(r);
  size_t n = 0;
  while (r->s[r->i] != '"') {
    const unsigned char c = (unsigned char)r->s[r->i];
    if (c < 0x20) return bad(r, "a control character in a string");
    if (c != '\\') {
      size_t k = utf8_len((const unsigned char *)r->s + r->i, end - r->i);
      if (!k) return bad(r, "invalid UTF-8 in a string");
      memcpy(buf + n, r->s + r->i, k);
      n += k, r->i += k;
      continue;
    }
    const char e = r->s[++r->i];
    r->i++;
    const char *simple = e ? strchr("\"\\/bfnrt", e) : NULL;
    if (simple) {
      buf[n++] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
      continue;
    }
    uint32_t cp, lo;
    if (e != 'u' || !hex4(r, &cp)) return bad(r, "a malformed escape");
    if (cp >= 0xD800 && cp < 0xDC00) {
      if (!(r->len - r->i >= 6 && r->s[r->i] == '\\' && r->s[r->i + 1] == 'u' && (r->i += 2, hex4(r, &lo)) &&
            lo >= 0xDC00 && lo < 0xE000))
        return bad(r, "a lone surrogate escape");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    } else if (cp >= 0xDC00 && cp < 0xE000) {
      return bad(r, "a lone surrogate escape");
    } else if (cp == 0) {
      return bad(r, "\\u0000 (a NUL character) in a string");
    }
    unsigned char *o = (unsigned char *)buf + n;
    if (cp < 0x80) o[0] = (unsigned char)cp, n += 1;
    else if (cp < 0x800) o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 63)), n += 2;
    else if (cp < 0x10000)
      o[0] = (unsigned char)(0xE0 | cp >> 12), o[1] = (unsigned char)(0x80 | (cp >> 6 & 63)),
      o[2] = (unsigned char)(0x80 | (cp & 63)), n += 3;
    else
      o[0] = (unsigned char)(0xF0 | cp >> 18), o[1] = (unsigned char)(0x80 | (cp >> 12 & 63)),
      o[2] = (unsigned char)(0x80 | (cp >> 6 & 63)), o[3] = (unsigned char)(0x80 | (cp & 63)), n += 4;
  }
  r->i++;
  buf[n] = 0;
  *out = buf, *out_len = n;
  return RLX_OK;
}

static int digits(reader *r) {
  size_t from = r->i;
  while (r->i < r->len && r->s[r->i] >= '0' && r->s[r->i] <= '9') r->i++;
  return r->i > from;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static rlx_status number(reader *r, rlx_jv *v) {
  const size_t from = r->i;
  if (r->s[r->i] == '-') r->i++;
  if (r->i < r->len && r->s[r->i] == '0') r->i++;
  else if (!digits(r)) return r->i = from, bad(r, "a value expected");
  if (r->i < r->len && r->s[r->i] == '.' && (r->i++, !digits(r))) return bad(r, "digits expected after '.'");
  if (r->i < r->len && (r->s[r->i] == 'e' || r->s[r->i] == 'E')) {
    r->i++;
    if (r->i < r->len && (r->s[r->i] == '+' || r->s[r->i] == '-')) r->i++;
    if (!digits(r)) return bad(r, "digits expected in an exponent");
  }
  char *t = arena(r->d, r->i - from + 1);
  if (!t) return oom(r);
  memcpy(t, r->s + from, r->i - from);
  v->type = RLX_JV_NUMBER, v->s = t, v->len = r->i - from;
  return RLX_OK;
}

static rlx_status value(reader *r, rlx_jv *v, int depth) {
  ws(r);
  if (r->i >= r->len) return bad(r, "a value expected");
  if (depth > MAX_DEPTH) return bad(r, "values nested too deep");
  const char c = r->s[r->i];
  if (c == '"') return v->type = RLX_JV_STRING, string(r, &v->s, &v->len);
  if (c == '{' || c == '[') {
    const char close = c == '{' ? '}' : ']';
    v->type = c == '{' ? RLX_JV_OBJECT : RLX_JV_ARRAY;
    r->i++;
    if (eat(r, close)) return RLX_OK;
    rlx_jv **tail = &v->first;
    rlx_status st;
    do {
      rlx_jv *x = arena(r->d, sizeof *x);
      if (!x) return oom(r);
      if (c == '{' && ((st = string(r, &x->key, &x->key_len)) != RLX_OK || (!eat(r, ':') && (st = bad(r, "':' expected")))))
        return st;
      if ((st = value(r, x, depth + 1)) != RLX_OK) return st;
      *tail = x, tail = &x->next, v->n++;
    } while (eat(r, ','));
    return eat(r, close) ? RLX_OK : bad(r, c == '{' ? "',' or '}' expected" : "',' or ']' expected");
  }
  static const char *const words[] = {"null", "false", "true"};
  for (int k = 0; k < 3; k++) {
    size_t wl = strlen(words[k]);
    if (r->len - r->i >= wl && memcmp(r->s + r->i, words[k], wl) == 0) {
      v->type = k ? RLX_JV_BOOL : RLX_JV_NULL, v->b = k == 2;
      return r->i += wl, RLX_OK;
    }
  }
  return number(r, v);
}

void rlx_jdoc_free(rlx_jdoc *d) {
  if (!d) return;
  for (block *b = d->last, *p; b; b = p) p = b->prev, rlx_free(b, b->size);
  rlx_free(d, sizeof *d);
}

rlx_status rlx_jdoc_parse(const char *text, size_t len, const char *what, rlx_jdoc **out) {
  *out = NULL;
  rlx_jdoc *d = rlx_calloc(1, sizeof *d);
  reader r = {text ? text : "", text ? len : 0, 0, what, d};
  if (!d) return oom(&r);
  rlx_status st = (d->root = arena(d, sizeof *d->root)) ? value(&r, d->root, 0) : oom(&r);
  if (st == RLX_OK) {
    ws(&r);
    if (r.i != r.len) st = bad(&r, "text after the value");
  }
  if (st != RLX_OK) {
    rlx_jdoc_free(d);
    return st;
  }
  *out = d;
  return RLX_OK;
}

const rlx_jv *rlx_jdoc_root(const rlx_jdoc *d) { return d->root; }

const rlx_jv *rlx_jv_get(const rlx_jv *obj, const char *key) {
  if (!obj || obj->type != RLX_JV_OBJECT) return NULL;
  for (const rlx_jv *x = obj->first; x; x = x->next)
    if (strcmp(x->key, key) == 0) return x;
  return NULL;
}
