/* rules_llm.c - gradient rules of the quantized language-model ops:
 * matmul_q is linear in x (its gradient is matmul_q with trans flipped);
 * swiglu_q's goes through its two products, recomputed; quantized weights
 * and tables get no gradient, and attention_kv (which writes its caches)
 * and the products of x rounded to 8 bits (xq8) are forward only; with
 * norm, x is normalized again here and the gradient flows back through
 * rms_norm's rules (rms_norm_grad, rms_norm_grad_weight). */
#include "grad.h"

/* x rounded to 8 bits is a step function of x: inference only. */
static rlx_status no_grad_xq8(rlx_node id, const char *op) {
  return rlx_error(RLX_ERR_GRAPH,
                   "grad: node %d (%s with xq8) has no gradient: x rounded to 8 bits is for inference (build it "
                   "without xq8 to train through it)", (int)id, op);
}

/* norm's x = rms_norm(x_in, g) (eps): the products' gradient dxn into
 * x_in's (input 0) and g's (input k). */
static void norm_grads(rlx_grad_ctx *c, rlx_node id, const rlx_node_t *n, int32_t k, float eps, rlx_node dxn) {
  float f[1] = {eps};
  if (rlx_grad_wants(c, id, 0)) {
    rlx_node in[3] = {n->inputs[0], n->inputs[k], dxn};
    rlx_grad_accum(c, id, 0, rlx_op_node(c->g, RLX_OP_RMS_NORM_GRAD, in, 3, NULL, 0, f, 1));
  }
  if (rlx_grad_wants(c, id, k)) {
    rlx_node in[2] = {n->inputs[0], dxn};
    rlx_grad_accum(c, id, k, rlx_op_node(c->g, RLX_OP_RMS_NORM_GRAD_W, in, 2, NULL, 0, f, 1));
  }
}

/* x_in normalized for norm (rms_norm(x_in, input k), eps), else x_in. */
static rlx_node normed(rlx_grad_ctx *c, const rlx_node_t *n, int32_t norm, int32_t k, float eps) {
  if (!norm) return n->inputs[0];
  rlx_node in[2] = {n->inputs[0], n->inputs[k]};
  float f[1] = {eps};
  return rlx_op_node(c->g, RLX_OP_RMS_NORM, in, 2, NULL, 0, f, 1);
}

/* y = x W^T (trans 0) or x W (trans 1) (+ acc): dx = dy W or dy W^T,
 * dacc = dy; with norm, dx through rms_norm's gradient and g's too. */
rlx_status rlx_grad_matmul_q(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_node_t n = *rlx_grad_node(c, id);
  const int32_t norm = ATTR_I(&n, QMATMUL, NORM);
  if (!norm && n.n_inputs > 2 && rlx_grad_wants(c, id, 2)) rlx_grad_accum(c, id, 2, dy);
  if (!rlx_grad_wants(c, id, 0) && !(norm && rlx_grad_wants(c, id, 2))) return RLX_OK;
  if (ATTR_I(&n, QMATMUL, XQ8)) return no_grad_xq8(id, "matmul_q");
  int32_t at[RLX_IATTR_QMATMUL_TRANS + 1];
  for (int32_t k = 0; k < RLX_IATTR_QMATMUL_TRANS; k++) at[k] = n.iattr[k]; /* qtype, rows, cols */
  at[RLX_IATTR_QMATMUL_TRANS] = !ATTR_I(&n, QMATMUL, TRANS);
  rlx_node in[2] = {dy, n.inputs[1]};
  rlx_node dx = rlx_op_node(c->g, RLX_OP_MATMUL_Q, in, 2, at, RLX_LEN(at), NULL, 0);
  if (norm)
    norm_grads(c, id, &n, 2, ATTR_F(&n, QMATMUL, EPS), dx);
  else
    rlx_grad_accum(c, id, 0, dx);
  return RLX_OK;
}

/* The table is i32 bytes and the ids are indices: nothing flows back. */
rlx_status rlx_grad_gather_q(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  (void)c, (void)id, (void)dy;
  return RLX_OK;
}

/* x W^T (trans 0) or x W (trans 1), W a table of n's QTABLE attributes. */
static rlx_node table_product(rlx_grad_ctx *c, const rlx_node_t *n, rlx_node x, rlx_node w, int32_t trans) {
  int32_t at[RLX_IATTR_QMATMUL_TRANS + 1];
  for (int32_t k = 0; k < RLX_IATTR_QMATMUL_TRANS; k++) at[k] = n->iattr[k]; /* qtype, rows, cols */
  at[RLX_IATTR_QMATMUL_TRANS] = trans;
  rlx_node in[2] = {x, w};
  return rlx_op_node(c->g, RLX_OP_MATMUL_Q, in, 2, at, RLX_LEN(at), NULL, 0);
}

/* y = silu(g) * u with g = x Wg^T, u = x Wu^T (recomputed here):
 * dx = silu'(g) dy u Wg + silu(g) dy Wu. */
rlx_status rlx_grad_swiglu_q(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_node_t n = *rlx_grad_node(c, id);
  const int32_t norm = ATTR_I(&n, QSWIGLU, NORM);
  const float eps = ATTR_F(&n, QSWIGLU, EPS);
  if (!rlx_grad_wants(c, id, 0) && !(norm && rlx_grad_wants(c, id, 3))) return RLX_OK;
  if (ATTR_I(&n, QSWIGLU, XQ8)) return no_grad_xq8(id, "swiglu_q");
  rlx_graph *g = c->g;
  rlx_node x = normed(c, &n, norm, 3, eps);
  rlx_node gate = table_product(c, &n, x, n.inputs[1], 0);
  rlx_node up = table_product(c, &n, x, n.inputs[2], 0);
  rlx_node in[2] = {gate, rlx_mul(g, dy, up)};
  rlx_node dgate = rlx_op_node(g, RLX_OP_SILU_GRAD, in, 2, NULL, 0, NULL, 0);
  rlx_node dup = rlx_mul(g, dy, rlx_op_node(g, RLX_OP_SILU, &gate, 1, NULL, 0, NULL, 0));
  rlx_node dx = rlx_add(g, table_product(c, &n, dgate, n.inputs[1], 1), table_product(c, &n, dup, n.inputs[2], 1));
  if (norm)
    norm_grads(c, id, &n, 3, eps, dx);
  else
    rlx_grad_accum(c, id, 0, dx);
  return RLX_OK;
}

rlx_status rlx_grad_attention_kv(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  (void)dy;
  int wanted = 0;
  for (int32_t k = 0; k < 5; k++) wanted |= rlx_grad_wants(c, id, k);
  if (!wanted) return RLX_OK; /* on the loss's path, but no requested gradient flows through it */
  return rlx_error(RLX_ERR_GRAPH,
                   "grad: node %d (attention_kv) has no gradient: it is an inference op that writes its KV cache "
                   "(use attention for training)", (int)id);
}
