/* k_grad_layout.c - backward kernels of the layout ops: narrow_grad (pad
 * dy with zeros back to the full axis) and scatter_add (the gradient of
 * gather: sum rows of dy into the rows their ids name). */
#include <string.h>

#include "kernels.h"

/* dy[..., len, ...] -> dx[..., full, ...]: zeros with dy at [start, start + len)
 * on iattr = {axis, start, full}.  Viewed as [outer, axis, inner], each
 * outer block is zeros, a copy of len * inner values, zeros. */
rlx_status rlx_cpu_narrow_grad(const rlx_kargs *a) {
  const rlx_shape *ds = &a->in_node[0]->shape;
  int32_t axis = ATTR_I(a->node, NARROW_GRAD, AXIS);
  size_t start = (size_t)ATTR_I(a->node, NARROW_GRAD, START), full = (size_t)ATTR_I(a->node, NARROW_GRAD, FULL);
  size_t len = (size_t)ds->dims[axis], outer = 1, inner = 1;
  for (int32_t d = 0; d < axis; d++) outer *= (size_t)ds->dims[d];
  for (int32_t d = axis + 1; d < ds->rank; d++) inner *= (size_t)ds->dims[d];
  size_t before = start * inner, middle = len * inner, after = (full - start - len) * inner;
  const float *dy = a->in[0];
  float *dx = a->out;
  for (size_t o = 0; o < outer; o++) {
    memset(dx, 0, before * sizeof(float));
    memcpy(dx + before, dy, middle * sizeof(float));
    memset(dx + before + middle, 0, after * sizeof(float));
    dx += before + middle + after;
    dy += middle;
  }
  return RLX_OK;
}

/* dst[j] += src[j] */
static void add_row(float *restrict dst, const float *restrict src, size_t n) {
  for (size_t j = 0; j < n; j++) dst[j] += src[j];
}

/* ids[...] (f32 or i32), dy[..., D] -> out[V, D], iattr = {V}:
 * out[v] = sum of the rows dy[i] with ids[i] == v (0 when none).  An id
 * outside [0, V) contributes nothing and sets RLX_KFLAG_BAD_INDEX. */
rlx_status rlx_cpu_scatter_add(const rlx_kargs *a) {
  const rlx_shape *dys = &a->in_node[1]->shape;
  int64_t rows_out = ATTR_I(a->node, SCATTER_ADD, ROWS);
  size_t d = (size_t)dys->dims[dys->rank - 1];
  size_t rows = rlx_shape_numel(dys) / d; /* = numel(ids) */
  const float *dy = a->in[1];
  memset(a->out, 0, (size_t)rows_out * d * sizeof(float));
  for (size_t i = 0; i < rows; i++) {
    int64_t id = rlx_kindex(a, 0, i);
    if (id < 0 || id >= rows_out) {
      *a->flags |= RLX_KFLAG_BAD_INDEX;
      continue;
    }
    add_row(a->out + (size_t)id * d, dy + i * d, d);
  }
  return RLX_OK;
}
