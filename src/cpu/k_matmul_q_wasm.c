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
 * range, so the result is the same).  For x rounded to 8 bits (matmul_q's
 * xq8), rows of int8 dot products: Q4_0 by SIMD128 extmul; in the relaxed
 * build Q4_0 and Q8_0 by i32x4.relaxed_dot_i8x16_i7x16_add_s where the
 * engine computes it exactly (checked once at run time). */
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
/* The sum the odd blocks go to: acc2, or acc itself (then in block order). */
#define ODD_SUM(acc, acc2) (NSUM == 2 ? &(acc2) : &(acc))
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

/* The f16 scales at p, p + step, p + 2 step, p + 3 step as f32 lanes
 * (rlx_f16_fast's arithmetic, four at a time). */
static inline v128_t f16x4(const uint8_t *p, size_t step) {
  uint16_t h[4];
  for (int k = 0; k < 4; k++) memcpy(&h[k], p + k * step, 2);
  const v128_t v = wasm_i32x4_make(h[0], h[1], h[2], h[3]);
  const v128_t em = wasm_v128_and(v, wasm_i32x4_splat(0x7fff)), shifted = wasm_i32x4_shl(em, 13);
  const v128_t scaled = MUL(shifted, wasm_f32x4_splat(0x1p112f));
  const v128_t special = wasm_v128_or(shifted, wasm_i32x4_splat(0x7f800000));
  const v128_t bits = wasm_v128_bitselect(special, scaled, wasm_i32x4_ge(em, wasm_i32x4_splat(0x7c00)));
  return wasm_v128_or(bits, wasm_i32x4_shl(wasm_v128_and(v, wasm_i32x4_splat(0x8000)), 16));
}
/* lane k of v in every lane */
#define LANE(v, k) wasm_i32x4_shuffle(v, v, k, k, k, k)

static inline v128_t lo4(v128_t v) { return wasm_v128_and(v, wasm_i8x16_splat(15)); }
static inline v128_t hi4(v128_t v) { return wasm_u8x16_shr(v, 4); }

/* Q8_0 [d f16][32 int8]; d: the block's scale in every lane */
static inline v128_t block_q8_0(v128_t acc, v128_t d, const uint8_t *p, const float *x) {
  return MADD(acc, d, dot32(LD(p + 2), LD(p + 18), x));
}
static void rows_q8_0(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y,
                      size_t nrows) {
  (void)xsum;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    v128_t acc = wasm_f32x4_splat(0.0f), acc2 = acc, *odd = ODD_SUM(acc, acc2);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, p += 136) { /* four blocks' scales converted at once */
      const v128_t d = f16x4(p, 34);
      acc = block_q8_0(acc, LANE(d, 0), p, x + 32 * b);
      *odd = block_q8_0(*odd, LANE(d, 1), p + 34, x + 32 * b + 32);
      acc = block_q8_0(acc, LANE(d, 2), p + 68, x + 32 * b + 64);
      *odd = block_q8_0(*odd, LANE(d, 3), p + 102, x + 32 * b + 96);
    }
    for (; b + 2 <= nb; b += 2, p += 68) {
      acc = block_q8_0(acc, wasm_f32x4_splat(f16(p)), p, x + 32 * b);
      *odd = block_q8_0(*odd, wasm_f32x4_splat(f16(p + 34)), p + 34, x + 32 * b + 32);
    }
    for (; b < nb; b++, p += 34) acc = block_q8_0(acc, wasm_f32x4_splat(f16(p)), p, x + 32 * b);
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
static inline v128_t block_32(v128_t acc, v128_t d, const uint8_t *p, const float *x, int five, int affine) {
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
  return MADD(acc, d, dot32(lo, hi, x));
}
/* mins plus two affine blocks' m . sum(x) (m at p + 2 and p + bytes + 2),
 * added as each build always added them. */
