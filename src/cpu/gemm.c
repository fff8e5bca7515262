/* gemm.c - C = op(A) . op(B) (+ C): picks the GEMM path.  A single row or
 * column of C and tiny products run unpacked loops (gemm_direct.c);
 * everything else goes through the cache-blocked driver (gemm_blocked.c)
 * with the best micro-kernel of the build and CPU (AVX2+FMA, SSE, SIMD128,
 * portable), or through OpenBLAS when built with `make BLAS=openblas`
 * (never in wasm).  Large products are cut into column or row blocks of C
 * on the thread pool (src/core/pool.h), at whole register blocks, so every
 * element of C sums the same values in the same order for any thread
 * count. */
#include <string.h>
#include "../core/pool.h"
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

#ifndef RLX_GEMM_OPENBLAS
/* The product restricted to C's columns [b, e) (split_n) or rows [b, e). */
static rlx_gemm_args part(const rlx_gemm_args *g, int split_n, size_t b, size_t e) {
  rlx_gemm_args s = *g;
  if (split_n) {
    s.N = (int32_t)(e - b);
    s.B += g->trans_b ? b * (size_t)g->ldb : b;
    s.C += b;
  } else {
    s.M = (int32_t)(e - b);
    s.A += g->trans_a ? b : b * (size_t)g->lda;
    s.C += b * (size_t)g->ldc;
  }
  return s;
}

typedef struct {
  const rlx_gemm_args *g;
  const rlx_gemm_impl *impl; /* NULL: the unpacked single row */
  int split_n;
  int failed; /* set by a range whose packing buffers could not be had */
} gemm_split;

static void gemm_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  gemm_split *q = ctx;
  const rlx_gemm_args s = part(q->g, q->split_n, b, e);
  if (!q->impl) rlx_gemm_row(&s, 0);
  else if (rlx_gemm_blocked(&s, ws, q->impl) != RLX_OK) rlx_task_failed(&q->failed, 1);
}

/* C[M, N]: the larger of M and N cut at whole register blocks (MR rows or
 * NR columns), each block through the cache-blocked driver with the
 * workspace of the thread that runs it; a single row of C (route ROW) in
 * blocks of 8 columns (its loops' vector width). */
static rlx_status gemm_parallel(const rlx_gemm_args *g, gemm_route r, rlx_scratch *scratch) {
  const rlx_gemm_impl *impl = r == GEMM_BLOCKED ? chosen_impl() : NULL;
  gemm_split q = {g, impl, !impl || g->N >= g->M, 0};
  const size_t n = (size_t)(q.split_n ? g->N : g->M), other = (size_t)(q.split_n ? g->M : g->N);
  const size_t grain = !impl ? 8 : (size_t)(q.split_n ? impl->nr : impl->mr);
  rlx_parallel_for(n, grain, other * (size_t)g->K, gemm_range, &q, scratch);
  if (q.failed) return rlx_error(RLX_ERR_NO_MEMORY, "gemm: no memory for packing buffers");
  return RLX_OK;
}
#endif

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
  const gemm_route r = route(g);
  switch (r) {
    case GEMM_ROW:
      if (RLX_THREADED) return gemm_parallel(g, r, scratch);
      rlx_gemm_row(g, 0);
      return RLX_OK;
    case GEMM_COLUMN: rlx_gemm_column(g); return RLX_OK;
    case GEMM_ROWS: rlx_gemm_rows(g); return RLX_OK;
    case GEMM_BLOCKED: break;
  }
  if (!RLX_THREADED || rlx_parallel_threads() < 2) return rlx_gemm_blocked(g, scratch, chosen_impl());
  return gemm_parallel(g, r, scratch);
#endif
}
