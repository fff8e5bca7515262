/* grammar_dfa.c - a grammar's byte automaton, built lazily while sampling
 * (grammar.h): each state is a set of the matcher's stacks with its partial
 * code point, interned; each state's transition on a byte is found once by
 * the matcher (rlx_gmatch_try on that byte) and kept.  A token's bytes are
 * then a walk of table lookups.  Walking byte by byte takes what matching
 * the token whole takes: the matcher's only other check, that a partial
 * code point at the end can still complete, is weaker than matching the
 * complete code point that follows it.  The states are forgotten when more
 * than MAX_STATES are kept (rlx_gdfa_intern, between walks). */
#include <string.h>

#include "grammar.h"
#include "../core/core.h"

#define MAX_STATES 4096
#define UNKNOWN (-2)

typedef struct {
  size_t off, n;     /* key words pool[off, off + n): the stacks' words, then cp, need, min */
  size_t count;      /* stacks */
  uint64_t hash;
  int32_t *next;     /* 256 transitions (UNKNOWN, -1 refused, or a state), or NULL: none known */
  int complete;
} dstate;

struct rlx_gdfa {
  const rlx_llm_grammar *g;
  uint32_t *pool;
  size_t n_pool, cap_pool;
  dstate *s;
  size_t n, cap;
  int32_t *slot; /* hash table of state ids + 1 */
  size_t cap_slot;
  rlx_gscratch w;
  uint64_t epoch; /* times forgotten */
};

static rlx_status oom(void) { return rlx_error(RLX_ERR_NO_MEMORY, "grammar: out of memory"); }

static void forget(rlx_gdfa *d) {
  for (size_t i = 0; i < d->n; i++) rlx_free(d->s[i].next, d->s[i].next ? 256 * sizeof *d->s[i].next : 0);
  d->n = d->n_pool = 0;
  d->epoch++;
  if (d->slot) memset(d->slot, 0, d->cap_slot * sizeof *d->slot);
}

void rlx_gdfa_free(rlx_gdfa *d) {
  if (!d) return;
  forget(d);
  rlx_free(d->pool, d->cap_pool * sizeof *d->pool);
  rlx_free(d->s, d->cap * sizeof *d->s);
  rlx_free(d->slot, d->cap_slot * sizeof *d->slot);
  rlx_gscratch_free(&d->w);
  rlx_free(d, sizeof *d);
}

rlx_status rlx_gdfa_new(const rlx_llm_grammar *g, rlx_gdfa **out) {
  *out = rlx_calloc(1, sizeof **out);
  if (!*out) return oom();
  (*out)->g = g;
  return RLX_OK;
}

static int key_equal(const rlx_gdfa *d, const dstate *x, const uint32_t *v, size_t n, const uint32_t tail[3]) {
  return x->n == n + 3 && !memcmp(d->pool + x->off, v, n * sizeof *v) && !memcmp(d->pool + x->off + n, tail, 12);
}

/* The id of stacks st with partial code point u, added when new (ids stay
 * valid until the next call of rlx_gdfa_intern with forget set). */
