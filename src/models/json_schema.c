/* json_schema.c - JSON Schema to a GBNF grammar (include/rlx_llm_grammar.h),
 * after llama.cpp's json-schema-to-grammar: the subset and the refusals
 * are listed in docs/language-models.md (JSON Schema).  Each $ref target
 * (the root first) becomes a rule, converted once from a queue, so refs
 * may recurse; a ref reached again before any text is written (left
 * recursion) is found on the graph of such refs and refused at the $ref
 * that closes the loop.  Objects write their required properties in
 * declared order, then any subset of the optional ones in declared order;
 * additionalProperties is false unless given (as llama.cpp).  Every
 * refusal says "json schema: <JSON pointer>: <problem>". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar.h"
#include "json_schema.h"
#include "../core/core.h"

int rlx_js_fail(rlx_js_cv *c, const char *fmt, ...) {
  if (c->st != RLX_OK) return 0;
  char msg[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  c->st = rlx_error(RLX_ERR_INVALID_ARG, "json schema: %s: %s", c->plen ? c->ptr : "(root)", msg);
  return 0;
}

int rlx_js_oom(rlx_js_cv *c) {
  if (c->st == RLX_OK) c->st = rlx_error(RLX_ERR_NO_MEMORY, "json schema: out of memory");
  return 0;
}

int rlx_js_grow(rlx_js_cv *c, void **v, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 1;
  size_t n = *cap ? *cap * 2 : 8;
  void *q = rlx_realloc(*v, *cap * elem, n * elem);
  if (!q) return rlx_js_oom(c);
  *v = q, *cap = n;
  return 1;
}

/* Appends "/token" (escaped as JSON pointers escape '~' and '/') to the
 * pointer; returns the length to restore. */
size_t rlx_js_push(rlx_js_cv *c, const char *token) {
  const size_t was = c->plen;
  char t[RLX_JS_MAX_PTR];
  size_t n = 0;
  t[n++] = '/';
  for (const char *k = token; *k && n + 3 < sizeof t; k++) {
    if (*k == '~' || *k == '/') t[n++] = '~', t[n++] = *k == '~' ? '0' : '1';
    else t[n++] = *k;
  }
  if (c->plen + n >= RLX_JS_MAX_PTR) n = RLX_JS_MAX_PTR - 1 - c->plen;
  memcpy(c->ptr + c->plen, t, n);
  c->plen += n;
  c->ptr[c->plen] = 0;
  return was;
}

size_t rlx_js_push_index(rlx_js_cv *c, size_t i) {
  char t[24];
  snprintf(t, sizeof t, "%zu", i);
  return rlx_js_push(c, t);
}

void rlx_js_pop(rlx_js_cv *c, size_t was) {
  c->plen = was;
  c->ptr[was] = 0;
}

/* A fresh rule name from a hint: its letters, digits and '-', then a number. */
void rlx_js_new_name(rlx_js_cv *c, const char *hint, char name[48]) {
  size_t n = 0;
  for (const char *h = hint; *h && n < 30; h++)
    name[n++] = (*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z') || (*h >= '0' && *h <= '9') ? *h : '-';
  snprintf(name + n, 48 - n, "%s%u", n ? "-" : "x", ++c->counter);
}

void rlx_js_add_rule(rlx_js_cv *c, const char *name, const rlx_sbuf *body) {
  if (body->oom) c->out.oom = 1;
  else rlx_sb_printf(&c->out, "%s ::= %s\n", name, body->p ? body->p : "");
}

static const char *const constraints[] = {"type", "properties", "required", "additionalProperties", "items",
                                          "minItems", "maxItems", "enum", "const", "minLength", "maxLength",
                                          "anyOf", "oneOf", "$ref"};
static const char *const notes[] = {"$defs", "definitions", "title", "description", "$schema", "$id", "$comment",
                                    "default", "examples", "deprecated", "readOnly", "writeOnly"};

static int in(const char *k, const char *const *list, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(k, list[i]) == 0) return 1;
  return 0;
}

#define IN(k, list) in(k, list, sizeof list / sizeof *list)

