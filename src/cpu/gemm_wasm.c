/* gemm_wasm.c - WebAssembly SIMD128 GEMM micro-kernel, 4x8.
 *
 * Shaped for V8's x64 code generator (15 usable xmm registers; SIMD128 has
 * no fused multiply-add, so each step needs a temporary; TurboFan issues a
 * step's loads before its arithmetic): 8 accumulators + 2 B vectors + 4 A
 * splats + 1 temporary fill the register file exactly.  Measured on V8 11
 * (Node 20): 5x8, 6x8, 4x12, 3x12 and k-unrolled variants spill and run
 * 25-50% slower.  A values are broadcast with load32_splat straight from
 * the packed sliver (one vbroadcastss each).
 *
 * The empty asm statements hide the pointer increments from LLVM's loop
 * strength reduction; without them the sliver offsets are materialized
 * with an i32.add per load instead of being folded into the loads' offset
 * immediates, and the loop runs about 15% slower. */
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
  bp += ldb;                                      \
  __asm__("" : "+r"(ap), "+r"(bp));
#define WSTORE(r)                                                              \
  if (load_c) {                                                                \
    c##r##0 = wasm_f32x4_add(c##r##0, wasm_v128_load(c + (r) * (size_t)ldc));     \
    c##r##1 = wasm_f32x4_add(c##r##1, wasm_v128_load(c + (r) * (size_t)ldc + 4)); \
  }                                                                            \
  wasm_v128_store(c + (r) * (size_t)ldc, c##r##0);                             \
  wasm_v128_store(c + (r) * (size_t)ldc + 4, c##r##1);

static void kernel_simd128_4x8(int32_t kc, const float *ap, const float *bp, int32_t ldb,
                               float *c, int32_t ldc, int load_c) {
  v128_t c00 = wasm_f32x4_splat(0.0f), c01 = c00, c10 = c00, c11 = c00;
  v128_t c20 = c00, c21 = c00, c30 = c00, c31 = c00;
  v128_t a, b0, b1;
  for (int32_t k = 0; k < kc; k++) {
    WSTEP
  }
  WSTORE(0) WSTORE(1) WSTORE(2) WSTORE(3)
}

/* Packing: four rows of the source become four sliver columns, 4x4 blocks
 * at a time through shuffles. */
static void transpose4_simd128(const float *src, size_t lds, int32_t n, float *dst, size_t ldd) {
  int32_t k = 0;
  for (; k + 4 <= n; k += 4) {
    const v128_t r0 = wasm_v128_load(src + k), r1 = wasm_v128_load(src + lds + k);
    const v128_t r2 = wasm_v128_load(src + 2 * lds + k), r3 = wasm_v128_load(src + 3 * lds + k);
    const v128_t t0 = wasm_i32x4_shuffle(r0, r1, 0, 4, 1, 5);
    const v128_t t1 = wasm_i32x4_shuffle(r2, r3, 0, 4, 1, 5);
    const v128_t t2 = wasm_i32x4_shuffle(r0, r1, 2, 6, 3, 7);
    const v128_t t3 = wasm_i32x4_shuffle(r2, r3, 2, 6, 3, 7);
    float *d = dst + (size_t)k * ldd;
    wasm_v128_store(d, wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5));
    wasm_v128_store(d + ldd, wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));
    wasm_v128_store(d + 2 * ldd, wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5));
    wasm_v128_store(d + 3 * ldd, wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7));
  }
  if (k < n) rlx_gemm_transpose4_scalar(src + k, lds, n - k, dst + (size_t)k * ldd, ldd);
}

static const rlx_gemm_impl simd128_impl = {
    "simd128", 4, 8, 128, 256, 768, kernel_simd128_4x8, transpose4_simd128};

const rlx_gemm_impl *rlx_gemm_impl_simd128(void) { return &simd128_impl; }

#else

const rlx_gemm_impl *rlx_gemm_impl_simd128(void) { return NULL; }

#endif
