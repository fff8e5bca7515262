/* rules_nn.c - gradient rules of softmax, cross-entropy, the norms, RoPE,
 * attention, convolution and pooling, mostly through backward ops; and the
 * backward ops themselves, which have no gradient (no second order), nor
 * has the optimizer update adam_update. */
#include <math.h>
#include <string.h>

#include "grad.h"

#define NODE rlx_node_t n = *rlx_grad_node(c, id)
#define G c->g

static const rlx_shape *shape_of(const rlx_grad_ctx *c, rlx_node x) { return &rlx_grad_node(c, x)->shape; }

static rlx_node op(rlx_grad_ctx *c, rlx_op o, rlx_node a, rlx_node b, rlx_node d, int32_t n_in, const int32_t *ia,
                   int32_t n_ia, const float *fa, int32_t n_fa) {
  rlx_node in[3] = {a, b, d};
  return rlx_op_node(c->g, o, in, n_in, ia, n_ia, fa, n_fa);
}

rlx_status rlx_grad_softmax(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_grad_accum(c, id, 0, op(c, RLX_OP_SOFTMAX_GRAD, id, dy, 0, 2, n.iattr, n.n_iattr, NULL, 0));
  return RLX_OK;
}

rlx_status rlx_grad_log_softmax(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_grad_accum(c, id, 0, op(c, RLX_OP_LOG_SOFTMAX_GRAD, id, dy, 0, 2, n.iattr, n.n_iattr, NULL, 0));
  return RLX_OK;
}

rlx_status rlx_grad_softmax_cross_entropy(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  if (rlx_grad_wants(c, id, 0))
    rlx_grad_accum(c, id, 0, op(c, RLX_OP_SOFTMAX_CE_GRAD, n.inputs[0], n.inputs[1], dy, 3, NULL, 0, NULL, 0));
  return RLX_OK;
}

rlx_status rlx_grad_rms_norm(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_node x = n.inputs[0], w = n.inputs[1];
  if (rlx_grad_wants(c, id, 0)) rlx_grad_accum(c, id, 0, op(c, RLX_OP_RMS_NORM_GRAD, x, w, dy, 3, NULL, 0, n.fattr, n.n_fattr));
  if (rlx_grad_wants(c, id, 1)) rlx_grad_accum(c, id, 1, op(c, RLX_OP_RMS_NORM_GRAD_W, x, dy, 0, 2, NULL, 0, n.fattr, n.n_fattr));
  return RLX_OK;
}

rlx_status rlx_grad_layer_norm(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_node x = n.inputs[0], w = n.inputs[1];
  if (rlx_grad_wants(c, id, 0)) rlx_grad_accum(c, id, 0, op(c, RLX_OP_LAYER_NORM_GRAD, x, w, dy, 3, NULL, 0, n.fattr, n.n_fattr));
  if (rlx_grad_wants(c, id, 1)) rlx_grad_accum(c, id, 1, op(c, RLX_OP_LAYER_NORM_GRAD_W, x, dy, 0, 2, NULL, 0, n.fattr, n.n_fattr));
  if (rlx_grad_wants(c, id, 2)) rlx_grad_accum(c, id, 2, dy); /* summed over the leading axes by accum */
  return RLX_OK;
}

/* RoPE is a rotation: its gradient rotates back (same positions, offset
 * input and mode); the offset gets none. */
rlx_status rlx_grad_rope(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  int32_t at[] = {[RLX_IATTR_ROPE_POS_OFFSET] = ATTR_I(&n, ROPE, POS_OFFSET), [RLX_IATTR_ROPE_INVERSE] = !ATTR_I(&n, ROPE, INVERSE),
                  [RLX_IATTR_ROPE_MODE] = ATTR_I(&n, ROPE, MODE)};
  rlx_node in[2] = {dy, n.n_inputs > 1 ? n.inputs[1] : RLX_NO_NODE};
  if (rlx_grad_wants(c, id, 0))
    rlx_grad_accum(c, id, 0, rlx_op_node(G, RLX_OP_ROPE, in, n.n_inputs, at, RLX_LEN(at), n.fattr, n.n_fattr));
  return RLX_OK;
}

/* One backward op computes dq, dk and dv packed flat; each is a slice. */
rlx_status rlx_grad_attention(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_node in[5] = {n.inputs[0], n.inputs[1], n.inputs[2], dy, n.n_inputs > 3 ? n.inputs[3] : RLX_NO_NODE};
  rlx_node packed = rlx_op_node(G, RLX_OP_ATTENTION_GRAD, in, n.n_inputs + 1, n.iattr, n.n_iattr, n.fattr, n.n_fattr);
  int32_t start = 0;
  for (int32_t k = 0; k < 3; k++) {
    rlx_shape s = *shape_of(c, n.inputs[k]);
    int32_t len = (int32_t)rlx_shape_numel(&s);
    if (rlx_grad_wants(c, id, k))
      rlx_grad_accum(c, id, k, rlx_reshape(G, rlx_narrow(G, packed, 0, start, len), s.rank, s.dims));
    start += len;
  }
  return RLX_OK; /* the mask (padding or bias) gets no gradient */
}