/* Every keyword of s is one this converter knows; with `alone` (one of
 * $ref, anyOf, oneOf, enum, const) no other constraint but `beside`. */
static int keywords_ok(rlx_js_cv *c, const rlx_jv *s, const char *alone, const char *beside) {
  for (const rlx_jv *k = s->first; k; k = k->next) {
    if (IN(k->key, notes)) continue;
    size_t was = rlx_js_push(c, k->key);
    if (!IN(k->key, constraints)) return rlx_js_fail(c, "'%.60s' is not supported", k->key);
    if (alone && strcmp(k->key, alone) != 0 && !(beside && strcmp(k->key, beside) == 0))
      return rlx_js_fail(c, "'%.60s' beside '%s' is not supported", k->key, alone);
    rlx_js_pop(c, was);
  }
  return 1;
}

/* s's keyword key as a count 0 .. RLX_GRAMMAR_MAX_REPEAT; 0 when absent (*v untouched). */
static int count(rlx_js_cv *c, const rlx_jv *s, const char *key, uint32_t *v, int *present) {
  const rlx_jv *x = rlx_jv_get(s, key);
  *present = x != NULL;
  if (!x) return 1;
  size_t was = rlx_js_push(c, key);
  uint64_t n = 0;
  size_t i = 0;
  if (x->type == RLX_JV_NUMBER)
    for (; i < x->len && x->s[i] >= '0' && x->s[i] <= '9' && n <= RLX_GRAMMAR_MAX_REPEAT; i++) n = n * 10 + (uint64_t)(x->s[i] - '0');
  if (x->type != RLX_JV_NUMBER || !i || i != x->len || n > RLX_GRAMMAR_MAX_REPEAT)
    return rlx_js_fail(c, "must be a whole number from 0 to %d", RLX_GRAMMAR_MAX_REPEAT);
  rlx_js_pop(c, was);
  *v = (uint32_t)n;
  return 1;
}


/* A $ref: the rule of its target (queued when new). */
static void reference(rlx_js_cv *c, const rlx_jv *ref, long owner, rlx_sbuf *out) {
  size_t was = rlx_js_push(c, "$ref");
  if (ref->type != RLX_JV_STRING || ref->s[0] != '#' || (ref->s[1] && ref->s[1] != '/')) {
    rlx_js_fail(c, "only references within the schema ('#' or '#/...') are supported");
    return;
  }
  const rlx_jv *x = c->doc;
  char last[RLX_JS_MAX_PTR] = "";
  for (const char *p = ref->s + 1; *p && x;) { /* one /token at a time, ~1 and ~0 unescaped */
    size_t n = 0;
    for (p++; *p && *p != '/' && n + 1 < sizeof last; p++) {
      if (*p == '~' && (p[1] == '0' || p[1] == '1')) last[n++] = p[1] == '0' ? '~' : '/', p++;
      else last[n++] = *p;
    }
    last[n] = 0;
    const rlx_jv *y = NULL;
    if (x->type == RLX_JV_OBJECT) {
      y = rlx_jv_get(x, last);
    } else if (x->type == RLX_JV_ARRAY && n && strspn(last, "0123456789") == n) {
      size_t i = strtoul(last, NULL, 10);
      for (y = x->first; y && i; i--) y = y->next;
    }
    x = y;
  }
  if (!x) {
    rlx_js_fail(c, "'%.80s' is not in the schema", ref->s);
    return;
  }
  size_t k = 0;
  while (k < c->n_t && c->t[k].node != x) k++;
  if (k == c->n_t) {
    if (!rlx_js_grow(c, (void **)&c->t, &c->cap_t, k + 1, sizeof *c->t)) return;
    c->t[k].node = x;
    snprintf(c->t[k].ptr, RLX_JS_MAX_PTR, "%s", ref->s + 1);
    rlx_js_new_name(c, last[0] ? last : "ref", c->t[k].name);
    c->n_t++;
  }
  if (owner >= 0) { /* reached before any text of the owner's rule */
    if (!rlx_js_grow(c, (void **)&c->e, &c->cap_e, c->n_e + 1, sizeof *c->e)) return;
    c->e[c->n_e] = (rlx_js_edge){(size_t)owner, k, ""};
    memcpy(c->e[c->n_e++].where, c->ptr, c->plen + 1);
  }
  rlx_sb_put(out, c->t[k].name);
  rlx_js_pop(c, was);
}

