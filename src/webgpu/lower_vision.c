/* lower_vision.c - WebGPU lowerings of conv2d and its two gradients (as
 * implicit GEMMs in matmul.wgsl: no unfolded buffer), the 2-D pools and
 * their gradients (pool.wgsl, pool_max_grad.wgsl, pool_avg_grad.wgsl) and
 * global average pooling (pool_global.wgsl).
 *
 * The GEMM views, per group g (the GEMM's batch index):
 *   conv2d              y[n, o, p]  = sum_(c,kh,kw) w[o, c, kh, kw] x[n, c, window]
 *                       M = O/g, N = Nimg*OH*OW, K = C/g*KH*KW
 *   conv2d_grad_input   dx[n, c, q] = sum_(o,kh,kw) w[o, c, kh, kw] dy[n, o, cell]
 *                       M = C/g, N = Nimg*H*W, K = O/g*KH*KW (taps off the
 *                       stride grid read zero)
 *   conv2d_grad_weight  dw[o, c, kh, kw] = sum_(n,p) dy[n, o, p] x[n, c, window]
 *                       M = O/g, N = C/g*KH*KW, K = Nimg*OH*OW (split-K
 *                       when long)
 * The pool gradients are gathers (one thread per input cell over the
 * windows that hold it), so nothing needs atomics or a zeroing pass.
 *
 * Tolerance against the CPU executor: convolutions sum the same products
 * in another order (~1e-6 relative on the op cases); pools and their
 * gradients add in the CPU's order and match it exactly, but global
 * average pooling, which sums in a tree (~1e-7). */
#include "lower_gemm.h"

/* The convolution geometry words of matmul.wgsl (uniform words 9..25) from
 * x[N,C,H,W], w[O,C/g,KH,KW], y[N,O,OH,OW] and conv2d's 7 attributes. */
static void conv_words(rlx_wgpu_gemm *g, const int32_t *xd, const int32_t *wd, const int32_t *yd,
                       const int32_t *attr) {
  const uint32_t groups = (uint32_t)attr[RLX_IATTR_CONV_GROUPS];
  const uint32_t w[17] = {(uint32_t)xd[0], (uint32_t)xd[1], (uint32_t)xd[2], (uint32_t)xd[3],
                          (uint32_t)wd[0], (uint32_t)wd[2], (uint32_t)wd[3], (uint32_t)yd[2],
                          (uint32_t)yd[3], (uint32_t)attr[RLX_IATTR_CONV_STRIDE_H], (uint32_t)attr[RLX_IATTR_CONV_STRIDE_W], (uint32_t)attr[RLX_IATTR_CONV_PAD_H],
                          (uint32_t)attr[RLX_IATTR_CONV_PAD_W], (uint32_t)attr[RLX_IATTR_CONV_DIL_H], (uint32_t)attr[RLX_IATTR_CONV_DIL_W], (uint32_t)xd[1] / groups,
                          (uint32_t)wd[0] / groups};
  for (int32_t i = 0; i < 17; i++) g->words[i] = w[i];
  g->n_words = 17;
  g->Z = groups;
}

/* x[N,C,H,W], w[O,C/g,KH,KW] -> y[N,O,OH,OW]; iattr = {stride_h, stride_w,
 * pad_h, pad_w, dil_h, dil_w, groups}. */
rlx_status rlx_wgpu_lower_conv2d(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const int32_t *xd = c->in_node[0]->shape.dims, *wd = c->in_node[1]->shape.dims, *yd = c->node->shape.dims;
  rlx_wgpu_gemm g = {0};
  g.mode = RLX_GEMM_CONV;
  conv_words(&g, xd, wd, yd, c->node->iattr);
  g.M = (uint32_t)wd[0] / g.Z;
  g.N = (uint32_t)(xd[0] * yd[2] * yd[3]);
  g.K = (uint32_t)(wd[1] * wd[2] * wd[3]);
  g.out_elems = rlx_shape_numel(&c->node->shape);
  return rlx_wgpu_add_gemm(out, &g);
}

/* dy[N,O,OH,OW], w[O,C/g,KH,KW] -> dx[N,C,H,W]; iattr = conv2d's 7 + {H, W}. */
rlx_status rlx_wgpu_lower_conv2d_grad_input(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const int32_t *yd = c->in_node[0]->shape.dims, *wd = c->in_node[1]->shape.dims, *xd = c->node->shape.dims;
  rlx_wgpu_gemm g = {0};
  g.mode = RLX_GEMM_CONV_DX;
  conv_words(&g, xd, wd, yd, c->node->iattr);
  g.M = (uint32_t)wd[1];
  g.N = (uint32_t)(xd[0] * xd[2] * xd[3]);
  g.K = (uint32_t)wd[0] / g.Z * (uint32_t)(wd[2] * wd[3]);
  g.out_elems = rlx_shape_numel(&c->node->shape);
  return rlx_wgpu_add_gemm(out, &g);
}

