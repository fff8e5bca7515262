/* k_matmul_q_x86.c - AVX2 + FMA fused rows for matmul_q's one-token
 * product: nrows quantized weight rows, each dotted with one f32 row x[K]
 * -> y[nrows], every weight byte read once and never written out as
 * floats.  Each block's codes become int8 lanes (nibbles masked, fifth or
 * sixth bits merged, the offset subtracted), are widened eight at a time
 * to floats and multiplied with x by FMA; the block's scale multiplies the
 * block's vector sum, and the minimums of Q4_1, Q5_1 and the K types come
 * from xsum (sums of x per 32 values).  The library is built without
 * -mavx2: these functions carry a target attribute and are handed out
 * only when the running CPU has AVX2, FMA and F16C. */
#include "../models/gguf_quants.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

#include "x86_avx2.h"

/* the low 8 int8 lanes of v as 8 floats */
AVX2 static inline __m256 cvt8(__m128i v) { return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v)); }
AVX2 static inline __m128i i8x16(uint8_t v) { return _mm_set1_epi8((char)v); }
AVX2 static inline __m256i i8x32(uint8_t v) { return _mm256_set1_epi8((char)v); }

/* 16 int8 codes . x[0..16) as 8 partial sums */
AVX2 static inline __m256 dot16(__m128i c, const float *x) {
  __m256 s = _mm256_mul_ps(cvt8(c), _mm256_loadu_ps(x));
  return _mm256_fmadd_ps(cvt8(_mm_unpackhi_epi64(c, c)), _mm256_loadu_ps(x + 8), s);
}
/* 32 codes (lo: codes 0..15, hi: 16..31) . x[0..32) */
AVX2 static inline __m256 dot32(__m128i lo, __m128i hi, const float *x) {
  return _mm256_add_ps(dot16(lo, x), dot16(hi, x + 16));
}
AVX2 static inline __m256 dot32y(__m256i c, const float *x) {
  return dot32(_mm256_castsi256_si128(c), _mm256_extracti128_si256(c, 1), x);
}

/* Q8_0 [d f16][32 int8]: the codes widen straight from memory */
AVX2 static void rows_q8_0(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y,
                           size_t nrows) {
  (void)xsum;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    for (int64_t b = 0; b < nb; b++, p += 34) {
      const float *xb = x + 32 * b;
      __m256 s0 = _mm256_mul_ps(cvt8(_mm_loadl_epi64((const __m128i *)(p + 2))), _mm256_loadu_ps(xb));
      __m256 s1 = _mm256_mul_ps(cvt8(_mm_loadl_epi64((const __m128i *)(p + 10))), _mm256_loadu_ps(xb + 8));
      s0 = _mm256_fmadd_ps(cvt8(_mm_loadl_epi64((const __m128i *)(p + 18))), _mm256_loadu_ps(xb + 16), s0);
      s1 = _mm256_fmadd_ps(cvt8(_mm_loadl_epi64((const __m128i *)(p + 26))), _mm256_loadu_ps(xb + 24), s1);
      __m256 d = _mm256_set1_ps(f16(p));
      acc0 = _mm256_fmadd_ps(d, s0, acc0);
      acc1 = _mm256_fmadd_ps(d, s1, acc1);
    }
    y[r] = hsum(_mm256_add_ps(acc0, acc1));
  }
}

/* One type's rows: inner with the type's constant arguments. */
#define ROWS(name, inner, ...)                                                                                    \
  AVX2 static void name(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y, \
                        size_t nrows) {                                                                           \
    inner(w, stride, x, xsum, nb, y, nrows, __VA_ARGS__);                                                         \
  }

/* 16 nibble bytes -> codes 0..15 (low nibbles) and 16..31 (high) */
AVX2 static inline void nibbles(const uint8_t *q, __m128i *lo, __m128i *hi) {
  __m128i v = _mm_loadu_si128((const __m128i *)q);
  *lo = _mm_and_si128(v, i8x16(15));
  *hi = _mm_and_si128(_mm_srli_epi16(v, 4), i8x16(15));
}

/* 0x10 in byte i where bit i of the u32 at p is set (the fifth bits of a
 * Q5 block, bytes in element order) */
AVX2 static inline __m256i fifth_bits(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0);
  __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)v), spread);
  bytes = _mm256_or_si256(bytes, _mm256_set1_epi64x(0x7fbfdfeff7fbfdfe)); /* all bits but bit i % 8 */
  return _mm256_and_si256(_mm256_cmpeq_epi8(bytes, _mm256_set1_epi64x(-1)), i8x32(0x10));
}
/* the 32 five-bit codes of a Q5 block */
AVX2 static inline __m256i q5_codes(const uint8_t *qh, const uint8_t *qs) {
  __m128i lo, hi;
  nibbles(qs, &lo, &hi);
  return _mm256_or_si256(_mm256_set_m128i(hi, lo), fifth_bits(qh));
}

/* Q4_0 [d f16][16 nibble bytes], Q4_1 [d f16][m f16][16 nibble bytes],
 * Q5_0 [d f16][u32 fifth bits][16 nibble bytes] and Q5_1 [d][m][u32][16]:
 * d (code - 8 or 16), or d code + m (affine). */