rlx_status rlx_grad_conv2d(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_shape x = *shape_of(c, n.inputs[0]), w = *shape_of(c, n.inputs[1]);
  int32_t at[RLX_MAX_IATTR]; /* conv2d's attributes, then the grad op's own */
  memcpy(at, n.iattr, (size_t)n.n_iattr * sizeof(int32_t));
  if (rlx_grad_wants(c, id, 0)) {
    at[RLX_IATTR_CONV_GRAD_INPUT_IN_H] = x.dims[2];
    at[RLX_IATTR_CONV_GRAD_INPUT_IN_W] = x.dims[3];
    rlx_grad_accum(c, id, 0, op(c, RLX_OP_CONV2D_GRAD_INPUT, dy, n.inputs[1], 0, 2, at, RLX_IATTR_CONV_GRAD_INPUT_IN_W + 1,
                                NULL, 0));
  }
  if (rlx_grad_wants(c, id, 1)) {
    at[RLX_IATTR_CONV_GRAD_WEIGHT_KERNEL_H] = w.dims[2];
    at[RLX_IATTR_CONV_GRAD_WEIGHT_KERNEL_W] = w.dims[3];
    rlx_grad_accum(c, id, 1, op(c, RLX_OP_CONV2D_GRAD_WEIGHT, n.inputs[0], dy, 0, 2, at,
                                RLX_IATTR_CONV_GRAD_WEIGHT_KERNEL_W + 1, NULL, 0));
  }
  return RLX_OK;
}

rlx_status rlx_grad_max_pool2d(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_grad_accum(c, id, 0, op(c, RLX_OP_MAX_POOL2D_GRAD, n.inputs[0], dy, 0, 2, n.iattr, n.n_iattr, NULL, 0));
  return RLX_OK;
}

rlx_status rlx_grad_avg_pool2d(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_shape x = *shape_of(c, n.inputs[0]);
  int32_t at[RLX_MAX_IATTR]; /* the pool's attributes, then the grad op's own */
  memcpy(at, n.iattr, (size_t)n.n_iattr * sizeof(int32_t));
  at[RLX_IATTR_AVG_POOL_GRAD_IN_H] = x.dims[2];
  at[RLX_IATTR_AVG_POOL_GRAD_IN_W] = x.dims[3];
  rlx_grad_accum(c, id, 0, op(c, RLX_OP_AVG_POOL2D_GRAD, dy, 0, 0, 1, at, RLX_IATTR_AVG_POOL_GRAD_IN_W + 1, NULL, 0));
  return RLX_OK;
}

/* [N, C] -> [N, C, 1, 1] -> expand / (H W) */
rlx_status rlx_grad_global_avg_pool(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {
  NODE;
  rlx_shape x = *shape_of(c, n.inputs[0]);
  int32_t kept[4] = {x.dims[0], x.dims[1], 1, 1};
  rlx_node spread = rlx_expand(G, rlx_reshape(G, dy, 4, kept), 4, x.dims);
  rlx_grad_accum(c, id, 0, rlx_grad_scale(c, spread, 1.0f / (float)(x.dims[2] * x.dims[3])));
  return RLX_OK;
}

static rlx_status no_second_order(rlx_node id, const char *name) {
  return rlx_error(RLX_ERR_UNSUPPORTED,
                   "grad: node %d (%s) is a backward, fused or optimizer op, which has no gradient (no second order; "
                   "fusion runs after autodiff)", (int)id, name);
}
#define NO_GRAD(name) \
  rlx_status rlx_grad_##name(rlx_grad_ctx *c, rlx_node id, rlx_node dy) { return no_second_order(id, #name); }
NO_GRAD(gelu_grad) NO_GRAD(silu_grad) NO_GRAD(narrow_grad) NO_GRAD(scatter_add) NO_GRAD(softmax_grad)
NO_GRAD(log_softmax_grad) NO_GRAD(softmax_cross_entropy_grad) NO_GRAD(rms_norm_grad) NO_GRAD(rms_norm_grad_weight)
NO_GRAD(layer_norm_grad) NO_GRAD(layer_norm_grad_weight) NO_GRAD(attention_grad) NO_GRAD(conv2d_grad_input)
NO_GRAD(conv2d_grad_weight) NO_GRAD(max_pool2d_grad) NO_GRAD(avg_pool2d_grad) NO_GRAD(fused_matmul) NO_GRAD(fused_attention)
NO_GRAD(adam_update)
