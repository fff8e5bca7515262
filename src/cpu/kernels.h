/* kernels.h - the one signature every CPU kernel has, and the helpers they
 * share (scratch memory, broadcasting index math, reading index tensors).
 * Kernels never allocate with malloc: they ask rlx_kscratch for workspace,
 * which the executor keeps across runs. */
#ifndef RLX_CPU_KERNELS_H
#define RLX_CPU_KERNELS_H

#include "../ir/graph.h"

typedef struct rlx_scratch {
  void *ptr;
  size_t bytes;
} rlx_scratch;

/* Workspace of at least `bytes`, 64-byte aligned, valid until the next call
 * on the same scratch.  NULL when out of memory. */
void *rlx_scratch_get(rlx_scratch *s, size_t bytes);
void rlx_scratch_release(rlx_scratch *s);

typedef struct {
  const rlx_node_t *node;                    /* op, attrs, output shape */
  const rlx_node_t *in_node[RLX_MAX_INPUTS]; /* input shapes and dtypes */
  const float *in[RLX_MAX_INPUTS];           /* input data (i32 inputs: reinterpret) */
  float *out;                                /* output, numel(node->shape) floats */
  rlx_scratch *scratch;
  int32_t *flags;                            /* kernels OR in RLX_KFLAG_* */
} rlx_kargs;

#define RLX_KFLAG_BAD_INDEX 1 /* a gather/CE index was out of range */

/* Returns RLX_OK or an error status (only for scratch allocation failure). */
typedef rlx_status (*rlx_cpu_kernel)(const rlx_kargs *a);

#define RLX_OP(ID, name, min_in, max_in, rule, attrs) rlx_status rlx_cpu_##name(const rlx_kargs *a);
#include "rlx_ops.def"
#undef RLX_OP

extern const rlx_cpu_kernel rlx_cpu_kernels[RLX_OP_COUNT];

/* The unary op of sub-op code `subop` (RLX_SUBOP_<ID>, src/core/subops.h)
 * on one value, the expression of its kernel (k_unary.c); NaN for a code
 * past the table. */
float rlx_cpu_unary_scalar(int32_t subop, float x);
/* The same for the binary ops (k_elementwise.c). */
float rlx_cpu_binary_scalar(int32_t subop, float x, float y);

/* Index value i of an index tensor (f32 ids are rounded toward zero). */
static inline int64_t rlx_kindex(const rlx_kargs *a, int k, size_t i) {
  if (a->in_node[k]->dtype == RLX_I32) return ((const int32_t *)a->in[k])[i];
  float v = a->in[k][i];
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return -1; /* NaN, inf: invalid */
  return (int64_t)v;
}

/* Strides of `in` broadcast to `out` (0 on broadcast axes), right-aligned,
 * expressed over out's rank. */
void rlx_broadcast_strides(const rlx_shape *in, const rlx_shape *out, size_t *strides);

/* Iteration over broadcast operands (broadcast.c): drop size-1 axes and
 * merge axes every operand walks contiguously (returns the new rank), and
 * advance an index counter over the outer axes, updating each operand's
 * offset.  strides[k] are operand k's strides in elements. */
int32_t rlx_iter_coalesce(int32_t rank, size_t *dims, int32_t n_ops, size_t (*strides)[RLX_MAX_RANK]);
void rlx_iter_next(int32_t rank, const size_t *dims, size_t *idx, int32_t n_ops,
                   size_t (*strides)[RLX_MAX_RANK], size_t *offs);

/* C[M,N] = (accumulate ? C : 0) + op(A)[M,K] . op(B)[K,N], row-major with
 * leading dimensions lda/ldb/ldc; op(X) = X^T when trans_x. */
typedef struct {
  int32_t M, N, K;
  const float *A;
  int32_t lda, trans_a;
  const float *B;
  int32_t ldb, trans_b;
  float *C;
  int32_t ldc, accumulate;
} rlx_gemm_args;
rlx_status rlx_gemm(const rlx_gemm_args *g, rlx_scratch *scratch);
/* Scratch bytes rlx_gemm(g, ...) asks for.  A kernel that needs its own
 * workspace too takes own + this in one rlx_scratch_get, and hands the GEMM
 * the tail as a separate rlx_scratch {ptr, bytes} so it never reallocates. */
size_t rlx_gemm_scratch_bytes(const rlx_gemm_args *g);
/* rms_norm's rows (k_norm.c): y[r] = x[r] / sqrt(mean(x[r]^2) + eps) * w,
 * rows rows of d values (the norm that matmul_q / swiglu_q's norm applies). */
void rlx_rms_norm_rows(const float *x, const float *w, double eps, size_t rows, size_t d, float *y);
/* rope's rows (k_rope.c): y = x rotated by a table row cs = {cos[half],
 * sin[half]} (rlx_rope_table), NeoX halves or (pairs) adjacent pairs. */
void rlx_rope_row(const float *x, const float *cs, float *y, size_t half, int pairs);
/* Name of the GEMM path in use ("avx2", "sse", "simd128", "portable", "openblas"). */
const char *rlx_gemm_path(void);

#endif
