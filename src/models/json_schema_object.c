/* json_schema_object.c - a JSON Schema object's rule, as llama.cpp's
 * converter writes it: "{", the required properties in declared order,
 * then any subset of the optional ones in declared order (each optional
 * property's rest shared as one rule), then "}".  additionalProperties:
 * absent or false: no other keys; true or a schema: any number of other
 * members after them, whose keys are strings written without escapes that
 * differ from every declared name (a rule per node of a trie of the
 * names, so an extra member cannot repeat a declared one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_schema.h"
#include "../core/core.h"

typedef struct {
  uint32_t *cp;
  size_t n;
} key;

static int cmp_key(const void *x, const void *y) {
  const key *a = x, *b = y;
  for (size_t i = 0; i < a->n && i < b->n; i++)
    if (a->cp[i] != b->cp[i]) return a->cp[i] < b->cp[i] ? -1 : 1;
  return a->n < b->n ? -1 : a->n > b->n;
}

/* A name as code points, or 0 when it needs an escape in JSON (then no
 * unescaped key can equal it). */
static size_t decode(const char *s, size_t len, uint32_t *cp) {
  size_t n = 0;
  for (size_t i = 0; i < len; n++) {
    const unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\' || c < 0x20 || c == 0x7F) return 0;
    size_t k = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    uint32_t v = k == 1 ? c : c & (0x7Fu >> k);
    for (size_t j = 1; j < k; j++) v = v << 6 | ((unsigned char)s[i + j] & 0x3Fu);
    cp[n] = v;
    i += k;
  }
  return n;
}

/* A rule for a key (from its opening quote to the space after its
 * closing one) that is none of props' names; its name into name. */
static void other_key(rlx_js_cv *c, const rlx_jv *props, const char *hint, char name[48]) {
  size_t n = 0, cps = 0;
  for (const rlx_jv *p = props->first; p; p = p->next) cps += p->key_len;
  key *k = rlx_calloc(props->n ? props->n : 1, sizeof *k);
  uint32_t *all = rlx_malloc((cps ? cps : 1) * sizeof *all);
  /* the trie's nodes, breadth first: keys k[lo, hi) share their first depth code points */
  size_t cap = cps + 1, head = 0, tail = 0;
  struct node { size_t lo, hi, depth; char name[48]; } *q = rlx_malloc(cap * sizeof *q);
  if (!k || !all || !q) {
    rlx_js_oom(c);
    goto done;
  }
  size_t used = 0;
  for (const rlx_jv *p = props->first; p; p = p->next) {
    k[n].cp = all + used;
    k[n].n = decode(p->key, p->key_len, all + used);
    if (k[n].n || !p->key_len) used += k[n].n, n++;
  }
  qsort(k, n, sizeof *k, cmp_key);
  rlx_js_new_name(c, hint, name);
  rlx_sbuf top = {0};
  q[tail] = (struct node){0, n, 0, ""};
  rlx_js_new_name(c, hint, q[tail++].name);
  rlx_sb_printf(&top, "\"\\\"\" %s", q[0].name);
  rlx_js_add_rule(c, name, &top);
  rlx_sb_free(&top);
  rlx_js_prim(&c->prims, JS_SPACE);
  while (head < tail && c->st == RLX_OK) {
    struct node x = q[head++];
    rlx_sbuf body = {0};
    int ends = x.lo < x.hi && k[x.lo].n == x.depth; /* a name ends here (sorted first) */
    if (!ends) rlx_sb_put(&body, "\"\\\"\" space | ");
    rlx_sb_put(&body, "[^\"\\\\\\x7F\\x00-\\x1F");
    for (size_t i = x.lo + ends; i < x.hi; i++)
      if (i == x.lo + ends || k[i].cp[x.depth] != k[i - 1].cp[x.depth]) rlx_sb_printf(&body, "\\U%08X", k[i].cp[x.depth]);
    rlx_sb_put(&body, "] " RLX_JS_PLAIN_CHAR "* \"\\\"\" space");
    for (size_t i = x.lo + ends, j; i < x.hi; i = j) {
      for (j = i + 1; j < x.hi && k[j].cp[x.depth] == k[i].cp[x.depth];) j++;
      q[tail] = (struct node){i, j, x.depth + 1, ""};
      rlx_js_new_name(c, hint, q[tail].name);
      rlx_sb_printf(&body, " | \"\\U%08X\" %s", k[i].cp[x.depth], q[tail++].name);
    }
    rlx_js_add_rule(c, x.name, &body);
    rlx_sb_free(&body);
  }
done:
  rlx_free(k, (props->n ? props->n : 1) * sizeof *k);
  rlx_free(all, (cps ? cps : 1) * sizeof *all);
  rlx_free(q, cap * sizeof *q);
}