static inline float pair_mins(float mins, const uint8_t *p, size_t bytes, const float *xsum) {
  const float m0 = f16(p + 2) * xsum[0], m1 = f16(p + bytes + 2) * xsum[1];
  return NSUM == 2 ? mins + (m0 + m1) : (mins + m0) + m1;
}
static inline void rows_32(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y,
                           size_t nrows, int five, int affine) {
  const size_t bytes = 18 + 4 * (size_t)five + 2 * (size_t)affine;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    v128_t acc = wasm_f32x4_splat(0.0f), acc2 = acc, *odd = ODD_SUM(acc, acc2);
    float mins = 0.0f;
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, p += 4 * bytes) { /* four blocks' scales converted at once */
      const v128_t d = f16x4(p, bytes);
      if (affine) mins = pair_mins(pair_mins(mins, p, bytes, xsum + b), p + 2 * bytes, bytes, xsum + b + 2);
      acc = block_32(acc, LANE(d, 0), p, x + 32 * b, five, affine);
      *odd = block_32(*odd, LANE(d, 1), p + bytes, x + 32 * b + 32, five, affine);
      acc = block_32(acc, LANE(d, 2), p + 2 * bytes, x + 32 * b + 64, five, affine);
      *odd = block_32(*odd, LANE(d, 3), p + 3 * bytes, x + 32 * b + 96, five, affine);
    }
    for (; b + 2 <= nb; b += 2, p += 2 * bytes) {
      if (affine) mins = pair_mins(mins, p, bytes, xsum + b);
      acc = block_32(acc, wasm_f32x4_splat(f16(p)), p, x + 32 * b, five, affine);
      *odd = block_32(*odd, wasm_f32x4_splat(f16(p + bytes)), p + bytes, x + 32 * b + 32, five, affine);
    }
    for (; b < nb; b++, p += bytes) {
      if (affine) mins += f16(p + 2) * xsum[b];
      acc = block_32(acc, wasm_f32x4_splat(f16(p)), p, x + 32 * b, five, affine);
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

/* ---- x rounded to 8 bits (xq8): int8 . int8 ------------------------------ */

/* 32 int8 codes (a: 0..15, b: 16..31) . 32 int8 codes of x, as four i32
 * partial sums: two products of |128 . 127| fit an i16, so each half's
 * products are added as i16 before one pairwise widening. */
static inline v128_t idot32(v128_t a, v128_t b, const int8_t *xq) {
  const v128_t xa = LD(xq), xb = LD(xq + 16);
  const v128_t p = wasm_i16x8_add(wasm_i16x8_extmul_low_i8x16(a, xa), wasm_i16x8_extmul_high_i8x16(a, xa));
  const v128_t r = wasm_i16x8_add(wasm_i16x8_extmul_low_i8x16(b, xb), wasm_i16x8_extmul_high_i8x16(b, xb));
  return wasm_i32x4_add(wasm_i32x4_extadd_pairwise_i16x8(p), wasm_i32x4_extadd_pairwise_i16x8(r));
}

/* Q4_0 rows: (codes - 8) . xq.  q4_0_idot: one block's, as f32 lanes. */
static inline v128_t q4_0_idot(const uint8_t *p, const int8_t *xq) {
  const v128_t v = LD(p + 2), eight = wasm_i8x16_splat(8);
  return CVT(idot32(wasm_i8x16_sub(lo4(v), eight), wasm_i8x16_sub(hi4(v), eight), xq));
}
static void rows8_q4_0(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, const int32_t *xs,
                       int64_t nb, float *y, size_t nrows) {
  (void)xs;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    v128_t acc = wasm_f32x4_splat(0.0f);
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, p += 72) { /* four blocks' scales converted at once */
      const v128_t d = MUL(f16x4(p, 18), LD(xd + b));
      acc = MADD(acc, LANE(d, 0), q4_0_idot(p, xq + 32 * b));
      acc = MADD(acc, LANE(d, 1), q4_0_idot(p + 18, xq + 32 * b + 32));
      acc = MADD(acc, LANE(d, 2), q4_0_idot(p + 36, xq + 32 * b + 64));
      acc = MADD(acc, LANE(d, 3), q4_0_idot(p + 54, xq + 32 * b + 96));
    }
    for (; b < nb; b++, p += 18) acc = MADD(acc, wasm_f32x4_splat(f16(p) * xd[b]), q4_0_idot(p, xq + 32 * b));
    y[r] = hsum(acc);
  }
}

