/* grammar_match.c - runs a compiled grammar (grammar.h) over UTF-8 text as
 * a pushdown automaton: the state is the set of stacks of every live
 * parse, each topped by the character class it must match next.  A code
 * point advances each stack whose top matches it; the advanced stacks are
 * expanded (a finished alternative pops back to its caller, a rule
 * reference pushes what follows it and opens each of the rule's
 * alternatives) until every top is a class again; duplicates are dropped.
 * The parser refuses left recursion, so expansion ends.  A text whose
 * bytes end inside a code point keeps the partial sequence; it is accepted
 * when some stack's class meets the code points that could complete it. */
#include <string.h>

#include "grammar.h"
#include "../core/core.h"

#define MAX_CP 0x10FFFFu
/* Words of stacks one expansion may meet: an ambiguous grammar such as
 * (x+)+ has a parse for every way to split its text, too many to follow. */
#define MAX_EXPANSION_WORDS (1u << 18)

struct rlx_llm_grammar_state {
  const rlx_llm_grammar *g;
  rlx_gstacks st;
  rlx_gutf8 u;
  rlx_gscratch w;
};

static void stacks_free(rlx_gstacks *s) {
  rlx_free(s->v, s->cap * sizeof *s->v);
  memset(s, 0, sizeof *s);
}

static void gset_free(rlx_gset *s) {
  stacks_free(&s->keys);
  rlx_free(s->slot, s->cap_slot * sizeof *s->slot);
}

void rlx_gscratch_free(rlx_gscratch *w) {
  gset_free(&w->seen);
  gset_free(&w->put);
  stacks_free(&w->a);
  stacks_free(&w->b);
  stacks_free(&w->c);
  rlx_free(w->tmp, w->cap_tmp * sizeof *w->tmp);
  memset(w, 0, sizeof *w);
}

static int reserve(uint32_t **v, size_t *cap, size_t need) {
  if (need <= *cap) return 1;
  size_t c = *cap ? *cap * 2 : 64;
  while (c < need) c *= 2;
  uint32_t *q = rlx_realloc(*v, *cap * sizeof *q, c * sizeof *q);
  if (!q) return rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory"), 0;
  *v = q;
  *cap = c;
  return 1;
}

/* Appends stack v[0, len) (bottom first). */
static int push(rlx_gstacks *s, const uint32_t *v, uint32_t len) {
  if (!reserve(&s->v, &s->cap, s->n + 1 + len)) return 0;
  s->v[s->n] = len;
  memcpy(s->v + s->n + 1, v, len * sizeof *v);
  s->n += 1 + len;
  s->count++;
  return 1;
}

static void gset_clear(rlx_gset *s) {
  s->keys.n = s->keys.count = 0;
  if (++s->stamp == 0) { /* wrapped: forget every slot for real */
    memset(s->slot, 0, s->cap_slot * sizeof *s->slot);
    s->stamp = 1;
  }
}

static uint64_t hash_stack(const uint32_t *v, uint32_t len) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
  for (uint32_t i = 0; i < len; i++) h = (h ^ v[i]) * 0x100000001B3ull;
  return h ^ (h >> 29);
}

/* Adds stack v[0, len) to s: 1 added, 0 there already, -1 out of memory. */
static int gset_add(rlx_gset *s, const uint32_t *v, uint32_t len) {
  if (2 * (s->keys.count + 1) > s->cap_slot) { /* grow and rehash what the stamp still holds */
    size_t cap = s->cap_slot ? 2 * s->cap_slot : 64;
    uint32_t (*slot)[2] = rlx_calloc(cap, sizeof *slot);
    if (!slot) return rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory"), -1;
    for (size_t at = 0; at < s->keys.n; at += 1 + s->keys.v[at]) {
      size_t i = hash_stack(s->keys.v + at + 1, s->keys.v[at]) & (cap - 1);
      while (slot[i][1]) i = (i + 1) & (cap - 1);
      slot[i][0] = 1, slot[i][1] = (uint32_t)at + 1;
    }
    rlx_free(s->slot, s->cap_slot * sizeof *s->slot);
    s->slot = slot;
    s->cap_slot = cap;
    s->stamp = 1;
  }
  size_t i = hash_stack(v, len) & (s->cap_slot - 1);
  for (; s->slot[i][0] == s->stamp && s->slot[i][1]; i = (i + 1) & (s->cap_slot - 1)) {
    const uint32_t *k = s->keys.v + s->slot[i][1] - 1;
    if (k[0] == len && !memcmp(k + 1, v, len * sizeof *v)) return 0;
  }
  if (s->keys.n + 1 + len > UINT32_MAX - 1) return rlx_error(RLX_ERR_NO_MEMORY, "grammar: too many parses"), -1;
  s->slot[i][0] = s->stamp;
  s->slot[i][1] = (uint32_t)s->keys.n + 1;
  return push(&s->keys, v, len) ? 1 : -1;
}

