/* lower_layout.c - WebGPU lowerings of the layout family: permute, expand
 * and narrow as strided copies (strided_copy.wgsl; transposing permutes as
 * 32 x 32 tiles through workgroup memory, transpose.wgsl), concat as one dispatch
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

int32_t rlx_iter_coalesce(int32_t rank, size_t *dims, int32_t n_ops, size_t (*strides)[RLX_MAX_RANK]);

/* A permute whose innermost output axis is not contiguous in the input, as
 * tiled transposes (transpose.wgsl); 0 when the shape does not fit its grid. */
static int tiled_transpose(rlx_wgpu_lowering *out, int32_t rank, const size_t *dims, const size_t *strides) {
  int32_t jax = -1;
  for (int32_t i = 0; i < rank - 1; i++)
    if (strides[i] == 1) jax = i;
  if (jax < 0) return 0;
  size_t batch = 1, ostr[RLX_MAX_RANK], st = 1;
  for (int32_t i = rank - 1; i >= 0; i--) {
    ostr[i] = st;
    st *= dims[i];
    if (i != jax && i != rank - 1) batch *= dims[i];
  }
  size_t tiles_l = (dims[rank - 1] + 31) / 32, tiles_j = (dims[jax] + 31) / 32;
  if (batch > 65535 || tiles_l > 65535 || tiles_j > 65535) return 0;
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "transpose");
  rlx_wgpu_bind_inputs(d, 1);
  rlx_wgpu_u32(d, (uint32_t)rank);
  rlx_wgpu_u32(d, (uint32_t)jax);
  rlx_wgpu_u32(d, 0);
  rlx_wgpu_u32(d, 0);
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < rank ? (uint32_t)dims[i] : 1u);
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < rank ? (uint32_t)strides[i] : 0u);
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < rank ? (uint32_t)ostr[i] : 0u);
  d->groups[0] = (uint32_t)tiles_l;
  d->groups[1] = (uint32_t)tiles_j;
  d->groups[2] = (uint32_t)batch;
  return 1;
}

/* y[i] = x[base + sum c_d strides[d]] over y's shape, the iteration
 * simplified first (size-1 axes dropped, contiguous axes merged).  With
 * allow_tiles, a transposing layout goes through tiled_transpose. */
static rlx_status strided_copy(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, uint32_t base,
                               const uint32_t *in_strides, int allow_tiles) {
  const rlx_shape *y = &c->node->shape;
  size_t n = rlx_shape_numel(y), dims[RLX_MAX_RANK], strides[1][RLX_MAX_RANK];
  for (int32_t i = 0; i < y->rank; i++) dims[i] = (size_t)y->dims[i], strides[0][i] = in_strides[i];
  int32_t rank = rlx_iter_coalesce(y->rank, dims, 1, strides);
  size_t last = strides[0][rank - 1];
  if (allow_tiles && last > 1 && base == 0 && tiled_transpose(out, rank, dims, strides[0])) return RLX_OK;
  uint32_t vec = 0;
  if (dims[rank - 1] % 4 == 0 && last == 1 && base % 4 == 0) vec = 1;
  if (dims[rank - 1] % 4 == 0 && last == 0) vec = 2;
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "strided_copy");
  rlx_wgpu_override(d, "VEC", vec);
  rlx_wgpu_bind_inputs(d, 1);
  rlx_wgpu_u32(d, (uint32_t)n);
  rlx_wgpu_u32(d, base);
  rlx_wgpu_u32(d, (uint32_t)rank);
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < rank ? (uint32_t)dims[i] : 1u);
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < rank ? (uint32_t)strides[0][i] : 0u);
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
  return strided_copy(c, out, 0, strides, 1);
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
  return strided_copy(c, out, 0, strides, 0);
}

/* x[..., full, ...] -> y[..., length, ...] from start on iattr = {axis, start, length} */
rlx_status rlx_wgpu_lower_narrow(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  uint32_t strides[RLX_MAX_RANK];
  contiguous_strides(&c->in_node[0]->shape, strides);
  int32_t axis = ATTR_I(c->node, NARROW, AXIS);
  return strided_copy(c, out, (uint32_t)ATTR_I(c->node, NARROW, START) * strides[axis], strides, 0);
}

/* x_k[..., len_k, ...] -> y[..., sum len_k, ...] on iattr = {axis}: one
 * dispatch per input writing its slice. */
rlx_status rlx_wgpu_lower_concat(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_shape *y = &c->node->shape;
  int32_t axis = ATTR_I(c->node, AXIS, AXIS);
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
  int32_t axis = ATTR_I(c->node, NARROW_GRAD, AXIS);
  uint32_t inner = dims_product(dy, axis + 1, dy->rank);
  size_t n = rlx_shape_numel(&c->node->shape);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "slice");
  rlx_wgpu_override(d, "MODE", 1);
  rlx_wgpu_bind_inputs(d, 1);
  rlx_wgpu_u32(d, (uint32_t)n);
  rlx_wgpu_u32(d, (uint32_t)ATTR_I(c->node, NARROW_GRAD, FULL) * inner);
  rlx_wgpu_u32(d, (uint32_t)ATTR_I(c->node, NARROW_GRAD, START) * inner);
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
  uint32_t dcols = (uint32_t)dy->dims[dy->rank - 1], v = (uint32_t)ATTR_I(c->node, SCATTER_ADD, ROWS);
  uint32_t rows = (uint32_t)(rlx_shape_numel(dy) / dcols);
  size_t n = rlx_shape_numel(&c->node->shape), lists = ((size_t)v + rows) * sizeof(int32_t);
  out->scratch_bytes = (lists + 255) / 256 * 256;
  const size_t items[3] = {v, rows, n};
  const uint32_t per_group[3] = {THREADS, 1, THREADS}; /* MODE 1: one workgroup per row */
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
    rlx_wgpu_grid1d(d, items[mode], per_group[mode]);
  }
  return RLX_OK;
}
