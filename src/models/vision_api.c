/* vision_api.c - the usual calls on the vision models: forward and one SGD
 * training step, each through a compiled session cached by (slug, batch,
 * kind).  The caller owns the params: every call copies the flat params
 * into the session, and a training step copies the updated ones back. */
#include <math.h>
#include <stdio.h>

#include "../core/core.h"
#include "../core/pool.h"
#include "cache.h"
#include "vision.h"

typedef enum { KIND_FORWARD = 0, KIND_TRAIN = 1, KIND_GRADS = 2 } session_kind;
static const char *const kind_names[] = {"forward", "train", "grads"};

/* Checks the arguments every call shares and fills info. */
static rlx_status check_call(const char *what, const char *slug, int32_t batch, rlx_vision_info *info) {
  rlx_status st = rlx_vision_info_get(slug, info);
  if (st != RLX_OK) return st;
  if (batch <= 0) return rlx_error(RLX_ERR_INVALID_ARG, "%s: batch must be at least 1 (got %d)", what, (int)batch);
  size_t n;
  if (!rlx_mul_size((size_t)batch, info->input_len, &n) || n > (size_t)INT32_MAX)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: batch %d is too large for %s", what, (int)batch, info->slug);
  return RLX_OK;
}

/* The cached session for (model, batch, kind, threads: the default at the
 * time, RLX_THREADS or the cores), compiled on first use. */
static rlx_status get_session(const rlx_vision_info *info, int32_t batch, session_kind kind, rlx_session **out) {
  char key[96];
  snprintf(key, sizeof key, "vision/%s/%d/%s/t%d", info->slug, (int)batch, kind_names[kind], (int)rlx_threads_default());
  if ((*out = rlx_cache_get(key)) != NULL) return RLX_OK;
  rlx_graph *g = rlx_graph_new();
  if (!g) return rlx_error(RLX_ERR_NO_MEMORY, "vision: out of memory building %s", info->slug);
  rlx_node logits, loss, params[RLX_VISION_MAX_PARAMS];
  rlx_session *s = NULL;
  rlx_status st = rlx_vision_build_with_params(g, info->slug, batch, &logits, &loss, params);
  if (st == RLX_OK && kind == KIND_TRAIN) {
    rlx_optimizer sgd = {RLX_OPT_SGD, 0.0f, 0, 0, 0, 0, 0}; /* lr is set per call */
    st = rlx_compile_train(g, loss, params, info->n_params, &sgd, NULL, &s);
  } else if (st == RLX_OK && kind == KIND_GRADS) {
    rlx_node outs[RLX_VISION_MAX_PARAMS + 1];
    float one = 1.0f;
    st = rlx_grad_with_loss(g, loss, params, info->n_params, outs);
    if (st == RLX_OK) st = rlx_compile(g, outs, info->n_params + 1, NULL, &s);
    if (st == RLX_OK) st = rlx_session_set_input(s, "d_output", &one, 1);
  } else if (st == RLX_OK) {
    st = rlx_compile(g, &logits, 1, NULL, &s);
  }
  rlx_graph_free(g);
  if (st != RLX_OK) return st;
  if ((st = rlx_cache_put(key, s)) != RLX_OK) return st;
  *out = s;
  return RLX_OK;
}

static rlx_status set_params(rlx_session *s, const rlx_vision_info *info, const float *flat) {
  for (int32_t k = 0; k < info->n_params; k++) {
    rlx_status st = rlx_session_set_param(s, info->param_names[k], flat, info->param_sizes[k]);
    if (st != RLX_OK) return st;
    flat += info->param_sizes[k];
  }
  return RLX_OK;
}

static rlx_status check_labels(const char *what, const rlx_vision_info *info, int32_t batch, const int32_t *labels) {
  for (int32_t i = 0; i < batch; i++)
    if (labels[i] < 0 || labels[i] >= info->num_classes)
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: label %d of sample %d is outside [0, %d)", what, (int)labels[i],
                       (int)i, (int)info->num_classes);
  return RLX_OK;
}

