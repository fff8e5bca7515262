/* gemm_blocked.c - the cache-blocked GEMM driver shared by every SIMD path:
 * B is packed panel by panel (kc x nc, kept in L3/L2), A block by block
 * (mc x kc, kept in L2), and a path's register-blocked micro-kernel sweeps
 * the packed slivers (one B sliver stays in L1).  Partial register blocks at
 * the right and bottom edges go through a small tile on the stack, so the
 * micro-kernels never touch memory outside C. */
#include <string.h>
#include "gemm_impl.h"

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static int32_t round_up(int32_t x, int32_t m) { return (x + m - 1) / m * m; }

/* ---- packing A ---------------------------------------------------------- */

/* One MR-row sliver of a non-transposed A (rows are contiguous in k).  MR is
 * a compile-time constant at every call site, so the row loop unrolls. */
static inline void pack_a_rows(const float *a, size_t lda, int32_t rows, int32_t kc,
                               const int32_t MR, float *d) {
  if (rows == MR) {
    for (int32_t k = 0; k < kc; k++)
      for (int32_t r = 0; r < MR; r++) d[(size_t)k * MR + r] = a[r * lda + k];
    return;
  }
  for (int32_t k = 0; k < kc; k++) {
    for (int32_t r = 0; r < rows; r++) d[(size_t)k * MR + r] = a[r * lda + k];
    for (int32_t r = rows; r < MR; r++) d[(size_t)k * MR + r] = 0.0f;
  }
}

/* One MR-row sliver of a transposed A (op(A) rows are contiguous in memory
 * for a fixed k). */
static inline void pack_a_cols(const float *a, size_t lda, int32_t rows, int32_t kc,
                               const int32_t MR, float *d) {
  if (rows == MR) {
    for (int32_t k = 0; k < kc; k++)
      for (int32_t r = 0; r < MR; r++) d[(size_t)k * MR + r] = a[k * lda + r];
    return;
  }
  for (int32_t k = 0; k < kc; k++) {
    for (int32_t r = 0; r < rows; r++) d[(size_t)k * MR + r] = a[k * lda + r];
    for (int32_t r = rows; r < MR; r++) d[(size_t)k * MR + r] = 0.0f;
  }
}

static void pack_a_sliver(const rlx_gemm_args *g, int32_t i, int32_t rows, int32_t k0,
                          int32_t kc, int32_t mr, float *d) {
  size_t lda = (size_t)g->lda;
  if (!g->trans_a) {
    const float *a = g->A + (size_t)i * lda + k0;
    switch (mr) {
      case 4: pack_a_rows(a, lda, rows, kc, 4, d); return;
      case 6: pack_a_rows(a, lda, rows, kc, 6, d); return;
      case 8: pack_a_rows(a, lda, rows, kc, 8, d); return;
      default: pack_a_rows(a, lda, rows, kc, mr, d); return;
    }
  }
  const float *a = g->A + (size_t)k0 * lda + i;
  switch (mr) {
    case 4: pack_a_cols(a, lda, rows, kc, 4, d); return;
    case 6: pack_a_cols(a, lda, rows, kc, 6, d); return;
    case 8: pack_a_cols(a, lda, rows, kc, 8, d); return;
    default: pack_a_cols(a, lda, rows, kc, mr, d); return;
  }
}

void rlx_gemm_pack_a(const rlx_gemm_args *g, int32_t i0, int32_t mc, int32_t k0, int32_t kc,
                     int32_t mr, float *dst) {
  for (int32_t s = 0; s < mc; s += mr)
    pack_a_sliver(g, i0 + s, min_i32(mr, mc - s), k0, kc, mr, dst + (size_t)s * kc);
}

/* ---- packing B ---------------------------------------------------------- */

/* One NR-column sliver of a non-transposed B (a row of the sliver is a
 * contiguous piece of a row of B). */
static inline void pack_b_rows(const float *b, size_t ldb, int32_t cols, int32_t kc,
                               const int32_t NR, float *d) {
  if (cols == NR) {
    for (int32_t k = 0; k < kc; k++)
      for (int32_t j = 0; j < NR; j++) d[(size_t)k * NR + j] = b[k * ldb + j];
    return;
  }
  for (int32_t k = 0; k < kc; k++) {
    for (int32_t j = 0; j < cols; j++) d[(size_t)k * NR + j] = b[k * ldb + j];
    for (int32_t j = cols; j < NR; j++) d[(size_t)k * NR + j] = 0.0f;
  }
}

/* One NR-column sliver of a transposed B (column j of op(B) is a contiguous
 * row of B): gathered NR rows at a time, 4 k-steps per pass. */
static inline void pack_b_cols(const float *b, size_t ldb, int32_t cols, int32_t kc,
                               const int32_t NR, float *d) {
  if (cols == NR) {
    int32_t k = 0;
    for (; k + 4 <= kc; k += 4)
      for (int32_t j = 0; j < NR; j++) {
        const float *src = b + j * ldb + k;
        float *dk = d + (size_t)k * NR + j;
        dk[0] = src[0];
        dk[NR] = src[1];
        dk[2 * NR] = src[2];
        dk[3 * NR] = src[3];
      }
    for (; k < kc; k++)
      for (int32_t j = 0; j < NR; j++) d[(size_t)k * NR + j] = b[j * ldb + k];
    return;
  }
  for (int32_t k = 0; k < kc; k++) {
    for (int32_t j = 0; j < cols; j++) d[(size_t)k * NR + j] = b[j * ldb + k];
    for (int32_t j = cols; j < NR; j++) d[(size_t)k * NR + j] = 0.0f;
  }
}