/* A member's rule into name: its key (a declared name's literal, or
 * other_key's rule), ':', its value (schema; NULL: any value). */
static void member(rlx_js_cv *c, const rlx_jv *declared, const char *other, const rlx_jv *schema, const char *hint,
                   char name[48]) {
  rlx_sbuf body = {0};
  if (declared) {
    const rlx_jv k = {.type = RLX_JV_STRING, .s = declared->key, .len = declared->key_len};
    rlx_sb_json_literal(&body, &k, &c->prims);
  } else {
    rlx_sb_put(&body, other);
  }
  rlx_sb_put(&body, " \":\" space ");
  if (schema) rlx_js_conv(c, schema, -1, hint, &body);
  else rlx_sb_put(&body, rlx_js_prim(&c->prims, JS_VALUE));
  rlx_js_new_name(c, hint, name);
  rlx_js_add_rule(c, name, &body);
  rlx_sb_free(&body);
}

static int cmp_name(const void *x, const void *y) {
  const rlx_jv *a = *(const rlx_jv *const *)x, *b = *(const rlx_jv *const *)y;
  return a->key_len != b->key_len ? (a->key_len < b->key_len ? -1 : 1) : memcmp(a->key, b->key, a->key_len);
}

/* properties is an object of distinct names; required an array of its names. */
static int check(rlx_js_cv *c, const rlx_jv *props, const rlx_jv *req, const rlx_jv *extra) {
  size_t was;
  if (props) {
    was = rlx_js_push(c, "properties");
    if (props->type != RLX_JV_OBJECT) return rlx_js_fail(c, "must be an object");
    const rlx_jv **v = rlx_malloc((props->n ? props->n : 1) * sizeof *v);
    if (!v) return rlx_js_oom(c);
    size_t n = 0;
    for (const rlx_jv *p = props->first; p; p = p->next) v[n++] = p;
    qsort(v, n, sizeof *v, cmp_name);
    for (size_t i = 1; i < n && c->st == RLX_OK; i++)
      if (!cmp_name(&v[i - 1], &v[i])) rlx_js_fail(c, "'%.60s' is given twice", v[i]->key);
    rlx_free(v, (props->n ? props->n : 1) * sizeof *v);
    rlx_js_pop(c, was);
  }
  if (req) {
    was = rlx_js_push(c, "required");
    if (req->type != RLX_JV_ARRAY) return rlx_js_fail(c, "must be an array of property names");
    size_t i = 0;
    for (const rlx_jv *r = req->first; r && c->st == RLX_OK; r = r->next, i++) {
      size_t w = rlx_js_push_index(c, i);
      if (r->type != RLX_JV_STRING) return rlx_js_fail(c, "must be a property name");
      if (!rlx_jv_get(props, r->s)) return rlx_js_fail(c, "'%.60s' is not in properties", r->s);
      rlx_js_pop(c, w);
    }
    rlx_js_pop(c, was);
  }
  if (extra && extra->type != RLX_JV_BOOL && extra->type != RLX_JV_OBJECT) {
    was = rlx_js_push(c, "additionalProperties");
    return rlx_js_fail(c, "must be a boolean or a schema");
  }
  return c->st == RLX_OK;
}

static int required(const rlx_jv *req, const rlx_jv *p) {
  for (const rlx_jv *r = req ? req->first : NULL; r; r = r->next)
    if (r->len == p->key_len && !memcmp(r->s, p->key, p->key_len)) return 1;
  return 0;
}

