/* grad.h - reverse-mode autodiff over the IR.  The walk (grad.c) visits
 * nodes from the loss back to the leaves; each op's rule (rules_*.c,
 * rlx_grad_<name>, one per row of the op table) turns the adjoint of its
 * output into contributions to its inputs, written with ordinary graph
 * builders, so the backward pass is just more graph. */
#ifndef RLX_GRAD_H
#define RLX_GRAD_H

#include "../ir/graph.h"

typedef struct {
  rlx_graph *g;
  rlx_node *adj;     /* per forward node: summed adjoint, or RLX_NO_NODE */
  uint8_t *depends;  /* per forward node: a requested gradient flows through it */
  int32_t n_fwd;     /* nodes of the forward graph */
} rlx_grad_ctx;

typedef rlx_status (*rlx_grad_rule)(rlx_grad_ctx *c, rlx_node id, rlx_node dy);

#define RLX_OP(ID, name, min_in, max_in, rule, attrs) rlx_status rlx_grad_##name(rlx_grad_ctx *c, rlx_node id, rlx_node dy);
#include "rlx_ops.def"
#undef RLX_OP

/* Does input k of node id need a gradient? */
int rlx_grad_wants(const rlx_grad_ctx *c, rlx_node id, int32_t k);
/* Adds contribution (shaped like, or broadcast to, input k's shape) to the
 * adjoint of input k of node id; sums over broadcast axes first. */
void rlx_grad_accum(rlx_grad_ctx *c, rlx_node id, int32_t k, rlx_node contribution);

/* Small builders for rules. */
const rlx_node_t *rlx_grad_node(const rlx_grad_ctx *c, rlx_node id);
rlx_node rlx_grad_arg(const rlx_grad_ctx *c, rlx_node id, int32_t k); /* node id of input k */
rlx_node rlx_grad_scale(rlx_grad_ctx *c, rlx_node x, float s);          /* x * s */
/* Reduces x (broadcast-compatible with target) to target's shape by summing. */
rlx_node rlx_grad_unbroadcast(rlx_grad_ctx *c, rlx_node x, const rlx_shape *target);

#endif
