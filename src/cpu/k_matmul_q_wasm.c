/* k_matmul_q_wasm.c - WebAssembly SIMD128 fused rows for matmul_q's
 * one-token product: nrows quantized weight rows, each dotted with one f32
 * row x[K] -> y[nrows], every weight byte read once.  As in
 * k_matmul_q_x86.c: a block's codes become int8 lanes (nibbles masked,
 * fifth or sixth bits merged, the offset subtracted), are widened to i32
 * and converted four at a time, multiplied with x (SIMD128 has no fused
 * multiply-add: mul then add), and the block's sum is scaled; the
 * minimums of Q4_1, Q5_1 and the K types come from xsum (sums of x per 32
 * values).  Built with -mrelaxed-simd (the relaxed modules:
 * tools/relaxed_simd.mk), each multiply-add is one f32x4.relaxed_madd
 * (fused where the CPU has FMA: the last bits may differ), the rows of
 * the 32-value types keep two partial sums (NSUM below), and the Q5
 * fifth-bit bytes are spread with relaxed_swizzle (its indices are in
 * range, so the result is the same). */
#include "../models/gguf_quants.h"

#if defined(__wasm_simd128__)
#include <string.h>
#include <wasm_simd128.h>

static inline float hsum(v128_t v) {
  v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 2, 3, 0, 1));
  v = wasm_f32x4_add(v, wasm_i32x4_shuffle(v, v, 1, 0, 3, 2));
  return wasm_f32x4_extract_lane(v, 0);
}

static inline float f16(const uint8_t *p) {
  uint16_t h;
  memcpy(&h, p, 2);
  return rlx_f16_fast(h);
}

#define LD(p) wasm_v128_load(p)
#define MUL wasm_f32x4_mul
#define ADD wasm_f32x4_add
/* acc + a * b */
#if defined(__wasm_relaxed_simd__)
#define MADD(acc, a, b) wasm_f32x4_relaxed_madd(a, b, acc)
#define SWIZZLE wasm_i8x16_relaxed_swizzle
#else
#define MADD(acc, a, b) ADD(acc, MUL(a, b))
#define SWIZZLE wasm_i8x16_swizzle
#endif
/* The partial sums of a 32-value row, acc and acc2.  Fused, a block's
 * multiply-add waits for the one before it (4 cycles, against 2-3 for an
 * add), so the relaxed build gives each Q8_0 / Q4_0 / Q4_1 / Q5 row two
 * sums, taken by alternate blocks in straight-line code and added at the
 * end; the SIMD128 build keeps one (acc2 stays unused).  The K types keep
 * one: a second sum made them slower (V8 runs out of registers there). */
#if defined(__wasm_relaxed_simd__)
#define NSUM 2
#else
#define NSUM 1
#endif
#define SUM_OF(acc, acc2) (NSUM == 2 ? ADD(acc, acc2) : (acc))
/* i32 lanes -> f32.  The empty asm hides the widening before it from LLVM
 * 14, which otherwise fuses i16 -> i32 -> f32 into one conversion that it
 * then does lane by lane (ten times slower).  LLVM 19 (the relaxed build)
 * converts four lanes at a time without it, and its backend fails on a
 * v128 asm operand. */
static inline v128_t CVT(v128_t i) {
#if __clang_major__ < 19
  __asm__("" : "+r"(i));
#endif
  return wasm_f32x4_convert_i32x4(i);
}

/* 16 int8 codes . x[0..16) as 4 partial sums */
static inline v128_t dot16(v128_t c, const float *x) {
  const v128_t a = wasm_i16x8_extend_low_i8x16(c), b = wasm_i16x8_extend_high_i8x16(c);
  v128_t s0 = MUL(CVT(wasm_i32x4_extend_low_i16x8(a)), LD(x));
  v128_t s1 = MUL(CVT(wasm_i32x4_extend_high_i16x8(a)), LD(x + 4));
  s0 = MADD(s0, CVT(wasm_i32x4_extend_low_i16x8(b)), LD(x + 8));
  s1 = MADD(s1, CVT(wasm_i32x4_extend_high_i16x8(b)), LD(x + 12));
  return ADD(s0, s1);
}
/* 32 codes (lo: codes 0..15, hi: 16..31) . x[0..32) */
static inline v128_t dot32(v128_t lo, v128_t hi, const float *x) { return ADD(dot16(lo, x), dot16(hi, x + 16)); }

static inline v128_t lo4(v128_t v) { return wasm_v128_and(v, wasm_i8x16_splat(15)); }
static inline v128_t hi4(v128_t v) { return wasm_u8x16_shr(v, 4); }

/* Q8_0 [d f16][32 int8] */
static inline v128_t block_q8_0(v128_t acc, const uint8_t *p, const float *x) {
  return MADD(acc, wasm_f32x4_splat(f16(p)), dot32(LD(p + 2), LD(p + 18), x));
}
static void rows_q8_0(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y,
                      size_t nrows) {
  (void)xsum;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    v128_t acc = wasm_f32x4_splat(0.0f), acc2 = acc;
    int64_t b = 0;
    if (NSUM == 2)
      for (; b + 2 <= nb; b += 2, p += 68) {
        acc = block_q8_0(acc, p, x + 32 * b);
        acc2 = block_q8_0(acc2, p + 34, x + 32 * b + 32);
      }
    for (; b < nb; b++, p += 34) acc = block_q8_0(acc, p, x + 32 * b);
    y[r] = hsum(SUM_OF(acc, acc2));
  }
}

