/* optim.c - training steps: the backward graph plus optimizer updates,
 * compiled into one session whose run ends by copying each updated value
 * over its param (the plan's assignments).  SGD and momentum are ordinary
 * elementwise nodes; Adam and AdamW one adam_update node per param, which
 * writes its moments in place.  Params and optimizer state never leave the
 * session. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../compile/session.h"
#include "grad.h"

typedef struct {
  rlx_graph *g;
  const rlx_optimizer *opt;
  rlx_node lr, step_next, bias1, bias2; /* shared scalars */
} update_ctx;

static rlx_node scalar(rlx_graph *g, float v) { return rlx_scalar(g, v); }

/* A zero-initialized state param shaped like p, named "<p>.<suffix>". */
static rlx_node state_like(rlx_graph *g, rlx_node p, const char *suffix) {
  char name[300];
  const rlx_node_t *n = rlx_graph_node(g, p);
  rlx_shape s = n->shape;
  snprintf(name, sizeof name, "%s.%s", n->name ? n->name : "param", suffix);
  return rlx_param(g, name, s.rank, s.dims);
}

/* Appends the update of param p with gradient grad; records (value, target)
 * pairs in assign. */
static int32_t add_update(update_ctx *u, rlx_node p, rlx_node grad, rlx_node *values, rlx_node *targets) {
  rlx_graph *g = u->g;
  const rlx_optimizer *o = u->opt;
  int32_t n = 0;
  if (o->kind == RLX_OPT_SGD) {
    values[n] = rlx_sub(g, p, rlx_mul(g, u->lr, grad)), targets[n++] = p;
  } else if (o->kind == RLX_OPT_MOMENTUM) {
    rlx_node v = state_like(g, p, "v");
    rlx_node v2 = rlx_add(g, rlx_mul(g, scalar(g, o->momentum), v), grad);
    values[n] = rlx_sub(g, p, rlx_mul(g, u->lr, v2)), targets[n++] = p;
    values[n] = v2, targets[n++] = v;
  } else {
    /* adam_update: one node, m and v written in place (include/rlx_ops.def) */
    const float attrs[4] = {o->beta1, o->beta2, o->eps > 0 ? o->eps : 1e-8f,
                            o->kind == RLX_OPT_ADAMW ? o->weight_decay : 0.0f};
    const rlx_node m = state_like(g, p, "m"), v = state_like(g, p, "v");
    const rlx_node in[7] = {p, grad, m, v, u->lr, u->bias1, u->bias2};
    values[n] = rlx_op_node(g, RLX_OP_ADAM_UPDATE, in, 7, NULL, 0, attrs, 4), targets[n++] = p;
  }
  return n;
}

static rlx_status check_optimizer(const rlx_optimizer *o) {
  if (!o) return rlx_error(RLX_ERR_INVALID_ARG, "train: optimizer is NULL");
  if (o->kind < RLX_OPT_SGD || o->kind > RLX_OPT_ADAMW) return rlx_error(RLX_ERR_INVALID_ARG, "train: unknown optimizer %d", (int)o->kind);
  if (!isfinite(o->lr) || !isfinite(o->momentum) || !isfinite(o->weight_decay) || !isfinite(o->eps) ||
      !isfinite(o->beta1) || !isfinite(o->beta2))
    return rlx_error(RLX_ERR_NUMERIC, "train: optimizer settings must be finite");
  if (o->beta1 < 0 || o->beta1 >= 1 || o->beta2 < 0 || o->beta2 >= 1)
    return rlx_error(RLX_ERR_INVALID_ARG, "train: beta1 and beta2 must lie in [0, 1)");
  return RLX_OK;
}

