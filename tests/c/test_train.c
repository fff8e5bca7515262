/* test_train.c - training steps compiled into one plan: the SGD update is
 * exactly p - lr g; Adam's first step moves each weight by lr against the
 * sign of its gradient; every optimizer lowers the loss of a small MLP and
 * a small CNN; the learning rate can change between runs; bad settings are
 * refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlx.h"

#define D(...) ((const int32_t[]){__VA_ARGS__})

static void fill(float *x, size_t n, unsigned seed, float scale) {
  for (size_t i = 0; i < n; i++) x[i] = scale * (float)((double)((seed * 2654435761u + i * 40503u) % 2000u) / 1000.0 - 1.0);
}

typedef struct {
  rlx_graph *g;
  rlx_node loss, params[4];
  int32_t n_params;
  size_t sizes[4];
  const char *names[4];
} model;

/* x[8,6] -> tanh(x w1 + b1) w2 + b2 -> mean cross-entropy over 3 classes */
static model mlp(void) {
  model m = {rlx_graph_new(), 0, {0}, 4, {30, 5, 15, 3}, {"w1", "b1", "w2", "b2"}};
  rlx_graph *g = m.g;
  rlx_node x = rlx_input(g, "x", 2, D(8, 6), RLX_F32), labels = rlx_input(g, "labels", 1, D(8), RLX_I32);
  m.params[0] = rlx_param(g, "w1", 2, D(6, 5)), m.params[1] = rlx_param(g, "b1", 1, D(5));
  m.params[2] = rlx_param(g, "w2", 2, D(5, 3)), m.params[3] = rlx_param(g, "b2", 1, D(3));
  rlx_node h = rlx_tanh(g, rlx_add(g, rlx_matmul(g, x, m.params[0]), m.params[1]));
  rlx_node logits = rlx_add(g, rlx_matmul(g, h, m.params[2]), m.params[3]);
  m.loss = rlx_reduce_mean(g, rlx_softmax_cross_entropy(g, logits, labels), D(0), 1, 0);
  return m;
}

/* x[4,1,8,8] -> conv 3x3 (3 filters) + bias -> relu -> maxpool 2 -> fc -> mean CE */
static model cnn(void) {
  model m = {rlx_graph_new(), 0, {0}, 3, {27, 3, 108}, {"cw", "cb", "fc"}};
  rlx_graph *g = m.g;
  rlx_node x = rlx_input(g, "x", 4, D(4, 1, 8, 8), RLX_F32), labels = rlx_input(g, "labels", 1, D(4), RLX_I32);
  m.params[0] = rlx_param(g, "cw", 4, D(3, 1, 3, 3)), m.params[1] = rlx_param(g, "cb", 3, D(3, 1, 1));
  m.params[2] = rlx_param(g, "fc", 2, D(27, 4));
  rlx_conv2d_params cp = {1, 1, 0, 0, 1, 1, 1};
  rlx_pool2d_params pp = {2, 2, 2, 2, 0, 0};
  rlx_node h = rlx_max_pool2d(g, rlx_relu(g, rlx_add(g, rlx_conv2d(g, x, m.params[0], &cp), m.params[1])), &pp);
  rlx_node logits = rlx_matmul(g, rlx_reshape(g, h, 2, D(4, 27)), m.params[2]);
  m.loss = rlx_reduce_mean(g, rlx_softmax_cross_entropy(g, logits, labels), D(0), 1, 0);
  return m;
}

static void feed(rlx_session *s, const model *m, int is_cnn) {
  float x[256];
  int32_t labels[8];
  size_t nx = is_cnn ? 256 : 48, nl = is_cnn ? 4 : 8;
  fill(x, nx, 5, 1.0f);
  for (size_t i = 0; i < nl; i++) labels[i] = (int32_t)(i % (is_cnn ? 4 : 3));
  assert_int_equal(rlx_session_set_input(s, "x", x, nx), RLX_OK);
  assert_int_equal(rlx_session_set_input_i32(s, "labels", labels, nl), RLX_OK);
  for (int32_t i = 0; i < m->n_params; i++) {
    float p[128];
    fill(p, m->sizes[i], 11 + (unsigned)i, 0.5f);
    assert_int_equal(rlx_session_set_param(s, m->names[i], p, m->sizes[i]), RLX_OK);
  }
}

static float run_loss(rlx_session *s) {
  assert_int_equal(rlx_session_run(s), RLX_OK);
  return rlx_session_output(s, 0)[0];
}

/* Gradients of the model, from a separate grad session. */
static void gradients(int is_cnn, float grads[4][128]) {
  model m = is_cnn ? cnn() : mlp();
  rlx_node outs[5];
  rlx_session *s = NULL;
  assert_int_equal(rlx_grad_with_loss(m.g, m.loss, m.params, m.n_params, outs), RLX_OK);
  assert_int_equal(rlx_compile(m.g, outs, m.n_params + 1, NULL, &s), RLX_OK);
  float one = 1;
  rlx_session_set_input(s, "d_output", &one, 1);
  feed(s, &m, is_cnn);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  for (int32_t i = 0; i < m.n_params; i++) assert_int_equal(rlx_session_read_output(s, 1 + i, grads[i], m.sizes[i]), RLX_OK);
  rlx_session_free(s);
  rlx_graph_free(m.g);
}

