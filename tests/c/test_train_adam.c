/* test_train_adam.c - the fused optimizer update (adam_update, which
 * rlx_compile_train emits for Adam and AdamW) against the node-by-node
 * formulation it replaced, built here from elementwise nodes with the
 * values copied back by hand: over several steps of the MLP and the CNN of
 * grad_train.h the losses, params and moments are bitwise equal (both do
 * the same float operations in the same order).  Also: a gradient through
 * adam_update is refused, and bad inputs to the op are refused by name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "grad_train.h"

#define STEPS 4
#define MAX_VALUES 512

/* The reference: gradients and the old update graph in one session whose
 * outputs are (loss, step', p'_i, m'_i, v'_i ...), copied over the params
 * by the test after each run. */
typedef struct {
  rlx_session *s;
  int32_t n_params;
  size_t sizes[4];
  char names[4][3][32]; /* p, m, v */
} reference;

static reference reference_new(train_model *m, const rlx_optimizer *o) {
  reference r = {NULL, m->n_params, {0}, {{{0}}}};
  rlx_graph *g = m->g;
  rlx_node grads[5], outs[2 + 3 * 4];
  assert_int_equal(rlx_grad_with_loss(g, m->loss, m->params, m->n_params, grads), RLX_OK);
  rlx_node lr = rlx_input(g, "rlx.lr", 0, NULL, RLX_F32), step = rlx_param(g, "rlx.step", 0, NULL);
  rlx_node step_next = rlx_add(g, step, rlx_scalar(g, 1.0f));
  rlx_node bias1 = rlx_sub(g, rlx_scalar(g, 1.0f), rlx_pow(g, rlx_scalar(g, o->beta1), step_next));
  rlx_node bias2 = rlx_sub(g, rlx_scalar(g, 1.0f), rlx_pow(g, rlx_scalar(g, o->beta2), step_next));
  int32_t n = 0;
  outs[n++] = m->loss, outs[n++] = step_next;
  const float b1 = o->beta1, b2 = o->beta2;
  for (int32_t i = 0; i < m->n_params; i++) {
    rlx_node p = m->params[i], gr = grads[1 + i];
    int32_t dims[RLX_MAX_RANK];
    const int32_t rank = rlx_node_shape(g, p, dims);
    r.sizes[i] = m->sizes[i];
    snprintf(r.names[i][0], 32, "%s", m->names[i]);
    rlx_node mm = rlx_param(g, (snprintf(r.names[i][1], 32, "%s.m", m->names[i]), r.names[i][1]), rank, dims);
    rlx_node vv = rlx_param(g, (snprintf(r.names[i][2], 32, "%s.v", m->names[i]), r.names[i][2]), rank, dims);
    rlx_node m2 = rlx_add(g, rlx_mul(g, rlx_scalar(g, b1), mm), rlx_mul(g, rlx_scalar(g, 1 - b1), gr));
    rlx_node v2 = rlx_add(g, rlx_mul(g, rlx_scalar(g, b2), vv), rlx_mul(g, rlx_scalar(g, 1 - b2), rlx_mul(g, gr, gr)));
    rlx_node mhat = rlx_div(g, m2, bias1), vhat = rlx_div(g, v2, bias2);
    rlx_node st = rlx_div(g, mhat, rlx_add(g, rlx_sqrt(g, vhat), rlx_scalar(g, o->eps)));
    if (o->kind == RLX_OPT_ADAMW && o->weight_decay != 0)
      st = rlx_add(g, st, rlx_mul(g, rlx_scalar(g, o->weight_decay), p));
    outs[n++] = rlx_sub(g, p, rlx_mul(g, lr, st));
    outs[n++] = m2, outs[n++] = v2;
  }
  assert_int_equal(rlx_compile(g, outs, n, NULL, &r.s), RLX_OK);
  float one = 1;
  rlx_session_set_input(r.s, "d_output", &one, 1);
  rlx_session_set_input(r.s, "rlx.lr", &o->lr, 1);
  return r;
}

/* One reference step: run, then the updated values over their params. */
static float reference_step(reference *r) {
  float buf[MAX_VALUES];
  assert_int_equal(rlx_session_run(r->s), RLX_OK);
  const float loss = rlx_session_output(r->s, 0)[0];
  assert_int_equal(rlx_session_set_param(r->s, "rlx.step", rlx_session_output(r->s, 1), 1), RLX_OK);
  for (int32_t i = 0; i < r->n_params; i++)
    for (int k = 0; k < 3; k++) {
      const size_t n = r->sizes[i];
      assert_true(n <= MAX_VALUES);
      memcpy(buf, rlx_session_output(r->s, 2 + 3 * i + k), n * sizeof(float));
      assert_int_equal(rlx_session_set_param(r->s, r->names[i][k], buf, n), RLX_OK);
    }
  return loss;
}

