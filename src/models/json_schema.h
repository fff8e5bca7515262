/* json_schema.h - internals of the JSON Schema to GBNF converter: the text
 * it writes (json_schema_text.c: a growing buffer, GBNF literals, the
 * shared rules for JSON's primitives) for json_schema.c, which walks the
 * schema. */
#ifndef RLX_JSON_SCHEMA_H
#define RLX_JSON_SCHEMA_H

#include <stddef.h>
#include <stdint.h>
#include "json_value.h"
#include "rlx.h"

typedef struct {
  char *p;
  size_t n, cap;
  int oom; /* an allocation failed: the text is incomplete */
} rlx_sbuf;

void rlx_sb_putn(rlx_sbuf *b, const char *s, size_t n);
void rlx_sb_put(rlx_sbuf *b, const char *s);
void rlx_sb_printf(rlx_sbuf *b, const char *fmt, ...);
void rlx_sb_free(rlx_sbuf *b);
/* n bytes of UTF-8 as a GBNF string literal "..." (escaped where GBNF needs it). */
void rlx_sb_literal(rlx_sbuf *b, const char *s, size_t n);
/* A JSON value's compact text as a GBNF literal, followed by " space"
 * (marked in used). */
void rlx_sb_json_literal(rlx_sbuf *b, const rlx_jv *v, unsigned *used);

/* The shared rules; a schema uses some, rlx_sb_prims writes those and the
 * rules they use, once each. */
enum {
  JS_SPACE, JS_VALUE, JS_OBJECT, JS_ARRAY, JS_STRING, JS_CHAR, JS_NUMBER, JS_INTEGER, JS_INTEGRAL, JS_DECIMAL,
  JS_BOOLEAN, JS_NULL, JS_N_PRIMS
};
const char *rlx_js_prim(unsigned *used, int p); /* marks p used, returns its name */
void rlx_sb_prims(rlx_sbuf *b, unsigned used);
/* A JSON string character without escapes, as a GBNF class. */
#define RLX_JS_PLAIN_CHAR "[^\"\\\\\\x7F\\x00-\\x1F]"


/* The converter's state (json_schema.c). */
#define RLX_JS_MAX_PTR 256

typedef struct { /* a $ref target: its rule (the root's is "root") */
  const rlx_jv *node;
  char ptr[RLX_JS_MAX_PTR], name[48];
} rlx_js_target;

typedef struct { /* a $ref reached before its owner's rule has written text */
  size_t from, to;
  char where[RLX_JS_MAX_PTR]; /* the $ref's pointer */
} rlx_js_edge;

typedef struct {
  rlx_sbuf out;
  const rlx_jv *doc;
  rlx_js_target *t;
  size_t n_t, cap_t;
  rlx_js_edge *e;
  size_t n_e, cap_e;
  unsigned prims, counter;
  char ptr[RLX_JS_MAX_PTR];
  size_t plen;
  rlx_status st;
} rlx_js_cv;

/* Sets the refusal "json schema: <the pointer now>: <problem>"; returns 0. */
int rlx_js_fail(rlx_js_cv *c, const char *fmt, ...);
int rlx_js_oom(rlx_js_cv *c);
int rlx_js_grow(rlx_js_cv *c, void **v, size_t *cap, size_t need, size_t elem);
/* Appends "/token" to the pointer; pop restores the length it returns. */
size_t rlx_js_push(rlx_js_cv *c, const char *token);
size_t rlx_js_push_index(rlx_js_cv *c, size_t i);
void rlx_js_pop(rlx_js_cv *c, size_t was);
void rlx_js_new_name(rlx_js_cv *c, const char *hint, char name[48]);
void rlx_js_add_rule(rlx_js_cv *c, const char *name, const rlx_sbuf *body);
/* Appends to out an expression for schema s followed by space; owner: the
 * $ref target whose rule has written no text yet, or -1. */
void rlx_js_conv(rlx_js_cv *c, const rlx_jv *s, long owner, const char *hint, rlx_sbuf *out);
/* The rule of an object schema (json_schema_object.c). */
void rlx_js_object(rlx_js_cv *c, const rlx_jv *s, const char *hint, rlx_sbuf *out);

#endif