static void check_first_step(rlx_optimizer_kind kind) {
  float grads[4][128], before[128], after[128];
  gradients(0, grads);
  model m = mlp();
  rlx_optimizer opt = {kind, 0.1f, 0.9f, 0, 0, 0, 0};
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile_train(m.g, m.loss, m.params, m.n_params, &opt, NULL, &s), RLX_OK);
  assert_int_equal(rlx_session_output_count(s), 1);
  feed(s, &m, 0);
  for (int32_t i = 0; i < m.n_params; i++) {
    fill(before, m.sizes[i], 11 + (unsigned)i, 0.5f);
    if (i == 0) run_loss(s);
    assert_int_equal(rlx_session_get_param(s, m.names[i], after, m.sizes[i]), RLX_OK);
    for (size_t j = 0; j < m.sizes[i]; j++) {
      float g = grads[i][j];
      /* SGD and momentum (v starts at 0): p - lr g; Adam: p - lr g / (|g| + eps) */
      float want = kind == RLX_OPT_ADAM ? before[j] - 0.1f * g / (fabsf(g) + 1e-8f) : before[j] - 0.1f * g;
      assert_float_equal(after[j], want, 1e-5);
    }
  }
  rlx_session_free(s);
  rlx_graph_free(m.g);
}

static void sgd_step_is_p_minus_lr_g(void **state) { (void)state, check_first_step(RLX_OPT_SGD); }
static void momentum_first_step_is_sgd(void **state) { (void)state, check_first_step(RLX_OPT_MOMENTUM); }
static void adam_first_step_moves_by_lr(void **state) { (void)state, check_first_step(RLX_OPT_ADAM); }

static void every_optimizer_lowers_the_loss(void **state) {
  (void)state;
  rlx_optimizer opts[4] = {{RLX_OPT_SGD, 1.0f, 0, 0, 0, 0, 0},
                           {RLX_OPT_MOMENTUM, 0.2f, 0.9f, 0, 0, 0, 0},
                           {RLX_OPT_ADAM, 0.02f, 0, 0, 0, 0, 0},
                           {RLX_OPT_ADAMW, 0.02f, 0, 0.9f, 0.999f, 1e-8f, 0.01f}};
  for (int is_cnn = 0; is_cnn <= 1; is_cnn++)
    for (int k = 0; k < 4; k++) {
      model m = is_cnn ? cnn() : mlp();
      rlx_session *s = NULL;
      assert_int_equal(rlx_compile_train(m.g, m.loss, m.params, m.n_params, &opts[k], NULL, &s), RLX_OK);
      feed(s, &m, is_cnn);
      float first = run_loss(s), last = first;
      for (int step = 0; step < 150; step++) last = run_loss(s);
      if (getenv("RLX_VERBOSE")) print_message("%s optimizer %d: loss %g -> %g\n", is_cnn ? "cnn" : "mlp", k, first, last);
      if (!(last < 0.7f * first) && !getenv("RLX_VERBOSE")) {
        print_error("%s optimizer %d: loss %g -> %g\n", is_cnn ? "cnn" : "mlp", k, first, last);
        fail();
      }
      rlx_session_free(s);
      rlx_graph_free(m.g);
    }
}

static void learning_rate_changes_between_runs(void **state) {
  (void)state;
  model m = mlp();
  rlx_optimizer opt = {RLX_OPT_SGD, 0.1f, 0, 0, 0, 0, 0};
  rlx_session *s = NULL;
  float w[30], w2[30];
  assert_int_equal(rlx_compile_train(m.g, m.loss, m.params, m.n_params, &opt, NULL, &s), RLX_OK);
  feed(s, &m, 0);
  assert_int_equal(rlx_session_set_lr(s, 0.0f), RLX_OK);
  rlx_session_get_param(s, "w1", w, 30);
  run_loss(s);
  rlx_session_get_param(s, "w1", w2, 30);
  assert_memory_equal(w, w2, sizeof w); /* lr 0: nothing moves */
  assert_int_equal(rlx_session_set_lr(s, NAN), RLX_ERR_NUMERIC);
  rlx_session_free(s);
  rlx_graph_free(m.g);
}

static void bad_training_setups_are_refused(void **state) {
  (void)state;
  model m = mlp();
  rlx_session *s = NULL;
  rlx_optimizer bad_kind = {(rlx_optimizer_kind)9, 0.1f, 0, 0, 0, 0, 0};
  rlx_optimizer bad_beta = {RLX_OPT_ADAM, 0.1f, 0, 1.5f, 0.9f, 0, 0};
  rlx_optimizer ok = {RLX_OPT_SGD, 0.1f, 0, 0, 0, 0, 0};
  assert_int_equal(rlx_compile_train(m.g, m.loss, m.params, m.n_params, &bad_kind, NULL, &s), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_compile_train(m.g, m.loss, m.params, m.n_params, &bad_beta, NULL, &s), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_compile_train(m.g, m.loss, m.params, m.n_params, NULL, NULL, &s), RLX_ERR_INVALID_ARG);
  rlx_node not_scalar = m.params[0];
  assert_int_equal(rlx_compile_train(m.g, not_scalar, m.params, 1, &ok, NULL, &s), RLX_ERR_SHAPE);
  rlx_node x_is_no_param = 0;
  assert_int_equal(rlx_compile_train(m.g, m.loss, &x_is_no_param, 1, &ok, NULL, &s), RLX_ERR_INVALID_ARG);
  assert_null(s);
  rlx_graph_free(m.g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(sgd_step_is_p_minus_lr_g),
      cmocka_unit_test(momentum_first_step_is_sgd),
      cmocka_unit_test(adam_first_step_moves_by_lr),
      cmocka_unit_test(every_optimizer_lowers_the_loss),
      cmocka_unit_test(learning_rate_changes_between_runs),
      cmocka_unit_test(bad_training_setups_are_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
