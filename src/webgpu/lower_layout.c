/* lower_layout.c - WebGPU lowerings of the layout family: permute, expand
 * and narrow as strided copies (strided_copy.wgsl), concat as one dispatch
 * per input writing its slice and narrow_grad as a zero-padded copy
 * (slice.wgsl), gather and its gradient scatter_add (gather.wgsl,
 * scatter_add.wgsl).  reshape is a view and never becomes a step. */
#include "wgpu.h"

#define THREADS 256

/* Row-major strides of s. */
static void contiguous_strides(const rlx_shape *s, uint32_t *strides) {
  uint32_t st = 1;
  for (int32_t i = s->rank - 1; i >= 0; i--) {
    strides[i] = st;
    st *= (uint32_t)s->dims[i];
  }
}

static uint32_t dims_product(const rlx_shape *s, int32_t from, int32_t to) {
  uint32_t n = 1;
  for (int32_t i = from; i < to; i++) n *= (uint32_t)s->dims[i];
  return n;
}

/* y[i] = x[base + sum c_d strides[d]] over y's shape. */
static rlx_status strided_copy(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, uint32_t base, const uint32_t *strides) {
  const rlx_shape *y = &c->node->shape;
  size_t n = rlx_shape_numel(y);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "strided_copy");
  rlx_wgpu_bind_inputs(d, 1);
  rlx_wgpu_u32(d, (uint32_t)n);
  rlx_wgpu_u32(d, base);
  rlx_wgpu_shape(d, y);
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < y->rank ? strides[i] : 0u);
  rlx_wgpu_grid1d(d, (n + 3) / 4, THREADS);
  return RLX_OK;
}

/* reshape is a view of its input: it never becomes a plan step. */
rlx_status rlx_wgpu_lower_reshape(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  (void)out;
  return rlx_wgpu_missing(c);
}

/* x[d0..dn] -> y[d_perm[0]..d_perm[n]] */
rlx_status rlx_wgpu_lower_permute(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  uint32_t in_strides[RLX_MAX_RANK], strides[RLX_MAX_RANK];
  const rlx_shape *x = &c->in_node[0]->shape;
  contiguous_strides(x, in_strides);
  for (int32_t i = 0; i < x->rank; i++) strides[i] = in_strides[c->node->iattr[i]];
  return strided_copy(c, out, 0, strides);
}

/* x[...] broadcast -> y[target dims] */
rlx_status rlx_wgpu_lower_expand(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_shape *x = &c->in_node[0]->shape, *y = &c->node->shape;
  uint32_t strides[RLX_MAX_RANK] = {0}, st = 1;
  for (int32_t i = x->rank - 1; i >= 0; i--) {
    int32_t o = i + (y->rank - x->rank);
    strides[o] = x->dims[i] == 1 ? 0u : st;
    st *= (uint32_t)x->dims[i];
  }
  return strided_copy(c, out, 0, strides);
}

/* x[..., full, ...] -> y[..., length, ...] from start on iattr = {axis, start, length} */
rlx_status rlx_wgpu_lower_narrow(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  uint32_t strides[RLX_MAX_RANK];
  contiguous_strides(&c->in_node[0]->shape, strides);
  int32_t axis = c->node->iattr[0];
  return strided_copy(c, out, (uint32_t)c->node->iattr[1] * strides[axis], strides);
}

/* x_k[..., len_k, ...] -> y[..., sum len_k, ...] on iattr = {axis}: one
 * dispatch per input writing its slice. */