AVX2 static inline void rows_32(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb,
                                float *y, size_t nrows, int five, int affine) {
  const size_t bytes = 18 + 4 * (size_t)five + 2 * (size_t)affine, head = 2 + 2 * (size_t)affine;
  const __m128i off = i8x16(five ? 16 : 8);
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    __m256 acc = _mm256_setzero_ps();
    float mins = 0.0f;
    for (int64_t b = 0; b < nb; b++, p += bytes) {
      __m128i lo, hi;
      if (five) {
        __m256i c = q5_codes(p + head, p + head + 4);
        lo = _mm256_castsi256_si128(c), hi = _mm256_extracti128_si256(c, 1);
      } else {
        nibbles(p + head, &lo, &hi);
      }
      if (affine) mins += f16(p + 2) * xsum[b];
      else lo = _mm_sub_epi8(lo, off), hi = _mm_sub_epi8(hi, off);
      acc = _mm256_fmadd_ps(_mm256_set1_ps(f16(p)), dot32(lo, hi, x + 32 * b), acc);
    }
    y[r] = hsum(acc) + mins;
  }
}
ROWS(rows_q4_0, rows_32, 0, 0)
ROWS(rows_q4_1, rows_32, 0, 1)
ROWS(rows_q5_0, rows_32, 1, 0)
ROWS(rows_q5_1, rows_32, 1, 1)

/* Q4_K / Q5_K (fifth bits when hbits): sub-block j of block b contributes
 * d sc_j (codes . x) - dmin m_j xsum[8 b + j]. */
AVX2 static inline void rows_k45(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb,
                                 float *y, size_t nrows, int hbits) {
  const size_t bytes = hbits ? 176 : 144;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    __m256 acc = _mm256_setzero_ps(), mins = acc;
    for (int64_t b = 0; b < nb; b++, p += bytes) {
      uint32_t u[4];
      rlx_k4_scales_unpack(p + 4, u);
      __m128i sm = _mm_loadu_si128((const __m128i *)u);
      float dsc[8];
      _mm256_storeu_ps(dsc, _mm256_mul_ps(_mm256_set1_ps(f16(p)), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sm))));
      __m256 m = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_unpackhi_epi64(sm, sm)));
      mins = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(f16(p + 2)), m), _mm256_loadu_ps(xsum + 8 * b), mins);
      const uint8_t *q = p + (hbits ? 48 : 16);
      const float *xb = x + 256 * b;
      __m256i h = hbits ? _mm256_loadu_si256((const __m256i *)(p + 16)) : _mm256_setzero_si256();
      for (int c = 0; c < 4; c++, q += 32, xb += 64) {
        __m256i v = _mm256_loadu_si256((const __m256i *)q);
        __m256i lo = _mm256_and_si256(v, i8x32(15)), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), i8x32(15));
        if (hbits) { /* bit 2c of byte l (element 64 c + l), bit 2c + 1 (64 c + 32 + l) */
          lo = _mm256_or_si256(lo, _mm256_and_si256(_mm256_slli_epi16(h, 4), i8x32(0x10)));
          hi = _mm256_or_si256(hi, _mm256_and_si256(_mm256_slli_epi16(h, 3), i8x32(0x10)));
          h = _mm256_srli_epi16(h, 2);
        }
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dsc + 2 * c), dot32y(lo, xb), acc);
        acc = _mm256_fmadd_ps(_mm256_broadcast_ss(dsc + 2 * c + 1), dot32y(hi, xb + 32), acc);
      }
    }
    y[r] = hsum(_mm256_sub_ps(acc, mins));
  }
}
ROWS(rows_q4_k, rows_k45, 0)
ROWS(rows_q5_k, rows_k45, 1)

/* Q6_K [128 ql][64 qh][16 int8 scales][d f16]: per half h, the 32 bytes
 * at ql + 64 h (+ 32) and qh + 32 h give four runs of 32 codes (elements
 * 128 h + 32 k + l), each run two sub-blocks of 16 with their own scale. */
