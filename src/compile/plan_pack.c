/* plan_pack.c - greedy arena packing by lifetime (rlx_plan_pack, plan.h):
 * values largest first, each at the lowest offset free over its lifetime
 * among those placed before it.  The values alive with a new one are found
 * through a segment tree over the steps that write them (each tree node
 * holding the latest step that reads a value below it), so packing costs
 * about (values + overlaps) x log(steps), not values^2: a model of 1,024
 * layers packs as fast per layer as one of 64. */
#include <stdlib.h>

#include "plan.h"

typedef struct {
  int32_t id;
  size_t size;
} arena_value;

static int by_size_desc(const void *a, const void *b) {
  const arena_value *x = a, *y = b;
  if (x->size != y->size) return x->size < y->size ? 1 : -1;
  return x->id - y->id;
}

static int by_index(const void *a, const void *b) {
  const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
  return (x > y) - (x < y);
}

static size_t padded_numel(const rlx_node_t *n, size_t align) {
  size_t s = rlx_shape_numel(&n->shape);
  return (s + align - 1) / align * align;
}

/* The placed values (positions in the size order) by the step that writes
 * them: a list per step, and over the steps a segment tree of the latest
 * step that reads a value placed below each node (-1: none). */
typedef struct {
  int32_t leaves;    /* a power of two >= the steps */
  int32_t *max_last; /* 2 * leaves */
  int32_t *head;     /* per step: a placed value written there, or -1 */
  int32_t *next;     /* per value: the next one written at its step */
} placed_index;

static void placed_add(placed_index *x, const rlx_plan *p, int32_t pos, int32_t id) {
  const int32_t step = p->first_step[id], last = p->last_step[id];
  x->next[pos] = x->head[step];
  x->head[step] = pos;
  for (int32_t k = step + x->leaves; k >= 1 && x->max_last[k] < last; k /= 2) x->max_last[k] = last;
}

typedef struct {
  const placed_index *x;
  const rlx_plan *p;
  const arena_value *vals;
  int32_t first, last; /* the new value's lifetime */
  int32_t *out, n_out;
} placed_query;

/* Values under tree node k (steps lo .. hi) written by q->last and read
 * at q->first or later: those alive with the new value. */
static void query(placed_query *q, int32_t k, int32_t lo, int32_t hi) {
  if (lo > q->last || q->x->max_last[k] < q->first) return;
  if (k >= q->x->leaves) {
    for (int32_t j = q->x->head[lo]; j >= 0; j = q->x->next[j])
      if (q->p->last_step[q->vals[j].id] >= q->first) q->out[q->n_out++] = j;
    return;
  }
  const int32_t mid = lo + (hi - lo) / 2;
  query(q, 2 * k, lo, mid);
  query(q, 2 * k + 1, mid + 1, hi);
}

rlx_status rlx_plan_pack(const rlx_plan *p, const int8_t *group, size_t *offset, size_t *group_floats) {
  const int32_t n = p->graph.n_nodes;
  int32_t count = 0, leaves = 1;
  for (int32_t id = 0; id < n; id++)
    while (leaves <= p->first_step[id]) leaves *= 2;
  const size_t nv = (size_t)n + 1, nl = (size_t)leaves;
  arena_value *vals = rlx_calloc(nv, sizeof *vals), *busy = rlx_calloc(nv, sizeof *busy);
  int32_t *found = rlx_calloc(nv, sizeof *found), *next = rlx_calloc(nv, sizeof *next);
  int32_t *max_last = rlx_malloc(2 * nl * sizeof *max_last), *head = rlx_malloc(nl * sizeof *head);
  rlx_status st = RLX_ERR_NO_MEMORY;
  if (!vals || !busy || !found || !next || !max_last || !head) goto out;
  for (size_t k = 0; k < 2 * nl; k++) max_last[k] = -1;
  for (size_t k = 0; k < nl; k++) head[k] = -1;
  placed_index x = {leaves, max_last, head, next};
  for (int32_t id = 0; id < n; id++)
    if (p->first_step[id] >= 0) vals[count++] = (arena_value){id, padded_numel(&p->graph.nodes[id], p->arena_align)};
  qsort(vals, (size_t)count, sizeof *vals, by_size_desc);
  for (int32_t i = 0; i < count; i++) {
    const int32_t a = vals[i].id, ga = group ? group[a] : 0;
    placed_query q = {&x, p, vals, p->first_step[a], p->last_step[a], found, 0};
    query(&q, 1, 0, leaves - 1);
    /* Placed values of the group alive at the same time, sorted by offset
     * (placement order among equal offsets). */
    qsort(found, (size_t)q.n_out, sizeof *found, by_index);
    int32_t nb = 0;
    for (int32_t f = 0; f < q.n_out; f++) {
      const arena_value *v = &vals[found[f]];
      if ((group ? group[v->id] : 0) != ga) continue;
      int32_t at = nb++;
      const size_t off = offset[v->id];
      while (at > 0 && offset[busy[at - 1].id] > off) {
        busy[at] = busy[at - 1];
        at--;
      }
      busy[at] = *v;
    }
    size_t o = 0;
    for (int32_t j = 0; j < nb; j++) {
      size_t start = offset[busy[j].id];
      if (start >= o + vals[i].size) break;
      if (start + busy[j].size > o) o = start + busy[j].size;
    }
    offset[a] = o;
    if (o + vals[i].size > group_floats[ga]) group_floats[ga] = o + vals[i].size;
    placed_add(&x, p, i, a);
  }
  st = RLX_OK;
out:
  rlx_free(vals, nv * sizeof *vals);
  rlx_free(busy, nv * sizeof *busy);
  rlx_free(found, nv * sizeof *found);
  rlx_free(next, nv * sizeof *next);
  rlx_free(max_last, 2 * nl * sizeof *max_last);
  rlx_free(head, nl * sizeof *head);
  return st;
}
