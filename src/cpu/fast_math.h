/* fast_math.h - branch-free float math shared by the pointwise kernels
 * (k_unary.c, k_grad_pointwise.c, k_grad_softmax.c, k_softmax.c): a polynomial exp
 * (within 2 ulp of expf) and the sigmoid/tanh built on it, plus a loop
 * macro the compilers vectorize.  Everything is static inline so each
 * kernel loop inlines it instead of calling libm once per element. */
#ifndef RLX_CPU_FAST_MATH_H
#define RLX_CPU_FAST_MATH_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* for (i = 0; i < n; i++) BODY, run as blocks of 8 with a constant trip
 * count plus a scalar tail: gcc -O2 (whose cheap vectorizer skips loops of
 * unknown trip count) vectorizes the blocks, clang -O3 too; the tail (< 8
 * elements) stays scalar, since vectorizing and unrolling it again only
 * adds code (wasm size). */
#if defined(__clang__)
#define RLX_SCALAR_LOOP _Pragma("clang loop vectorize(disable) interleave(disable) unroll(disable)")
#else
#define RLX_SCALAR_LOOP
#endif
#define RLX_VEC_LOOP(i, n, BODY)                           \
  do {                                                     \
    size_t i##_block = 0;                                  \
    for (; i##_block + 8 <= (n); i##_block += 8)           \
      for (size_t i = i##_block; i < i##_block + 8; i++) { \
        BODY;                                              \
      }                                                    \
    RLX_SCALAR_LOOP                                        \
    for (size_t i = i##_block; i < (n); i++) {             \
      BODY;                                                \
    }                                                      \
  } while (0)

static inline float f32_from_bits(int32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* e^x = 2^n e^r with n = round(x / ln 2), |r| <= ln2 / 2 and e^r from the
 * Cephes expf polynomial.  x is clamped to [-104, 89] first (beyond those
 * the result is 0 or inf anyway, and n stays in int range); 2^n is applied
 * as two factors 2^n1 2^(n-n1), n1 about n/2, so denormal results and
 * results near FLT_MAX come out right without a branch.  NaN gives NaN.  Every step,
 * the clamps included, vectorizes in 8-wide row loops with gcc -O2 and
 * clang -msimd128; this is the one fast exp of the CPU kernels (k_softmax.c
 * and, through its row helpers, attention use it too). */
static inline float exp_poly(float x) {
  const float log2e = 1.44269504088896341f;
  const float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;
  const float round_magic = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
  float xc = x > -104.0f ? x : -104.0f;  /* NaN -> -104 here, restored below */
  xc = xc < 89.0f ? xc : 89.0f;
  float n = (xc * log2e + round_magic) - round_magic;
  float r = (xc - n * ln2_hi) - n * ln2_lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  /* n in [-150, 128] splits as n1 = floor((n + 150) / 2) - 75, n2 = n - n1,
   * each in [-75, 64]; an unsigned shift, not a signed division (which
   * wasm SIMD lacks, so clang scalarized it) */
  int32_t ni = (int32_t)n, n1 = (int32_t)((uint32_t)(ni + 150) >> 1) - 75, n2 = ni - n1;
  float y = p * f32_from_bits((n1 + 127) * (1 << 23)) * f32_from_bits((n2 + 127) * (1 << 23));
  return x != x ? x : y;
}

/* 1/(1+e^-x) computed from e = e^-|x| in (0, 1], so it neither overflows
 * nor divides inf by inf for large |x|. */
static inline float sigmoid_stable(float x) {
  float e = exp_poly(-fabsf(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

/* Small |x| (< 0.625): the Cephes tanhf odd polynomial, accurate where
 * 1 - e^-2|x| would cancel; otherwise (1 - e) / (1 + e) with e = e^-2|x|,
 * which saturates to 1 for large |x|.  Both are computed on |x|, one is
 * selected, and x's sign (also of -0) is put back. */
static inline float tanh_poly(float x) {
  float ax = fabsf(x), z = x * x;
  float small = ((((-5.70498872745e-3f * z + 2.06390887954e-2f) * z - 5.37397155531e-2f) * z +
                  1.33314422036e-1f) * z - 3.33332819422e-1f) * z * ax + ax;
  float e = exp_poly(-2.0f * ax);
  float large = (1.0f - e) / (1.0f + e);
  return copysignf(ax < 0.625f ? small : large, x);
}

#endif