/* The 32 five-bit codes of a Q5 block (fifth bits: the u32 at qh, bit i
 * for element i) as lo (elements 0..15) and hi (16..31). */
static inline void q5_codes(const uint8_t *qh, const uint8_t *qs, v128_t *lo, v128_t *hi) {
  uint32_t u;
  memcpy(&u, qh, 4);
  const v128_t bits = wasm_u64x2_splat(0x8040201008040201ull), all = wasm_i32x4_splat((int32_t)u);
  const v128_t b0 = SWIZZLE(all, wasm_i8x16_make(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1));
  const v128_t b1 = SWIZZLE(all, wasm_i8x16_make(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
  const v128_t sixteen = wasm_i8x16_splat(0x10), v = LD(qs);
  *lo = wasm_v128_or(lo4(v), wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(b0, bits), bits), sixteen));
  *hi = wasm_v128_or(hi4(v), wasm_v128_and(wasm_i8x16_eq(wasm_v128_and(b1, bits), bits), sixteen));
}

/* One type's rows: inner with the type's constant arguments. */
#define ROWS(name, inner, ...)                                                                                    \
  static void name(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y,     \
                   size_t nrows) {                                                                               \
    inner(w, stride, x, xsum, nb, y, nrows, __VA_ARGS__);                                                         \
  }

/* Q4_0 [d f16][16 nibble bytes], Q4_1 [d f16][m f16][16 nibble bytes],
 * Q5_0 [d f16][u32 fifth bits][16 nibble bytes] and Q5_1 [d][m][u32][16]:
 * d (code - 8 or 16), or d code + m (affine).  block_32: acc plus one
 * block's d (code - 8 or 16) . x, or d code . x (its m is added by rows_32). */
static inline v128_t block_32(v128_t acc, const uint8_t *p, const float *x, int five, int affine) {
  const size_t head = 2 + 2 * (size_t)affine;
  v128_t lo, hi;
  if (five) {
    q5_codes(p + head, p + head + 4, &lo, &hi);
  } else {
    const v128_t v = LD(p + head);
    lo = lo4(v), hi = hi4(v);
  }
  if (!affine) {
    const v128_t off = wasm_i8x16_splat(five ? 16 : 8);
    lo = wasm_i8x16_sub(lo, off), hi = wasm_i8x16_sub(hi, off);
  }
  return MADD(acc, wasm_f32x4_splat(f16(p)), dot32(lo, hi, x));
}
static inline void rows_32(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y,
                           size_t nrows, int five, int affine) {
  const size_t bytes = 18 + 4 * (size_t)five + 2 * (size_t)affine;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    v128_t acc = wasm_f32x4_splat(0.0f), acc2 = acc;
    float mins = 0.0f;
    int64_t b = 0;
    if (NSUM == 2)
      for (; b + 2 <= nb; b += 2, p += 2 * bytes) {
        if (affine) mins += f16(p + 2) * xsum[b] + f16(p + bytes + 2) * xsum[b + 1];
        acc = block_32(acc, p, x + 32 * b, five, affine);
        acc2 = block_32(acc2, p + bytes, x + 32 * b + 32, five, affine);
      }
    for (; b < nb; b++, p += bytes) {
      if (affine) mins += f16(p + 2) * xsum[b];
      acc = block_32(acc, p, x + 32 * b, five, affine);
    }
    y[r] = hsum(SUM_OF(acc, acc2)) + mins;
  }
}
ROWS(rows_q4_0, rows_32, 0, 0)
ROWS(rows_q4_1, rows_32, 0, 1)
ROWS(rows_q5_0, rows_32, 1, 0)
ROWS(rows_q5_1, rows_32, 1, 1)

/* a Q4_K / Q5_K block's 8 scales (bytes 0..7) and 8 mins (8..15) */
static inline v128_t k_scales(const uint8_t *s) {
  uint32_t u[4];
  rlx_k4_scales_unpack(s, u);
  return wasm_v128_load(u);
}
/* u8 lanes 0..3 / 4..7 of an i16x8 of them, as floats */
static inline v128_t u16_lo(v128_t v) { return CVT(wasm_u32x4_extend_low_u16x8(v)); }
static inline v128_t u16_hi(v128_t v) { return CVT(wasm_u32x4_extend_high_u16x8(v)); }

/* Q4_K / Q5_K (fifth bits when hbits): sub-block j of block b contributes
 * d sc_j (codes . x) - dmin m_j xsum[8 b + j]. */
