/* lower_reduce.h - the reduction helper (reduce.wgsl, split into chunks
 * when long) and the row-kernel sizes that the WebGPU lowerings of
 * reductions, norms and attention share (lower_reduce.c, lower_norm.c,
 * lower_attention.c). */
#ifndef RLX_WGPU_LOWER_REDUCE_H
#define RLX_WGPU_LOWER_REDUCE_H

#include "wgpu.h"

/* A reduction as reduce.wgsl sees it: n_out outputs (row-major over the
 * kept groups), each reducing `count` elements (row-major over the reduced
 * groups); groups listed innermost first with their input strides. */
typedef struct {
  uint32_t n_out, count;
  int32_t nk, nr;
  uint32_t ksize[4], kstride[4];
  uint32_t rsize[4], rstride[4];
} rlx_wgpu_reduce_view;

/* Adds the dispatches of a sum (max_op 0, divided by divisor) or max
 * (max_op 1) reduction reading `in` and writing `out`: one, or two when
 * long reductions with few outputs are split into chunks whose partials go
 * to scratch (placed after l->scratch_bytes, which grows). */
rlx_status rlx_wgpu_add_reduce(rlx_wgpu_lowering *l, const rlx_wgpu_reduce_view *v, int max_op, float divisor,
                               rlx_wgpu_binding in, rlx_wgpu_binding out);

/* Smallest power of two >= n (1 for n <= 1), capped at cap (a power of two). */
uint32_t rlx_wgpu_pow2_at_least(size_t n, uint32_t cap);

/* Threads per row (power of two <= 256) for row kernels over n values. */
uint32_t rlx_wgpu_row_threads(size_t n);

/* Scratch bytes rounded up to the 256-byte binding alignment. */
static inline size_t rlx_wgpu_align256(size_t bytes) { return (bytes + 255) / 256 * 256; }

#endif
