/* k_q8_tile_x86.c - the int8 tiles of prompts with xq8 on x86-64
 * (matmul_q.h's rlx_q8_tile_fn, the same value bit for bit as the
 * portable tile and the int8 rows): 2 x rows x 2 weight rows at a time
 * with AVX2 (vpmaddubsw on |w| and x with w's sign, or on Q4_0's nibbles
 * 0..15 and x, less 8 (sum of x); vpmaddwd pairs to i32 lanes), or 4 x 4
 * with AVX-512 VNNI (vpdpbusd, two blocks per register: the even block's
 * lanes low, the odd one's high, so one register holds both sums).  The
 * library is built without these ISAs: the functions carry target
 * attributes and are handed out only when the running CPU has them. */
#include "matmul_q.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include "x86_avx2.h"

#define VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))
#define INLINE static inline __attribute__((always_inline)) /* each tile specialized for its type, in registers */

/* ---- AVX2: 2 x 2 ---------------------------------------------------------- */

/* block's 32 codes: Q8_0's int8, Q4_0's nibbles 0..15 (low: 0..15, high: 16..31) */
AVX2 INLINE __m256i codes(const uint8_t *p, int q4) {
  if (!q4) return _mm256_loadu_si256((const __m256i *)(p + 2));
  const __m128i v = _mm_loadu_si128((const __m128i *)(p + 2)), m = _mm_set1_epi8(15);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}

/* acc[m][n] (2 x 2) += d_w xd (lanes of w[n]'s block at off . x[m]'s block b) */
AVX2 INLINE void step2(__m256 acc[2][2], const uint8_t *const w[2], size_t off, const int8_t *const x[2],
                              const float *const d[2], int64_t b, int q4) {
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i c[2];
  __m256 dw[2];
#pragma GCC unroll 16
  for (int n = 0; n < 2; n++) {
    c[n] = codes(w[n] + off, q4);
    dw[n] = _mm256_set1_ps(f16(w[n] + off));
  }
#pragma GCC unroll 16
  for (int m = 0; m < 2; m++) {
    const __m256i xv = _mm256_loadu_si256((const __m256i *)(x[m] + 32 * b));
    const __m256 xd = _mm256_broadcast_ss(d[m] + b);
    const __m256i off8 = q4 ? _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(8), xv), ones) : ones;
#pragma GCC unroll 16
    for (int n = 0; n < 2; n++) {
      __m256i l;
      if (q4) l = _mm256_sub_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(c[n], xv), ones), off8);
      else l = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(c[n]), _mm256_sign_epi8(xv, c[n])), ones);
      acc[m][n] = _mm256_fmadd_ps(_mm256_mul_ps(dw[n], xd), _mm256_cvtepi32_ps(l), acc[m][n]);
    }
  }
}

AVX2 INLINE void tile_avx2(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, size_t M,
                                  int64_t nb, float *y, size_t ldy, size_t N, int q4) {
  const size_t bytes = q4 ? 18 : 34, K = 32 * (size_t)nb;
  for (size_t n0 = 0; n0 < N; n0 += 2)
    for (size_t m0 = 0; m0 < M; m0 += 2) {
      const size_t n1 = n0 + 1 < N ? n0 + 1 : n0, m1 = m0 + 1 < M ? m0 + 1 : m0; /* edges: a row twice */
      const uint8_t *const wr[2] = {w + n0 * stride, w + n1 * stride};
      const int8_t *const xr[2] = {xq + m0 * K, xq + m1 * K};
      const float *const dr[2] = {xd + m0 * (size_t)nb, xd + m1 * (size_t)nb};
      __m256 e[2][2], o[2][2];
#pragma GCC unroll 16
      for (int i = 0; i < 4; i++) e[i / 2][i % 2] = o[i / 2][i % 2] = _mm256_setzero_ps();
      int64_t b = 0;
      for (; b + 2 <= nb; b += 2) {
        step2(e, wr, (size_t)b * bytes, xr, dr, b, q4);
        step2(o, wr, (size_t)(b + 1) * bytes, xr, dr, b + 1, q4);
      }
      if (b < nb) step2(e, wr, (size_t)b * bytes, xr, dr, b, q4);
#pragma GCC unroll 16
      for (int i = 0; i < 2; i++)
#pragma GCC unroll 16
        for (int j = 0; j < 2; j++)
          if (m0 + (size_t)i < M && n0 + (size_t)j < N)
            y[(m0 + (size_t)i) * ldy + n0 + (size_t)j] = hsum(_mm256_add_ps(e[i][j], o[i][j]));
    }
}