/* anyOf / oneOf: each branch an alternative (oneOf as anyOf). */
static void alternatives(rlx_js_cv *c, const rlx_jv *list, const char *key, long owner, const char *hint, rlx_sbuf *out) {
  size_t was = rlx_js_push(c, key);
  if (list->type != RLX_JV_ARRAY || !list->n) {
    rlx_js_fail(c, list->type == RLX_JV_ARRAY ? "an empty list admits nothing" : "must be an array of schemas");
    return;
  }
  rlx_sb_put(out, "( ");
  size_t i = 0;
  for (const rlx_jv *b = list->first; b && c->st == RLX_OK; b = b->next, i++) {
    size_t w = rlx_js_push_index(c, i);
    if (i) rlx_sb_put(out, " | ");
    rlx_js_conv(c, b, owner, hint, out);
    rlx_js_pop(c, w);
  }
  rlx_sb_put(out, " )");
  rlx_js_pop(c, was);
}

enum { T_STRING = 1, T_NUMBER = 2, T_INTEGER = 4, T_BOOLEAN = 8, T_NULL = 16, T_OBJECT = 32, T_ARRAY = 64 };
static const char *const type_names[] = {"string", "number", "integer", "boolean", "null", "object", "array"};

static unsigned type_bit(rlx_js_cv *c, const rlx_jv *t) {
  for (unsigned i = 0; t->type == RLX_JV_STRING && i < sizeof type_names / sizeof *type_names; i++)
    if (strcmp(t->s, type_names[i]) == 0) return 1u << i;
  if (t->type == RLX_JV_STRING) return rlx_js_fail(c, "unknown type '%.60s'", t->s);
  return rlx_js_fail(c, "a type must be a string");
}

/* The types "type" allows (all when absent). */
static unsigned types_of(rlx_js_cv *c, const rlx_jv *s) {
  const rlx_jv *t = rlx_jv_get(s, "type");
  if (!t) return 127;
  size_t was = rlx_js_push(c, "type");
  unsigned m = 0;
  if (t->type == RLX_JV_ARRAY) {
    size_t i = 0;
    for (const rlx_jv *x = t->first; x && c->st == RLX_OK; x = x->next, i++) {
      size_t w = rlx_js_push_index(c, i);
      m |= type_bit(c, x);
      rlx_js_pop(c, w);
    }
    if (!t->n) rlx_js_fail(c, "an empty list of types admits nothing");
  } else {
    m = type_bit(c, t);
  }
  rlx_js_pop(c, was);
  return c->st == RLX_OK ? m : 0;
}

/* The JSON type bits a value has (a whole number is also an integer). */
static unsigned value_types(const rlx_jv *v) {
  switch (v->type) {
  case RLX_JV_NULL: return T_NULL;
  case RLX_JV_BOOL: return T_BOOLEAN;
  case RLX_JV_STRING: return T_STRING;
  case RLX_JV_ARRAY: return T_ARRAY;
  case RLX_JV_OBJECT: return T_OBJECT;
  default: return T_NUMBER | (strpbrk(v->s, ".eE") ? 0 : T_INTEGER);
  }
}

/* enum / const: the values as literals (those of the schema's type). */
static void literals(rlx_js_cv *c, const rlx_jv *s, const rlx_jv *en, const rlx_jv *cn, rlx_sbuf *out) {
  const unsigned types = types_of(c, s);
  if (c->st != RLX_OK) return;
  size_t was = rlx_js_push(c, en ? "enum" : "const");
  if (en && (en->type != RLX_JV_ARRAY || !en->n)) {
    rlx_js_fail(c, en->type == RLX_JV_ARRAY ? "an empty enum admits nothing" : "must be an array");
    return;
  }
  int k = 0;
  rlx_sb_put(out, "( ");
  for (const rlx_jv *v = en ? en->first : cn; v; v = en ? v->next : NULL) {
    if (!(value_types(v) & types)) continue;
    if (k++) rlx_sb_put(out, " | ");
    rlx_sb_json_literal(out, v, &c->prims);
  }
  rlx_sb_put(out, " )");
  if (!k) rlx_js_fail(c, "no value here is of the schema's type, so the schema admits nothing");
  rlx_js_pop(c, was);
}