/* The worklist of expand(): stacks as [e_0 .. e_len-1, len], so the last
 * one is found from the end. */
static int wpush(rlx_gstacks *work, const uint32_t *v, uint32_t len) {
  if (!reserve(&work->v, &work->cap, work->n + 1 + len)) return 0;
  memcpy(work->v + work->n, v, len * sizeof *v);
  work->v[work->n + len] = len;
  work->n += 1 + len;
  return 1;
}

/* Expands the stacks of work (emptied) into out, each until its top is a
 * class or it is empty.  A stack met before in this expansion is not
 * expanded again (many ways through things that can be empty lead to the
 * same stacks: without this, x{40} of a nullable x takes 2^40 steps). */
static rlx_status expand(const rlx_llm_grammar *g, rlx_gstacks *work, rlx_gscratch *w, rlx_gstacks *out) {
  gset_clear(&w->seen);
  gset_clear(&w->put);
  while (work->n) {
    uint32_t len = work->v[work->n - 1];
    if (!reserve(&w->tmp, &w->cap_tmp, (size_t)len + 2)) return RLX_ERR_NO_MEMORY;
    work->n -= 1 + len;
    uint32_t *t = w->tmp;
    memcpy(t, work->v + work->n, len * sizeof *t);
    while (len && g->el[t[len - 1]].type == G_END) len--; /* alternatives done: back to the callers */
    if (w->seen.keys.n + w->put.keys.n + len > MAX_EXPANSION_WORDS)
      return rlx_error(RLX_ERR_INVALID_ARG, "grammar: the text has too many parses to follow (over %u words of "
                       "stacks: an ambiguous grammar, such as (x+)+)", MAX_EXPANSION_WORDS);
    int fresh = gset_add(len && g->el[t[len - 1]].type == G_REF ? &w->seen : &w->put, t, len);
    if (fresh <= 0) {
      if (fresh < 0) return RLX_ERR_NO_MEMORY;
      continue;
    }
    if (!len || g->el[t[len - 1]].type == G_CHARS) {
      if (!push(out, t, len)) return RLX_ERR_NO_MEMORY;
      continue;
    }
    const uint32_t pos = t[len - 1], r = g->el[pos].a;
    if (g->el[pos + 1].type == G_END) len--; /* a call in tail position returns nowhere */
    else t[len - 1] = pos + 1;
    for (uint32_t k = g->rule_alt[r]; k < g->rule_alt[r + 1]; k++) {
      t[len] = g->alt[k];
      if (!wpush(work, t, len + 1)) return RLX_ERR_NO_MEMORY;
    }
  }
  return RLX_OK;
}

static int class_has(const rlx_llm_grammar *g, const rlx_gel *e, uint32_t lo, uint32_t hi) {
  size_t a = e->a, b = e->a + e->b; /* the first range whose hi >= lo */
  while (a < b) {
    size_t m = a + (b - a) / 2;
    if (g->ranges[m][1] < lo) a = m + 1;
    else b = m;
  }
  return a < (size_t)e->a + e->b && g->ranges[a][0] <= hi;
}

/* The stacks of in whose class takes cp, advanced and expanded into out. */
static rlx_status advance(const rlx_llm_grammar *g, const rlx_gstacks *in, uint32_t cp, rlx_gscratch *w, rlx_gstacks *out,
                   rlx_gstacks *work) {
  out->n = out->count = 0;
  work->n = work->count = 0;
  for (size_t at = 0; at < in->n; at += 1 + in->v[at]) {
    uint32_t len = in->v[at];
    if (!len || !class_has(g, &g->el[in->v[at + len]], cp, cp)) continue;
    if (!wpush(work, in->v + at + 1, len)) return RLX_ERR_NO_MEMORY;
    work->v[work->n - 2]++;
  }
  return expand(g, work, w, out);
}

