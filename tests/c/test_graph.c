/* test_graph.c - the graph builder, verifier, memory planner and session
 * API: error messages that name the node, op and shapes; dead-code
 * elimination; arena reuse without overlap; sessions reused across runs;
 * allocation failures that never crash or leak. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/compile/plan.h"
#include "check_alloc.h"
#include "rlx.h"

#include "assert_text.h"

static void free_null_is_harmless(void **state) {
  (void)state;
  rlx_graph_free(NULL);
  rlx_session_free(NULL);
  assert_int_equal(rlx_graph_status(NULL), RLX_ERR_INVALID_ARG);
  assert_null(rlx_session_output(NULL, 0));
  assert_int_equal(rlx_session_output_shape(NULL, 0, NULL), -1);
}

static void op_names_round_trip(void **state) {
  (void)state;
  for (int op = 0; op < RLX_OP_COUNT; op++) assert_int_equal(rlx_op_from_name(rlx_op_name((rlx_op)op)), op);
  assert_int_equal(rlx_op_from_name("no_such_op"), RLX_OP_COUNT);
  assert_int_equal(rlx_op_from_name(NULL), RLX_OP_COUNT);
}

static void shape_error_names_node_op_and_shapes(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node a = rlx_input(g, "a", 2, (int32_t[]){2, 3}, RLX_F32);
  rlx_node b = rlx_param(g, "b", 2, (int32_t[]){4, 5});
  rlx_node c = rlx_matmul(g, a, b);
  assert_int_equal(c, RLX_NO_NODE);
  rlx_node d = rlx_relu(g, c); /* propagates silently */
  assert_int_equal(d, RLX_NO_NODE);
  assert_int_equal(rlx_graph_status(g), RLX_ERR_SHAPE);
  const char *msg = rlx_graph_error(g);
  assert_contains(msg, "node 2");
  assert_contains(msg, "matmul");
  assert_contains(msg, "[2, 3]");
  assert_contains(msg, "[4, 5]");
  assert_contains(msg, "inner dimensions differ");
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &a, 1, NULL, &s), RLX_ERR_SHAPE);
  assert_null(s);
  assert_contains(rlx_last_error(), "matmul");
  rlx_graph_free(g);
}

static void structural_errors(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){2, 3}, RLX_F32);
  assert_int_equal(rlx_add(g, x, 99), RLX_NO_NODE);
  assert_int_equal(rlx_graph_status(g), RLX_ERR_GRAPH);
  assert_contains(rlx_graph_error(g), "unknown node 99");
  rlx_graph_free(g);

  g = rlx_graph_new();
  x = rlx_input(g, "x", 2, (int32_t[]){2, 3}, RLX_F32);
  assert_int_equal(rlx_op_node(g, RLX_OP_ADD, &x, 1, NULL, 0, NULL, 0), RLX_NO_NODE);
  assert_contains(rlx_graph_error(g), "expects 2 inputs, got 1");
  rlx_graph_free(g);

  g = rlx_graph_new();
  x = rlx_input(g, "x", 2, (int32_t[]){2, 3}, RLX_F32);
  assert_int_equal(rlx_softmax(g, x, 5), RLX_NO_NODE);
  assert_contains(rlx_graph_error(g), "softmax");
  assert_contains(rlx_graph_error(g), "axis 5");
  rlx_graph_free(g);

  g = rlx_graph_new();
  x = rlx_input(g, "x", 2, (int32_t[]){2, 3}, RLX_F32);
  assert_int_equal(rlx_input(g, "x", 1, (int32_t[]){3}, RLX_F32), RLX_NO_NODE);
  assert_contains(rlx_graph_error(g), "already used");
  rlx_graph_free(g);

  g = rlx_graph_new();
  assert_int_equal(rlx_input(g, "z", 2, (int32_t[]){2, 0}, RLX_F32), RLX_NO_NODE);
  assert_contains(rlx_graph_error(g), "positive");
  rlx_graph_free(g);

  g = rlx_graph_new();
  rlx_node ids = rlx_input(g, "ids", 1, (int32_t[]){3}, RLX_I32);
  assert_int_equal(rlx_relu(g, ids), RLX_NO_NODE);
  assert_contains(rlx_graph_error(g), "i32");
  rlx_graph_free(g);

  /* Compile-time checks of the output list. */
  g = rlx_graph_new();
  x = rlx_input(g, "x", 1, (int32_t[]){3}, RLX_F32);
  rlx_session *s = NULL;
  rlx_node bad = 7;
  assert_int_equal(rlx_compile(g, &bad, 1, NULL, &s), RLX_ERR_GRAPH);
  assert_contains(rlx_last_error(), "unknown node 7");
  assert_int_equal(rlx_compile(g, &x, 0, NULL, &s), RLX_ERR_INVALID_ARG);
  rlx_compile_options junk = {(rlx_device)42, 0, 0, 0};
  assert_int_equal(rlx_compile(g, &x, 1, &junk, &s), RLX_ERR_INVALID_ARG);
  assert_null(s);
  rlx_graph_free(g);
}

