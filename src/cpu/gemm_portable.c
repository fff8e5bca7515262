/* gemm_portable.c - plain C GEMM micro-kernel (4x8) for targets without a
 * SIMD path; written so that compilers can keep the block in registers and
 * vectorize the column loop. */
#include "gemm_impl.h"

static void kernel_portable_4x8(int32_t kc, const float *ap, const float *bp, int32_t ldb,
                                float *c, int32_t ldc, int load_c) {
  float acc[4][8] = {{0.0f}};
  for (int32_t k = 0; k < kc; k++) {
    for (int r = 0; r < 4; r++) {
      const float a = ap[r];
      for (int j = 0; j < 8; j++) acc[r][j] += a * bp[j];
    }
    ap += 4;
    bp += ldb;
  }
  for (int r = 0; r < 4; r++) {
    float *cr = c + (size_t)r * ldc;
    if (load_c)
      for (int j = 0; j < 8; j++) cr[j] += acc[r][j];
    else
      for (int j = 0; j < 8; j++) cr[j] = acc[r][j];
  }
}

static const rlx_gemm_impl portable_impl = {
    "portable", 4, 8, 128, 256, 768, kernel_portable_4x8, rlx_gemm_transpose4_scalar};

const rlx_gemm_impl *rlx_gemm_impl_portable(void) { return &portable_impl; }