void rlx_js_object(rlx_js_cv *c, const rlx_jv *s, const char *hint, rlx_sbuf *out) {
  const rlx_jv *props = rlx_jv_get(s, "properties"), *req = rlx_jv_get(s, "required");
  const rlx_jv *extra = rlx_jv_get(s, "additionalProperties");
  if (!check(c, props, req, extra)) return;
  if (!props && (!extra || (extra->type == RLX_JV_BOOL && extra->b))) { /* any object */
    rlx_sb_put(out, rlx_js_prim(&c->prims, JS_OBJECT));
    return;
  }
  const int more = extra && (extra->type == RLX_JV_OBJECT || extra->b);
  const size_t n = (props ? props->n : 0) + (size_t)more;
  char (*kv)[48] = rlx_calloc(n ? 2 * n : 1, sizeof *kv), (*rest)[48] = kv + n;
  int *opt = rlx_calloc(n ? n : 1, sizeof *opt); /* the optional members' indices in kv, in order */
  if (!kv || !opt) {
    rlx_js_oom(c);
    goto done;
  }
  size_t i = 0, m = 0;
  for (const rlx_jv *p = props ? props->first : NULL; p && c->st == RLX_OK; p = p->next, i++) {
    size_t was = rlx_js_push(c, "properties"), w = rlx_js_push(c, p->key);
    member(c, p, NULL, p, p->key, kv[i]);
    rlx_js_pop(c, w), rlx_js_pop(c, was);
    if (!required(req, p)) opt[m++] = (int)i;
  }
  if (more && c->st == RLX_OK) {
    char key_rule[48];
    size_t was = rlx_js_push(c, "additionalProperties");
    if (props) other_key(c, props, "key", key_rule);
    else snprintf(key_rule, sizeof key_rule, "%s", rlx_js_prim(&c->prims, JS_STRING));
    member(c, NULL, key_rule, extra->type == RLX_JV_OBJECT ? extra : NULL, "additional", kv[i]);
    rlx_js_pop(c, was);
    opt[m++] = (int)i;
  }
  rlx_js_prim(&c->prims, JS_SPACE);
  for (size_t j = m; j-- > 1 && c->st == RLX_OK;) { /* rest[j]: optional members j.., each after a comma */
    rlx_sbuf r = {0};
    rlx_sb_printf(&r, "( \",\" space %s )%s", kv[opt[j]], more && j == m - 1 ? "*" : "?");
    if (j + 1 < m) rlx_sb_printf(&r, " %s", rest[j + 1]);
    rlx_js_new_name(c, hint, rest[j]);
    rlx_js_add_rule(c, rest[j], &r);
    rlx_sb_free(&r);
  }
  rlx_sbuf body = {0};
  rlx_sb_put(&body, "\"{\" space");
  size_t n_req = 0, k = 0;
  for (const rlx_jv *p = props ? props->first : NULL; p; p = p->next, k++)
    if (required(req, p)) rlx_sb_printf(&body, n_req++ ? " \",\" space %s" : " %s", kv[k]);
  if (m) { /* one optional member and the rest after it, or none */
    rlx_sb_put(&body, n_req ? " ( \",\" space (" : " (");
    for (size_t j = 0; j < m; j++) {
      rlx_sb_printf(&body, "%s %s", j ? " |" : "", kv[opt[j]]);
      if (more && j == m - 1) rlx_sb_printf(&body, " ( \",\" space %s )*", kv[opt[j]]);
      if (j + 1 < m) rlx_sb_printf(&body, " %s", rest[j + 1]);
    }
    rlx_sb_put(&body, n_req ? " ) )?" : " )?");
  }
  rlx_sb_put(&body, " \"}\" space");
  char name[48];
  rlx_js_new_name(c, hint, name);
  rlx_js_add_rule(c, name, &body);
  rlx_sb_free(&body);
  rlx_sb_put(out, name);
done:
  rlx_free(kv, (n ? 2 * n : 1) * sizeof *kv);
  rlx_free(opt, (n ? n : 1) * sizeof *opt);
}
