/* gemm_direct.c - GEMM without packing, for shapes where packing would
 * cost about as much as the product: a single row of C (vector x matrix), a
 * single column (matrix x vector, through the transposed problem), and tiny
 * products.  Plain C written so that compilers vectorize it. */
#include <string.h>
#include "gemm_impl.h"

/* sum_k x[k*sx] * y[k]; eight independent partial sums when x is
 * contiguous, so the loop vectorizes without reassociation flags. */
static float dot(const float *x, size_t sx, const float *y, int32_t n) {
  int32_t k = 0;
  float t = 0.0f;
  if (sx == 1) {
    float s[8] = {0.0f};
    for (; k + 8 <= n; k += 8)
      for (int l = 0; l < 8; l++) s[l] += x[k + l] * y[k + l];
    t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
  }
  for (; k < n; k++) t += x[(size_t)k * sx] * y[k];
  return t;
}

/* c[0, N) (+)= sum_k a[k*sa] * B[k*ldb + j]: rows of B scaled and summed,
 * four at a time so c is loaded and stored once per four rows.  Columns go
 * in fixed blocks of 8 so that compilers vectorize without a cost model. */
static void row_times_rows(const float *a, size_t sa, const float *B, size_t ldb, int32_t K,
                           int32_t N, float *restrict c) {
  int32_t k = 0;
  for (; k + 4 <= K; k += 4) {
    const float a0 = a[k * sa], a1 = a[(k + 1) * sa], a2 = a[(k + 2) * sa], a3 = a[(k + 3) * sa];
    const float *restrict b0 = B + (size_t)k * ldb, *restrict b1 = b0 + ldb;
    const float *restrict b2 = b1 + ldb, *restrict b3 = b2 + ldb;
    int32_t j = 0;
    for (; j + 8 <= N; j += 8)
      for (int l = 0; l < 8; l++)
        c[j + l] += (a0 * b0[j + l] + a1 * b1[j + l]) + (a2 * b2[j + l] + a3 * b3[j + l]);
    for (; j < N; j++) c[j] += (a0 * b0[j] + a1 * b1[j]) + (a2 * b2[j] + a3 * b3[j]);
  }
  for (; k < K; k++) {
    const float a0 = a[k * sa];
    const float *restrict b0 = B + (size_t)k * ldb;
    int32_t j = 0;
    for (; j + 8 <= N; j += 8)
      for (int l = 0; l < 8; l++) c[j + l] += a0 * b0[j + l];
    for (; j < N; j++) c[j] += a0 * b0[j];
  }
}

/* One row of C: c[0, N) (+)= op(A)[i, :] . op(B), unpacked.  Rows of B are
 * summed when contiguous, else (trans_b) each c[j] is a dot product. */
void rlx_gemm_row(const rlx_gemm_args *g, int32_t i) {
  const size_t lda = (size_t)g->lda, ldb = (size_t)g->ldb;
  const float *a = g->trans_a ? g->A + i : g->A + (size_t)i * lda;
  const size_t sa = g->trans_a ? lda : 1; /* stride of op(A)[i, :] */
  float *c = g->C + (size_t)i * g->ldc;
  if (!g->trans_b) {
    if (!g->accumulate) memset(c, 0, sizeof(float) * (size_t)g->N);
    row_times_rows(a, sa, g->B, ldb, g->K, g->N, c);
    return;
  }
  for (int32_t j = 0; j < g->N; j++) {
    const float s = dot(a, sa, g->B + (size_t)j * ldb, g->K);
    c[j] = g->accumulate ? c[j] + s : s;
  }
}

/* C (column vector) = op(A) . op(B) as C^T = op(B)^T . op(A)^T, a single
 * row (needs ldc == 1 so that C^T is a contiguous row). */
void rlx_gemm_column(const rlx_gemm_args *g) {
  rlx_gemm_args t = {1, g->M, g->K, g->B, g->ldb, !g->trans_b, g->A, g->lda, !g->trans_a,
                     g->C, g->M, g->accumulate};
  rlx_gemm_row(&t, 0);
}

/* Row by row, for tiny products and column vectors with strided C. */
void rlx_gemm_rows(const rlx_gemm_args *g) {
  for (int32_t i = 0; i < g->M; i++) rlx_gemm_row(g, i);
}