#if defined(__wasm_relaxed_simd__)
/* The relaxed build's Q4_0 rows: the unsigned nibbles are the 7-bit
 * operand of i32x4.relaxed_dot_i8x16_i7x16_add_s (exact on every engine
 * for operands below 128), 8 xs[b] subtracted from one lane. */
static inline v128_t ndot32(const uint8_t *c, const int8_t *xq, int32_t xs) {
  const v128_t v = LD(c);
  const v128_t i = wasm_i32x4_relaxed_dot_i8x16_i7x16_add(LD(xq), lo4(v), wasm_i32x4_make(-8 * xs, 0, 0, 0));
  return wasm_i32x4_relaxed_dot_i8x16_i7x16_add(LD(xq + 16), hi4(v), i);
}
/* 32 Q8_0 codes at c . 32 codes of x: |code| (the 7-bit operand) times x
 * with the code's sign, (x ^ m) - m for m = -1 where the code is negative
 * (x's codes are within +-127: no overflow).  A code of -128 gives 0x80,
 * outside the 7 bits: an engine that reads it as 128 (x86) is exact, any
 * other fails the check below. */
static inline v128_t sdot32(const uint8_t *c, const int8_t *xq) {
  const v128_t zero = wasm_i8x16_splat(0), c0 = LD(c), c1 = LD(c + 16);
  const v128_t m0 = wasm_i8x16_lt(c0, zero), m1 = wasm_i8x16_lt(c1, zero);
  const v128_t s0 = wasm_i8x16_sub(wasm_v128_xor(LD(xq), m0), m0);
  const v128_t s1 = wasm_i8x16_sub(wasm_v128_xor(LD(xq + 16), m1), m1);
  const v128_t i = wasm_i32x4_relaxed_dot_i8x16_i7x16_add(s0, wasm_i8x16_abs(c0), wasm_i32x4_splat(0));
  return wasm_i32x4_relaxed_dot_i8x16_i7x16_add(s1, wasm_i8x16_abs(c1), i);
}
/* Q8_0 (q4 0) or Q4_0 (q4 1) rows by the relaxed dot: two sums in
 * straight-line code, as rows_q8_0. */
static inline v128_t dot_block(const uint8_t *p, const int8_t *xq, int32_t xs, int q4) {
  return CVT(q4 ? ndot32(p + 2, xq, xs) : sdot32(p + 2, xq));
}
/* always_inline: each wrapper below gets its own loop, q4 a constant */
static inline __attribute__((always_inline)) void rows8_dot(const uint8_t *w, size_t stride, const int8_t *xq,
                                                            const float *xd, const int32_t *xs, int64_t nb, float *y,
                                                            size_t nrows, int q4) {
  const size_t bytes = q4 ? 18 : 34;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    v128_t acc = wasm_f32x4_splat(0.0f), acc2 = acc;
    int64_t b = 0;
    for (; b + 4 <= nb; b += 4, p += 4 * bytes) { /* four blocks' scales converted at once */
      const v128_t d = MUL(f16x4(p, bytes), LD(xd + b));
      acc = MADD(acc, LANE(d, 0), dot_block(p, xq + 32 * b, xs[b], q4));
      acc2 = MADD(acc2, LANE(d, 1), dot_block(p + bytes, xq + 32 * b + 32, xs[b + 1], q4));
      acc = MADD(acc, LANE(d, 2), dot_block(p + 2 * bytes, xq + 32 * b + 64, xs[b + 2], q4));
      acc2 = MADD(acc2, LANE(d, 3), dot_block(p + 3 * bytes, xq + 32 * b + 96, xs[b + 3], q4));
    }
    for (; b + 2 <= nb; b += 2, p += 2 * bytes) {
      acc = MADD(acc, wasm_f32x4_splat(f16(p) * xd[b]), dot_block(p, xq + 32 * b, xs[b], q4));
      acc2 = MADD(acc2, wasm_f32x4_splat(f16(p + bytes) * xd[b + 1]),
                  dot_block(p + bytes, xq + 32 * b + 32, xs[b + 1], q4));
    }
    for (; b < nb; b++, p += bytes) acc = MADD(acc, wasm_f32x4_splat(f16(p) * xd[b]), dot_block(p, xq + 32 * b, xs[b], q4));
    y[r] = hsum(ADD(acc, acc2));
  }
}
#define ROWS8(name, q4)                                                                                        \
  static void name(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, const int32_t *xs,       \
                   int64_t nb, float *y, size_t nrows) {                                                       \
    rows8_dot(w, stride, xq, xd, xs, nb, y, nrows, q4);                                                        \
  }
