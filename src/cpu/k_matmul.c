/* k_matmul.c - batched matrix product on top of rlx_gemm.  Batch dims
 * broadcast numpy-style; each output matrix is one GEMM, except that a
 * shared b with a non-transposed, unbroadcast a folds the whole batch into
 * one tall GEMM ([B, S, K] x [K, N] is one (B*S) x K x N product). */
#include <stdint.h>
#include "kernels.h"

/* Element stride of operand x (shape s, matrix of mat elements) along each
 * of the out_rank-2 output batch axes; 0 where x is broadcast.  Returns the
 * number of matrices x holds. */
static size_t batch_strides(const rlx_shape *s, int32_t out_batch_rank, size_t mat,
                            size_t *strides) {
  const int32_t batch_rank = s->rank - 2, lead = out_batch_rank - batch_rank;
  size_t stride = mat;
  for (int32_t i = out_batch_rank - 1; i >= 0; i--) {
    const int32_t d = i - lead >= 0 ? s->dims[i - lead] : 1;
    strides[i] = d == 1 ? 0 : stride;
    stride *= (size_t)d;
  }
  return stride / mat;
}

/* a[..., M, K] (trans_a: [..., K, M]), b[..., K, N] (trans_b: [..., N, K])
 *   -> y[..., M, N]; the batch dims of a and b broadcast. */
rlx_status rlx_cpu_matmul(const rlx_kargs *a) {
  const rlx_shape *sa = &a->in_node[0]->shape, *sb = &a->in_node[1]->shape;
  const rlx_shape *so = &a->node->shape;
  const int32_t trans_a = ATTR_I(a->node, MATMUL, TRANS_A) != 0, trans_b = ATTR_I(a->node, MATMUL, TRANS_B) != 0;
  const int32_t batch_rank = so->rank - 2;
  const int32_t M = so->dims[so->rank - 2], N = so->dims[so->rank - 1];
  const int32_t K = trans_a ? sa->dims[sa->rank - 2] : sa->dims[sa->rank - 1];
  const size_t a_mat = (size_t)M * K, b_mat = (size_t)K * N, c_mat = (size_t)M * N;

  size_t a_stride[RLX_MAX_RANK], b_stride[RLX_MAX_RANK];
  const size_t a_count = batch_strides(sa, batch_rank, a_mat, a_stride);
  const size_t b_count = batch_strides(sb, batch_rank, b_mat, b_stride);
  size_t batch = 1;
  for (int32_t i = 0; i < batch_rank; i++) batch *= (size_t)so->dims[i];

  rlx_gemm_args g;
  g.M = M;
  g.N = N;
  g.K = K;
  g.A = a->in[0];
  g.lda = trans_a ? M : K;
  g.trans_a = trans_a;
  g.B = a->in[1];
  g.ldb = trans_b ? K : N;
  g.trans_b = trans_b;
  g.C = a->out;
  g.ldc = N;
  g.accumulate = 0;

  /* One shared b and every matrix of a in order: stack the rows of a. */
  if (b_count == 1 && a_count == batch && !trans_a && (size_t)M * batch <= INT32_MAX) {
    g.M = (int32_t)((size_t)M * batch);
    return rlx_gemm(&g, a->scratch);
  }

  int32_t idx[RLX_MAX_RANK] = {0};
  size_t a_off = 0, b_off = 0;
  for (size_t t = 0; t < batch; t++) {
    g.A = a->in[0] + a_off;
    g.B = a->in[1] + b_off;
    g.C = a->out + t * c_mat;
    rlx_status st = rlx_gemm(&g, a->scratch);
    if (st != RLX_OK) return st;
    /* Odometer over the batch dims, moving the operand offsets along. */
    for (int32_t i = batch_rank - 1; i >= 0; i--) {
      a_off += a_stride[i];
      b_off += b_stride[i];
      if (++idx[i] < so->dims[i]) break;
      a_off -= a_stride[i] * (size_t)so->dims[i];
      b_off -= b_stride[i] * (size_t)so->dims[i];
      idx[i] = 0;
    }
  }
  return RLX_OK;
}
