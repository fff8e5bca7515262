/* gemm_wasm.c - WebAssembly GEMM micro-kernels: 4x8 with SIMD128 and, when
 * built with -mrelaxed-simd (the relaxed modules: tools/relaxed_simd.mk),
 * 5x8 with f32x4.relaxed_madd.
 *
 * Shaped for V8's x64 code generator (15 usable xmm registers; TurboFan
 * issues a step's loads before its arithmetic).  SIMD128 has no fused
 * multiply-add, so each step needs a temporary: 8 accumulators + 2 B
 * vectors + 4 A splats + 1 temporary fill the register file exactly.
 * Measured on V8 11 (Node 20): 5x8, 6x8, 4x12, 3x12 and k-unrolled variants
 * spill and run 25-50% slower.  A values are broadcast with load32_splat
 * straight from the packed sliver (one vbroadcastss each).
 *
 * relaxed_madd computes a * b + c, rounded once where the engine fuses it
 * (V8 on x64 CPUs with FMA3) and twice elsewhere, so results may differ from
 * the SIMD128 kernel's in the last bits.  It needs no temporary, and a
 * fifth row fits: measured on the same V8 (2 shared cores of
 * a Xeon with AVX-512, 256-1024 square), 5x8 ran 4-11% faster than a
 * relaxed 4x8 and 3-8% faster than 3x12; 6x8 and 4x12 spill and ran 26-31%
 * slower.
 *
 * The empty asm statements hide the pointer increments from LLVM's loop
 * strength reduction; without them the sliver offsets are materialized
 * with an i32.add per load instead of being folded into the loads' offset
 * immediates, and the loop runs about 15% slower. */
#include "gemm_impl.h"

#if defined(__wasm_simd128__)
#include <wasm_simd128.h>

#if defined(__wasm_relaxed_simd__)
#define MADD(acc, a, b) acc = wasm_f32x4_relaxed_madd(a, b, acc)
#define WMR 5
#define WNAME "relaxed-simd"
#else
#define MADD(acc, a, b) acc = wasm_f32x4_add(acc, wasm_f32x4_mul(a, b))
#define WMR 4
#define WNAME "simd128"
#endif
#define WROW(r)                                   \
  a = wasm_v128_load32_splat(ap + (r));           \
  MADD(c##r##0, a, b0);                           \
  MADD(c##r##1, a, b1);
#if WMR == 5
#define WROWS WROW(0) WROW(1) WROW(2) WROW(3) WROW(4)
#else
#define WROWS WROW(0) WROW(1) WROW(2) WROW(3)
#endif
#define WSTEP                                     \
  b0 = wasm_v128_load(bp);                        \
  b1 = wasm_v128_load(bp + 4);                    \
  WROWS                                           \
  ap += WMR;                                      \
  bp += ldb;                                      \
  __asm__("" : "+r"(ap), "+r"(bp));
#define WSTORE(r)                                                              \
  if (load_c) {                                                                \
    c##r##0 = wasm_f32x4_add(c##r##0, wasm_v128_load(c + (r) * (size_t)ldc));     \
    c##r##1 = wasm_f32x4_add(c##r##1, wasm_v128_load(c + (r) * (size_t)ldc + 4)); \
  }                                                                            \
  wasm_v128_store(c + (r) * (size_t)ldc, c##r##0);                             \
  wasm_v128_store(c + (r) * (size_t)ldc + 4, c##r##1);

static void kernel_wasm(int32_t kc, const float *ap, const float *bp, int32_t ldb,
                               float *c, int32_t ldc, int load_c) {
  v128_t c00 = wasm_f32x4_splat(0.0f), c01 = c00, c10 = c00, c11 = c00;
  v128_t c20 = c00, c21 = c00, c30 = c00, c31 = c00;
#if WMR == 5
  v128_t c40 = c00, c41 = c00;
#endif
  v128_t a, b0, b1;
  for (int32_t k = 0; k < kc; k++) {
    WSTEP
  }
  WSTORE(0) WSTORE(1) WSTORE(2) WSTORE(3)
#if WMR == 5
  WSTORE(4)
#endif
}

/* Packing: four rows of the source become four sliver columns, 4x4 blocks
 * at a time through shuffles. */
static void transpose4_wasm(const float *src, size_t lds, int32_t n, float *dst, size_t ldd) {
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

/* mc: the largest multiple of the rows under 128 */
static const rlx_gemm_impl wasm_impl = {
    WNAME, WMR, 8, 128 / WMR * WMR, 256, 768, kernel_wasm, transpose4_wasm};

const rlx_gemm_impl *rlx_gemm_impl_simd128(void) { return &wasm_impl; }

#else

const rlx_gemm_impl *rlx_gemm_impl_simd128(void) { return NULL; }

#endif
