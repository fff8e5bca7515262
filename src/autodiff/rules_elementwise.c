/* rules_elementwise.c - gradient rules of the leaves, the broadcasting
 * binary ops, where, the comparisons (no gradient) and the unary ops.
 * Each rule reads its node by value first: builders may move the graph. */
#include "grad.h"

#define NODE rlx_node_t n = *rlx_grad_node(c, id)
#define A n.inputs[0]
#define B n.inputs[1]
#define G c->g

static rlx_status none(void) { return RLX_OK; }

/* Leaves and comparisons pass no gradient. */
rlx_status rlx_grad_input(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }
rlx_status rlx_grad_param(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }
rlx_status rlx_grad_constant(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }
rlx_status rlx_grad_eq(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }
rlx_status rlx_grad_ne(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }
rlx_status rlx_grad_lt(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }
rlx_status rlx_grad_le(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }
rlx_status rlx_grad_gt(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }
rlx_status rlx_grad_ge(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return none(); }

rlx_status rlx_grad_add(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_grad_accum(c, id, 0, dy);
  rlx_grad_accum(c, id, 1, dy);
  return RLX_OK;
}

rlx_status rlx_grad_sub(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_grad_accum(c, id, 0, dy);
  if (rlx_grad_wants(c, id, 1)) rlx_grad_accum(c, id, 1, rlx_neg(G, dy));
  return RLX_OK;
}

rlx_status rlx_grad_mul(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  if (rlx_grad_wants(c, id, 0)) rlx_grad_accum(c, id, 0, rlx_mul(G, dy, B));
  if (rlx_grad_wants(c, id, 1)) rlx_grad_accum(c, id, 1, rlx_mul(G, dy, A));
  return RLX_OK;
}

/* y = a / b: da = dy / b, db = -dy * y / b */
rlx_status rlx_grad_div(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  if (rlx_grad_wants(c, id, 0)) rlx_grad_accum(c, id, 0, rlx_div(G, dy, B));
  if (rlx_grad_wants(c, id, 1)) rlx_grad_accum(c, id, 1, rlx_neg(G, rlx_div(G, rlx_mul(G, dy, id), B)));
  return RLX_OK;
}

/* max/min: the winner gets dy; ties split it half and half. */
static rlx_status select_grad(rlx_grad_ctx *c, rlx_node id, rlx_node dy, int is_max) {
  NODE;
  rlx_node half_tie = rlx_grad_scale(c, rlx_eq(G, A, B), 0.5f);
  if (rlx_grad_wants(c, id, 0)) {
    rlx_node wins = is_max ? rlx_gt(G, A, B) : rlx_lt(G, A, B);
    rlx_grad_accum(c, id, 0, rlx_mul(G, dy, rlx_add(G, wins, half_tie)));
  }
  if (rlx_grad_wants(c, id, 1)) {
    rlx_node wins = is_max ? rlx_gt(G, B, A) : rlx_lt(G, B, A);
    rlx_grad_accum(c, id, 1, rlx_mul(G, dy, rlx_add(G, wins, half_tie)));
  }
  return RLX_OK;
}
rlx_status rlx_grad_max(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return select_grad(c, id, dy, 1); }
rlx_status rlx_grad_min(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return select_grad(c, id, dy, 0); }

/* y = a^b: da = dy * b * a^(b-1), db = dy * y * log(a) */
rlx_status rlx_grad_pow(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  if (rlx_grad_wants(c, id, 0)) {
    rlx_node a_pow = rlx_pow(G, A, rlx_sub(G, B, rlx_scalar(G, 1.0f)));
    rlx_grad_accum(c, id, 0, rlx_mul(G, dy, rlx_mul(G, B, a_pow)));
  }
  if (rlx_grad_wants(c, id, 1)) rlx_grad_accum(c, id, 1, rlx_mul(G, dy, rlx_mul(G, id, rlx_log(G, A))));
  return RLX_OK;
}

/* where(cond, a, b): a gets dy where cond holds, b elsewhere; cond none. */
rlx_status rlx_grad_where(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_node zero = rlx_scalar(G, 0.0f);
  if (rlx_grad_wants(c, id, 1)) rlx_grad_accum(c, id, 1, rlx_where(G, n.inputs[0], dy, zero));
  if (rlx_grad_wants(c, id, 2)) rlx_grad_accum(c, id, 2, rlx_where(G, n.inputs[0], zero, dy));
  return RLX_OK;
}

rlx_status rlx_grad_neg(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_grad_accum(c, id, 0, rlx_neg(G, dy));
  return RLX_OK;
}

/* d|x| = sign(x) (0 at 0) */
rlx_status rlx_grad_abs(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_node zero = rlx_scalar(G, 0.0f);
  rlx_node sign = rlx_sub(G, rlx_gt(G, A, zero), rlx_lt(G, A, zero));
  rlx_grad_accum(c, id, 0, rlx_mul(G, dy, sign));
  return RLX_OK;
}

rlx_status rlx_grad_exp(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_grad_accum(c, id, 0, rlx_mul(G, dy, id));
  return RLX_OK;
}

rlx_status rlx_grad_log(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_grad_accum(c, id, 0, rlx_div(G, dy, A));
  return RLX_OK;
}

/* y = sqrt(x): dx = 0.5 dy / y */
rlx_status rlx_grad_sqrt(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_grad_accum(c, id, 0, rlx_div(G, rlx_grad_scale(c, dy, 0.5f), id));
  return RLX_OK;
}

/* y = x^-1/2: dx = -0.5 dy y^3 */
rlx_status rlx_grad_rsqrt(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_node y3 = rlx_mul(G, id, rlx_mul(G, id, id));
  rlx_grad_accum(c, id, 0, rlx_mul(G, rlx_grad_scale(c, dy, -0.5f), y3));
  return RLX_OK;
}

/* dx = dy (1 - y^2) */
rlx_status rlx_grad_tanh(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_node one_minus = rlx_sub(G, rlx_scalar(G, 1.0f), rlx_mul(G, id, id));
  rlx_grad_accum(c, id, 0, rlx_mul(G, dy, one_minus));
  return RLX_OK;
}

/* dx = dy y (1 - y) */
rlx_status rlx_grad_sigmoid(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_node d = rlx_mul(G, id, rlx_sub(G, rlx_scalar(G, 1.0f), id));
  rlx_grad_accum(c, id, 0, rlx_mul(G, dy, d));
  return RLX_OK;
}

/* dx = dy where x > 0 (0 at 0) */
rlx_status rlx_grad_relu(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_grad_accum(c, id, 0, rlx_mul(G, dy, rlx_gt(G, A, rlx_scalar(G, 0.0f))));
  return RLX_OK;
}

static rlx_status pointwise_grad(rlx_grad_ctx *c, rlx_node id, rlx_node dy, rlx_op grad_op) {
  NODE;
  rlx_node in[2] = {A, dy};
  rlx_grad_accum(c, id, 0, rlx_op_node(G, grad_op, in, 2, NULL, 0, NULL, 0));
  return RLX_OK;
}
rlx_status rlx_grad_gelu(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return pointwise_grad(c, id, dy, RLX_OP_GELU_GRAD); }
rlx_status rlx_grad_silu(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return pointwise_grad(c, id, dy, RLX_OP_SILU_GRAD); }