rlx_status rlx_compile_train(rlx_graph *g, rlx_node loss, const rlx_node *params, int32_t n_params,
                             const rlx_optimizer *opt_in, const rlx_compile_options *copt, rlx_session **out) {
  rlx_optimizer opt;
  rlx_status st = check_optimizer(opt_in);
  if (st != RLX_OK) return st;
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "train: the session out-pointer is NULL");
  *out = NULL;
  opt = *opt_in;
  if ((opt.kind == RLX_OPT_ADAM || opt.kind == RLX_OPT_ADAMW) && opt.beta1 == 0 && opt.beta2 == 0)
    opt.beta1 = 0.9f, opt.beta2 = 0.999f;
  if (!g || n_params < 1 || !params) return rlx_error(RLX_ERR_INVALID_ARG, "train: needs a graph and at least one param");
  for (int32_t i = 0; i < n_params; i++) {
    const rlx_node_t *n = rlx_graph_node(g, params[i]);
    if (!n || n->op != RLX_OP_PARAM)
      return rlx_error(RLX_ERR_INVALID_ARG, "train: entry %d (node %d) is not a param", (int)i, (int)params[i]);
  }
  const rlx_node_t *ln = rlx_graph_node(g, loss);
  if (!ln || rlx_shape_numel(&ln->shape) != 1)
    return rlx_error(RLX_ERR_SHAPE, "train: the loss must be a single value (reduce it with rlx_reduce_mean)");
  size_t n_slots = (size_t)n_params * 3 + 2;
  rlx_node *grads = rlx_malloc(((size_t)n_params + 1) * sizeof(rlx_node));
  rlx_node *outs = rlx_malloc(n_slots * sizeof(rlx_node)), *targets = rlx_malloc(n_slots * sizeof(rlx_node));
  if (!grads || !outs || !targets) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "train: out of memory");
    goto done;
  }
  if ((st = rlx_grad_with_loss(g, loss, params, n_params, grads)) != RLX_OK) goto done;
  update_ctx u = {g, &opt, rlx_input(g, "rlx.lr", 0, NULL, RLX_F32), RLX_NO_NODE, RLX_NO_NODE, RLX_NO_NODE};
  int32_t n_out = 0;
  outs[n_out] = loss, targets[n_out++] = RLX_NO_NODE;
  if (opt.kind == RLX_OPT_ADAM || opt.kind == RLX_OPT_ADAMW) {
    rlx_node step = rlx_param(g, "rlx.step", 0, NULL);
    u.step_next = rlx_add(g, step, scalar(g, 1.0f));
    u.bias1 = rlx_sub(g, scalar(g, 1.0f), rlx_pow(g, scalar(g, opt.beta1), u.step_next));
    u.bias2 = rlx_sub(g, scalar(g, 1.0f), rlx_pow(g, scalar(g, opt.beta2), u.step_next));
    outs[n_out] = u.step_next, targets[n_out++] = step;
  }
  for (int32_t i = 0; i < n_params; i++) n_out += add_update(&u, params[i], grads[1 + i], outs + n_out, targets + n_out);
  if (rlx_graph_status(g) != RLX_OK) {
    st = rlx_error(rlx_graph_status(g), "train: %s", rlx_graph_error(g));
    goto done;
  }
  if ((st = rlx_compile(g, outs, n_out, copt, out)) != RLX_OK) goto done;
  rlx_session *s = *out;
  /* Outputs after the loss are assignments: value -> param, after each run. */
  for (int32_t i = 1; i < n_out; i++) {
    const char *name = g->nodes[targets[i]].name;
    for (int32_t k = 0; k < s->plan.n_params; k++)
      if (strcmp(s->plan.graph.nodes[s->plan.params[k]].name, name) == 0) s->plan.assign_param[i] = k;
  }
  s->plan.n_user_outputs = 1;
  float one = 1.0f;
  rlx_session_set_input(s, "d_output", &one, 1);
  rlx_session_set_lr(s, opt.lr);
done:
  rlx_free(grads, ((size_t)n_params + 1) * sizeof(rlx_node));
  rlx_free(outs, n_slots * sizeof(rlx_node));
  rlx_free(targets, n_slots * sizeof(rlx_node));
  return st;
}

rlx_status rlx_session_set_lr(rlx_session *s, float lr) {
  if (!isfinite(lr)) return rlx_error(RLX_ERR_NUMERIC, "set_lr: the learning rate must be finite");
  return rlx_session_set_input(s, "rlx.lr", &lr, 1);
}
