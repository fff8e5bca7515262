/* lower_elementwise.c - WebGPU lowerings of the elementwise family: the
 * broadcasting binary ops and comparisons (binary.wgsl), where (where.wgsl),
 * the unary ops (unary.wgsl) and the pointwise activation gradients
 * (grad_pointwise.wgsl), the last three generated from the op rows of
 * include/rlx_ops.def with those shape rules.  Each thread writes one vec4
 * of the output.
 *
 * Broadcasting: an operand is "periodic" when its shape (leading size-1
 * dims dropped) equals the trailing dims of the output, so its element for
 * output i is i mod numel: scalars, full operands and bias rows.  When
 * every operand is periodic with a period of 1, n or a multiple of 4 the
 * kernel reads whole vec4s (VEC=1).  Otherwise the iteration is simplified
 * first (size-1 axes dropped, contiguous axes merged, as on the CPU); when
 * its innermost axis is a multiple of 4 long and every operand walks it
 * with stride 1 or 0, each thread computes one offset per operand and reads
 * vec4s or splats (VEC=2); else it computes every element's offsets. */
#include "../core/subops.h"
#include "../cpu/kernels.h"
#include "wgpu.h"

#define ELEMS_PER_THREAD 4
#define THREADS 256

/* numel(in) when in is periodic in out (see above), else 0. */
static uint32_t period_of(const rlx_shape *in, const rlx_shape *out) {
  int32_t lead = 0;
  while (lead < in->rank && in->dims[lead] == 1) lead++;
  int32_t rest = in->rank - lead;
  if (rest > out->rank) return 0;
  for (int32_t i = 0; i < rest; i++)
    if (in->dims[lead + i] != out->dims[out->rank - rest + i]) return 0;
  return (uint32_t)rlx_shape_numel(in);
}

static int vec_period(uint32_t p, size_t n) { return p == 1 || p == n || (p != 0 && p % 4 == 0); }

/* The CPU's iteration simplifier (src/cpu/broadcast.c): drops size-1 axes
 * and merges axes every operand walks contiguously; returns the new rank. */
int32_t rlx_iter_coalesce(int32_t rank, size_t *dims, int32_t n_ops, size_t (*strides)[RLX_MAX_RANK]);

/* The broadcasting elementwise dispatch over n_in operands. */
static rlx_status broadcast_dispatch(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, const char *shader, int op) {
  const rlx_shape *y = &c->node->shape;
  size_t n = rlx_shape_numel(y), dims[RLX_MAX_RANK], strides[3][RLX_MAX_RANK];
  int32_t n_in = c->node->n_inputs;
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, shader);
  uint32_t periods[3];
  int periodic = 1;
  for (int32_t k = 0; k < n_in; k++) {
    periods[k] = period_of(&c->in_node[k]->shape, y);
    periodic = periodic && vec_period(periods[k], n);
    rlx_broadcast_strides(&c->in_node[k]->shape, y, strides[k]);
  }
  for (int32_t i = 0; i < y->rank; i++) dims[i] = (size_t)y->dims[i];
  int32_t rank = rlx_iter_coalesce(y->rank, dims, n_in, strides);
  int inner = dims[rank - 1] % 4 == 0;
  for (int32_t k = 0; k < n_in; k++) inner = inner && strides[k][rank - 1] <= 1;
  if (op >= 0) rlx_wgpu_override(d, "OP", (uint32_t)op);
  rlx_wgpu_override(d, "VEC", periodic ? 1u : inner ? 2u : 0u);
  rlx_wgpu_bind_inputs(d, n_in);
  rlx_wgpu_u32(d, (uint32_t)n);
  for (int32_t k = 0; k < n_in; k++) rlx_wgpu_u32(d, periods[k]);
  rlx_wgpu_u32(d, (uint32_t)rank);
  for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < rank ? (uint32_t)dims[i] : 1u);
  for (int32_t k = 0; k < n_in; k++)
    for (int32_t i = 0; i < RLX_MAX_RANK; i++) rlx_wgpu_u32(d, i < rank ? (uint32_t)strides[k][i] : 0u);
  rlx_wgpu_grid1d(d, (n + ELEMS_PER_THREAD - 1) / ELEMS_PER_THREAD, THREADS);
  return RLX_OK;
}

/* One vec4 per thread over a same-shaped output. */
static rlx_status pointwise_dispatch(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, const char *shader, int op) {
  size_t n = rlx_shape_numel(&c->node->shape);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, shader);
  rlx_wgpu_override(d, "OP", (uint32_t)op);
  rlx_wgpu_bind_inputs(d, c->node->n_inputs);
  rlx_wgpu_u32(d, (uint32_t)n);
  rlx_wgpu_grid1d(d, (n + ELEMS_PER_THREAD - 1) / ELEMS_PER_THREAD, THREADS);
  return RLX_OK;
}

/* The lowerings of the ops of include/rlx_ops.def with shape rule binary
 * (a[...], b[...] broadcast -> y, binary.wgsl), unary (x[...] -> y[...],
 * unary.wgsl) or grad_pointwise (x[...], dy[...] -> dx[...],
 * grad_pointwise.wgsl), OP = RLX_SUBOP_<ID> (src/core/subops.h). */
#define LOWER_BINARY(ID, name) \
  rlx_status rlx_wgpu_lower_##name(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { \
    return broadcast_dispatch(c, out, "binary", RLX_SUBOP_##ID); \
  }
#define LOWER_UNARY(ID, name) \
  rlx_status rlx_wgpu_lower_##name(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { \
    return pointwise_dispatch(c, out, "unary", RLX_SUBOP_##ID); \
  }
#define LOWER_POINTWISE_GRAD(ID, name) \
  rlx_status rlx_wgpu_lower_##name(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { \
    return pointwise_dispatch(c, out, "grad_pointwise", RLX_SUBOP_##ID); \
  }
#define LOWER_NONE(ID, name)
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) RLX_SUBOP_ROW(rule, LOWER, ID, name)
#include "rlx_ops.def"
#undef RLX_OP

/* cond[...], a[...], b[...] broadcast -> y */
rlx_status rlx_wgpu_lower_where(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return broadcast_dispatch(c, out, "where", -1);
}
