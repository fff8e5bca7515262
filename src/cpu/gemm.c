/* gemm.c - C = op(A) . op(B) (+ C): picks the GEMM path.  Matrix-vector
 * shapes and tiny products run direct loops (packing would cost more than
 * it saves); everything else goes through the cache-blocked driver with the
 * best micro-kernel of the build and CPU (AVX2+FMA, SSE, SIMD128, portable),
 * or through OpenBLAS when built with `make BLAS=openblas` (never in wasm). */
#include <string.h>
#include "gemm_impl.h"

#if defined(RLX_USE_OPENBLAS) && !defined(__wasm__)
#include <cblas.h>
#define RLX_GEMM_OPENBLAS 1
#endif

/* Products with at most this many multiply-adds skip packing. */
#define RLX_GEMM_DIRECT_MACS 4096

#ifndef RLX_GEMM_OPENBLAS
static const rlx_gemm_impl *chosen_impl(void) {
  /* Every call computes the same answer, so a racing first call is harmless. */
  static const rlx_gemm_impl *impl;
  if (!impl) {
    const rlx_gemm_impl *p = rlx_gemm_impl_avx2();
    if (!p) p = rlx_gemm_impl_sse();
    if (!p) p = rlx_gemm_impl_simd128();
    if (!p) p = rlx_gemm_impl_portable();
    impl = p;
  }
  return impl;
}

#endif

const char *rlx_gemm_path(void) {
#ifdef RLX_GEMM_OPENBLAS
  return "openblas";
#else
  return chosen_impl()->name;
#endif
}

#ifndef RLX_GEMM_OPENBLAS
/* sum_k x[k*sx] * y[k*sy]; eight independent partial sums when both are
 * contiguous, so the loop vectorizes without reassociation flags. */
static float dot(const float *x, size_t sx, const float *y, size_t sy, int32_t n) {
  int32_t k = 0;
  float t = 0.0f;
  if (sx == 1 && sy == 1) {
    float s[8] = {0.0f};
    for (; k + 8 <= n; k += 8)
      for (int l = 0; l < 8; l++) s[l] += x[k + l] * y[k + l];
    t = ((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7]));
  }
  for (; k < n; k++) t += x[(size_t)k * sx] * y[(size_t)k * sy];
  return t;
}

/* Unpacked loops: row i of C as sum_k a[i,k] * B[k,:] (rows of B are
 * contiguous) or as dot products (columns of op(B) are contiguous). */
static void gemm_direct(const rlx_gemm_args *g) {
  const size_t lda = (size_t)g->lda, ldb = (size_t)g->ldb;
  const size_t sa = g->trans_a ? lda : 1; /* stride of op(A) along k */
  for (int32_t i = 0; i < g->M; i++) {
    const float *a = g->trans_a ? g->A + i : g->A + (size_t)i * lda;
    float *c = g->C + (size_t)i * g->ldc;
    if (!g->trans_b && g->N > 1) {
      if (!g->accumulate) memset(c, 0, sizeof(float) * (size_t)g->N);
      for (int32_t k = 0; k < g->K; k++) {
        const float av = a[(size_t)k * sa];
        const float *b = g->B + (size_t)k * ldb;
        for (int32_t j = 0; j < g->N; j++) c[j] += av * b[j];
      }
    } else {
      for (int32_t j = 0; j < g->N; j++) {
        const float *b = g->trans_b ? g->B + (size_t)j * ldb : g->B + j;
        const float s = dot(a, sa, b, g->trans_b ? 1 : ldb, g->K);
        c[j] = g->accumulate ? c[j] + s : s;
      }
    }
  }
}

#endif

rlx_status rlx_gemm(const rlx_gemm_args *g, rlx_scratch *scratch) {
  if (g->M <= 0 || g->N <= 0) return RLX_OK;
  if (g->K <= 0) {
    if (!g->accumulate)
      for (int32_t i = 0; i < g->M; i++) memset(g->C + (size_t)i * g->ldc, 0, sizeof(float) * (size_t)g->N);
    return RLX_OK;
  }
#ifdef RLX_GEMM_OPENBLAS
  (void)scratch;
  cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
              g->trans_b ? CblasTrans : CblasNoTrans, g->M, g->N, g->K, 1.0f, g->A, g->lda, g->B,
              g->ldb, g->accumulate ? 1.0f : 0.0f, g->C, g->ldc);
  return RLX_OK;
#else
  if (g->M == 1 || g->N == 1 ||
      (int64_t)g->M * g->N * g->K <= RLX_GEMM_DIRECT_MACS) {
    gemm_direct(g);
    return RLX_OK;
  }
  return rlx_gemm_blocked(g, scratch, chosen_impl());
#endif
}
