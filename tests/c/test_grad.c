/* test_grad.c - autodiff: every rule against finite differences (and a
 * self-test showing the checker catches a 5% error), gradients of a sum of
 * losses equal the sum of gradients, the mean semantics the tab cluster
 * relies on, and clear errors for gradients that cannot exist.  Each
 * case's gradients are computed on one thread and on three, bitwise equal
 * (every parallel loop splits: rlx_parallel_set_min_work).
 * Usage: test_grad [substring]. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "../../src/core/pool.h"
#include "grad_case.h"

#define D(...) ((const int32_t[]){__VA_ARGS__})

static void run_case(void **state) {
  const grad_case *c = *state;
  gradcase_result r;
  gradcase_run(c, 1.0, &r);
  double tol = c->tol > 0 ? c->tol : 1e-2;
  if (r.status != RLX_OK || r.max_err > tol || r.checked == 0) {
    print_error("%s: %s (checked %d)\n", c->name, r.message, (int)r.checked);
    fail();
  }
}

/* The checker must notice an analytic gradient that is 5% off. */
static void checker_catches_wrong_gradients(void **state) {
  (void)state;
  for (int i = 0; i < gradcase_count(); i++) {
    const grad_case *c = gradcase_get(i);
    if (strcmp(c->name, "grad_mlp") && strcmp(c->name, "grad_conv2d_groups") && strcmp(c->name, "grad_attention_causal"))
      continue;
    gradcase_result r;
    gradcase_run(c, 1.05, &r);
    assert_int_equal(r.status, RLX_OK);
    assert_true(r.max_err > (c->tol > 0 ? c->tol : 1e-2));
  }
}

static rlx_session *compile_or_fail(rlx_graph *g, const rlx_node *outs, int32_t n) {
  rlx_session *s = NULL;
  if (rlx_compile(g, outs, n, NULL, &s) != RLX_OK) {
    print_error("compile: %s\n", rlx_last_error());
    fail();
  }
  return s;
}

static void fill(float *x, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) x[i] = (float)((double)((seed * 2654435761u + i * 40503u) % 2000u) / 1000.0 - 1.0);
}

/* loss = L1(w) + L2(w): the gradient is the sum of the two gradients. */
static void gradient_of_sum_is_sum_of_gradients(void **state) {
  (void)state;
  float xs[12], ws[20];
  fill(xs, 12, 1), fill(ws, 20, 2);
  float grads[3][20];
  for (int which = 0; which < 3; which++) {
    rlx_graph *g = rlx_graph_new();
    rlx_node x = rlx_input(g, "x", 2, D(3, 4), RLX_F32), w = rlx_param(g, "w", 2, D(4, 5));
    rlx_node h = rlx_matmul(g, x, w);
    rlx_node l1 = rlx_reduce_sum(g, rlx_tanh(g, h), D(0, 1), 2, 0);
    rlx_node l2 = rlx_reduce_mean(g, rlx_mul(g, h, h), D(0, 1), 2, 0);
    rlx_node loss = which == 0 ? l1 : which == 1 ? l2 : rlx_add(g, l1, l2), outs[2];
    assert_int_equal(rlx_grad_with_loss(g, loss, &w, 1, outs), RLX_OK);
    rlx_session *s = compile_or_fail(g, outs, 2);
    float one = 1;
    rlx_session_set_input(s, "x", xs, 12);
    rlx_session_set_input(s, "d_output", &one, 1);
    rlx_session_set_param(s, "w", ws, 20);
    assert_int_equal(rlx_session_run(s), RLX_OK);
    assert_int_equal(rlx_session_read_output(s, 1, grads[which], 20), RLX_OK);
    rlx_session_free(s);
    rlx_graph_free(g);
  }
  for (int i = 0; i < 20; i++) assert_float_equal(grads[2][i], grads[0][i] + grads[1][i], 1e-5);
}

/* Per-sample losses reduced with mean (or sum) over a batch of n rows;
 * returns the gradient of fc_w for the given rows. */
static void batch_grad(const float *x, const float *labels, int32_t n, int use_sum, float *grad) {
  rlx_graph *g = rlx_graph_new();
  rlx_node xi = rlx_input(g, "x", 2, D(n, 6), RLX_F32), li = rlx_input(g, "labels", 1, D(n), RLX_F32);
  rlx_node w = rlx_param(g, "w", 2, D(6, 4));
  rlx_node per = rlx_softmax_cross_entropy(g, rlx_matmul(g, rlx_tanh(g, xi), w), li);
  rlx_node loss = use_sum ? rlx_reduce_sum(g, per, D(0), 1, 0) : rlx_reduce_mean(g, per, D(0), 1, 0), outs[2];
  assert_int_equal(rlx_grad_with_loss(g, loss, &w, 1, outs), RLX_OK);
  rlx_session *s = compile_or_fail(g, outs, 2);
  float ws[24], one = 1;
  fill(ws, 24, 9);
  rlx_session_set_param(s, "w", ws, 24);
  rlx_session_set_input(s, "x", x, (size_t)n * 6);
  rlx_session_set_input(s, "labels", labels, (size_t)n);
  rlx_session_set_input(s, "d_output", &one, 1);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 1, grad, 24), RLX_OK);
  rlx_session_free(s);
  rlx_graph_free(g);
}

