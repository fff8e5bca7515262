/* gemm_x86.c - x86-64 GEMM micro-kernels: 6x16 with AVX2+FMA (12 ymm
 * accumulators) and 4x8 with baseline SSE.  The library is built without
 * -mavx2, so the AVX2 kernel carries a target attribute and is only chosen
 * when the running CPU reports AVX2 and FMA. */
#include "gemm_impl.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

/* Packing: four rows of the source become four sliver columns, 4x4 blocks
 * at a time through SSE registers. */
static void transpose4_sse(const float *src, size_t lds, int32_t n, float *dst, size_t ldd) {
  int32_t k = 0;
  for (; k + 4 <= n; k += 4) {
    __m128 r0 = _mm_loadu_ps(src + k), r1 = _mm_loadu_ps(src + lds + k);
    __m128 r2 = _mm_loadu_ps(src + 2 * lds + k), r3 = _mm_loadu_ps(src + 3 * lds + k);
    _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
    float *d = dst + (size_t)k * ldd;
    _mm_storeu_ps(d, r0);
    _mm_storeu_ps(d + ldd, r1);
    _mm_storeu_ps(d + 2 * ldd, r2);
    _mm_storeu_ps(d + 3 * ldd, r3);
  }
  if (k < n) rlx_gemm_transpose4_scalar(src + k, lds, n - k, dst + (size_t)k * ldd, ldd);
}

/* ---- AVX2 + FMA, 6 x 16 ------------------------------------------------- */

#define AVX2_ROW(r)                                      \
  a = _mm256_broadcast_ss(ap + (r));                      \
  c##r##0 = _mm256_fmadd_ps(a, b0, c##r##0);              \
  c##r##1 = _mm256_fmadd_ps(a, b1, c##r##1);
#define AVX2_STEP                                          \
  b0 = _mm256_loadu_ps(bp);                                \
  b1 = _mm256_loadu_ps(bp + 8);                            \
  AVX2_ROW(0) AVX2_ROW(1) AVX2_ROW(2) AVX2_ROW(3) AVX2_ROW(4) AVX2_ROW(5) \
  ap += 6;                                                 \
  bp += ldb;
#define AVX2_STORE(r)                                                         \
  if (load_c) {                                                               \
    c##r##0 = _mm256_add_ps(c##r##0, _mm256_loadu_ps(c + (r) * (size_t)ldc));     \
    c##r##1 = _mm256_add_ps(c##r##1, _mm256_loadu_ps(c + (r) * (size_t)ldc + 8)); \
  }                                                                           \
  _mm256_storeu_ps(c + (r) * (size_t)ldc, c##r##0);                           \
  _mm256_storeu_ps(c + (r) * (size_t)ldc + 8, c##r##1);

__attribute__((target("avx2,fma"))) static void kernel_avx2_6x16(
    int32_t kc, const float *ap, const float *bp, int32_t ldb, float *c, int32_t ldc, int load_c) {
  __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
  __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
  __m256 a, b0, b1;
  for (int r = 0; r < 6; r++) { /* C's rows are written at the end: fetch them now */
    _mm_prefetch((const char *)(c + r * (size_t)ldc), _MM_HINT_T0);
    _mm_prefetch((const char *)(c + r * (size_t)ldc + 15), _MM_HINT_T0);
  }
  int32_t k = 0;
  for (; k + 4 <= kc; k += 4) {
    _mm_prefetch((const char *)(bp + 8 * (size_t)ldb), _MM_HINT_T0);
    AVX2_STEP AVX2_STEP AVX2_STEP AVX2_STEP
  }
  for (; k < kc; k++) {
    AVX2_STEP
  }
  AVX2_STORE(0) AVX2_STORE(1) AVX2_STORE(2) AVX2_STORE(3) AVX2_STORE(4) AVX2_STORE(5)
}

static const rlx_gemm_impl avx2_impl = {
    "avx2", 6, 16, 144, 256, 768, kernel_avx2_6x16, transpose4_sse};

const rlx_gemm_impl *rlx_gemm_impl_avx2(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return &avx2_impl;
  return NULL;
}

/* ---- SSE, 4 x 8 (no FMA: multiply then add) ----------------------------- */

#define SSE_ROW(r)                                                  \
  a = _mm_set1_ps(ap[r]);                                           \
  c##r##0 = _mm_add_ps(c##r##0, _mm_mul_ps(a, b0));                 \
  c##r##1 = _mm_add_ps(c##r##1, _mm_mul_ps(a, b1));
#define SSE_STORE(r)                                                          \
  if (load_c) {                                                               \
    c##r##0 = _mm_add_ps(c##r##0, _mm_loadu_ps(c + (r) * (size_t)ldc));       \
    c##r##1 = _mm_add_ps(c##r##1, _mm_loadu_ps(c + (r) * (size_t)ldc + 4));   \
  }                                                                           \
  _mm_storeu_ps(c + (r) * (size_t)ldc, c##r##0);                              \
  _mm_storeu_ps(c + (r) * (size_t)ldc + 4, c##r##1);

static void kernel_sse_4x8(int32_t kc, const float *ap, const float *bp, int32_t ldb, float *c,
                           int32_t ldc, int load_c) {
  __m128 c00 = _mm_setzero_ps(), c01 = c00, c10 = c00, c11 = c00;
  __m128 c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  __m128 a, b0, b1;
  for (int32_t k = 0; k < kc; k++) {
    b0 = _mm_loadu_ps(bp);
    b1 = _mm_loadu_ps(bp + 4);
    SSE_ROW(0) SSE_ROW(1) SSE_ROW(2) SSE_ROW(3)
    ap += 4;
    bp += ldb;
  }
  SSE_STORE(0) SSE_STORE(1) SSE_STORE(2) SSE_STORE(3)
}

static const rlx_gemm_impl sse_impl = {
    "sse", 4, 8, 128, 256, 768, kernel_sse_4x8, transpose4_sse};

const rlx_gemm_impl *rlx_gemm_impl_sse(void) { return &sse_impl; }

#else /* not x86-64 */

const rlx_gemm_impl *rlx_gemm_impl_avx2(void) { return NULL; }
const rlx_gemm_impl *rlx_gemm_impl_sse(void) { return NULL; }

#endif