#define TILE(name, body, q4)                                                                                     \
  static void name(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, size_t M, int64_t nb,     \
                   float *y, size_t ldy, size_t N) {                                                             \
    body(w, stride, xq, xd, M, nb, y, ldy, N, q4);                                                               \
  }
AVX2 TILE(avx2_q8_0, tile_avx2, 0)
AVX2 TILE(avx2_q4_0, tile_avx2, 1)
static const rlx_q8_tile_set avx2_set = {avx2_q8_0, avx2_q4_0, "avx2"};

/* ---- AVX-512 VNNI: 4 x 4, blocks b and b + 1 in one register ------------- */

enum { MR = 4, NR = 4 };

/* 64 codes of blocks b (low 256 bits) and b + 1 (high), or block b alone
 * (one): Q8_0's int8, Q4_0's nibbles 0..15 */
VNNI INLINE __m512i codes2(const uint8_t *p, size_t bytes, int q4, int one) {
  if (!q4) {
    const __m256i lo = _mm256_loadu_si256((const __m256i *)(p + 2));
    return one ? _mm512_zextsi256_si512(lo)
               : _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256((const __m256i *)(p + bytes + 2)), 1);
  }
  const __m128i a = _mm_loadu_si128((const __m128i *)(p + 2));
  const __m128i b = one ? _mm_setzero_si128() : _mm_loadu_si128((const __m128i *)(p + bytes + 2));
  const __m256i v = _mm256_set_m128i(b, a), m = _mm256_set1_epi8(15);
  const __m256i lo = _mm256_and_si256(v, m), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m); /* [lo a, lo b], [hi a, hi b] */
  const __m512i z = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);                  /* lo a, lo b, hi a, hi b */
  return _mm512_shuffle_i64x2(z, z, _MM_SHUFFLE(3, 1, 2, 0));                                  /* lo a, hi a, lo b, hi b */
}
/* two floats at lanes 0 and 1 of v spread to 8 lanes each */
VNNI INLINE __m512 spread2(__m128 v) {
  return _mm512_permutexvar_ps(_mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0), _mm512_castps128_ps512(v));
}

/* acc[m][n] (4 x 4) += the two blocks from b (one: b alone, into the low lanes only) */
VNNI INLINE void step4(__m512 acc[MR][NR], const uint8_t *const w[NR], size_t bytes, const int8_t *const x[MR],
                              const float *const d[MR], int64_t b, int q4, int one) {
  const __m512i zero = _mm512_setzero_si512();
  __m512i c[NR], fix[NR];
  __m512 dw[NR];
  const size_t off = (size_t)b * bytes;
#pragma GCC unroll 16
  for (int n = 0; n < NR; n++) {
    c[n] = codes2(w[n] + off, bytes, q4, one);
    const uint32_t h = half_at(w[n] + off) | (one ? 0u : (uint32_t)half_at(w[n] + off + bytes) << 16);
    dw[n] = spread2(_mm_cvtph_ps(_mm_cvtsi32_si128((int)h)));
    /* Q8_0: x + 128 (u8) . w less 128 (sum of w's 4 codes) */
    if (!q4) fix[n] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8((char)0x80), c[n]));
  }
