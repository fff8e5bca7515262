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

#include "grad_train.h"

#define D(...) ((const int32_t[]){__VA_ARGS__})

static float run_loss(rlx_session *s) {
  assert_int_equal(rlx_session_run(s), RLX_OK);
  return rlx_session_output(s, 0)[0];
}

/* Gradients of the model, from a separate grad session. */
static void gradients(int is_cnn, float grads[4][128]) {
  train_model m = train_model_new(is_cnn);
  rlx_node outs[5];
  rlx_session *s = NULL;
  assert_int_equal(rlx_grad_with_loss(m.g, m.loss, m.params, m.n_params, outs), RLX_OK);
  assert_int_equal(rlx_compile(m.g, outs, m.n_params + 1, NULL, &s), RLX_OK);
  float one = 1;
  rlx_session_set_input(s, "d_output", &one, 1);
  assert_int_equal(train_model_feed(s, &m), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  for (int32_t i = 0; i < m.n_params; i++) assert_int_equal(rlx_session_read_output(s, 1 + i, grads[i], m.sizes[i]), RLX_OK);
  rlx_session_free(s);
  train_model_free(&m);
}

static void check_first_step(rlx_optimizer_kind kind) {
  float grads[4][128], before[128], after[128];
  gradients(0, grads);
  train_model m = train_model_new(0);
  rlx_optimizer opt = {kind, 0.1f, 0.9f, 0, 0, 0, 0};
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile_train(m.g, m.loss, m.params, m.n_params, &opt, NULL, &s), RLX_OK);
  assert_int_equal(rlx_session_output_count(s), 1);
  assert_int_equal(train_model_feed(s, &m), RLX_OK);
  for (int32_t i = 0; i < m.n_params; i++) {
    train_model_init(&m, i, before);
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
  train_model_free(&m);
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
      float first = 0, last = 0;
      assert_int_equal(train_model_run(is_cnn, &opts[k], 150, &first, &last), RLX_OK);
      if (getenv("RLX_VERBOSE")) print_message("%s optimizer %d: loss %g -> %g\n", is_cnn ? "cnn" : "mlp", k, first, last);
      if (!(last < 0.7f * first)) {
        print_error("%s optimizer %d: loss %g -> %g\n", is_cnn ? "cnn" : "mlp", k, first, last);
        fail();
      }
    }
}

static void learning_rate_changes_between_runs(void **state) {
  (void)state;
  train_model m = train_model_new(0);
  rlx_optimizer opt = {RLX_OPT_SGD, 0.1f, 0, 0, 0, 0, 0};
  rlx_session *s = NULL;
  float w[30], w2[30];
  assert_int_equal(rlx_compile_train(m.g, m.loss, m.params, m.n_params, &opt, NULL, &s), RLX_OK);
  assert_int_equal(train_model_feed(s, &m), RLX_OK);
  assert_int_equal(rlx_session_set_lr(s, 0.0f), RLX_OK);
  rlx_session_get_param(s, "w1", w, 30);
  run_loss(s);
  rlx_session_get_param(s, "w1", w2, 30);
  assert_memory_equal(w, w2, sizeof w); /* lr 0: nothing moves */
  assert_int_equal(rlx_session_set_lr(s, NAN), RLX_ERR_NUMERIC);
  rlx_session_free(s);
  train_model_free(&m);
}

static void bad_training_setups_are_refused(void **state) {
  (void)state;
  train_model m = train_model_new(0);
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
  train_model_free(&m);
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
