/* json_schema_text.c - the GBNF text the JSON Schema converter writes: a
 * growing buffer, string literals, a JSON value's text as a literal, and
 * the shared rules for JSON's primitives.  Whitespace between tokens is
 * bounded as llama.cpp's converter bounds it (nothing, one space, or one
 * or two line breaks and at most 20 spaces or tabs), and so are numbers
 * (at most 16 digits in each part), so a model cannot go on forever inside
 * them. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "json_schema.h"
#include "../core/core.h"

static int reserve(rlx_sbuf *b, size_t n) {
  if (b->oom) return 0;
  if (b->n + n + 1 <= b->cap) return 1;
  size_t c = b->cap ? b->cap * 2 : 256;
  while (c < b->n + n + 1) c *= 2;
  char *q = rlx_realloc(b->p, b->cap, c);
  if (!q) return b->oom = 1, 0;
  b->p = q, b->cap = c;
  return 1;
}

void rlx_sb_putn(rlx_sbuf *b, const char *s, size_t n) {
  if (!reserve(b, n)) return;
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void rlx_sb_put(rlx_sbuf *b, const char *s) { rlx_sb_putn(b, s, strlen(s)); }

void rlx_sb_printf(rlx_sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n <= 0 || !reserve(b, (size_t)n)) return;
  va_start(ap, fmt);
  vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)n;
}

void rlx_sb_free(rlx_sbuf *b) {
  rlx_free(b->p, b->cap);
  memset(b, 0, sizeof *b);
}

void rlx_sb_literal(rlx_sbuf *b, const char *s, size_t n) {
  rlx_sb_put(b, "\"");
  for (size_t i = 0; i < n; i++) {
    const unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') rlx_sb_printf(b, "\\%c", c);
    else if (c < 0x20 || c == 0x7F) rlx_sb_printf(b, "\\x%02X", c);
    else rlx_sb_putn(b, (const char *)&c, 1);
  }
  rlx_sb_put(b, "\"");
}

/* A string's JSON text: quotes, the escapes JSON requires, the rest as is. */
static void json_string(rlx_sbuf *b, const char *s, size_t n) {
  rlx_sb_put(b, "\"");
  for (size_t i = 0; i < n; i++) {
    const unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\') rlx_sb_printf(b, "\\%c", c);
    else if (c < 0x20) rlx_sb_printf(b, "\\u%04x", c);
    else rlx_sb_putn(b, (const char *)&c, 1);
  }
  rlx_sb_put(b, "\"");
}

static void json_text(rlx_sbuf *b, const rlx_jv *v) {
  switch (v->type) {
  case RLX_JV_NULL: rlx_sb_put(b, "null"); break;
  case RLX_JV_BOOL: rlx_sb_put(b, v->b ? "true" : "false"); break;
  case RLX_JV_NUMBER: rlx_sb_putn(b, v->s, v->len); break;
  case RLX_JV_STRING: json_string(b, v->s, v->len); break;
  default: {
    const int obj = v->type == RLX_JV_OBJECT;
    rlx_sb_put(b, obj ? "{" : "[");
    for (const rlx_jv *x = v->first; x; x = x->next) {
      if (x != v->first) rlx_sb_put(b, ",");
      if (obj) json_string(b, x->key, x->key_len), rlx_sb_put(b, ":");
      json_text(b, x);
    }
    rlx_sb_put(b, obj ? "}" : "]");
  }
  }
}

void rlx_sb_json_literal(rlx_sbuf *b, const rlx_jv *v, unsigned *used) {
  rlx_sbuf t = {0};
  json_text(&t, v);
  if (t.oom) b->oom = 1;
  else rlx_sb_literal(b, t.p, t.n);
  rlx_sb_free(&t);
  rlx_sb_printf(b, " %s", rlx_js_prim(used, JS_SPACE));
}

static const struct {
  const char *name, *body;
  unsigned uses; /* bits of the rules it refers to */
} prims[JS_N_PRIMS] = {
  [JS_SPACE] = {"space", "| \" \" | \"\\n\"{1,2} [ \\t]{0,20}", 0},
  [JS_VALUE] = {"value", "object | array | string | number | boolean | null",
                1u << JS_OBJECT | 1u << JS_ARRAY | 1u << JS_STRING | 1u << JS_NUMBER | 1u << JS_BOOLEAN | 1u << JS_NULL},
  [JS_OBJECT] = {"object", "\"{\" space ( string \":\" space value ( \",\" space string \":\" space value )* )? \"}\" space",
                 1u << JS_SPACE | 1u << JS_STRING | 1u << JS_VALUE},
  [JS_ARRAY] = {"array", "\"[\" space ( value ( \",\" space value )* )? \"]\" space", 1u << JS_SPACE | 1u << JS_VALUE},
  [JS_STRING] = {"string", "\"\\\"\" char* \"\\\"\" space", 1u << JS_CHAR | 1u << JS_SPACE},
  [JS_CHAR] = {"char", RLX_JS_PLAIN_CHAR " | \"\\\\\" ( [\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4} )", 0},
  [JS_NUMBER] = {"number", "\"-\"? integral-part ( \".\" decimal-part )? ( [eE] [-+]? integral-part )? space",
                 1u << JS_INTEGRAL | 1u << JS_DECIMAL | 1u << JS_SPACE},
  [JS_INTEGER] = {"integer", "\"-\"? integral-part space", 1u << JS_INTEGRAL | 1u << JS_SPACE},
  [JS_INTEGRAL] = {"integral-part", "[0] | [1-9] [0-9]{0,15}", 0},
  [JS_DECIMAL] = {"decimal-part", "[0-9]{1,16}", 0},
  [JS_BOOLEAN] = {"boolean", "( \"true\" | \"false\" ) space", 1u << JS_SPACE},
  [JS_NULL] = {"null", "\"null\" space", 1u << JS_SPACE},
};

const char *rlx_js_prim(unsigned *used, int p) {
  *used |= 1u << p;
  return prims[p].name;
}

void rlx_sb_prims(rlx_sbuf *b, unsigned used) {
  for (unsigned prev = 0; prev != used;) { /* close over the rules each uses */
    prev = used;
    for (int p = 0; p < JS_N_PRIMS; p++)
      if (used >> p & 1) used |= prims[p].uses;
  }
  for (int p = 0; p < JS_N_PRIMS; p++)
    if (used >> p & 1) rlx_sb_printf(b, "%s ::= %s\n", prims[p].name, prims[p].body);
}