/* The tab cluster averages bucket gradients weighted by sample count: that
 * equals the full-batch gradient only because batch losses use the mean. */
static void mean_loss_gradients_average_over_shards(void **state) {
  (void)state;
  float x[10 * 6], labels[10], full[24], a[24], b[24], sum_full[24], sum_a[24], sum_b[24];
  fill(x, 60, 3);
  for (int i = 0; i < 10; i++) labels[i] = (float)(i * 7 % 4);
  batch_grad(x, labels, 10, 0, full);
  batch_grad(x, labels, 6, 0, a);              /* rows 0..5 */
  batch_grad(x + 36, labels + 6, 4, 0, b);     /* rows 6..9 */
  double worst = 0, worst_sum = 0;
  batch_grad(x, labels, 10, 1, sum_full);
  batch_grad(x, labels, 6, 1, sum_a);
  batch_grad(x + 36, labels + 6, 4, 1, sum_b);
  for (int i = 0; i < 24; i++) {
    worst = fmax(worst, fabs((6.0 * a[i] + 4.0 * b[i]) / 10.0 - full[i]));
    worst_sum = fmax(worst_sum, fabs((6.0 * sum_a[i] + 4.0 * sum_b[i]) / 10.0 - sum_full[i]));
  }
  assert_true(worst < 1e-5);
  assert_true(worst_sum > 1e-3); /* a sum reduction would scale with the shard count */
}

static void unreachable_and_invalid_gradients_are_errors(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 1, D(4), RLX_F32), w = rlx_param(g, "w", 1, D(4));
  rlx_node unused = rlx_param(g, "unused", 1, D(4));
  rlx_node only_compared = rlx_param(g, "cmp", 1, D(4));
  rlx_node ids = rlx_input(g, "ids", 1, D(2), RLX_I32);
  rlx_node y = rlx_mul(g, rlx_mul(g, x, w), rlx_gt(g, only_compared, x));
  rlx_node loss = rlx_reduce_sum(g, y, D(0), 1, 0), outs[3];
  assert_int_equal(rlx_grad_with_loss(g, loss, &unused, 1, outs), RLX_ERR_GRAPH);
  assert_non_null(strstr(rlx_last_error(), "'unused'"));
  assert_int_equal(rlx_grad_with_loss(g, loss, &only_compared, 1, outs), RLX_ERR_GRAPH);
  assert_non_null(strstr(rlx_last_error(), "'cmp'"));
  assert_int_equal(rlx_grad_with_loss(g, loss, &ids, 1, outs), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_grad_with_loss(g, loss, &w, 1, outs), RLX_OK);
  /* Backward ops have no gradient of their own: no second order. */
  rlx_node gelu_loss = rlx_reduce_sum(g, rlx_gelu(g, w), D(0), 1, 0), first[2], second[2];
  assert_int_equal(rlx_grad_with_loss(g, gelu_loss, &w, 1, first), RLX_OK);
  rlx_node again = rlx_reduce_sum(g, first[1], D(0), 1, 0);
  assert_int_equal(rlx_grad_with_loss(g, again, &w, 1, second), RLX_ERR_UNSUPPORTED);
  assert_non_null(strstr(rlx_last_error(), "no second order"));
  rlx_graph_free(g);
}

int main(int argc, char **argv) {
  const char *filter = argc > 1 ? argv[1] : NULL;
  int n = gradcase_count(), m = 0;
  rlx_parallel_set_min_work(1);
  struct CMUnitTest *tests = calloc((size_t)n + 8, sizeof *tests);
  for (int i = 0; i < n; i++) {
    const grad_case *c = gradcase_get(i);
    if (filter && !strstr(c->name, filter)) continue;
    tests[m++] = (struct CMUnitTest){c->name, run_case, NULL, NULL, (void *)c};
  }
  if (!filter) {
    tests[m++] = (struct CMUnitTest)cmocka_unit_test(checker_catches_wrong_gradients);
    tests[m++] = (struct CMUnitTest)cmocka_unit_test(gradient_of_sum_is_sum_of_gradients);
    tests[m++] = (struct CMUnitTest)cmocka_unit_test(mean_loss_gradients_average_over_shards);
    tests[m++] = (struct CMUnitTest)cmocka_unit_test(unreachable_and_invalid_gradients_are_errors);
  }
  int failed = _cmocka_run_group_tests("gradients", tests, (size_t)m, NULL, NULL);
  free(tests);
  return failed;
}