AVX2 static void rows_q6_k(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nb, float *y,
                           size_t nrows) {
  (void)xsum;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    __m256 acc = _mm256_setzero_ps(), acc1 = acc; /* two chains: the FMA latency */
    for (int64_t b = 0; b < nb; b++, p += 210) {
      float sc[16]; /* d scale_j */
      const __m256 d = _mm256_set1_ps(f16(p + 208));
      const __m128i s8 = _mm_loadu_si128((const __m128i *)(p + 192));
      _mm256_storeu_ps(sc, _mm256_mul_ps(d, cvt8(s8)));
      _mm256_storeu_ps(sc + 8, _mm256_mul_ps(d, cvt8(_mm_unpackhi_epi64(s8, s8))));
      for (int h = 0; h < 2; h++) {
        const float *xh = x + 256 * b + 128 * h;
        __m256i l0 = _mm256_loadu_si256((const __m256i *)(p + 64 * h));
        __m256i l1 = _mm256_loadu_si256((const __m256i *)(p + 64 * h + 32));
        __m256i qh = _mm256_loadu_si256((const __m256i *)(p + 128 + 32 * h));
        const __m256i m4 = i8x32(15), m2 = i8x32(0x30);
        __m256i c[4] = {
            _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 4), m2)),
            _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(qh, 2), m2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(qh, m2)),
            _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                            _mm256_and_si256(_mm256_srli_epi16(qh, 2), m2))};
        for (int k = 0; k < 4; k++) {
          __m256i v = _mm256_sub_epi8(c[k], i8x32(32));
          const int s = 8 * h + 2 * k;
          acc = _mm256_fmadd_ps(_mm256_broadcast_ss(sc + s), dot16(_mm256_castsi256_si128(v), xh + 32 * k), acc);
          acc1 = _mm256_fmadd_ps(_mm256_broadcast_ss(sc + s + 1),
                                 dot16(_mm256_extracti128_si256(v, 1), xh + 32 * k + 16), acc1);
        }
      }
    }
    y[r] = hsum(_mm256_add_ps(acc, acc1));
  }
}

static const rlx_wt_rows_set avx2_rows = {rows_q8_0, rows_q4_0, rows_q4_1, rows_q5_0,
                                            rows_q5_1, rows_q4_k, rows_q5_k, rows_q6_k};

/* ---- x rounded to 8 bits (xq8): int8 . int8 ------------------------------ */

/* 32 int8 codes c . 32 int8 codes of x as 8 i32 partial sums: |c| (u8)
 * times x with c's sign (vpmaddubsw; two products of 128 . 127 fit an
 * i16), pairs added to i32 (vpmaddwd by ones). */
AVX2 static inline __m256i idot32(__m256i c, const int8_t *xq) {
  const __m256i x = _mm256_loadu_si256((const __m256i *)xq);
  const __m256i p = _mm256_maddubs_epi16(_mm256_abs_epi8(c), _mm256_sign_epi8(x, c));
  return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}

/* Block b's 32 codes as int8: Q8_0 [d f16][32 int8], Q4_0 [d f16][16
 * nibble bytes] (code - 8). */
AVX2 static inline __m256i codes8(const uint8_t *p, int q4) {
  if (!q4) return _mm256_loadu_si256((const __m256i *)(p + 2));
  __m128i lo, hi;
  nibbles(p + 2, &lo, &hi);
  return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), i8x32(8));
}
/* acc + d_w xd (codes . xq) for the block at p */
AVX2 static inline __m256 block8(__m256 acc, const uint8_t *p, const int8_t *xq, float xd, int q4) {
  return _mm256_fmadd_ps(_mm256_set1_ps(f16(p) * xd), _mm256_cvtepi32_ps(idot32(codes8(p, q4), xq)), acc);
}
/* Q8_0 / Q4_0 rows over x rounded to 8 bits: two sums, alternate blocks */
AVX2 static inline void rows8_32(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, int64_t nb,
                                 float *y, size_t nrows, int q4) {
  const size_t bytes = q4 ? 18 : 34;
  for (size_t r = 0; r < nrows; r++, w += stride) {
    const uint8_t *p = w;
    __m256 acc = _mm256_setzero_ps(), acc1 = acc;
    int64_t b = 0;
    for (; b + 2 <= nb; b += 2, p += 2 * bytes) {
      acc = block8(acc, p, xq + 32 * b, xd[b], q4);
      acc1 = block8(acc1, p + bytes, xq + 32 * b + 32, xd[b + 1], q4);
    }
    for (; b < nb; b++, p += bytes) acc = block8(acc, p, xq + 32 * b, xd[b], q4);
    y[r] = hsum(_mm256_add_ps(acc, acc1));
  }
}
#define ROWS8(name, q4)                                                                                     \
  AVX2 static void name(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, const int32_t *xs, \
                        int64_t nb, float *y, size_t nrows) {                                               \
    (void)xs;                                                                                               \
    rows8_32(w, stride, xq, xd, nb, y, nrows, q4);                                                          \
  }
ROWS8(rows8_q8_0, 0)
ROWS8(rows8_q4_0, 1)

static const rlx_wt_rows8_set avx2_rows8 = {rows8_q8_0, rows8_q4_0};

static int has_avx2_fma_f16c(void) {
  unsigned a, b, c, d; /* F16C by cpuid: clang 14's __builtin_cpu_supports does not know "f16c" */
  int f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
}

const rlx_wt_rows_set *rlx_wt_rows_avx2(void) {
  static int known;
  return cpu_has_once(&known, has_avx2_fma_f16c) ? &avx2_rows : NULL;
}

const rlx_wt_rows8_set *rlx_wt_rows8_avx2(void) { return rlx_wt_rows_avx2() ? &avx2_rows8 : NULL; }

#else /* not x86-64 */

const rlx_wt_rows_set *rlx_wt_rows_avx2(void) { return NULL; }
const rlx_wt_rows8_set *rlx_wt_rows8_avx2(void) { return NULL; }

#endif