/* x[N,C,H,W], dy[N,O,OH,OW] -> dw[O,C/g,KH,KW]; iattr = conv2d's 7 + {KH, KW}. */
rlx_status rlx_wgpu_lower_conv2d_grad_weight(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const int32_t *xd = c->in_node[0]->shape.dims, *yd = c->in_node[1]->shape.dims, *wd = c->node->shape.dims;
  rlx_wgpu_gemm g = {0};
  g.mode = RLX_GEMM_CONV_DW;
  conv_words(&g, xd, wd, yd, c->node->iattr);
  g.M = (uint32_t)wd[0] / g.Z;
  g.N = (uint32_t)(wd[1] * wd[2] * wd[3]);
  g.K = (uint32_t)(xd[0] * yd[2] * yd[3]);
  g.out_elems = rlx_shape_numel(&c->node->shape);
  return rlx_wgpu_add_gemm(out, &g);
}

/* The pool shaders' uniform words: count, H, W, OH, OW, the 6 attributes
 * and 1/(kernel_h*kernel_w) (as the CPU computes it). */
static void pool_words(rlx_wgpu_dispatch *d, size_t count, const int32_t *xd, const int32_t *yd, const int32_t *at) {
  rlx_wgpu_u32(d, (uint32_t)count);
  rlx_wgpu_u32(d, (uint32_t)xd[2]);
  rlx_wgpu_u32(d, (uint32_t)xd[3]);
  rlx_wgpu_u32(d, (uint32_t)yd[2]);
  rlx_wgpu_u32(d, (uint32_t)yd[3]);
  for (int32_t i = 0; i < 6; i++) rlx_wgpu_u32(d, (uint32_t)at[i]);
  rlx_wgpu_f32(d, 1.0f / ((float)at[RLX_IATTR_POOL_KERNEL_H] * (float)at[RLX_IATTR_POOL_KERNEL_W]));
  rlx_wgpu_grid1d(d, count, 256);
}

static rlx_status pool_forward(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, uint32_t mode) {
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "pool");
  rlx_wgpu_override(d, "MODE", mode);
  rlx_wgpu_bind_inputs(d, 1);
  pool_words(d, rlx_shape_numel(&c->node->shape), c->in_node[0]->shape.dims, c->node->shape.dims,
             c->node->iattr);
  return RLX_OK;
}

/* x[N,C,H,W] -> y[N,C,OH,OW]; iattr = {kernel_h, kernel_w, stride_h,
 * stride_w, pad_h, pad_w}. */
rlx_status rlx_wgpu_lower_max_pool2d(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return pool_forward(c, out, 0);
}

rlx_status rlx_wgpu_lower_avg_pool2d(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return pool_forward(c, out, 1);
}

/* x[N,C,H,W], dy[N,C,OH,OW] -> dx[N,C,H,W]; iattr = the pool's 6. */
rlx_status rlx_wgpu_lower_max_pool2d_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "pool_max_grad");
  rlx_wgpu_bind_inputs(d, 2);
  pool_words(d, rlx_shape_numel(&c->node->shape), c->node->shape.dims, c->in_node[1]->shape.dims,
             c->node->iattr);
  return RLX_OK;
}

/* dy[N,C,OH,OW] -> dx[N,C,H,W]; iattr = the pool's 6 + {H, W}. */
rlx_status rlx_wgpu_lower_avg_pool2d_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "pool_avg_grad");
  rlx_wgpu_bind_inputs(d, 1);
  pool_words(d, rlx_shape_numel(&c->node->shape), c->node->shape.dims, c->in_node[0]->shape.dims,
             c->node->iattr);
  return RLX_OK;
}

/* x[N,C,H,W] -> y[N,C]: one 64-thread workgroup per plane. */
rlx_status rlx_wgpu_lower_global_avg_pool(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const int32_t *xd = c->in_node[0]->shape.dims;
  const size_t planes = (size_t)xd[0] * xd[1];
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "pool_global");
  rlx_wgpu_bind_inputs(d, 1);
  rlx_wgpu_u32(d, (uint32_t)planes);
  rlx_wgpu_u32(d, (uint32_t)xd[2] * (uint32_t)xd[3]);
  rlx_wgpu_grid1d(d, planes, 1);
  return RLX_OK;
}