/* Every shape rule refuses a bad case with a message naming its op. */
static void every_op_has_a_refusal(void **state) {
  (void)state;
  for (int op = RLX_OP_ADD; op < RLX_OP_COUNT; op++) {
    rlx_graph *g = rlx_graph_new();
    rlx_node x = rlx_input(g, "x", 1, (int32_t[]){3}, RLX_F32);
    rlx_node y = rlx_input(g, "y", 1, (int32_t[]){4}, RLX_F32);
    rlx_node in[4] = {x, y, y, y};
    int32_t iattr[8] = {9, 9, 9, 9, 9, 9, 9, 9};
    float f = -1.0f;
    /* rank-1 x and y of sizes 3 and 4 with nonsense attributes fit no op */
    rlx_node n = rlx_op_node(g, (rlx_op)op, in, 4, iattr, 8, &f, 1);
    assert_int_equal(n, RLX_NO_NODE);
    assert_int_not_equal(rlx_graph_status(g), RLX_OK);
    assert_contains(rlx_graph_error(g), rlx_op_name((rlx_op)op));
    rlx_graph_free(g);
  }
}

/* A chain of same-sized elementwise ops reuses a few arena slots. */
static void planner_reuses_memory(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){64, 64}, RLX_F32), h = x;
  for (int i = 0; i < 50; i++) h = (i % 2) ? rlx_tanh(g, h) : rlx_add(g, h, x);
  rlx_node dead = rlx_exp(g, x); /* not an output: must not run */
  (void)dead;
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &h, 1, NULL, &s), RLX_OK);
  assert_int_equal(rlx_session_step_count(s), 50);
  size_t value = 64 * 64 * sizeof(float);
  assert_true(rlx_session_arena_bytes(s) <= 2 * value);
  assert_true(rlx_session_arena_bytes(s) >= value);
  rlx_session_free(s);
  rlx_graph_free(g);
}

/* Random DAGs: the plan never overlaps two live values, and the checker
 * itself notices an overlap when one is injected. */
static void planner_never_overlaps_live_values(void **state) {
  (void)state;
  uint64_t rng = 12345;
  for (int trial = 0; trial < 40; trial++) {
    rlx_graph *g = rlx_graph_new();
    rlx_node nodes[64];
    int n = 0;
    nodes[n++] = rlx_input(g, "x", 1, (int32_t[]){17}, RLX_F32);
    nodes[n++] = rlx_param(g, "p", 1, (int32_t[]){17});
    for (int i = 0; i < 40; i++) {
      rng = rng * 6364136223846793005ull + 1442695040888963407ull;
      rlx_node a = nodes[(rng >> 33) % (uint64_t)n], b = nodes[(rng >> 45) % (uint64_t)n];
      nodes[n++] = (rng >> 60) & 1 ? rlx_mul(g, a, b) : rlx_reshape(g, rlx_add(g, a, b), 1, (int32_t[]){17});
    }
    rlx_node outs[3] = {nodes[n - 1], nodes[n - 7], nodes[n / 2]};
    rlx_plan plan;
    assert_int_equal(rlx_plan_build(g, outs, 3, 1, &plan), RLX_OK);
    assert_int_equal(rlx_plan_check(&plan), RLX_OK);
    /* Inject an overlap between two values alive at the same step. */
    int found = 0;
    for (int32_t a = 0; a < plan.graph.n_nodes && !found; a++)
      for (int32_t b = a + 1; b < plan.graph.n_nodes && !found; b++)
        if (plan.first_step[a] >= 0 && plan.first_step[b] >= 0 && plan.first_step[a] <= plan.last_step[b] &&
            plan.first_step[b] <= plan.last_step[a]) {
          size_t keep = plan.loc[b].offset;
          plan.loc[b].offset = plan.loc[a].offset;
          assert_int_equal(rlx_plan_check(&plan), RLX_ERR_STATE);
          plan.loc[b].offset = keep;
          found = 1;
        }
    assert_true(found);
    rlx_plan_free(&plan);
    rlx_graph_free(g);
  }
}

