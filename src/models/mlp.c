/* mlp.c - the two-layer MLP entry points: y = relu(x W1 + b1) W2 + b2 with
 * loss = sum over all rows and outputs of (y - t)^2.  Forward, loss,
 * gradients (rlx_grad_with_loss) and one SGD step (rlx_compile_train) each
 * run a compiled session cached by (rows, in, hid, out, kind).  The caller
 * owns the weights: every call copies them into the session. */
#include <math.h>
#include <stdio.h>

#include "../core/core.h"
#include "../core/pool.h"
#include "cache.h"

typedef enum { KIND_FORWARD, KIND_LOSS, KIND_GRADS, KIND_TRAIN } mlp_kind;
static const char *const kind_names[] = {"forward", "loss", "grads", "train"};

#define N_PARAMS 4
static const char *const param_names[N_PARAMS] = {"w1", "b1", "w2", "b2"};

/* Elements of w1, b1, w2, b2 (dims already checked). */
static void param_sizes(const rlx_mlp *m, size_t sizes[N_PARAMS]) {
  sizes[0] = (size_t)m->in * (size_t)m->hid;
  sizes[1] = (size_t)m->hid;
  sizes[2] = (size_t)m->hid * (size_t)m->out;
  sizes[3] = (size_t)m->out;
}

/* Every dim >= 1 and every tensor (x, t, y, hidden, weights, the flat
 * gradient) within the INT32_MAX elements a tensor may have. */
static rlx_status check_mlp(const char *what, const rlx_mlp *m) {
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "%s: the MLP is NULL", what);
  if (m->rows <= 0 || m->in <= 0 || m->hid <= 0 || m->out <= 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: rows, in, hid and out must be at least 1 (got %d, %d, %d, %d)", what,
                     (int)m->rows, (int)m->in, (int)m->hid, (int)m->out);
  const int32_t pairs[5][2] = {{m->rows, m->in}, {m->rows, m->hid}, {m->rows, m->out}, {m->in, m->hid}, {m->hid, m->out}};
  for (int i = 0; i < 5; i++)
    if ((int64_t)pairs[i][0] * pairs[i][1] > INT32_MAX)
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: a %d x %d tensor is too large", what, (int)pairs[i][0], (int)pairs[i][1]);
  size_t sizes[N_PARAMS];
  param_sizes(m, sizes);
  if ((uint64_t)sizes[0] + sizes[1] + sizes[2] + sizes[3] + 1 > INT32_MAX)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: too many parameters", what);
  if (!m->w1 || !m->b1 || !m->w2 || !m->b2) return rlx_error(RLX_ERR_INVALID_ARG, "%s: a weight pointer is NULL", what);
  return RLX_OK;
}

/* Builds the graph and compiles the session of one kind. */
static rlx_status compile_mlp(const rlx_mlp *m, mlp_kind kind, rlx_session **out) {
  rlx_graph *g = rlx_graph_new();
  if (!g) return rlx_error(RLX_ERR_NO_MEMORY, "mlp: out of memory");
  const int32_t axes[2] = {0, 1};
  rlx_node x = rlx_input(g, "x", 2, (const int32_t[]){m->rows, m->in}, RLX_F32);
  rlx_node t = rlx_input(g, "t", 2, (const int32_t[]){m->rows, m->out}, RLX_F32);
  rlx_node p[N_PARAMS] = {rlx_param(g, "w1", 2, (const int32_t[]){m->in, m->hid}), rlx_param(g, "b1", 1, &m->hid),
                          rlx_param(g, "w2", 2, (const int32_t[]){m->hid, m->out}), rlx_param(g, "b2", 1, &m->out)};
  rlx_node h = rlx_relu(g, rlx_add(g, rlx_matmul(g, x, p[0]), p[1]));
  rlx_node y = rlx_add(g, rlx_matmul(g, h, p[2]), p[3]);
  rlx_node d = rlx_sub(g, y, t);
  rlx_node loss = rlx_reduce_sum(g, rlx_mul(g, d, d), axes, 2, 0);
  rlx_status st = rlx_graph_status(g);
  if (st != RLX_OK) {
    st = rlx_error(st, "mlp: %s", rlx_graph_error(g));
  } else if (kind == KIND_FORWARD) {
    st = rlx_compile(g, &y, 1, NULL, out);
  } else if (kind == KIND_LOSS) {
    st = rlx_compile(g, &loss, 1, NULL, out);
  } else if (kind == KIND_GRADS) {
    rlx_node outs[1 + N_PARAMS];
    st = rlx_grad_with_loss(g, loss, p, N_PARAMS, outs);
    if (st == RLX_OK) st = rlx_compile(g, outs, 1 + N_PARAMS, NULL, out);
  } else {
    rlx_optimizer sgd = {RLX_OPT_SGD, 0.0f, 0, 0, 0, 0, 0}; /* lr is set per call */
    st = rlx_compile_train(g, loss, p, N_PARAMS, &sgd, NULL, out);
  }
  rlx_graph_free(g);
  return st;
}

