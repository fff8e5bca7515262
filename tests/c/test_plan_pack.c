/* test_plan_pack.c - the arena packer (rlx_plan_pack, src/compile/plan_pack.c)
 * against the plain greedy rule it implements with an index of steps: values
 * largest first (ties by id), each at the lowest offset free over its
 * lifetime among those placed before it in its group.  Random lifetimes,
 * sizes and groups, short-lived and long-lived values, values never read;
 * the offsets and each group's size must be the rule's exactly, and no
 * two values alive at once may share memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/compile/plan.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next(uint32_t n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 33) % n;
}

static int overlap(const rlx_plan *p, int32_t a, int32_t b) {
  return p->first_step[a] <= p->last_step[b] && p->first_step[b] <= p->last_step[a];
}

static size_t padded(const rlx_plan *p, int32_t id) {
  size_t s = rlx_shape_numel(&p->graph.nodes[id].shape);
  return (s + p->arena_align - 1) / p->arena_align * p->arena_align;
}

/* The rule, in its plain quadratic form. */
static void reference(const rlx_plan *p, const int8_t *group, int32_t *order, int32_t count, size_t *offset,
                      size_t *group_floats) {
  for (int32_t i = 1; i < count; i++) /* largest first, ties by id */
    for (int32_t j = i; j > 0; j--) {
      const int32_t a = order[j - 1], b = order[j];
      const size_t sa = padded(p, a), sb = padded(p, b);
      if (sa > sb || (sa == sb && a < b)) break;
      order[j - 1] = b, order[j] = a;
    }
  for (int32_t i = 0; i < count; i++) {
    const int32_t a = order[i];
    size_t o = 0;
    for (int moved = 1; moved;) { /* the lowest offset clear of every placed value alive with a */
      moved = 0;
      for (int32_t j = 0; j < i; j++) {
        const int32_t b = order[j];
        if (group[b] != group[a] || !overlap(p, a, b)) continue;
        if (offset[b] < o + padded(p, a) && o < offset[b] + padded(p, b)) o = offset[b] + padded(p, b), moved = 1;
      }
    }
    offset[a] = o;
    if (o + padded(p, a) > group_floats[group[a]]) group_floats[group[a]] = o + padded(p, a);
  }
}

static void packs_as_the_rule_says(void **state) {
  (void)state;
  enum { N = 300 };
  for (int trial = 0; trial < 200; trial++) {
    rlx_plan p;
    memset(&p, 0, sizeof p);
    rlx_node_t nodes[N];
    int32_t first[N], last[N], order[N], count = 0;
    int8_t group[N];
    size_t want[N] = {0}, got[N] = {0}, want_floats[3] = {0}, got_floats[3] = {0};
    memset(nodes, 0, sizeof nodes);
    const int32_t n = 1 + (int32_t)next(N), steps = 1 + (int32_t)next(n);
    for (int32_t id = 0; id < n; id++) {
      nodes[id].shape.rank = 1;
      nodes[id].shape.dims[0] = 1 + (int32_t)next(trial % 2 ? 40 : 5000);
      first[id] = next(5) == 0 ? -1 : (int32_t)next((uint32_t)steps); /* -1: not in the arena */
      const uint32_t span = next(8) == 0 ? (uint32_t)steps : 4; /* now and then a long-lived value */
      last[id] = first[id] < 0 ? -1 : first[id] + (int32_t)next(span + 1);
      if (last[id] > steps) last[id] = steps;
      group[id] = (int8_t)(trial % 3 ? 0 : next(3));
      if (first[id] >= 0) order[count++] = id;
    }
    p.graph.nodes = nodes;
    p.graph.n_nodes = n;
    p.n_steps = steps;
    p.first_step = first;
    p.last_step = last;
    p.arena_align = trial % 4 ? 16 : 64;
    reference(&p, group, order, count, want, want_floats);
    assert_int_equal(rlx_plan_pack(&p, trial % 3 ? NULL : group, got, got_floats), RLX_OK);
    for (int32_t id = 0; id < n; id++)
      if (first[id] >= 0) assert_int_equal(got[id], want[id]);
    assert_memory_equal(got_floats, want_floats, sizeof want_floats);
    for (int32_t a = 0; a < n; a++) /* nothing alive at once shares memory */
      for (int32_t b = a + 1; b < n; b++)
        if (first[a] >= 0 && first[b] >= 0 && group[a] == group[b] && overlap(&p, a, b))
          assert_true(got[a] + padded(&p, a) <= got[b] || got[b] + padded(&p, b) <= got[a]);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(packs_as_the_rule_says)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
