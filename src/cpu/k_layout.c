/* k_layout.c - ops that move data without arithmetic: reshape (a copy),
 * permute, narrow, concat, expand (broadcast) and gather (embedding
 * lookup).  Copies run over the longest contiguous runs the layout allows. */
#include <string.h>

#include "kernels.h"


/* Edge of the square tiles a transposing permute copies through. */
#define PERMUTE_TILE 16

static size_t dims_product(const rlx_shape *s, int32_t from, int32_t to) {
  size_t n = 1;
  for (int32_t i = from; i < to; i++) n *= (size_t)s->dims[i];
  return n;
}

/* x[...] -> y[target dims], same element count: a plain copy */
rlx_status rlx_cpu_reshape(const rlx_kargs *a) {
  memcpy(a->out, a->in[0], rlx_shape_numel(&a->node->shape) * sizeof(float));
  return RLX_OK;
}

/* Copies the 2-D block dst[i * dst_stride + j] = src[i + j * src_stride]
 * (i < rows, j < cols) tile by tile, so both sides stay in cache. */
static void transpose_block(const float *restrict src, size_t src_stride, float *restrict dst,
                            size_t dst_stride, size_t rows, size_t cols) {
  for (size_t i0 = 0; i0 < rows; i0 += PERMUTE_TILE) {
    size_t i1 = i0 + PERMUTE_TILE < rows ? i0 + PERMUTE_TILE : rows;
    for (size_t j0 = 0; j0 < cols; j0 += PERMUTE_TILE) {
      size_t j1 = j0 + PERMUTE_TILE < cols ? j0 + PERMUTE_TILE : cols;
      for (size_t i = i0; i < i1; i++)
        for (size_t j = j0; j < j1; j++) dst[i * dst_stride + j] = src[i + j * src_stride];
    }
  }
}

/* x[d0, ..., d(r-1)] -> y[d(perm[0]), ..., d(perm[r-1])],
 * y[i0, ..., i(r-1)] = x at index j with j[perm[k]] = ik */
rlx_status rlx_cpu_permute(const rlx_kargs *a) {
  const rlx_shape *in = &a->in_node[0]->shape, *out = &a->node->shape;
  const int32_t *perm = a->node->iattr;
  size_t in_stride[RLX_MAX_RANK], dims[RLX_MAX_RANK], st[1][RLX_MAX_RANK];
  for (int32_t i = 0; i < in->rank; i++) in_stride[i] = dims_product(in, i + 1, in->rank);
  for (int32_t i = 0; i < out->rank; i++) {
    dims[i] = (size_t)out->dims[i];
    st[0][i] = in_stride[perm[i]];
  }
  int32_t rank = rlx_iter_coalesce(out->rank, dims, 1, st);
  size_t n = dims[rank - 1];
  const float *x = a->in[0];
  float *y = a->out;

  if (st[0][rank - 1] == 1 || n == 1) {
    /* The innermost output axis is contiguous in x: copy rows of n. */
    size_t rows = 1, idx[RLX_MAX_RANK] = {0}, off = 0;
    for (int32_t i = 0; i < rank - 1; i++) rows *= dims[i];
    for (size_t r = 0; r < rows; r++, y += n) {
      memcpy(y, x + off, n * sizeof(float));
      rlx_iter_next(rank, dims, idx, 1, st, &off);
    }
    return RLX_OK;
  }

  /* Otherwise some outer axis k is x's contiguous one (x's innermost axis
   * of size > 1 has stride 1, survives the simplification and keeps its
   * stride when merged): transpose (k, last) blocks tile by tile, walking
   * the other axes with an odometer that tracks the offset into x
   * (operand 0) and into y (operand 1). */
  int32_t k = 0;
  while (st[0][k] != 1) k++;
  size_t y_stride[RLX_MAX_RANK], step = 1;
  for (int32_t i = rank - 1; i >= 0; i--) {
    y_stride[i] = step;
    step *= dims[i];
  }
  size_t odims[RLX_MAX_RANK], ost[2][RLX_MAX_RANK], blocks = 1;
  int32_t orank = 0;
  for (int32_t i = 0; i < rank - 1; i++) {
    if (i == k) continue;
    odims[orank] = dims[i];
    ost[0][orank] = st[0][i];
    ost[1][orank] = y_stride[i];
    blocks *= dims[i];
    orank++;
  }
  odims[orank] = 1; /* the block itself, as rlx_iter_next's inner axis */
  ost[0][orank] = ost[1][orank] = 0;
  orank++;
  size_t idx[RLX_MAX_RANK] = {0}, offs[2] = {0, 0};
  for (size_t b = 0; b < blocks; b++) {
    transpose_block(x + offs[0], st[0][rank - 1], y + offs[1], y_stride[k], dims[k], n);
    rlx_iter_next(orank, odims, idx, 2, ost, offs);
  }
  return RLX_OK;
}

