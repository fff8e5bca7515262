/* gemm_pack.c - packing of op(A) blocks and op(B) panels into the
 * register-block slivers the micro-kernels read (layout in gemm_impl.h).
 * Contiguous cases (A transposed, B not) are row copies; the gathering
 * cases (A not transposed, B transposed) run through the path's 4-row
 * transpose, which the SIMD paths implement with 4x4 register transposes.
 * Partial slivers at the edges are zero-padded. */
#include <string.h>
#include "gemm_impl.h"

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

void rlx_gemm_transpose4_scalar(const float *src, size_t lds, int32_t n, float *dst, size_t ldd) {
  for (int32_t k = 0; k < n; k++) {
    float *d = dst + (size_t)k * ldd;
    d[0] = src[k];
    d[1] = src[lds + k];
    d[2] = src[2 * lds + k];
    d[3] = src[3 * lds + k];
  }
}

/* dst[k*ld + j] = src[j*lds + k] for j < cols, k < kc; zeros for
 * cols <= j < width.  Columns go four at a time through transpose4. */
static void gather_columns(rlx_gemm_transpose4_fn transpose4, const float *src, size_t lds,
                           int32_t cols, int32_t kc, int32_t width, float *dst) {
  int32_t j = 0;
  for (; j + 4 <= cols; j += 4) transpose4(src + (size_t)j * lds, lds, kc, dst + j, (size_t)width);
  if (j == width) return;
  for (int32_t k = 0; k < kc; k++) {
    float *d = dst + (size_t)k * width;
    for (int32_t t = j; t < cols; t++) d[t] = src[(size_t)t * lds + k];
    for (int32_t t = cols; t < width; t++) d[t] = 0.0f;
  }
}

/* dst[k*width + j] = src[k*lds + j] for j < cols; zeros up to width.  width
 * is a compile-time constant at the call sites, so full rows are fixed-size
 * copies. */
static inline void copy_rows(const float *restrict src, size_t lds, int32_t cols, int32_t kc,
                             const int32_t width, float *restrict dst) {
  if (cols == width) {
    for (int32_t k = 0; k < kc; k++)
      memcpy(dst + (size_t)k * width, src + (size_t)k * lds, sizeof(float) * (size_t)width);
    return;
  }
  for (int32_t k = 0; k < kc; k++) {
    float *d = dst + (size_t)k * width;
    memcpy(d, src + (size_t)k * lds, sizeof(float) * (size_t)cols);
    for (int32_t j = cols; j < width; j++) d[j] = 0.0f;
  }
}

static void copy_rows_any(const float *src, size_t lds, int32_t cols, int32_t kc, int32_t width,
                          float *dst) {
  switch (width) {
    case 4: copy_rows(src, lds, cols, kc, 4, dst); return;
    case 6: copy_rows(src, lds, cols, kc, 6, dst); return;
    case 8: copy_rows(src, lds, cols, kc, 8, dst); return;
    case 16: copy_rows(src, lds, cols, kc, 16, dst); return;
    default: copy_rows(src, lds, cols, kc, width, dst); return;
  }
}

void rlx_gemm_pack_a(const rlx_gemm_args *g, const rlx_gemm_impl *impl, int32_t i0, int32_t mc,
                     int32_t k0, int32_t kc, float *dst) {
  const size_t lda = (size_t)g->lda;
  const int32_t mr = impl->mr;
  for (int32_t s = 0; s < mc; s += mr) {
    const int32_t rows = min_i32(mr, mc - s);
    float *d = dst + (size_t)s * kc;
    if (g->trans_a) /* op(A)[i, k] = A[k, i]: rows of the sliver are contiguous */
      copy_rows_any(g->A + (size_t)k0 * lda + i0 + s, lda, rows, kc, mr, d);
    else
      gather_columns(impl->transpose4, g->A + (size_t)(i0 + s) * lda + k0, lda, rows, kc, mr, d);
  }
}

void rlx_gemm_pack_b(const rlx_gemm_args *g, const rlx_gemm_impl *impl, int32_t k0, int32_t kc,
                     int32_t j0, int32_t nc, float *dst) {
  const size_t ldb = (size_t)g->ldb;
  const int32_t nr = impl->nr;
  for (int32_t s = 0; s < nc; s += nr) {
    const int32_t cols = min_i32(nr, nc - s);
    float *d = dst + (size_t)s * kc;
    if (g->trans_b) /* op(B)[k, j] = B[j, k]: gather columns */
      gather_columns(impl->transpose4, g->B + (size_t)(j0 + s) * ldb + k0, ldb, cols, kc, nr, d);
    else
      copy_rows_any(g->B + (size_t)k0 * ldb + j0 + s, ldb, cols, kc, nr, d);
  }
}