static void session_runs_again_without_recompiling(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){2, 3}, RLX_F32);
  rlx_node w = rlx_param(g, "w", 2, (int32_t[]){3, 2});
  rlx_node y = rlx_relu(g, rlx_matmul(g, x, w));
  rlx_node flat = rlx_reshape(g, w, 1, (int32_t[]){-1}); /* a view of a param */
  rlx_node outs[2] = {y, flat};
  rlx_session *s = NULL;
  rlx_compile_options unfused = {RLX_DEVICE_CPU, 1, 0, 0};
  assert_int_equal(rlx_compile(g, outs, 2, &unfused, &s), RLX_OK);
  rlx_graph_free(g); /* the session keeps what it needs */
  assert_int_equal(rlx_session_step_count(s), 2); /* matmul, relu; the reshape is a view */
  float xs[6] = {1, 2, 3, 4, 5, 6}, ws[6] = {1, 0, 0, 1, 1, -1}, out[4], back[6];
  assert_int_equal(rlx_session_run(s), RLX_ERR_STATE); /* input not set */
  assert_contains(rlx_last_error(), "'x'");
  assert_int_equal(rlx_session_set_param(s, "w", ws, 5), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "holds 6 values, got 5");
  assert_int_equal(rlx_session_set_param(s, "nope", ws, 6), RLX_ERR_NOT_FOUND);
  assert_int_equal(rlx_session_set_param(s, "w", ws, 6), RLX_OK);
  assert_int_equal(rlx_session_set_input(s, "x", xs, 6), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 0, out, 4), RLX_ERR_STATE);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 0, out, 4), RLX_OK);
  /* x.w = [[1+3, 2-3], [4+6, 5-6]] -> relu */
  float want[4] = {4, 0, 10, 0};
  for (int i = 0; i < 4; i++) assert_float_equal(out[i], want[i], 1e-6);
  const float *view = rlx_session_output(s, 1);
  for (int i = 0; i < 6; i++) assert_float_equal(view[i], ws[i], 0);
  xs[0] = -10;
  assert_int_equal(rlx_session_set_input(s, "x", xs, 6), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_float_equal(rlx_session_output(s, 0)[0], 0.0f, 0); /* -10 + 3 -> relu 0 */
  assert_int_equal(rlx_session_get_param(s, "w", back, 6), RLX_OK);
  assert_memory_equal(back, ws, sizeof ws);
  assert_int_equal(rlx_session_read_output(s, 2, out, 4), RLX_ERR_NOT_FOUND);
  assert_int_equal(rlx_session_read_output(s, 0, out, 3), RLX_ERR_INVALID_ARG);
  rlx_session_free(s);
}

static void bad_index_is_an_error_not_a_crash(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node table = rlx_param(g, "table", 2, (int32_t[]){4, 3});
  rlx_node ids = rlx_input(g, "ids", 1, (int32_t[]){2}, RLX_I32);
  rlx_node y = rlx_gather(g, table, ids);
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &y, 1, NULL, &s), RLX_OK);
  int32_t good[2] = {3, 0}, bad[2] = {1, 4};
  assert_int_equal(rlx_session_set_input_i32(s, "ids", good, 2), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_set_input_i32(s, "ids", bad, 2), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "outside");
  assert_null(rlx_session_output(s, 0));
  rlx_session_free(s);
  rlx_graph_free(g);
}

static rlx_status build_and_run_once(void) {
  rlx_graph *g = rlx_graph_new();
  if (!g) return RLX_ERR_NO_MEMORY;
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){3, 4}, RLX_F32);
  rlx_node w = rlx_param(g, "w", 2, (int32_t[]){4, 5});
  rlx_node y = rlx_softmax(g, rlx_add(g, rlx_matmul(g, x, w), rlx_scalar(g, 1.0f)), -1);
  rlx_session *s = NULL;
  rlx_status st = rlx_compile(g, &y, 1, NULL, &s);
  rlx_graph_free(g);
  if (st != RLX_OK) return st;
  float xs[12] = {0};
  st = rlx_session_set_input(s, "x", xs, 12);
  if (st == RLX_OK) st = rlx_session_run(s);
  rlx_session_free(s);
  return st;
}

static void allocation_failures_are_reported(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  int succeeded = 0;
  size_t live = check_alloc_live_blocks();
  for (long budget = 0; budget < 200 && !succeeded; budget++) {
    check_alloc_fail_at(budget, 1); /* budget allocations succeed, then none */
    rlx_status st = build_and_run_once();
    assert_int_equal(check_alloc_live_blocks(), live); /* nothing leaked */
    if (st == RLX_OK) succeeded = 1;
    else assert_true(st == RLX_ERR_NO_MEMORY || st == RLX_ERR_SHAPE || st == RLX_ERR_GRAPH ||
                     st == RLX_ERR_INVALID_ARG);
  }
  check_alloc_fail_at(-1, 0);
  assert_true(succeeded);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(free_null_is_harmless),
      cmocka_unit_test(op_names_round_trip),
      cmocka_unit_test(shape_error_names_node_op_and_shapes),
      cmocka_unit_test(structural_errors),
      cmocka_unit_test(every_op_has_a_refusal),
      cmocka_unit_test(planner_reuses_memory),
      cmocka_unit_test(planner_never_overlaps_live_values),
      cmocka_unit_test(session_runs_again_without_recompiling),
      cmocka_unit_test(bad_index_is_an_error_not_a_crash),
      cmocka_unit_test(allocation_failures_are_reported),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
