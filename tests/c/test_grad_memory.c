/* test_grad_memory.c - autodiff and memory: the backward pass appends
 * nodes (the node array moves) while rules still read input shapes, and an
 * allocation failing anywhere in rlx_grad_with_loss is reported as
 * RLX_ERR_NO_MEMORY without leaking (tests/c/check_alloc.c counts blocks).
 * Usage: test_grad_memory. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check_alloc.h"
#include "rlx.h"

#define D(...) ((const int32_t[]){__VA_ARGS__})

/* Min with broadcast operands: each contribution is unbroadcast (a
 * reduce_sum appended) to an input's shape.  pad unused inputs first move
 * the moment the node array grows (it doubles from 32), so that for some
 * pad it grows during one of those appends, whatever order the compiler
 * evaluates the rules' builder arguments in. */
static void unbroadcast_case(int pad) {
  rlx_graph *g = rlx_graph_new();
  for (int i = 0; i < pad; i++) {
    char name[16];
    snprintf(name, sizeof name, "pad%d", i);
    rlx_input(g, name, 1, D(1), RLX_F32);
  }
  rlx_node x = rlx_input(g, "x", 4, D(1, 3, 1, 6), RLX_F32);
  rlx_node a = rlx_reduce_sum(g, x, D(-1, 1, -2), 3, 1);
  rlx_node b = rlx_reduce_sum(g, x, D(-4, -4, -4), 3, 1);
  rlx_node m1 = rlx_min(g, x, a), m2 = rlx_min(g, m1, m1);
  rlx_min(g, a, a);
  rlx_min(g, m1, b);
  rlx_node loss = rlx_reduce_mean(g, m2, D(0, 1, 2, 3), 4, 0), outs[3];
  rlx_node wrt[2] = {x, m2};
  if (rlx_grad_with_loss(g, loss, wrt, 2, outs) != RLX_OK) {
    print_error("pad %d: %s\n", pad, rlx_last_error());
    fail();
  }
  int32_t dims[8];
  assert_int_equal(rlx_node_shape(g, outs[1], dims), 4);
  assert_memory_equal(dims, D(1, 3, 1, 6), 4 * sizeof(int32_t));
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, outs, 3, NULL, &s), RLX_OK);
  float xs[18], one = 1.0f;
  for (int i = 0; i < 18; i++) xs[i] = (float)(i % 7) - 3.0f;
  assert_int_equal(rlx_session_set_input(s, "x", xs, 18), RLX_OK);
  assert_int_equal(rlx_session_set_input(s, "d_output", &one, 1), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  const float *dm2 = rlx_session_output(s, 2); /* loss is the mean of m2's 18 values */
  for (int i = 0; i < 18; i++) assert_float_equal(dm2[i], 1.0f / 18.0f, 1e-6);
  rlx_session_free(s);
  rlx_graph_free(g);
}

static void unbroadcast_survives_node_array_growth(void **state) {
  (void)state;
  for (int pad = 0; pad < 40; pad++) unbroadcast_case(pad);
}

/* loss = sum(x * w) over a graph whose node array is full, so the first
 * allocation of rlx_grad_with_loss is the one adding 'd_output'. */
static rlx_graph *full_graph(rlx_node *loss, rlx_node *w) {
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 1, D(4), RLX_F32);
  *w = rlx_param(g, "w", 1, D(4));
  rlx_node y = rlx_mul(g, x, *w);
  while (rlx_graph_node_count(g) < 31) y = rlx_add(g, y, *w);
  *loss = rlx_reduce_sum(g, y, D(0), 1, 0);
  assert_int_equal(rlx_graph_node_count(g), 32);
  return g;
}

static void seed_input_out_of_memory_is_no_memory(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  rlx_node loss, w, outs[2];
  rlx_graph *g = full_graph(&loss, &w);
  size_t live = check_alloc_live_blocks();
  check_alloc_fail_at(0, 0);
  rlx_status st = rlx_grad_with_loss(g, loss, &w, 1, outs);
  check_alloc_fail_at(-1, 0);
  assert_int_equal(st, RLX_ERR_NO_MEMORY);
  assert_non_null(strstr(rlx_last_error(), "memory"));
  rlx_graph_free(g);
  assert_true(check_alloc_live_blocks() < live);
}

/* Every allocation of rlx_grad_with_loss (once, and from then on) may fail:
 * RLX_ERR_NO_MEMORY, never another status, no leak once the graph is freed. */
static void every_allocation_failure_is_no_memory(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  size_t live = check_alloc_live_blocks();
  for (int sticky = 0; sticky < 2; sticky++) {
    int done = 0;
    for (long n = 0; n < 1000 && !done; n++) {
      rlx_node loss, w, outs[2];
      rlx_graph *g = full_graph(&loss, &w);
      check_alloc_fail_at(n, sticky);
      rlx_status st = rlx_grad_with_loss(g, loss, &w, 1, outs);
      long refused = check_alloc_refused();
      check_alloc_fail_at(-1, 0);
      if (refused == 0) {
        assert_int_equal(st, RLX_OK);
        done = 1;
      } else if (st != RLX_ERR_NO_MEMORY) {
        print_error("allocation %ld failed: status %d: %s\n", n, (int)st, rlx_last_error());
        fail();
      }
      rlx_graph_free(g);
      assert_int_equal(check_alloc_live_blocks(), live);
    }
    assert_true(done);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(unbroadcast_survives_node_array_growth),
      cmocka_unit_test(seed_input_out_of_memory_is_no_memory),
      cmocka_unit_test(every_allocation_failure_is_no_memory),
  };
  return cmocka_run_group_tests_name("grad memory", tests, NULL, NULL);
}