/* Bounds s[lo_key] .. s[hi_key] (counts; *has_hi: the upper one given):
 * 0 (failed: "less than <lo_key> (lo), so no <what> fits" at hi_key) when
 * they admit nothing or one is not a count. */
static int bounds(rlx_js_cv *c, const rlx_jv *s, const char *lo_key, const char *hi_key, const char *what,
                  uint32_t *lo, uint32_t *hi, int *has_hi) {
  int has_lo;
  if (!count(c, s, lo_key, lo, &has_lo) || !count(c, s, hi_key, hi, has_hi)) return 0;
  if (*has_hi && *lo > *hi) {
    size_t was = rlx_js_push(c, hi_key);
    rlx_js_fail(c, "less than %s (%u), so no %s fits", lo_key, *lo, what);
    rlx_js_pop(c, was);
    return 0;
  }
  return 1;
}

static void string_of(rlx_js_cv *c, const rlx_jv *s, rlx_sbuf *out) {
  uint32_t lo = 0, hi = 0;
  int has_hi;
  if (!bounds(c, s, "minLength", "maxLength", "string", &lo, &hi, &has_hi)) return;
  if (!lo && !has_hi) {
    rlx_sb_put(out, rlx_js_prim(&c->prims, JS_STRING));
    return;
  }
  rlx_js_prim(&c->prims, JS_SPACE);
  rlx_sb_printf(out, "( \"\\\"\" %s{%u,", rlx_js_prim(&c->prims, JS_CHAR), lo);
  if (has_hi) rlx_sb_printf(out, "%u", hi);
  rlx_sb_put(out, "} \"\\\"\" space )");
}

static void array_of(rlx_js_cv *c, const rlx_jv *s, const char *hint, rlx_sbuf *out) {
  uint32_t lo = 0, hi = 0;
  int has_hi;
  if (!bounds(c, s, "minItems", "maxItems", "array", &lo, &hi, &has_hi)) return;
  const rlx_jv *items = rlx_jv_get(s, "items");
  char item[48], name[48];
  if (items && items->type == RLX_JV_ARRAY) {
    size_t was = rlx_js_push(c, "items");
    rlx_js_fail(c, "a list of item schemas (tuple form) is not supported");
    rlx_js_pop(c, was);
    return;
  }
  if (items) {
    rlx_sbuf body = {0};
    size_t was = rlx_js_push(c, "items");
    rlx_js_new_name(c, "item", item);
    rlx_js_conv(c, items, -1, "item", &body);
    rlx_js_add_rule(c, item, &body);
    rlx_sb_free(&body);
    rlx_js_pop(c, was);
  } else {
    snprintf(item, sizeof item, "%s", rlx_js_prim(&c->prims, JS_VALUE));
  }
  rlx_js_prim(&c->prims, JS_SPACE);
  rlx_sbuf body = {0};
  rlx_sb_put(&body, "\"[\" space ");
  if (has_hi && !hi) {
    rlx_sb_put(&body, "\"]\" space");
  } else {
    rlx_sb_printf(&body, lo ? "%s ( \",\" space %s ){%u," : "( %s ( \",\" space %s ){0,", item, item, lo ? lo - 1 : 0);
    if (has_hi) rlx_sb_printf(&body, "%u", hi - 1);
    rlx_sb_put(&body, lo ? "} \"]\" space" : "} )? \"]\" space");
  }
  rlx_js_new_name(c, hint, name);
  rlx_js_add_rule(c, name, &body);
  rlx_sb_free(&body);
  rlx_sb_put(out, name);
}

/* The types a schema without "type" is read as: those its keywords are
 * for, or every type when it has none of them. */
