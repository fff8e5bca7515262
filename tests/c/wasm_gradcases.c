/* wasm_gradcases.c - exports the gradient checks (grad_case.h) and the
 * training-step models (grad_train.h) from build/wasm-tests/opcases.wasm,
 * for tests/node/gradcases.test.mjs.
 *
 *   n = gradcase_count(); name = gradcase_name(i); tol = gradcase_tol(i);
 *   status = gradcase_check(i) -> then gradcase_max_err(), gradcase_checked(),
 *   gradcase_message();  status = train_run(is_cnn, kind, lr, steps) -> then
 *   train_first(), train_last() */
#include "grad_case.h"
#include "grad_train.h"

#define EXPORT(name) __attribute__((export_name(#name)))

static gradcase_result last;
static float first_loss, last_loss;

EXPORT(gradcase_count) int32_t w_gradcase_count(void) { return gradcase_count(); }
EXPORT(gradcase_name) const char *w_gradcase_name(int32_t i) {
  const grad_case *c = gradcase_get(i);
  return c ? c->name : "";
}
EXPORT(gradcase_tol) double w_gradcase_tol(int32_t i) {
  const grad_case *c = gradcase_get(i);
  return (c && c->tol > 0) ? c->tol : 1e-2;
}
EXPORT(gradcase_check) int32_t w_gradcase_check(int32_t i) {
  const grad_case *c = gradcase_get(i);
  if (!c) return RLX_ERR_NOT_FOUND;
  gradcase_run(c, 1.0, &last);
  return last.status;
}
EXPORT(gradcase_max_err) double w_gradcase_max_err(void) { return last.max_err; }
EXPORT(gradcase_checked) int32_t w_gradcase_checked(void) { return last.checked; }
EXPORT(gradcase_message) const char *w_gradcase_message(void) { return last.message; }

EXPORT(train_run) int32_t w_train_run(int32_t is_cnn, int32_t kind, float lr, int32_t steps) {
  rlx_optimizer opt = {(rlx_optimizer_kind)kind, lr, 0.9f, 0, 0, 0, 0.01f};
  return train_model_run(is_cnn, &opt, steps, &first_loss, &last_loss);
}
EXPORT(train_first) float w_train_first(void) { return first_loss; }
EXPORT(train_last) float w_train_last(void) { return last_loss; }