static inline void rows_k45(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb,
                            float *y, size_t nrows, int hbits) {
  const size_t bytes = hbits ? 176 : 144;
  const v128_t sixteen = wasm_i8x16_splat(0x10);
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    v128_t acc = wasm_f32x4_splat(0.0f), mins = acc;
    for (int64_t b = 0; b < nb; b++, p += bytes) {
      const v128_t sm = k_scales(p + 4), s16 = wasm_u16x8_extend_low_u8x16(sm), m16 = wasm_u16x8_extend_high_u8x16(sm);
      const v128_t d = wasm_f32x4_splat(f16(p)), dmin = wasm_f32x4_splat(f16(p + 2));
      float dsc[8];
      wasm_v128_store(dsc, MUL(d, u16_lo(s16)));
      wasm_v128_store(dsc + 4, MUL(d, u16_hi(s16)));
      mins = MADD(mins, MUL(dmin, u16_lo(m16)), LD(xsum + 8 * b));
      mins = MADD(mins, MUL(dmin, u16_hi(m16)), LD(xsum + 8 * b + 4));
      const uint8_t *q = p + (hbits ? 48 : 16);
      const float *xb = x + 256 * b;
      v128_t h0 = hbits ? LD(p + 16) : wasm_i8x16_splat(0), h1 = hbits ? LD(p + 32) : h0;
      for (int c = 0; c < 4; c++, q += 32, xb += 64) {
        const v128_t v0 = LD(q), v1 = LD(q + 16);
        v128_t a0 = lo4(v0), a1 = lo4(v1), b0 = hi4(v0), b1 = hi4(v1);
        if (hbits) { /* bit 2c of byte l (element 64 c + l), bit 2c + 1 (64 c + 32 + l) */
          a0 = wasm_v128_or(a0, wasm_v128_and(wasm_i8x16_shl(h0, 4), sixteen));
          a1 = wasm_v128_or(a1, wasm_v128_and(wasm_i8x16_shl(h1, 4), sixteen));
          b0 = wasm_v128_or(b0, wasm_v128_and(wasm_i8x16_shl(h0, 3), sixteen));
          b1 = wasm_v128_or(b1, wasm_v128_and(wasm_i8x16_shl(h1, 3), sixteen));
          h0 = wasm_u8x16_shr(h0, 2);
          h1 = wasm_u8x16_shr(h1, 2);
        }
        acc = MADD(acc, wasm_f32x4_splat(dsc[2 * c]), dot32(a0, a1, xb));
        acc = MADD(acc, wasm_f32x4_splat(dsc[2 * c + 1]), dot32(b0, b1, xb + 32));
      }
    }
    y[r] = hsum(wasm_f32x4_sub(acc, mins));
  }
}
ROWS(rows_q4_k, rows_k45, 0)
ROWS(rows_q5_k, rows_k45, 1)

/* Q6_K [128 ql][64 qh][16 int8 scales][d f16]: per half h and 16-byte
 * chunk i, the bytes at ql + 64 h (+ 32) + 16 i and qh + 32 h + 16 i give
 * four runs of 16 codes (elements 128 h + 32 k + 16 i + l), each one
 * sub-block with its own scale. */
static void rows_q6_k(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y,
                      size_t nrows) {
  (void)xsum;
  const v128_t m2 = wasm_i8x16_splat(0x30), off = wasm_i8x16_splat(32);
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    v128_t acc = wasm_f32x4_splat(0.0f);
    for (int64_t b = 0; b < nb; b++, p += 210) {
      const int8_t *sc = (const int8_t *)(p + 192);
      const float d = f16(p + 208);
      for (int h = 0; h < 2; h++)
        for (int i = 0; i < 2; i++) {
          const float *xh = x + 256 * b + 128 * h + 16 * i;
          const v128_t l0 = LD(p + 64 * h + 16 * i), l1 = LD(p + 64 * h + 32 + 16 * i);
          const v128_t qh = LD(p + 128 + 32 * h + 16 * i);
          const v128_t c[4] = {
              wasm_v128_or(lo4(l0), wasm_v128_and(wasm_i8x16_shl(qh, 4), m2)),
              wasm_v128_or(lo4(l1), wasm_v128_and(wasm_i8x16_shl(qh, 2), m2)),
              wasm_v128_or(hi4(l0), wasm_v128_and(qh, m2)),
              wasm_v128_or(hi4(l1), wasm_v128_and(wasm_u8x16_shr(qh, 2), m2))};
          for (int k = 0; k < 4; k++)
            acc = MADD(acc, wasm_f32x4_splat(d * (float)sc[8 * h + 2 * k + i]),
                       dot16(wasm_i8x16_sub(c[k], off), xh + 32 * k));
        }
    }
    y[r] = hsum(acc);
  }
}

static const rlx_wt_rows_set simd128_rows = {rows_q8_0, rows_q4_0, rows_q4_1, rows_q5_0,
                                               rows_q5_1, rows_q4_k, rows_q5_k, rows_q6_k};

const rlx_wt_rows_set *rlx_wt_rows_simd128(void) { return &simd128_rows; }

#else /* not wasm SIMD128 */

const rlx_wt_rows_set *rlx_wt_rows_simd128(void) { return NULL; }

#endif