static unsigned implied_types(const rlx_jv *s) {
  unsigned m = 0;
  if (rlx_jv_get(s, "properties") || rlx_jv_get(s, "required") || rlx_jv_get(s, "additionalProperties")) m |= T_OBJECT;
  if (rlx_jv_get(s, "items") || rlx_jv_get(s, "minItems") || rlx_jv_get(s, "maxItems")) m |= T_ARRAY;
  if (rlx_jv_get(s, "minLength") || rlx_jv_get(s, "maxLength")) m |= T_STRING;
  return m;
}

void rlx_js_conv(rlx_js_cv *c, const rlx_jv *s, long owner, const char *hint, rlx_sbuf *out) {
  if (c->st != RLX_OK) return;
  if (s->type == RLX_JV_BOOL) {
    if (s->b) rlx_sb_put(out, rlx_js_prim(&c->prims, JS_VALUE));
    else rlx_js_fail(c, "the schema false admits nothing");
    return;
  }
  if (s->type != RLX_JV_OBJECT) {
    rlx_js_fail(c, "a schema must be an object or a boolean");
    return;
  }
  const rlx_jv *ref = rlx_jv_get(s, "$ref"), *any = rlx_jv_get(s, "anyOf"), *one = rlx_jv_get(s, "oneOf");
  const rlx_jv *en = rlx_jv_get(s, "enum"), *cn = rlx_jv_get(s, "const");
  const char *alone = ref ? "$ref" : any ? "anyOf" : one ? "oneOf" : en ? "enum" : cn ? "const" : NULL;
  if (!keywords_ok(c, s, alone, en || cn ? "type" : NULL)) return;
  if (ref) return reference(c, ref, owner, out);
  if (any || one) return alternatives(c, any ? any : one, alone, owner, hint, out);
  if (en || cn) return literals(c, s, en, cn, out);
  unsigned types = rlx_jv_get(s, "type") ? types_of(c, s) : implied_types(s);
  if (c->st != RLX_OK) return;
  if (!types) {
    rlx_sb_put(out, rlx_js_prim(&c->prims, JS_VALUE));
    return;
  }
  const int several = (types & (types - 1)) != 0;
  if (several) rlx_sb_put(out, "( ");
  for (unsigned bit = 1, k = 0; bit <= T_ARRAY; bit <<= 1) {
    if (!(types & bit)) continue;
    if (k++) rlx_sb_put(out, " | ");
    if (bit == T_STRING) string_of(c, s, out);
    else if (bit == T_OBJECT) rlx_js_object(c, s, hint, out);
    else if (bit == T_ARRAY) array_of(c, s, hint, out);
    else rlx_sb_put(out, rlx_js_prim(&c->prims, bit == T_NUMBER ? JS_NUMBER : bit == T_INTEGER ? JS_INTEGER
                                                 : bit == T_BOOLEAN ? JS_BOOLEAN : JS_NULL));
  }
  if (several) rlx_sb_put(out, " )");
}

/* A loop of refs reached before any text: its closing $ref, or -1. */
static long left_loop(rlx_js_cv *c) {
  size_t n = c->n_t;
  uint8_t *color = rlx_calloc(n, 1);
  size_t *stack = rlx_malloc(2 * n * sizeof *stack), *cursor = stack + n, sp = 0;
  long found = -1;
  if (!color || !stack) n = 0, rlx_js_oom(c);
  for (size_t s = 0; s < n && found < 0; s++) {
    if (color[s]) continue;
    color[s] = 1, stack[0] = s, cursor[0] = 0, sp = 1;
    while (sp && found < 0) {
      const size_t v = stack[sp - 1];
      size_t k = cursor[sp - 1];
      while (k < c->n_e && c->e[k].from != v) k++;
      if (k == c->n_e) {
        color[v] = 2, sp--;
        continue;
      }
      cursor[sp - 1] = k + 1;
      const size_t w = c->e[k].to;
      if (color[w] == 1) found = (long)k;
      else if (!color[w]) color[w] = 1, stack[sp] = w, cursor[sp++] = 0;
    }
  }
  rlx_free(color, c->n_t);
  rlx_free(stack, 2 * c->n_t * sizeof *stack);
  return found;
}

/* The schema's GBNF into *text (rlx_malloc'd, strlen + 1 bytes) and, when
 * g is not NULL, parsed into *g. */