static rlx_status intern(rlx_gdfa *d, const rlx_gstacks *st, rlx_gutf8 u, int32_t *id) {
  const uint32_t tail[3] = {u.cp, u.need, u.min};
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (size_t i = 0; i < st->n; i++) h = (h ^ st->v[i]) * 0x100000001B3ull;
  for (int i = 0; i < 3; i++) h = (h ^ tail[i]) * 0x100000001B3ull;
  if (2 * (d->n + 1) > d->cap_slot) { /* grow and rehash */
    size_t cap = d->cap_slot ? 2 * d->cap_slot : 1024;
    int32_t *slot = rlx_calloc(cap, sizeof *slot);
    if (!slot) return oom();
    for (size_t i = 0; i < d->n; i++) {
      size_t k = d->s[i].hash & (cap - 1);
      while (slot[k]) k = (k + 1) & (cap - 1);
      slot[k] = (int32_t)i + 1;
    }
    rlx_free(d->slot, d->cap_slot * sizeof *d->slot);
    d->slot = slot, d->cap_slot = cap;
  }
  size_t k = h & (d->cap_slot - 1);
  for (; d->slot[k]; k = (k + 1) & (d->cap_slot - 1)) {
    const dstate *x = &d->s[d->slot[k] - 1];
    if (x->hash == h && key_equal(d, x, st->v, st->n, tail)) return *id = d->slot[k] - 1, RLX_OK;
  }
  if (d->n == d->cap) {
    size_t cap = d->cap ? 2 * d->cap : 256;
    dstate *s = rlx_realloc(d->s, d->cap * sizeof *s, cap * sizeof *s);
    if (!s) return oom();
    d->s = s, d->cap = cap;
  }
  const uint32_t *v = st->v; /* a state's own stacks (the matcher took no byte) live in the pool */
  if (d->n_pool + st->n + 3 > d->cap_pool) {
    const int inside = d->pool && v >= d->pool && v < d->pool + d->n_pool;
    const size_t at = inside ? (size_t)(v - d->pool) : 0;
    size_t cap = d->cap_pool ? 2 * d->cap_pool : 4096;
    while (cap < d->n_pool + st->n + 3) cap *= 2;
    uint32_t *p = rlx_realloc(d->pool, d->cap_pool * sizeof *p, cap * sizeof *p);
    if (!p) return oom();
    d->pool = p, d->cap_pool = cap;
    if (inside) v = p + at;
  }
  dstate *x = &d->s[d->n];
  x->off = d->n_pool, x->n = st->n + 3, x->count = st->count, x->hash = h, x->next = NULL, x->complete = 0;
  memcpy(d->pool + d->n_pool, v, st->n * sizeof *v);
  memcpy(d->pool + d->n_pool + st->n, tail, sizeof tail);
  d->n_pool += st->n + 3;
  for (size_t at = 0; !u.need && at < st->n && !x->complete; at += 1 + v[at]) x->complete = v[at] == 0;
  d->slot[k] = (int32_t)d->n + 1;
  *id = (int32_t)d->n++;
  return RLX_OK;
}

rlx_status rlx_gdfa_intern(rlx_gdfa *d, const rlx_gstacks *st, rlx_gutf8 u, int32_t *id) {
  if (d->n >= MAX_STATES) forget(d);
  return intern(d, st, u, id);
}

const rlx_gstacks *rlx_gdfa_stacks(const rlx_gdfa *d, int32_t id, rlx_gutf8 *u, rlx_gstacks *view) {
  const dstate *x = &d->s[id];
  const uint32_t *t = d->pool + x->off + x->n - 3;
  u->cp = t[0], u->need = t[1], u->min = t[2];
  view->v = d->pool + x->off, view->n = x->n - 3, view->cap = 0, view->count = x->count;
  return view;
}

int rlx_gdfa_complete(const rlx_gdfa *d, int32_t id) { return d->s[id].complete; }

uint64_t rlx_gdfa_epoch(const rlx_gdfa *d) { return d->epoch; }

rlx_status rlx_gdfa_walk(rlx_gdfa *d, int32_t from, const unsigned char *bytes, size_t n, int32_t *to) {
  int32_t cur = from;
  for (size_t i = 0; i < n && cur >= 0; i++) {
    dstate *x = &d->s[cur];
    if (!x->next) {
      if (!(x->next = rlx_malloc(256 * sizeof *x->next))) return oom();
      for (int b = 0; b < 256; b++) x->next[b] = UNKNOWN;
    }
    int32_t nx = x->next[bytes[i]];
    if (nx == UNKNOWN) {
      rlx_gstacks view;
      rlx_gutf8 u, u2;
      const rlx_gstacks *res;
      rlx_gdfa_stacks(d, cur, &u, &view);
      int ok = rlx_gmatch_try(d->g, &view, u, bytes + i, 1, &d->w, &res, &u2);
      if (ok < 0) return (rlx_status)ok;
      nx = -1;
      if (ok) {
        rlx_status st = intern(d, res, u2, &nx);
        if (st != RLX_OK) return st;
      }
      d->s[cur].next[bytes[i]] = nx; /* d->s may have moved */
    }
    cur = nx;
  }
  *to = cur;
  return RLX_OK;
}
