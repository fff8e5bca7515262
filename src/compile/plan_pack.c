/* plan_pack.c - greedy arena packing by lifetime (rlx_plan_pack, plan.h):
 * values largest first, each at the lowest offset free over its lifetime
 * among those placed before it.  The values placed are listed by the step
 * that writes them, and each block of PACK_BLOCK steps keeps the latest
 * step that reads one of its values, so the values alive with a new one
 * are found by skipping the blocks that end before it: a model of 1,024
 * layers (short lifetimes) packs about as fast per layer as one of 64,
 * where checking every pair of values made packing quadratic. */
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define PACK_BLOCK 64

typedef struct {
  int32_t id;
  size_t size;
} arena_value;

static int by_size_desc(const void *a, const void *b) {
  const arena_value *x = a, *y = b;
  if (x->size != y->size) return x->size < y->size ? 1 : -1;
  return x->id - y->id;
}

rlx_status rlx_plan_pack(const rlx_plan *p, const int8_t *group, size_t *offset, size_t *group_floats) {
  const int32_t n = p->graph.n_nodes;
  int32_t count = 0;
  const int32_t steps = p->n_steps + 1, blocks = (steps + PACK_BLOCK - 1) / PACK_BLOCK;
  const size_t nv = (size_t)n + 1, ni = nv + (size_t)steps + (size_t)blocks;
  arena_value *vals = rlx_calloc(2 * nv, sizeof *vals), *busy = vals + nv;
  int32_t *next = rlx_malloc(ni * sizeof *next), *head = next + nv, *block_last = head + steps;
  rlx_status st = RLX_ERR_NO_MEMORY;
  if (!vals || !next) goto out;
  memset(next, 0xFF, ni * sizeof *next); /* -1: none */
  for (int32_t id = 0; id < n; id++)
    if (p->first_step[id] >= 0) vals[count++] = (arena_value){id, rlx_shape_numel(&p->graph.nodes[id].shape)};
  for (int32_t i = 0; i < count; i++) vals[i].size = (vals[i].size + p->arena_align - 1) / p->arena_align * p->arena_align;
  qsort(vals, (size_t)count, sizeof *vals, by_size_desc);
  for (int32_t i = 0; i < count; i++) {
    const int32_t a = vals[i].id, first = p->first_step[a], last = p->last_step[a], g = group ? group[a] : 0;
    int32_t nb = 0; /* the placed values of the group alive with a */
    for (int32_t s = 0; s <= last && s < steps; s++) {
      if (s % PACK_BLOCK == 0 && block_last[s / PACK_BLOCK] < first) {
        s += PACK_BLOCK - 1;
        continue;
      }
      for (int32_t j = head[s]; j >= 0; j = next[j])
        if (p->last_step[vals[j].id] >= first && (group ? group[vals[j].id] : 0) == g) busy[nb++] = vals[j];
    }
    size_t o = 0; /* the lowest offset clear of them all: past each one it meets, until none */
    for (int moved = 1; moved;) {
      moved = 0;
      for (int32_t j = 0; j < nb; j++)
        if (offset[busy[j].id] < o + vals[i].size && o < offset[busy[j].id] + busy[j].size)
          o = offset[busy[j].id] + busy[j].size, moved = 1;
    }
    offset[a] = o;
    if (o + vals[i].size > group_floats[g]) group_floats[g] = o + vals[i].size;
    next[i] = head[first]; /* placed */
    head[first] = i;
    if (block_last[first / PACK_BLOCK] < last) block_last[first / PACK_BLOCK] = last;
  }
  st = RLX_OK;
out:
  rlx_free(vals, 2 * nv * sizeof *vals);
  rlx_free(next, ni * sizeof *next);
  return st;
}