/* Checks m, fetches (or compiles and caches) the session of that kind and
 * feeds it the weights, x and t (t unused by forward); dst is the caller's
 * output array, checked here. */
static rlx_status prepare(const char *what, const rlx_mlp *m, mlp_kind kind, const float *x, const float *t,
                          const float *dst, rlx_session **out) {
  rlx_status st = check_mlp(what, m);
  if (st != RLX_OK) return st;
  if (!x || (kind != KIND_FORWARD && !t) || !dst)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: x, t or the output array is NULL", what);
  char key[96];
  snprintf(key, sizeof key, "mlp/%d/%d/%d/%d/%s/t%d", (int)m->rows, (int)m->in, (int)m->hid, (int)m->out, kind_names[kind],
           (int)rlx_threads_default());
  rlx_session *s = rlx_cache_get(key);
  if (!s) {
    if ((st = compile_mlp(m, kind, &s)) != RLX_OK) return st;
    if ((st = rlx_cache_put(key, s)) != RLX_OK) return st;
  }
  const float *weights[N_PARAMS] = {m->w1, m->b1, m->w2, m->b2};
  size_t sizes[N_PARAMS];
  param_sizes(m, sizes);
  for (int i = 0; i < N_PARAMS; i++)
    if ((st = rlx_session_set_param(s, param_names[i], weights[i], sizes[i])) != RLX_OK) return st;
  if ((st = rlx_session_set_input(s, "x", x, (size_t)m->rows * (size_t)m->in)) != RLX_OK) return st;
  if (kind != KIND_FORWARD && (st = rlx_session_set_input(s, "t", t, (size_t)m->rows * (size_t)m->out)) != RLX_OK)
    return st;
  if (kind == KIND_GRADS) {
    const float one = 1.0f;
    if ((st = rlx_session_set_input(s, "d_output", &one, 1)) != RLX_OK) return st;
  }
  *out = s;
  return RLX_OK;
}

rlx_status rlx_mlp_forward(const rlx_mlp *m, const float *x, float *y) {
  rlx_session *s;
  rlx_status st = prepare("mlp_forward", m, KIND_FORWARD, x, NULL, y, &s);
  if (st != RLX_OK) return st;
  if ((st = rlx_session_run(s)) != RLX_OK) return st;
  return rlx_session_read_output(s, 0, y, (size_t)m->rows * (size_t)m->out);
}

rlx_status rlx_mlp_loss(const rlx_mlp *m, const float *x, const float *t, float *loss) {
  rlx_session *s;
  rlx_status st = prepare("mlp_loss", m, KIND_LOSS, x, t, loss, &s);
  if (st != RLX_OK) return st;
  if ((st = rlx_session_run(s)) != RLX_OK) return st;
  return rlx_session_read_output(s, 0, loss, 1);
}

rlx_status rlx_mlp_grads(const rlx_mlp *m, const float *x, const float *t, float *grads) {
  rlx_session *s;
  rlx_status st = prepare("mlp_grads", m, KIND_GRADS, x, t, grads, &s);
  if (st != RLX_OK) return st;
  if ((st = rlx_session_run(s)) != RLX_OK) return st;
  size_t sizes[N_PARAMS];
  param_sizes(m, sizes);
  if ((st = rlx_session_read_output(s, 0, grads++, 1)) != RLX_OK) return st;
  for (int i = 0; i < N_PARAMS; i++) {
    if ((st = rlx_session_read_output(s, 1 + i, grads, sizes[i])) != RLX_OK) return st;
    grads += sizes[i];
  }
  return RLX_OK;
}

rlx_status rlx_mlp_train_step(const rlx_mlp *m, const float *x, const float *t, float lr, float *params_out) {
  if (!isfinite(lr)) return rlx_error(RLX_ERR_NUMERIC, "mlp_train_step: the learning rate must be finite");
  rlx_session *s;
  rlx_status st = prepare("mlp_train_step", m, KIND_TRAIN, x, t, params_out, &s);
  if (st != RLX_OK) return st;
  if ((st = rlx_session_set_lr(s, lr)) != RLX_OK) return st;
  if ((st = rlx_session_run(s)) != RLX_OK) return st;
  size_t sizes[N_PARAMS];
  param_sizes(m, sizes);
  for (int i = 0; i < N_PARAMS; i++) {
    if ((st = rlx_session_get_param(s, param_names[i], params_out, sizes[i])) != RLX_OK) return st;
    params_out += sizes[i];
  }
  return RLX_OK;
}