#pragma GCC unroll 16
  for (int m = 0; m < MR; m++) {
    const __m512i xv = one ? _mm512_zextsi256_si512(_mm256_loadu_si256((const __m256i *)(x[m] + 32 * b)))
                           : _mm512_loadu_si512((const void *)(x[m] + 32 * b));
    const __m128 dd = one ? _mm_load_ss(d[m] + b) : _mm_castsi128_ps(_mm_loadl_epi64((const __m128i *)(d[m] + b)));
    const __m512 xd = spread2(dd);
    /* Q4_0: nibbles (u8) . x less 8 (sum of x's 4 codes); Q8_0: x + 128 */
    const __m512i xfix = q4 ? _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(8), xv)) : zero;
    const __m512i xu = q4 ? xv : _mm512_xor_si512(xv, _mm512_set1_epi8((char)0x80));
#pragma GCC unroll 16
    for (int n = 0; n < NR; n++) {
      const __m512i l = q4 ? _mm512_dpbusd_epi32(xfix, c[n], xv) : _mm512_dpbusd_epi32(fix[n], xu, c[n]);
      const __m512 s = _mm512_mul_ps(dw[n], xd), lf = _mm512_cvtepi32_ps(l);
      acc[m][n] = one ? _mm512_mask3_fmadd_ps(s, lf, acc[m][n], 0x00ff) : _mm512_fmadd_ps(s, lf, acc[m][n]);
    }
  }
}

VNNI INLINE void tile_vnni(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, size_t M,
                                  int64_t nb, float *y, size_t ldy, size_t N, int q4) {
  const size_t bytes = q4 ? 18 : 34, K = 32 * (size_t)nb;
  for (size_t n0 = 0; n0 < N; n0 += NR)
    for (size_t m0 = 0; m0 < M; m0 += MR) {
      const uint8_t *wr[NR];
      const int8_t *xr[MR];
      const float *dr[MR];
#pragma GCC unroll 16
      for (size_t i = 0; i < NR; i++) wr[i] = w + (n0 + i < N ? n0 + i : N - 1) * stride; /* edges: a row again */
#pragma GCC unroll 16
      for (size_t i = 0; i < MR; i++) {
        const size_t m = m0 + i < M ? m0 + i : M - 1;
        xr[i] = xq + m * K, dr[i] = xd + m * (size_t)nb;
      }
      __m512 acc[MR][NR];
#pragma GCC unroll 16
      for (int i = 0; i < MR * NR; i++) acc[i / NR][i % NR] = _mm512_setzero_ps();
      int64_t b = 0;
      for (; b + 2 <= nb; b += 2) step4(acc, wr, bytes, xr, dr, b, q4, 0);
      if (b < nb) step4(acc, wr, bytes, xr, dr, b, q4, 1);
#pragma GCC unroll 16
      for (int i = 0; i < MR; i++)
#pragma GCC unroll 16
        for (int j = 0; j < NR; j++) {
          if (m0 + (size_t)i >= M || n0 + (size_t)j >= N) continue;
          const __m512 a = acc[i][j];
          y[(m0 + (size_t)i) * ldy + n0 + (size_t)j] =
              hsum(_mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1))));
        }
    }
}
VNNI TILE(vnni_q8_0, tile_vnni, 0)
VNNI TILE(vnni_q4_0, tile_vnni, 1)
static const rlx_q8_tile_set vnni_set = {vnni_q8_0, vnni_q4_0, "avx512vnni"};

const rlx_q8_tile_set *rlx_q8_tiles_avx2(void) { return rlx_wt_rows_avx2() ? &avx2_set : NULL; }

static int has_vnni(void) {
  return rlx_wt_rows_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni");
}

/* AVX-512 F, BW, VL and VNNI */
const rlx_q8_tile_set *rlx_q8_tiles_vnni(void) {
  static int known;
  return cpu_has_once(&known, has_vnni) ? &vnni_set : NULL;
}

#elif !defined(__wasm__)

const rlx_q8_tile_set *rlx_q8_tiles_avx2(void) { return NULL; }
const rlx_q8_tile_set *rlx_q8_tiles_vnni(void) { return NULL; }

#endif