static rlx_status convert(const char *schema, size_t len, char **text, rlx_llm_grammar **g) {
  rlx_jdoc *doc = NULL;
  rlx_status st = rlx_jdoc_parse(schema, len, "json schema", &doc);
  if (st != RLX_OK) return st;
  rlx_js_cv c = {.doc = rlx_jdoc_root(doc)};
  if (rlx_js_grow(&c, (void **)&c.t, &c.cap_t, 1, sizeof *c.t)) {
    memset(c.t, 0, sizeof *c.t);
    c.t[0].node = c.doc;
    snprintf(c.t[0].name, sizeof c.t[0].name, "root");
    c.n_t = 1;
  }
  for (size_t i = 0; i < c.n_t && c.st == RLX_OK; i++) { /* the queue of $ref targets, the root first */
    rlx_sbuf body = {0};
    snprintf(c.ptr, sizeof c.ptr, "%s", c.t[i].ptr);
    c.plen = strlen(c.ptr);
    rlx_js_conv(&c, c.t[i].node, (long)i, i ? c.t[i].name : "root", &body);
    rlx_js_add_rule(&c, c.t[i].name, &body);
    rlx_sb_free(&body);
  }
  long loop = c.st == RLX_OK ? left_loop(&c) : -1;
  if (loop >= 0) {
    snprintf(c.ptr, sizeof c.ptr, "%s", c.e[loop].where);
    c.plen = strlen(c.ptr);
    rlx_js_fail(&c, "this reference comes back to where it is before any text is written (a recursion with no end)");
  }
  rlx_sb_prims(&c.out, c.prims);
  if (c.st == RLX_OK && c.out.oom) rlx_js_oom(&c);
  rlx_llm_grammar *parsed = NULL;
  if (c.st == RLX_OK && (st = rlx_llm_grammar_parse(c.out.p, c.out.n, &parsed)) != RLX_OK) {
    c.plen = 0;
    if (st == RLX_ERR_INVALID_ARG && strstr(rlx_last_error(), "admits no string"))
      rlx_js_fail(&c, "the schema admits no finite document (%s)", rlx_last_error());
    else if (st == RLX_ERR_INVALID_ARG)
      rlx_js_fail(&c, "its grammar is refused (%s)", rlx_last_error());
    else
      c.st = st;
  }
  char *exact = c.st == RLX_OK ? rlx_realloc(c.out.p, c.out.cap, c.out.n + 1) : NULL;
  if (c.st == RLX_OK && !exact) rlx_js_oom(&c);
  if (exact) c.out.p = exact, c.out.cap = c.out.n + 1;
  rlx_free(c.t, c.cap_t * sizeof *c.t);
  rlx_free(c.e, c.cap_e * sizeof *c.e);
  rlx_jdoc_free(doc);
  if (c.st != RLX_OK || !g) rlx_llm_grammar_free(parsed);
  if (c.st != RLX_OK) {
    rlx_sb_free(&c.out);
    return c.st;
  }
  if (g) *g = parsed;
  *text = c.out.p;
  return RLX_OK;
}

rlx_status rlx_llm_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf, size_t *gbnf_len) {
  if (gbnf) *gbnf = NULL;
  if (gbnf_len) *gbnf_len = 0;
  if (!gbnf || (!schema && len))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_json_schema_to_gbnf: %s is NULL", gbnf ? "schema" : "gbnf");
  rlx_status st = convert(schema, len, gbnf, NULL);
  if (st == RLX_OK && gbnf_len) *gbnf_len = strlen(*gbnf);
  return st;
}

rlx_status rlx_llm_grammar_from_json_schema(const char *schema, size_t len, rlx_llm_grammar **out) {
  if (out) *out = NULL;
  if (!out || (!schema && len))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_grammar_from_json_schema: %s is NULL", out ? "schema" : "out");
  char *text = NULL;
  rlx_status st = convert(schema, len, &text, out);
  rlx_llm_text_free(text);
  return st;
}

void rlx_llm_text_free(char *text) {
  if (text) rlx_free(text, strlen(text) + 1);
}