static void pack_b_sliver(const rlx_gemm_args *g, int32_t k0, int32_t kc, int32_t j,
                          int32_t cols, int32_t nr, float *d) {
  size_t ldb = (size_t)g->ldb;
  if (!g->trans_b) {
    const float *b = g->B + (size_t)k0 * ldb + j;
    switch (nr) {
      case 8: pack_b_rows(b, ldb, cols, kc, 8, d); return;
      case 12: pack_b_rows(b, ldb, cols, kc, 12, d); return;
      case 16: pack_b_rows(b, ldb, cols, kc, 16, d); return;
      case 32: pack_b_rows(b, ldb, cols, kc, 32, d); return;
      default: pack_b_rows(b, ldb, cols, kc, nr, d); return;
    }
  }
  const float *b = g->B + (size_t)j * ldb + k0;
  switch (nr) {
    case 8: pack_b_cols(b, ldb, cols, kc, 8, d); return;
    case 12: pack_b_cols(b, ldb, cols, kc, 12, d); return;
    case 16: pack_b_cols(b, ldb, cols, kc, 16, d); return;
    case 32: pack_b_cols(b, ldb, cols, kc, 32, d); return;
    default: pack_b_cols(b, ldb, cols, kc, nr, d); return;
  }
}

void rlx_gemm_pack_b(const rlx_gemm_args *g, int32_t k0, int32_t kc, int32_t j0, int32_t nc,
                     int32_t nr, float *dst) {
  for (int32_t s = 0; s < nc; s += nr)
    pack_b_sliver(g, k0, kc, j0 + s, min_i32(nr, nc - s), nr, dst + (size_t)s * kc);
}

/* ---- the loop nest ------------------------------------------------------ */

/* Runs the micro-kernel on an mr x nr corner block through a full tile. */
static void edge_block(const rlx_gemm_impl *impl, int32_t kc, const float *ap, const float *bp,
                       float *c, int32_t ldc, int load_c, int32_t mr, int32_t nr) {
  _Alignas(64) float tile[RLX_GEMM_MAX_MR * RLX_GEMM_MAX_NR];
  impl->kernel(kc, ap, bp, tile, impl->nr, 0);
  for (int32_t i = 0; i < mr; i++) {
    float *ci = c + (size_t)i * ldc;
    const float *ti = tile + (size_t)i * impl->nr;
    if (load_c)
      for (int32_t j = 0; j < nr; j++) ci[j] += ti[j];
    else
      for (int32_t j = 0; j < nr; j++) ci[j] = ti[j];
  }
}

/* C[mc, nc] (+)= packed A block . packed B panel. */
static void macro_kernel(const rlx_gemm_impl *impl, int32_t mc, int32_t nc, int32_t kc,
                         const float *ap, const float *bp, float *c, int32_t ldc, int load_c) {
  const int32_t MR = impl->mr, NR = impl->nr;
  for (int32_t jr = 0; jr < nc; jr += NR) {
    const int32_t nr = min_i32(NR, nc - jr);
    const float *b = bp + (size_t)jr * kc;
    for (int32_t ir = 0; ir < mc; ir += MR) {
      const int32_t mr = min_i32(MR, mc - ir);
      const float *a = ap + (size_t)ir * kc;
      float *cij = c + (size_t)ir * ldc + jr;
      if (mr == MR && nr == NR)
        impl->kernel(kc, a, b, cij, ldc, load_c);
      else
        edge_block(impl, kc, a, b, cij, ldc, load_c, mr, nr);
    }
  }
}

rlx_status rlx_gemm_blocked(const rlx_gemm_args *g, rlx_scratch *scratch,
                            const rlx_gemm_impl *impl) {
  const int32_t M = g->M, N = g->N, K = g->K;
  const int32_t MR = impl->mr, NR = impl->nr;
  /* Buffers sized for this problem, not for the largest blocks. */
  const int32_t kc_max = min_i32(K, impl->kc);
  const int32_t mc_max = round_up(min_i32(M, impl->mc), MR);
  const int32_t nc_max = round_up(min_i32(N, impl->nc), NR);
  const size_t b_floats = ((size_t)nc_max * kc_max + 15) / 16 * 16;
  const size_t a_floats = (size_t)mc_max * kc_max;
  float *bp = rlx_scratch_get(scratch, (a_floats + b_floats) * sizeof(float));
  if (!bp) return rlx_error(RLX_ERR_NO_MEMORY, "gemm: no memory for packing buffers (%zu bytes)",
                            (a_floats + b_floats) * sizeof(float));
  float *ap = bp + b_floats;

  for (int32_t jc = 0; jc < N; jc += impl->nc) {
    const int32_t nc = min_i32(impl->nc, N - jc);
    for (int32_t pc = 0; pc < K; pc += impl->kc) {
      const int32_t kc = min_i32(impl->kc, K - pc);
      const int load_c = g->accumulate || pc > 0;
      rlx_gemm_pack_b(g, pc, kc, jc, nc, NR, bp);
      for (int32_t ic = 0; ic < M; ic += impl->mc) {
        const int32_t mc = min_i32(impl->mc, M - ic);
        rlx_gemm_pack_a(g, ic, mc, pc, kc, MR, ap);
        macro_kernel(impl, mc, nc, kc, ap, bp, g->C + (size_t)ic * g->ldc + jc, g->ldc, load_c);
      }
    }
  }
  return RLX_OK;
}