rlx_status rlx_wgpu_lower_concat(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_shape *y = &c->node->shape;
  int32_t axis = c->node->iattr[0];
  uint32_t inner = dims_product(y, axis + 1, y->rank), dst_row = (uint32_t)y->dims[axis] * inner, at = 0;
  for (int32_t k = 0; k < c->node->n_inputs; k++) {
    const rlx_shape *x = &c->in_node[k]->shape;
    uint32_t row = (uint32_t)x->dims[axis] * inner;
    size_t n = rlx_shape_numel(x);
    rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "slice");
    if (!d) return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: concat of %d inputs", (int)c->node->n_inputs);
    rlx_wgpu_override(d, "MODE", 0);
    rlx_wgpu_bind(d, RLX_WB_INPUT, k, 0, 0, 0);
    rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
    rlx_wgpu_u32(d, (uint32_t)n);
    rlx_wgpu_u32(d, row);
    rlx_wgpu_u32(d, dst_row);
    rlx_wgpu_u32(d, at);
    rlx_wgpu_grid1d(d, n, THREADS);
    at += row;
  }
  return RLX_OK;
}

/* dy[..., len, ...] -> dx[..., full, ...], zeros outside [start, start + len)
 * on iattr = {axis, start, full} */
rlx_status rlx_wgpu_lower_narrow_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_shape *dy = &c->in_node[0]->shape;
  int32_t axis = c->node->iattr[0];
  uint32_t inner = dims_product(dy, axis + 1, dy->rank);
  size_t n = rlx_shape_numel(&c->node->shape);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "slice");
  rlx_wgpu_override(d, "MODE", 1);
  rlx_wgpu_bind_inputs(d, 1);
  rlx_wgpu_u32(d, (uint32_t)n);
  rlx_wgpu_u32(d, (uint32_t)c->node->iattr[2] * inner);
  rlx_wgpu_u32(d, (uint32_t)c->node->iattr[1] * inner);
  rlx_wgpu_u32(d, (uint32_t)dy->dims[axis] * inner);
  rlx_wgpu_grid1d(d, n, THREADS);
  return RLX_OK;
}

/* table[V, D], ids[...] -> y[..., D] */
rlx_status rlx_wgpu_lower_gather(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_shape *table = &c->in_node[0]->shape;
  size_t n = rlx_shape_numel(&c->node->shape);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "gather");
  rlx_wgpu_override(d, "IDS_I32", c->in_node[1]->dtype == RLX_I32);
  rlx_wgpu_bind_inputs(d, 2);
  rlx_wgpu_u32(d, (uint32_t)n);
  rlx_wgpu_u32(d, (uint32_t)table->dims[1]);
  rlx_wgpu_u32(d, (uint32_t)table->dims[0]);
  rlx_wgpu_grid1d(d, n, THREADS);
  return RLX_OK;
}

/* ids[...], dy[..., D] -> y[V, D] on iattr = {V}: linked lists of the rows
 * of each id in the scratch (first[V], next[rows]), then one thread per
 * output summing its list in row order (see scatter_add.wgsl). */
rlx_status rlx_wgpu_lower_scatter_add(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_shape *dy = &c->in_node[1]->shape;
  uint32_t dcols = (uint32_t)dy->dims[dy->rank - 1], v = (uint32_t)c->node->iattr[0];
  uint32_t rows = (uint32_t)(rlx_shape_numel(dy) / dcols);
  size_t n = rlx_shape_numel(&c->node->shape), lists = ((size_t)v + rows) * sizeof(int32_t);
  out->scratch_bytes = (lists + 255) / 256 * 256;
  const size_t items[3] = {v, rows, n};
  for (uint32_t mode = 0; mode < 3; mode++) {
    rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "scatter_add");
    rlx_wgpu_override(d, "MODE", mode);
    rlx_wgpu_override(d, "IDS_I32", c->in_node[0]->dtype == RLX_I32);
    rlx_wgpu_bind_inputs(d, 2);
    rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, 0, out->scratch_bytes, 1);
    rlx_wgpu_u32(d, (uint32_t)n);
    rlx_wgpu_u32(d, dcols);
    rlx_wgpu_u32(d, rows);
    rlx_wgpu_u32(d, v);
    rlx_wgpu_grid1d(d, items[mode], THREADS);
  }
  return RLX_OK;
}