/* Sets params, x and labels, then runs. */
static rlx_status run_batch(rlx_session *s, const rlx_vision_info *info, int32_t batch, const float *x,
                            const int32_t *labels, const float *params) {
  rlx_status st;
  if ((st = set_params(s, info, params)) != RLX_OK) return st;
  if ((st = rlx_session_set_input(s, "x", x, (size_t)batch * info->input_len)) != RLX_OK) return st;
  if ((st = rlx_session_set_input_i32(s, "labels", labels, (size_t)batch)) != RLX_OK) return st;
  return rlx_session_run(s);
}

rlx_status rlx_vision_forward(const char *slug, int32_t batch, const float *x, const float *params, float *logits) {
  rlx_vision_info info;
  rlx_session *s;
  rlx_status st = check_call("vision_forward", slug, batch, &info);
  if (st != RLX_OK) return st;
  if (!x || !params || !logits)
    return rlx_error(RLX_ERR_INVALID_ARG, "vision_forward: x, params and logits must not be NULL");
  if ((st = get_session(&info, batch, KIND_FORWARD, &s)) != RLX_OK) return st;
  if ((st = set_params(s, &info, params)) != RLX_OK) return st;
  if ((st = rlx_session_set_input(s, "x", x, (size_t)batch * info.input_len)) != RLX_OK) return st;
  if ((st = rlx_session_run(s)) != RLX_OK) return st;
  return rlx_session_read_output(s, 0, logits, (size_t)batch * (size_t)info.num_classes);
}

rlx_status rlx_vision_train_step(const char *slug, int32_t batch, const float *x, const int32_t *labels,
                                 float *params, float lr, float *loss) {
  rlx_vision_info info;
  rlx_session *s;
  rlx_status st = check_call("vision_train_step", slug, batch, &info);
  if (st != RLX_OK) return st;
  if (!x || !labels || !params || !loss)
    return rlx_error(RLX_ERR_INVALID_ARG, "vision_train_step: x, labels, params and loss must not be NULL");
  if (!isfinite(lr)) return rlx_error(RLX_ERR_NUMERIC, "vision_train_step: the learning rate must be finite");
  if ((st = check_labels("vision_train_step", &info, batch, labels)) != RLX_OK) return st;
  if ((st = get_session(&info, batch, KIND_TRAIN, &s)) != RLX_OK) return st;
  if ((st = rlx_session_set_lr(s, lr)) != RLX_OK) return st;
  if ((st = run_batch(s, &info, batch, x, labels, params)) != RLX_OK) return st;
  float step_loss = rlx_session_output(s, 0)[0];
  for (int32_t k = 0; k < info.n_params; k++) {
    if ((st = rlx_session_get_param(s, info.param_names[k], params, info.param_sizes[k])) != RLX_OK) return st;
    params += info.param_sizes[k];
  }
  *loss = step_loss;
  return RLX_OK;
}

rlx_status rlx_vision_grads(const char *slug, int32_t batch, const float *x, const int32_t *labels,
                            const float *params, float *grads, float *loss) {
  rlx_vision_info info;
  rlx_session *s;
  rlx_status st = check_call("vision_grads", slug, batch, &info);
  if (st != RLX_OK) return st;
  if (!x || !labels || !params || !grads || !loss)
    return rlx_error(RLX_ERR_INVALID_ARG, "vision_grads: x, labels, params, grads and loss must not be NULL");
  if ((st = check_labels("vision_grads", &info, batch, labels)) != RLX_OK) return st;
  if ((st = get_session(&info, batch, KIND_GRADS, &s)) != RLX_OK) return st;
  if ((st = run_batch(s, &info, batch, x, labels, params)) != RLX_OK) return st;
  *loss = rlx_session_output(s, 0)[0];
  for (int32_t k = 0; k < info.n_params; k++) {
    if ((st = rlx_session_read_output(s, 1 + k, grads, info.param_sizes[k])) != RLX_OK) return st;
    grads += info.param_sizes[k];
  }
  return RLX_OK;
}