static void same_as_node_by_node(int is_cnn, const rlx_optimizer *o) {
  train_model fused_m = train_model_new(is_cnn), ref_m = train_model_new(is_cnn);
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile_train(fused_m.g, fused_m.loss, fused_m.params, fused_m.n_params, o, NULL, &s), RLX_OK);
  assert_int_equal(train_model_feed(s, &fused_m), RLX_OK);
  reference r = reference_new(&ref_m, o);
  assert_int_equal(train_model_feed(r.s, &ref_m), RLX_OK);
  for (int step = 0; step < STEPS; step++) {
    assert_int_equal(rlx_session_run(s), RLX_OK);
    const float loss = rlx_session_output(s, 0)[0], want = reference_step(&r);
    assert_memory_equal(&loss, &want, sizeof loss);
    for (int32_t i = 0; i < r.n_params; i++)
      for (int k = 0; k < 3; k++) {
        float a[MAX_VALUES], b[MAX_VALUES];
        const size_t n = fused_m.sizes[i];
        assert_int_equal(rlx_session_get_param(s, r.names[i][k], a, n), RLX_OK);
        assert_int_equal(rlx_session_get_param(r.s, r.names[i][k], b, n), RLX_OK);
        if (memcmp(a, b, n * sizeof(float)) != 0) {
          print_error("%s step %d: %s differs from the node-by-node update\n", is_cnn ? "cnn" : "mlp", step,
                      r.names[i][k]);
          fail();
        }
      }
  }
  rlx_session_free(s);
  rlx_session_free(r.s);
  train_model_free(&fused_m);
  train_model_free(&ref_m);
}

static const rlx_optimizer adam = {RLX_OPT_ADAM, 0.02f, 0, 0.9f, 0.999f, 1e-8f, 0.5f}; /* Adam ignores the decay */
static const rlx_optimizer adamw = {RLX_OPT_ADAMW, 0.02f, 0, 0.8f, 0.99f, 1e-6f, 0.01f};

static void adam_mlp_equals_node_by_node(void **state) { (void)state, same_as_node_by_node(0, &adam); }
static void adamw_mlp_equals_node_by_node(void **state) { (void)state, same_as_node_by_node(0, &adamw); }
static void adam_cnn_equals_node_by_node(void **state) { (void)state, same_as_node_by_node(1, &adam); }
static void adamw_cnn_equals_node_by_node(void **state) { (void)state, same_as_node_by_node(1, &adamw); }

static void no_gradient_through_the_update(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  const int32_t d[1] = {3};
  rlx_node p = rlx_param(g, "p", 1, d), m = rlx_param(g, "m", 1, d), v = rlx_param(g, "v", 1, d);
  rlx_node x = rlx_param(g, "x", 1, d), one = rlx_scalar(g, 1.0f);
  const float attrs[4] = {0.9f, 0.999f, 1e-8f, 0};
  rlx_node in[7] = {p, x, m, v, one, one, one};
  rlx_node u = rlx_op_node(g, RLX_OP_ADAM_UPDATE, in, 7, NULL, 0, attrs, 4);
  assert_int_not_equal(u, RLX_NO_NODE);
  rlx_node loss = rlx_reduce_sum(g, u, (const int32_t[]){0}, 1, 0), grads[2];
  assert_int_equal(rlx_grad_with_loss(g, loss, &x, 1, grads), RLX_ERR_UNSUPPORTED);
  assert_non_null(strstr(rlx_last_error(), "adam_update"));
  rlx_graph_free(g);
}

/* Each case in a graph of its own (a graph keeps its first error). */
static void bad_inputs_are_refused(void **state) {
  (void)state;
  const float good[4] = {0.9f, 0.999f, 1e-8f, 0}, bad_beta[4] = {1.0f, 0.999f, 1e-8f, 0}, bad_eps[4] = {0.9f, 0.9f, 0, 0};
  /* inputs by letter: p, x (an input), m, v, w (a param of 4), n (-m, no
   * leaf), s (a scalar) */
  struct {
    const char *in;
    const float *attrs;
    const char *says;
  } cases[] = {
      {"pxmvsss", bad_beta, "beta1 and beta2"}, {"pxmvsss", bad_eps, "eps be > 0"},
      {"pxwvsss", good, "m and v must have p's shape"}, {"pxnvsss", good, "must be input or param leaves"},
      {"pxmmsss", good, "other than p and each other"}, {"pxmvpss", good, "lr, bias1 and bias2 one value"},
      {"pxmpsss", good, "other than p"},
  };
  const int32_t d[1] = {3}, d4[1] = {4};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    rlx_graph *g = rlx_graph_new();
    const rlx_node p = rlx_param(g, "p", 1, d), m = rlx_param(g, "m", 1, d), v = rlx_param(g, "v", 1, d);
    const rlx_node x = rlx_input(g, "x", 1, d, RLX_F32), w = rlx_param(g, "w", 1, d4), sc = rlx_scalar(g, 1.0f);
    const rlx_node neg = rlx_neg(g, m);
    rlx_node in[7];
    for (int j = 0; j < 7; j++) {
      const char c = cases[k].in[j];
      in[j] = c == 'p' ? p : c == 'x' ? x : c == 'm' ? m : c == 'v' ? v : c == 'w' ? w : c == 'n' ? neg : sc;
    }
    assert_int_equal(rlx_op_node(g, RLX_OP_ADAM_UPDATE, in, 7, NULL, 0, cases[k].attrs, 4), RLX_NO_NODE);
    if (!strstr(rlx_graph_error(g), cases[k].says)) {
      print_error("case %zu: '%s' does not say '%s'\n", k, rlx_graph_error(g), cases[k].says);
      fail();
    }
    rlx_graph_free(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(adam_mlp_equals_node_by_node),  cmocka_unit_test(adamw_mlp_equals_node_by_node),
      cmocka_unit_test(adam_cnn_equals_node_by_node),  cmocka_unit_test(adamw_cnn_equals_node_by_node),
      cmocka_unit_test(no_gradient_through_the_update), cmocka_unit_test(bad_inputs_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