/* x[..., D, ...] -> y[..., length, ...] = x[..., start:start+length, ...]
 * along iattr = {axis, start, length} */
rlx_status rlx_cpu_narrow(const rlx_kargs *a) {
  const rlx_shape *in = &a->in_node[0]->shape;
  int32_t axis = ATTR_I(a->node, NARROW, AXIS);
  size_t start = (size_t)ATTR_I(a->node, NARROW, START), length = (size_t)ATTR_I(a->node, NARROW, LENGTH);
  size_t outer = dims_product(in, 0, axis), inner = dims_product(in, axis + 1, in->rank);
  size_t d = (size_t)in->dims[axis], run = length * inner;
  for (size_t o = 0; o < outer; o++)
    memcpy(a->out + o * run, a->in[0] + (o * d + start) * inner, run * sizeof(float));
  return RLX_OK;
}

/* x0[..., d0, ...], x1[..., d1, ...], ... (up to 8) -> y[..., d0+d1+..., ...]
 * along iattr = {axis}; all other dims equal */
rlx_status rlx_cpu_concat(const rlx_kargs *a) {
  const rlx_shape *out = &a->node->shape;
  int32_t axis = ATTR_I(a->node, AXIS, AXIS), n_in = a->node->n_inputs;
  size_t outer = dims_product(out, 0, axis), inner = dims_product(out, axis + 1, out->rank);
  float *y = a->out;
  for (size_t o = 0; o < outer; o++) {
    for (int32_t k = 0; k < n_in; k++) {
      size_t run = (size_t)a->in_node[k]->shape.dims[axis] * inner;
      memcpy(y, a->in[k] + o * run, run * sizeof(float));
      y += run;
    }
  }
  return RLX_OK;
}

/* x[...] -> y[node shape]: numpy broadcast (size-1 axes repeat, missing
 * leading axes are added) */
rlx_status rlx_cpu_expand(const rlx_kargs *a) {
  const rlx_shape *out = &a->node->shape;
  size_t dims[RLX_MAX_RANK], st[1][RLX_MAX_RANK];
  for (int32_t i = 0; i < out->rank; i++) dims[i] = (size_t)out->dims[i];
  rlx_broadcast_strides(&a->in_node[0]->shape, out, st[0]);
  int32_t rank = rlx_iter_coalesce(out->rank, dims, 1, st);
  size_t n = dims[rank - 1], rows = 1, idx[RLX_MAX_RANK] = {0}, off = 0;
  for (int32_t i = 0; i < rank - 1; i++) rows *= dims[i];
  int dense = st[0][rank - 1] != 0;
  float *y = a->out;
  for (size_t r = 0; r < rows; r++, y += n) {
    const float *x = a->in[0] + off;
    if (dense) {
      memcpy(y, x, n * sizeof(float));
    } else {
      float v = *x;
      for (size_t i = 0; i < n; i++) y[i] = v;
    }
    rlx_iter_next(rank, dims, idx, 1, st, &off);
  }
  return RLX_OK;
}

/* table[V, D], ids[...] (f32 or i32) -> y[..., D]: y[i, :] = table[ids[i], :];
 * an id outside [0, V) gives a zero row and sets RLX_KFLAG_BAD_INDEX */
rlx_status rlx_cpu_gather(const rlx_kargs *a) {
  const rlx_shape *table = &a->in_node[0]->shape;
  int64_t v = table->dims[0];
  size_t d = (size_t)table->dims[1];
  size_t n_ids = rlx_shape_numel(&a->in_node[1]->shape);
  float *y = a->out;
  for (size_t i = 0; i < n_ids; i++, y += d) {
    int64_t id = rlx_kindex(a, 1, i);
    if (id >= 0 && id < v) {
      memcpy(y, a->in[0] + (size_t)id * d, d * sizeof(float));
    } else {
      memset(y, 0, d * sizeof(float));
      *a->flags |= RLX_KFLAG_BAD_INDEX;
    }
  }
  return RLX_OK;
}