int rlx_gmatch_try(const rlx_llm_grammar *g, const rlx_gstacks *in, rlx_gutf8 u, const unsigned char *bytes,
                   size_t n, rlx_gscratch *w, const rlx_gstacks **out, rlx_gutf8 *u_out) {
  const rlx_gstacks *cur = in;
  for (size_t i = 0; i < n; i++) {
    const unsigned char c = bytes[i];
    if (!u.need) {
      if (c < 0x80) u.cp = c, u.min = 0;
      else if (c >= 0xC2 && c <= 0xDF) u.cp = c & 0x1Fu, u.need = 1, u.min = 0x80;
      else if (c >= 0xE0 && c <= 0xEF) u.cp = c & 0x0Fu, u.need = 2, u.min = 0x800;
      else if (c >= 0xF0 && c <= 0xF4) u.cp = c & 0x07u, u.need = 3, u.min = 0x10000;
      else return 0;
    } else {
      if ((c & 0xC0) != 0x80) return 0;
      u.cp = u.cp << 6 | (c & 0x3Fu);
      u.need--;
    }
    if (u.need) continue;
    if (u.cp < u.min || u.cp > MAX_CP || (u.cp >= 0xD800 && u.cp <= 0xDFFF)) return 0;
    rlx_gstacks *dst = cur == &w->b ? &w->c : &w->b; /* alternate, never over cur */
    rlx_status st = advance(g, cur, u.cp, w, dst, &w->a);
    if (st != RLX_OK) return (int)st; /* negative */
    cur = dst;
    if (!cur->count) return 0;
  }
  if (u.need) { /* a partial code point: could any class take what completes it? */
    uint32_t lo = u.cp << (6 * u.need), hi = lo | ((1u << (6 * u.need)) - 1);
    if (lo < u.min) lo = u.min;
    if (hi > MAX_CP) hi = MAX_CP;
    int any = 0;
    for (size_t at = 0; at < cur->n && !any && lo <= hi; at += 1 + cur->v[at])
      any = cur->v[at] && class_has(g, &g->el[cur->v[at + cur->v[at]]], lo, hi);
    if (!any) return 0;
  }
  *out = cur;
  *u_out = u;
  return 1;
}

const rlx_gstacks *rlx_gstate_stacks(const rlx_llm_grammar_state *s, rlx_gutf8 *u) {
  *u = s->u;
  return &s->st;
}

const rlx_llm_grammar *rlx_gstate_grammar(const rlx_llm_grammar_state *s) { return s->g; }

rlx_status rlx_gstate_set(rlx_llm_grammar_state *s, const rlx_gstacks *st, rlx_gutf8 u) {
  if (st != &s->st) {
    if (!reserve(&s->st.v, &s->st.cap, st->n ? st->n : 1)) return RLX_ERR_NO_MEMORY;
    memcpy(s->st.v, st->v, st->n * sizeof *st->v);
    s->st.n = st->n;
    s->st.count = st->count;
  }
  s->u = u;
  return RLX_OK;
}

void rlx_llm_grammar_state_free(rlx_llm_grammar_state *s) {
  if (!s) return;
  stacks_free(&s->st);
  rlx_gscratch_free(&s->w);
  rlx_free(s, sizeof *s);
}

rlx_status rlx_llm_grammar_state_new(const rlx_llm_grammar *g, rlx_llm_grammar_state **out) {
  if (out) *out = NULL;
  if (!g || !out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_grammar_state_new: null argument");
  rlx_llm_grammar_state *s = rlx_calloc(1, sizeof *s);
  if (!s) return rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory");
  s->g = g;
  int ok = 1;
  for (uint32_t k = g->rule_alt[g->root]; ok && k < g->rule_alt[g->root + 1]; k++) ok = wpush(&s->w.a, &g->alt[k], 1);
  rlx_status st = ok ? expand(g, &s->w.a, &s->w, &s->st) : RLX_ERR_NO_MEMORY;
  if (st != RLX_OK) {
    rlx_llm_grammar_state_free(s);
    return st;
  }
  *out = s;
  return RLX_OK;
}

rlx_status rlx_llm_grammar_state_copy(const rlx_llm_grammar_state *s, rlx_llm_grammar_state **out) {
  if (out) *out = NULL;
  if (!s || !out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_grammar_state_copy: null argument");
  rlx_llm_grammar_state *c = rlx_calloc(1, sizeof *c);
  if (!c) return rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory");
  c->g = s->g;
  if (rlx_gstate_set(c, &s->st, s->u) != RLX_OK) {
    rlx_llm_grammar_state_free(c);
    return RLX_ERR_NO_MEMORY;
  }
  *out = c;
  return RLX_OK;
}

rlx_status rlx_llm_grammar_state_accept(rlx_llm_grammar_state *s, const char *bytes, size_t n, int *accepted) {
  if (accepted) *accepted = 0;
  if (!s || !accepted || (!bytes && n)) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_grammar_state_accept: null argument");
  const rlx_gstacks *res;
  rlx_gutf8 u;
  int r = rlx_gmatch_try(s->g, &s->st, s->u, (const unsigned char *)bytes, n, &s->w, &res, &u);
  if (r < 0) return (rlx_status)r;
  if (r == 0) return RLX_OK;
  *accepted = 1;
  return rlx_gstate_set(s, res, u);
}

int rlx_llm_grammar_state_complete(const rlx_llm_grammar_state *s) {
  if (!s || s->u.need) return 0;
  for (size_t at = 0; at < s->st.n; at += 1 + s->st.v[at])
    if (!s->st.v[at]) return 1;
  return 0;
}
