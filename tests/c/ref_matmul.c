/* ref_matmul.c - naive double-precision reference for matmul, straight from
 * include/rlx.h: a[..., M, K] x b[..., K, N] -> [..., M, N] with numpy batch
 * broadcasting; trans_a reads a as [..., K, M], trans_b reads b as
 * [..., N, K].  Case parameters are laid out as in tests/c/cases_matmul.c. */
#include "op_case.h"

/* Flat offset of the matrix of x (rank, dims) that the output batch index
 * out_idx[0 .. out_batch_rank) selects (broadcast axes stay at 0). */
static size_t matrix_offset(const int32_t *out_idx, int32_t out_batch_rank, int32_t rank,
                            const int32_t *dims) {
  const int32_t batch_rank = rank - 2;
  size_t flat = 0;
  for (int32_t i = 0; i < batch_rank; i++) {
    const int32_t o = out_idx[out_batch_rank - batch_rank + i];
    flat = flat * (size_t)dims[i] + (size_t)(dims[i] == 1 ? 0 : o);
  }
  return flat * (size_t)dims[rank - 2] * (size_t)dims[rank - 1];
}

/* p = {rank_a, a dims[5], rank_b, b dims[5], trans_a, trans_b, plain builder} */
void ref_matmul(const op_case *c, const op_inputs *in, double *expect) {
  const int32_t ra = in->rank[0], rb = in->rank[1];
  const int32_t *da = in->dims[0], *db = in->dims[1];
  const int ta = c->p[12], tb = c->p[13];
  const int32_t M = ta ? da[ra - 1] : da[ra - 2], K = ta ? da[ra - 2] : da[ra - 1];
  const int32_t N = tb ? db[rb - 2] : db[rb - 1];
  /* Output batch dims: right-aligned broadcast of both batch shapes. */
  const int32_t out_batch_rank = (ra > rb ? ra : rb) - 2;
  int32_t out_batch[RLX_MAX_RANK];
  for (int32_t i = 0; i < out_batch_rank; i++) {
    const int32_t ia = i - (out_batch_rank - (ra - 2)), ib = i - (out_batch_rank - (rb - 2));
    const int32_t x = ia >= 0 ? da[ia] : 1, y = ib >= 0 ? db[ib] : 1;
    out_batch[i] = x > y ? x : y;
  }
  const size_t batch = ref_numel(out_batch_rank, out_batch);
  int32_t idx[RLX_MAX_RANK];
  for (size_t t = 0; t < batch; t++) {
    ref_unravel(t, out_batch_rank, out_batch, idx);
    const float *a = in->data[0] + matrix_offset(idx, out_batch_rank, ra, da);
    const float *b = in->data[1] + matrix_offset(idx, out_batch_rank, rb, db);
    for (int32_t i = 0; i < M; i++)
      for (int32_t j = 0; j < N; j++) {
        double sum = 0.0;
        for (int32_t k = 0; k < K; k++) {
          const double av = ta ? a[(size_t)k * M + i] : a[(size_t)i * K + k];
          const double bv = tb ? b[(size_t)j * K + k] : b[(size_t)k * N + j];
          sum += av * bv;
        }
        expect[(t * M + i) * N + j] = sum;
      }
  }
}
