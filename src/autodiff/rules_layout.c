/* rules_layout.c - gradient rules of matmul, the layout ops, gather and
 * the reductions. */
#include "grad.h"

#define NODE rlx_node_t n = *rlx_grad_node(c, id)
#define G c->g

static const rlx_shape *shape_of(const rlx_grad_ctx *c, rlx_node x) { return &rlx_grad_node(c, x)->shape; }

/* C = op(A) op(B).  d op(A) = dC op(B)^T and d op(B) = op(A)^T dC, written
 * back in each operand's stored orientation; batch broadcasts are summed
 * by rlx_grad_accum. */
rlx_status rlx_grad_matmul(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_node a = n.inputs[0], b = n.inputs[1];
  int ta = ATTR_I(&n, MATMUL, TRANS_A), tb = ATTR_I(&n, MATMUL, TRANS_B);
  if (rlx_grad_wants(c, id, 0))
    rlx_grad_accum(c, id, 0, ta ? rlx_matmul_t(G, b, dy, tb, 1) : rlx_matmul_t(G, dy, b, 0, !tb));
  if (rlx_grad_wants(c, id, 1))
    rlx_grad_accum(c, id, 1, tb ? rlx_matmul_t(G, dy, a, 1, ta) : rlx_matmul_t(G, a, dy, !ta, 0));
  return RLX_OK;
}

rlx_status rlx_grad_reshape(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_shape s = *shape_of(c, n.inputs[0]);
  rlx_grad_accum(c, id, 0, rlx_reshape(G, dy, s.rank, s.dims));
  return RLX_OK;
}

rlx_status rlx_grad_permute(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  int32_t inverse[RLX_MAX_RANK];
  for (int32_t i = 0; i < n.n_iattr; i++) inverse[n.iattr[RLX_IATTR_PERM_PERM + i]] = i;
  rlx_grad_accum(c, id, 0, rlx_op_node(G, RLX_OP_PERMUTE, &dy, 1, inverse, n.n_iattr, NULL, 0));
  return RLX_OK;
}

rlx_status rlx_grad_narrow(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  const int32_t axis = ATTR_I(&n, NARROW, AXIS);
  int32_t at[] = {[RLX_IATTR_NARROW_GRAD_AXIS] = axis, [RLX_IATTR_NARROW_GRAD_START] = ATTR_I(&n, NARROW, START),
                  [RLX_IATTR_NARROW_GRAD_FULL] = shape_of(c, n.inputs[0])->dims[axis]};
  rlx_grad_accum(c, id, 0, rlx_op_node(G, RLX_OP_NARROW_GRAD, &dy, 1, at, RLX_LEN(at), NULL, 0));
  return RLX_OK;
}

rlx_status rlx_grad_concat(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  int32_t axis = ATTR_I(&n, AXIS, AXIS), start = 0;
  for (int32_t k = 0; k < n.n_inputs; k++) {
    int32_t len = shape_of(c, n.inputs[k])->dims[axis];
    if (rlx_grad_wants(c, id, k)) rlx_grad_accum(c, id, k, rlx_narrow(G, dy, axis, start, len));
    start += len;
  }
  return RLX_OK;
}

/* expand: summing over the expanded axes is what rlx_grad_accum does. */
rlx_status rlx_grad_expand(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  rlx_grad_accum(c, id, 0, dy);
  return RLX_OK;
}

/* gather: rows of dy are added into the table rows they came from; ids none. */
rlx_status rlx_grad_gather(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  if (!rlx_grad_wants(c, id, 0)) return RLX_OK;
  int32_t rows = shape_of(c, n.inputs[0])->dims[0];
  rlx_node in[2] = {n.inputs[1], dy};
  rlx_grad_accum(c, id, 0, rlx_op_node(G, RLX_OP_SCATTER_ADD, in, 2, &rows, RLX_IATTR_SCATTER_ADD_ROWS + 1, NULL, 0));
  return RLX_OK;
}

/* dy of a reduction, reshaped to keepdim form and expanded to x's shape. */
static rlx_node spread(rlx_grad_ctx *c, const rlx_node_t *n, rlx_node v) {
  rlx_shape x = *shape_of(c, n->inputs[0]), kept = x;
  for (int32_t i = 0; i < x.rank; i++)
    if (ATTR_I(n, REDUCE, AXES) & (1 << i)) kept.dims[i] = 1;
  rlx_node r = rlx_reshape(G, v, kept.rank, kept.dims);
  return rlx_expand(G, r, x.rank, x.dims);
}

static int32_t reduced_count(const rlx_grad_ctx *c, const rlx_node_t *n) {
  const rlx_shape *x = shape_of(c, n->inputs[0]);
  int32_t count = 1;
  for (int32_t i = 0; i < x->rank; i++)
    if (ATTR_I(n, REDUCE, AXES) & (1 << i)) count *= x->dims[i];
  return count;
}

rlx_status rlx_grad_reduce_sum(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_grad_accum(c, id, 0, spread(c, &n, dy));
  return RLX_OK;
}

rlx_status rlx_grad_reduce_mean(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_grad_accum(c, id, 0, spread(c, &n, rlx_grad_scale(c, dy, 1.0f / (float)reduced_count(c, &n))));
  return RLX_OK;
}

/* reduce_max: dy goes to the elements equal to the max, split evenly
 * between ties. */
rlx_status rlx_grad_reduce_max(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_node is_max = rlx_eq(G, n.inputs[0], spread(c, &n, id));
  int32_t axes[RLX_MAX_RANK], n_axes = 0;
  for (int32_t i = 0; i < RLX_MAX_RANK; i++)
    if (ATTR_I(&n, REDUCE, AXES) & (1 << i)) axes[n_axes++] = i;
  rlx_node ties = rlx_reduce_sum(G, is_max, axes, n_axes, ATTR_I(&n, REDUCE, KEEPDIM)); /* shaped like y */
  rlx_grad_accum(c, id, 0, rlx_mul(G, is_max, spread(c, &n, rlx_div(G, dy, ties))));
  return RLX_OK;
}
