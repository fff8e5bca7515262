/* gemm.c - C = op(A) . op(B) (+ C): picks the GEMM path.  A single row or
 * column of C and tiny products run unpacked loops (gemm_direct.c);
 * everything else goes through the cache-blocked driver (gemm_blocked.c)
 * with the best micro-kernel of the build and CPU (AVX2+FMA, SSE, SIMD128,
 * portable), or through OpenBLAS when built with `make BLAS=openblas`
 * (never in wasm). */
#include <string.h>
#include "gemm_impl.h"

#if defined(RLX_USE_OPENBLAS) && !defined(__wasm__)
#include <cblas.h>
#define RLX_GEMM_OPENBLAS 1
#endif

/* Products with at most this many multiply-adds skip packing. */
#define RLX_GEMM_DIRECT_MACS 512

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
typedef enum { GEMM_ROW, GEMM_COLUMN, GEMM_ROWS, GEMM_BLOCKED } gemm_route;

/* Which loops compute a product with M, N, K >= 1. */
static gemm_route route(const rlx_gemm_args *g) {
  if (g->M == 1) return GEMM_ROW;
  if (g->N == 1 && g->ldc == 1) return GEMM_COLUMN;
  if (g->N == 1 || (int64_t)g->M * g->N * g->K <= RLX_GEMM_DIRECT_MACS) return GEMM_ROWS;
  return GEMM_BLOCKED;
}
#endif

size_t rlx_gemm_scratch_bytes(const rlx_gemm_args *g) {
#ifdef RLX_GEMM_OPENBLAS
  (void)g;
  return 0;
#else
  if (g->M <= 0 || g->N <= 0 || g->K <= 0 || route(g) != GEMM_BLOCKED) return 0;
  return rlx_gemm_blocked_bytes(g, chosen_impl());
#endif
}

rlx_status rlx_gemm(const rlx_gemm_args *g, rlx_scratch *scratch) {
  if (g->M <= 0 || g->N <= 0) return RLX_OK;
  if (g->K <= 0) {
    if (!g->accumulate)
      for (int32_t i = 0; i < g->M; i++)
        memset(g->C + (size_t)i * g->ldc, 0, sizeof(float) * (size_t)g->N);
    return RLX_OK;
  }
#ifdef RLX_GEMM_OPENBLAS
  (void)scratch;
  cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
              g->trans_b ? CblasTrans : CblasNoTrans, g->M, g->N, g->K, 1.0f, g->A, g->lda, g->B,
              g->ldb, g->accumulate ? 1.0f : 0.0f, g->C, g->ldc);
  return RLX_OK;
#else
  switch (route(g)) {
    case GEMM_ROW: rlx_gemm_row(g, 0); return RLX_OK;
    case GEMM_COLUMN: rlx_gemm_column(g); return RLX_OK;
    case GEMM_ROWS: rlx_gemm_rows(g); return RLX_OK;
    case GEMM_BLOCKED: break;
  }
  return rlx_gemm_blocked(g, scratch, chosen_impl());
#endif
}
