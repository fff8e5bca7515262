/* gemm_wasm.c - WebAssembly SIMD128 GEMM micro-kernel.  V8 on x64 keeps 15
 * xmm registers for wasm, and SIMD128 has no fused multiply-add, so every
 * step needs a temporary besides the accumulators: 4x8 (8 accumulators +
 * 2 B vectors + splat + temporary) fits without spilling.  A values are
 * broadcast with load32_splat straight from the packed sliver. */
#include "gemm_impl.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#define MADD(acc, a, b) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(a, b))
#define WROW(r)                                   \
  a = wasm_v128_load32_splat(ap + (r));           \
  MADD(c##r##0, a, b0);                           \
  MADD(c##r##1, a, b1);
#define WSTEP                                     \
  b0 = wasm_v128_load(bp);                        \
  b1 = wasm_v128_load(bp + 4);                    \
  WROW(0) WROW(1) WROW(2) WROW(3)                 \
  ap += 4;                                        \
  bp += 8;
#define WSTORE(r)                                                              \
  if (load_c) {                                                                \
    c##r##0 = wasm_f32x4_add(c##r##0, wasm_v128_load(c + (r) * (size_t)ldc));     \
    c##r##1 = wasm_f32x4_add(c##r##1, wasm_v128_load(c + (r) * (size_t)ldc + 4)); \
  }                                                                            \
  wasm_v128_store(c + (r) * (size_t)ldc, c##r##0);                             \
  wasm_v128_store(c + (r) * (size_t)ldc + 4, c##r##1);

static void kernel_simd128_4x8(int32_t kc, const float *ap, const float *bp, float *c,
                               int32_t ldc, int load_c) {
  v128_t c00 = wasm_f32x4_splat(0.0f), c01 = c00, c10 = c00, c11 = c00;
  v128_t c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  v128_t a, b0, b1;
  int32_t k = 0;
  for (; k + 2 <= kc; k += 2) {
    WSTEP WSTEP
  }
  if (k < kc) {
    WSTEP
  }
  WSTORE(0) WSTORE(1) WSTORE(2) WSTORE(3)
}

static const rlx_gemm_impl simd128_impl = {"simd128", 4, 8, 128, 256, 2048, kernel_simd128_4x8};

const rlx_gemm_impl *rlx_gemm_impl_simd128(void) { return &simd128_impl; }

#else

const rlx_gemm_impl *rlx_gemm_impl_simd128(void) { return NULL; }

#endif