ROWS8(rows8_q8_0_dot, 0)
ROWS8(rows8_q4_0_dot, 1)

/* Whether this engine computes the relaxed-dot rows exactly: Node 20's V8
 * (11.3) gives wrong sums when the 7-bit operand was computed in a
 * register, as here (Chromium's does not), and an engine may read a 0x80
 * operand as -128.  The kernels themselves run once, called through
 * volatile pointers on data the compiler cannot see (so neither is inlined
 * into the check or folded away), on fixed blocks (scales 1, integer
 * sums, so every float step is exact; a Q8_0 code of -128), and must give
 * the exact sums. */
static int dot_rows_exact(void) {
  static int known; /* 0: not asked, 1: no, 2: yes */
  if (!known) {
    static volatile uint8_t seed = 11;
    rlx_wt_rows8_fn volatile q4 = rows8_q4_0_dot, q8 = rows8_q8_0_dot;
    uint8_t w4[2 * 18], w8[2 * 34];
    int8_t xb[64];
    float d[2] = {1.0f, 1.0f}, got4 = 0, got8 = 0;
    int32_t s[2] = {0, 0}, want4 = 0, want8 = 0;
    const uint8_t k = seed;
    for (int i = 0; i < 36; i++) w4[i] = (uint8_t)(i * 37 + k);
    for (int i = 0; i < 68; i++) w8[i] = (uint8_t)(i * 59 + k - 8);
    w8[7] = 0x80;
    w4[0] = w4[18] = w8[0] = w8[34] = 0, w4[1] = w4[19] = w8[1] = w8[35] = 0x3c; /* f16 1.0 */
    for (int i = 0; i < 64; i++) xb[i] = (int8_t)((i * 53 + k) % 255 - 127), s[i / 32] += xb[i];
    for (int b = 0; b < 2; b++)
      for (int j = 0; j < 16; j++) {
        const int c = w4[18 * b + 2 + j];
        want4 += ((c & 15) - 8) * xb[32 * b + j] + ((c >> 4) - 8) * xb[32 * b + 16 + j];
        want8 += (int8_t)w8[34 * b + 2 + j] * xb[32 * b + j] + (int8_t)w8[34 * b + 18 + j] * xb[32 * b + 16 + j];
      }
    q4(w4, 36, xb, d, s, 2, &got4, 1);
    q8(w8, 68, xb, d, s, 2, &got8, 1);
    known = got4 == (float)want4 && got8 == (float)want8 ? 2 : 1;
  }
  return known == 2;
}
#endif

/* The SIMD128 build has no Q8_0 int8 rows: extmul ones ran slower than its
 * f32 rows on the rounded x, which is what xq8 takes for Q8_0 there. */
static const rlx_wt_rows8_set simd128_rows8 = {NULL, rows8_q4_0};

const rlx_wt_rows8_set *rlx_wt_rows8_simd128(void) {
#if defined(__wasm_relaxed_simd__)
  static const rlx_wt_rows8_set dot_rows8 = {rows8_q8_0_dot, rows8_q4_0_dot};
  if (dot_rows_exact()) return &dot_rows8;
#endif
  return &simd128_rows8;
}

#else /* not wasm SIMD128 */

const rlx_wt_rows_set *rlx_wt_rows_simd128(void) { return NULL; }
const rlx_wt_rows8_set *rlx_wt_rows8_simd128(void) { return NULL; }

#endif
