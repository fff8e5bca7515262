/* broadcast.c - index math shared by the broadcasting and layout kernels:
 * per-operand strides of a tensor broadcast to an output shape, and the
 * simplification of such an iteration (drop size-1 axes, merge axes that
 * every operand walks contiguously) so that kernels run long inner loops
 * with an odometer over the few remaining outer axes. */
#include "kernels.h"

/* The two iteration helpers below are used by k_elementwise.c and
 * k_layout.c, which declare them (kernels.h only declares
 * rlx_broadcast_strides). */
int32_t rlx_iter_coalesce(int32_t rank, size_t *dims, int32_t n_ops, size_t (*strides)[RLX_MAX_RANK]);
void rlx_iter_next(int32_t rank, const size_t *dims, size_t *idx, int32_t n_ops,
                   size_t (*strides)[RLX_MAX_RANK], size_t *offs);

/* in[...] broadcast to out[...] (numpy rules, right-aligned) -> strides over
 * out's rank: 0 on axes that in lacks or has as size 1. */
void rlx_broadcast_strides(const rlx_shape *in, const rlx_shape *out, size_t *strides) {
  int32_t lead = out->rank - in->rank;
  size_t step = 1;
  for (int32_t i = out->rank - 1; i >= 0; i--) {
    int32_t j = i - lead;
    if (j < 0 || in->dims[j] == 1) {
      strides[i] = 0;
    } else {
      strides[i] = step;
    }
    if (j >= 0) step *= (size_t)in->dims[j];
  }
}

/* dims[rank] of a contiguous output, strides[k][rank] of n_ops operands ->
 * the same iteration over fewer axes (written back in place).  Size-1 axes
 * are dropped; axes i, i+1 merge when every operand has
 * strides[k][i] == strides[k][i+1] * dims[i+1] (this includes two broadcast
 * axes, stride 0).  Returns the new rank, at least 1 (a single element is
 * one axis of size 1 with stride 0).  After this, an operand's innermost
 * stride is 1 when it came from a dense row-major tensor or a broadcast of
 * one, and 0 when it is broadcast along the innermost axis. */
int32_t rlx_iter_coalesce(int32_t rank, size_t *dims, int32_t n_ops, size_t (*strides)[RLX_MAX_RANK]) {
  int32_t r = 0;
  for (int32_t i = 0; i < rank; i++) {
    if (dims[i] == 1) continue;
    int merge = r > 0;
    for (int32_t k = 0; k < n_ops && merge; k++)
      merge = strides[k][r - 1] == strides[k][i] * dims[i];
    if (merge) {
      dims[r - 1] *= dims[i];
      for (int32_t k = 0; k < n_ops; k++) strides[k][r - 1] = strides[k][i];
    } else {
      dims[r] = dims[i];
      for (int32_t k = 0; k < n_ops; k++) strides[k][r] = strides[k][i];
      r++;
    }
  }
  if (r == 0) {
    dims[0] = 1;
    for (int32_t k = 0; k < n_ops; k++) strides[k][0] = 0;
    r = 1;
  }
  return r;
}

/* Odometer step over the outer axes [0, rank-1) (the innermost axis is the
 * kernel's inner loop): advances idx and each operand's offset offs[k]. */
void rlx_iter_next(int32_t rank, const size_t *dims, size_t *idx, int32_t n_ops,
                   size_t (*strides)[RLX_MAX_RANK], size_t *offs) {
  for (int32_t ax = rank - 2; ax >= 0; ax--) {
    idx[ax]++;
    if (idx[ax] < dims[ax]) {
      for (int32_t k = 0; k < n_ops; k++) offs[k] += strides[k][ax];
      return;
    }
    idx[ax] = 0;
    for (int32_t k = 0; k < n_ops; k++) offs[k] -= strides[k][ax] * (dims[ax] - 1);
  }
}
