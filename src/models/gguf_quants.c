/* gguf_quants.c - the GGUF weight types: the table built from
 * include/rlx_gguf_types.def, half / bfloat16 conversion, and for each type
 * the portable row kernels (dequantize, quantize, dot with an f32 vector)
 * behind the checked public calls of rlx_gguf.h.
 *
 * Quantization rounds to nearest inside each block.  Scales are chosen so
 * that every value of the block lies inside the representable range after
 * the scales themselves are rounded to f16 (or to 6 or 8 bits for the
 * K-types' sub-block scales): the affine types round their minimum down and
 * their step up; the K-types round the sub-block scales and mins up.  The
 * error is then at most half a step per value (Q4_0 and Q5_0 use the
 * format's customary d = -max / 8 (16), which spends the code -8 (-16) on
 * the extreme value and leaves the opposite end at most one step off).
 * Non-finite inputs are refused by the public wrapper; a kernel reports a
 * block whose scale does not fit an f16. */
#include <math.h>
#include <string.h>

#include "gguf_quants.h"
#include "../core/core.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the F32 tensor path assumes a little-endian host (x86, arm, wasm)"
#endif

/* ---- half and bfloat16 ---------------------------------------------------- */
float rlx_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, bits;
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in float */
    float v = (float)m * 0x1p-24f;
    return sign ? -v : v;
  }
  if (e == 0x1f) bits = sign | 0x7f800000u | (m << 13); /* inf, NaN (payload kept) */
  else bits = sign | ((e + 112u) << 23) | (m << 13);
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t rlx_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | ((ax >> 13) & 0x1ffu)); /* quiet NaN */
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520 (and inf): inf */
  if (ax >= 0x38800000u) { /* a normal half: round the 13 dropped bits to nearest even */
    uint32_t r = ax + 0xfffu + ((ax >> 13) & 1u);
    return (uint16_t)(sign | ((r - 0x38000000u) >> 13));
  }
  float a;
  memcpy(&a, &ax, 4);
  return (uint16_t)(sign | (uint16_t)lrintf(a * 0x1p24f)); /* subnormal; 1024 is the first normal */
}

float rlx_bf16_to_f32(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  memcpy(&f, &bits, 4);
  return f;
}

uint16_t rlx_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/* Smallest half >= v (v finite); inf when v is past the largest half. */
static uint16_t f16_up(float v) {
  uint16_t h = rlx_f32_to_f16(v);
  if (rlx_f16_to_f32(h) < v) h = (h == 0x8000u) ? 1u : (h & 0x8000u) ? (uint16_t)(h - 1) : (uint16_t)(h + 1);
  return h;
}
static uint16_t f16_down(float v) { return (uint16_t)(f16_up(-v) ^ 0x8000u); }
static int f16_finite(uint16_t h) { return (h & 0x7c00u) != 0x7c00u; }

static float ld_f16(const uint8_t *p) { return rlx_f16_to_f32((uint16_t)(p[0] | (p[1] << 8))); }
static void st_f16(uint8_t *p, uint16_t h) {
  p[0] = (uint8_t)h;
  p[1] = (uint8_t)(h >> 8);
}

/* Nearest integer of v in [lo, hi] (NaN -> lo); the float is clamped
 * before the conversion, which is then defined. */
static int rnd_clamp(float v, int lo, int hi) {
  if (!(v > (float)lo)) return lo;
  if (v >= (float)hi) return hi;
  return (int)lrintf(v);
}
static int ceil_clamp(float v, int lo, int hi) {
  if (!(v > (float)lo)) return lo;
  if (v >= (float)hi) return hi;
  return (int)ceilf(v);
}
static float inv(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

/* ---- F32, F16, BF16 --------------------------------------------------------- */
void rlx_wt_dequant_F32(const uint8_t *src, float *dst, int64_t n) { memcpy(dst, src, (size_t)n * 4); }
int64_t rlx_wt_quant_F32(const float *src, uint8_t *dst, int64_t n) {
  memcpy(dst, src, (size_t)n * 4);
  return -1;
}
float rlx_wt_dot_F32(const uint8_t *row, const float *x, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; i++) {
    float v;
    memcpy(&v, row + 4 * i, 4);
    acc += v * x[i];
  }
  return acc;
}

void rlx_wt_dequant_F16(const uint8_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = ld_f16(src + 2 * i);
}
int64_t rlx_wt_quant_F16(const float *src, uint8_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) st_f16(dst + 2 * i, rlx_f32_to_f16(src[i]));
  return -1;
}
float rlx_wt_dot_F16(const uint8_t *row, const float *x, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; i++) acc += ld_f16(row + 2 * i) * x[i];
  return acc;
}

static float ld_bf16(const uint8_t *p) { return rlx_bf16_to_f32((uint16_t)(p[0] | (p[1] << 8))); }
void rlx_wt_dequant_BF16(const uint8_t *src, float *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) dst[i] = ld_bf16(src + 2 * i);
}
int64_t rlx_wt_quant_BF16(const float *src, uint8_t *dst, int64_t n) {
  for (int64_t i = 0; i < n; i++) st_f16(dst + 2 * i, rlx_f32_to_bf16(src[i]));
  return -1;
}
float rlx_wt_dot_BF16(const uint8_t *row, const float *x, int64_t n) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; i++) acc += ld_bf16(row + 2 * i) * x[i];
  return acc;
}

/* ---- Q8_0: [d f16][32 x int8] ------------------------------------------------ */
void rlx_wt_dequant_Q8_0(const uint8_t *src, float *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, src += 34, dst += 32) {
    float d = ld_f16(src);
    for (int j = 0; j < 32; j++) dst[j] = d * (float)(int8_t)src[2 + j];
  }
}
int64_t rlx_wt_quant_Q8_0(const float *x, uint8_t *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, x += 32, dst += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
    uint16_t h = f16_up(amax / 127.0f);
    if (!f16_finite(h)) return b;
    float id = inv(rlx_f16_to_f32(h));
    st_f16(dst, h);
    for (int j = 0; j < 32; j++) dst[2 + j] = (uint8_t)(int8_t)rnd_clamp(x[j] * id, -127, 127);
  }
  return -1;
}
float rlx_wt_dot_Q8_0(const uint8_t *row, const float *x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; b++, row += 34, x += 32) {
    float s = 0.0f;
    for (int j = 0; j < 32; j++) s += (float)(int8_t)row[2 + j] * x[j];
    acc += ld_f16(row) * s;
  }
  return acc;
}

/* ---- Q4_0, Q5_0: symmetric, d = -max / 8 (16) ------------------------------
 * Nibble byte j: element j low, element j + 16 high.  Q5_0's u32 (bytes 2-5)
 * holds the fifth bit of element i at bit i. */
static float signed_max(const float *x, int n) {
  float m = 0.0f, a = 0.0f;
  for (int j = 0; j < n; j++)
    if (fabsf(x[j]) > a) {
      a = fabsf(x[j]);
      m = x[j];
    }
  return m;
}

void rlx_wt_dequant_Q4_0(const uint8_t *src, float *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, src += 18, dst += 32) {
    float d = ld_f16(src);
    const uint8_t *qs = src + 2;
    for (int j = 0; j < 16; j++) {
      dst[j] = d * (float)((qs[j] & 15) - 8);
      dst[j + 16] = d * (float)((qs[j] >> 4) - 8);
    }
  }
}
int64_t rlx_wt_quant_Q4_0(const float *x, uint8_t *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, x += 32, dst += 18) {
    uint16_t h = rlx_f32_to_f16(signed_max(x, 32) / -8.0f);
    if (!f16_finite(h)) return b;
    float id = inv(rlx_f16_to_f32(h));
    st_f16(dst, h);
    for (int j = 0; j < 16; j++) {
      int lo = rnd_clamp(x[j] * id + 8.0f, 0, 15), hi = rnd_clamp(x[j + 16] * id + 8.0f, 0, 15);
      dst[2 + j] = (uint8_t)(lo | (hi << 4));
    }
  }
  return -1;
}
float rlx_wt_dot_Q4_0(const uint8_t *row, const float *x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; b++, row += 18, x += 32) {
    const uint8_t *qs = row + 2;
    float s = 0.0f;
    for (int j = 0; j < 16; j++) s += (float)((qs[j] & 15) - 8) * x[j] + (float)((qs[j] >> 4) - 8) * x[j + 16];
    acc += ld_f16(row) * s;
  }
  return acc;
}

static uint32_t ld_u32(const uint8_t *p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static void st_u32(uint8_t *p, uint32_t v) {
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* The 32 five-bit codes of a Q5 block: low nibbles at qs, fifth bits in qh. */
static void q5_codes(const uint8_t *qs, uint32_t qh, int *q) {
  for (int j = 0; j < 16; j++) {
    q[j] = (qs[j] & 15) | (int)(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | (int)(((qh >> (j + 16)) & 1u) << 4);
  }
}
static void q5_pack(const int *q, uint8_t *qh_out, uint8_t *qs) {
  uint32_t qh = 0;
  for (int j = 0; j < 16; j++) {
    qs[j] = (uint8_t)((q[j] & 15) | ((q[j + 16] & 15) << 4));
    qh |= (uint32_t)(q[j] >> 4) << j;
    qh |= (uint32_t)(q[j + 16] >> 4) << (j + 16);
  }
  st_u32(qh_out, qh);
}

void rlx_wt_dequant_Q5_0(const uint8_t *src, float *dst, int64_t nb) {
  int q[32];
  for (int64_t b = 0; b < nb; b++, src += 22, dst += 32) {
    float d = ld_f16(src);
    q5_codes(src + 6, ld_u32(src + 2), q);
    for (int j = 0; j < 32; j++) dst[j] = d * (float)(q[j] - 16);
  }
}
int64_t rlx_wt_quant_Q5_0(const float *x, uint8_t *dst, int64_t nb) {
  int q[32];
  for (int64_t b = 0; b < nb; b++, x += 32, dst += 22) {
    uint16_t h = rlx_f32_to_f16(signed_max(x, 32) / -16.0f);
    if (!f16_finite(h)) return b;
    float id = inv(rlx_f16_to_f32(h));
    st_f16(dst, h);
    for (int j = 0; j < 32; j++) q[j] = rnd_clamp(x[j] * id + 16.0f, 0, 31);
    q5_pack(q, dst + 2, dst + 6);
  }
  return -1;
}
float rlx_wt_dot_Q5_0(const uint8_t *row, const float *x, int64_t nb) {
  int q[32];
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; b++, row += 22, x += 32) {
    q5_codes(row + 6, ld_u32(row + 2), q);
    float s = 0.0f;
    for (int j = 0; j < 32; j++) s += (float)(q[j] - 16) * x[j];
    acc += ld_f16(row) * s;
  }
  return acc;
}

/* ---- Q4_1, Q5_1: affine, x = d q + m ------------------------------------------
 * m is the block minimum rounded down to f16 and d the step rounded up, so
 * every value lies in [m, m + levels d]. */
static int affine_scales(const float *x, int levels, uint16_t *dh, uint16_t *mh, float *id, float *m) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < 32; j++) {
    mn = fminf(mn, x[j]);
    mx = fmaxf(mx, x[j]);
  }
  *mh = f16_down(mn);
  if (!f16_finite(*mh)) return 0;
  *m = rlx_f16_to_f32(*mh);
  *dh = f16_up((mx - *m) / (float)levels);
  if (!f16_finite(*dh)) return 0;
  *id = inv(rlx_f16_to_f32(*dh));
  return 1;
}

void rlx_wt_dequant_Q4_1(const uint8_t *src, float *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, src += 20, dst += 32) {
    float d = ld_f16(src), m = ld_f16(src + 2);
    const uint8_t *qs = src + 4;
    for (int j = 0; j < 16; j++) {
      dst[j] = d * (float)(qs[j] & 15) + m;
      dst[j + 16] = d * (float)(qs[j] >> 4) + m;
    }
  }
}
int64_t rlx_wt_quant_Q4_1(const float *x, uint8_t *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, x += 32, dst += 20) {
    uint16_t dh, mh;
    float id, m;
    if (!affine_scales(x, 15, &dh, &mh, &id, &m)) return b;
    st_f16(dst, dh);
    st_f16(dst + 2, mh);
    for (int j = 0; j < 16; j++) {
      int lo = rnd_clamp((x[j] - m) * id, 0, 15), hi = rnd_clamp((x[j + 16] - m) * id, 0, 15);
      dst[4 + j] = (uint8_t)(lo | (hi << 4));
    }
  }
  return -1;
}
float rlx_wt_dot_Q4_1(const uint8_t *row, const float *x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; b++, row += 20, x += 32) {
    const uint8_t *qs = row + 4;
    float s = 0.0f, sx = 0.0f;
    for (int j = 0; j < 16; j++) {
      s += (float)(qs[j] & 15) * x[j] + (float)(qs[j] >> 4) * x[j + 16];
      sx += x[j] + x[j + 16];
    }
    acc += ld_f16(row) * s + ld_f16(row + 2) * sx;
  }
  return acc;
}

void rlx_wt_dequant_Q5_1(const uint8_t *src, float *dst, int64_t nb) {
  int q[32];
  for (int64_t b = 0; b < nb; b++, src += 24, dst += 32) {
    float d = ld_f16(src), m = ld_f16(src + 2);
    q5_codes(src + 8, ld_u32(src + 4), q);
    for (int j = 0; j < 32; j++) dst[j] = d * (float)q[j] + m;
  }
}
int64_t rlx_wt_quant_Q5_1(const float *x, uint8_t *dst, int64_t nb) {
  int q[32];
  for (int64_t b = 0; b < nb; b++, x += 32, dst += 24) {
    uint16_t dh, mh;
    float id, m;
    if (!affine_scales(x, 31, &dh, &mh, &id, &m)) return b;
    st_f16(dst, dh);
    st_f16(dst + 2, mh);
    for (int j = 0; j < 32; j++) q[j] = rnd_clamp((x[j] - m) * id, 0, 31);
    q5_pack(q, dst + 4, dst + 8);
  }
  return -1;
}
float rlx_wt_dot_Q5_1(const uint8_t *row, const float *x, int64_t nb) {
  int q[32];
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; b++, row += 24, x += 32) {
    q5_codes(row + 8, ld_u32(row + 4), q);
    float s = 0.0f, sx = 0.0f;
    for (int j = 0; j < 32; j++) {
      s += (float)q[j] * x[j];
      sx += x[j];
    }
    acc += ld_f16(row) * s + ld_f16(row + 2) * sx;
  }
  return acc;
}

/* ---- Q4_K, Q5_K: 256 values, 8 sub-blocks of 32 ---------------------------------
 * [d f16][dmin f16][12 bytes: 8 six-bit scales and 8 six-bit mins]
 * (Q5_K: [32 bytes of fifth bits]) [128 bytes of nibbles].
 * Scale bytes: for j < 4, byte j = scale_j | (scale_{j+4} >> 4) << 6 and
 * byte j + 4 = min_j | (min_{j+4} >> 4) << 6; byte j + 8 = (scale_{j+4} & 15) |
 * (min_{j+4} & 15) << 4.  Nibble byte 32 c + l holds element 64 c + l (low)
 * and 64 c + 32 + l (high); Q5_K's byte l of fifth bits holds those two
 * elements' fifth bits at bits 2c and 2c + 1. */
static void k4_scale(const uint8_t *s, int j, int *sc, int *m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}
static void k4_pack(uint8_t *s, const int *sc, const int *m) {
  for (int j = 0; j < 4; j++) {
    s[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
    s[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
}

/* Sub-block scales and mins of a 256-value block for codes 0..levels:
 * mins rounded up (so min_j >= -m1_j), then the scale covering
 * [-m1_j, max_j] rounded up.  d1[j], m1[j]: the effective step and offset. */
static int k4_scales(const float *x, int levels, uint8_t *head, float *d1, float *m1) {
  float mx[8], neg[8], negmax = 0.0f, smax = 0.0f, span[8];
  int sc[8], m[8];
  for (int j = 0; j < 8; j++) {
    float lo = x[32 * j], hi = x[32 * j];
    for (int l = 1; l < 32; l++) {
      lo = fminf(lo, x[32 * j + l]);
      hi = fmaxf(hi, x[32 * j + l]);
    }
    mx[j] = hi;
    neg[j] = lo < 0.0f ? -lo : 0.0f;
    negmax = fmaxf(negmax, neg[j]);
  }
  uint16_t hmin = f16_up(negmax / 63.0f);
  if (!f16_finite(hmin)) return 0;
  float dmin = rlx_f16_to_f32(hmin);
  for (int j = 0; j < 8; j++) {
    m[j] = dmin > 0.0f ? ceil_clamp(neg[j] / dmin, 0, 63) : 0;
    m1[j] = dmin * (float)m[j];
    span[j] = fmaxf(mx[j] + m1[j], 0.0f);
    smax = fmaxf(smax, span[j]);
  }
  uint16_t hd = f16_up(smax / (float)levels / 63.0f);
  if (!f16_finite(hd)) return 0;
  float d = rlx_f16_to_f32(hd);
  for (int j = 0; j < 8; j++) {
    sc[j] = d > 0.0f ? ceil_clamp(span[j] / (float)levels / d, 0, 63) : 0;
    d1[j] = d * (float)sc[j];
  }
  st_f16(head, hd);
  st_f16(head + 2, hmin);
  k4_pack(head + 4, sc, m);
  return 1;
}
/* Effective step and offset of sub-block j from a block's head. */
static void k4_sub(const uint8_t *head, int j, float *d1, float *m1) {
  int sc, m;
  k4_scale(head + 4, j, &sc, &m);
  *d1 = ld_f16(head) * (float)sc;
  *m1 = ld_f16(head + 2) * (float)m;
}

void rlx_wt_dequant_Q4_K(const uint8_t *src, float *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, src += 144) {
    const uint8_t *q = src + 16;
    for (int c = 0; c < 4; c++, q += 32) {
      float d1, m1, d2, m2;
      k4_sub(src, 2 * c, &d1, &m1);
      k4_sub(src, 2 * c + 1, &d2, &m2);
      for (int l = 0; l < 32; l++) *dst++ = d1 * (float)(q[l] & 15) - m1;
      for (int l = 0; l < 32; l++) *dst++ = d2 * (float)(q[l] >> 4) - m2;
    }
  }
}
int64_t rlx_wt_quant_Q4_K(const float *x, uint8_t *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, x += 256, dst += 144) {
    float d1[8], m1[8];
    if (!k4_scales(x, 15, dst, d1, m1)) return b;
    for (int c = 0; c < 4; c++) {
      float i1 = inv(d1[2 * c]), i2 = inv(d1[2 * c + 1]);
      for (int l = 0; l < 32; l++) {
        int lo = rnd_clamp((x[64 * c + l] + m1[2 * c]) * i1, 0, 15);
        int hi = rnd_clamp((x[64 * c + 32 + l] + m1[2 * c + 1]) * i2, 0, 15);
        dst[16 + 32 * c + l] = (uint8_t)(lo | (hi << 4));
      }
    }
  }
  return -1;
}
float rlx_wt_dot_Q4_K(const uint8_t *row, const float *x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; b++, row += 144) {
    const uint8_t *q = row + 16;
    for (int c = 0; c < 4; c++, q += 32, x += 64) {
      float d1, m1, d2, m2, s1 = 0.0f, s2 = 0.0f, x1 = 0.0f, x2 = 0.0f;
      k4_sub(row, 2 * c, &d1, &m1);
      k4_sub(row, 2 * c + 1, &d2, &m2);
      for (int l = 0; l < 32; l++) {
        s1 += (float)(q[l] & 15) * x[l];
        s2 += (float)(q[l] >> 4) * x[32 + l];
        x1 += x[l];
        x2 += x[32 + l];
      }
      acc += d1 * s1 - m1 * x1 + d2 * s2 - m2 * x2;
    }
  }
  return acc;
}

void rlx_wt_dequant_Q5_K(const uint8_t *src, float *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, src += 176) {
    const uint8_t *qh = src + 16, *q = src + 48;
    for (int c = 0; c < 4; c++, q += 32) {
      float d1, m1, d2, m2;
      k4_sub(src, 2 * c, &d1, &m1);
      k4_sub(src, 2 * c + 1, &d2, &m2);
      for (int l = 0; l < 32; l++) *dst++ = d1 * (float)((q[l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4)) - m1;
      for (int l = 0; l < 32; l++) *dst++ = d2 * (float)((q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4)) - m2;
    }
  }
}
int64_t rlx_wt_quant_Q5_K(const float *x, uint8_t *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, x += 256, dst += 176) {
    float d1[8], m1[8];
    if (!k4_scales(x, 31, dst, d1, m1)) return b;
    uint8_t *qh = dst + 16, *q = dst + 48;
    memset(qh, 0, 32);
    for (int c = 0; c < 4; c++) {
      float i1 = inv(d1[2 * c]), i2 = inv(d1[2 * c + 1]);
      for (int l = 0; l < 32; l++) {
        int lo = rnd_clamp((x[64 * c + l] + m1[2 * c]) * i1, 0, 31);
        int hi = rnd_clamp((x[64 * c + 32 + l] + m1[2 * c + 1]) * i2, 0, 31);
        q[32 * c + l] = (uint8_t)((lo & 15) | ((hi & 15) << 4));
        qh[l] = (uint8_t)(qh[l] | ((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
      }
    }
  }
  return -1;
}
float rlx_wt_dot_Q5_K(const uint8_t *row, const float *x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; b++, row += 176) {
    const uint8_t *qh = row + 16, *q = row + 48;
    for (int c = 0; c < 4; c++, q += 32, x += 64) {
      float d1, m1, d2, m2, s1 = 0.0f, s2 = 0.0f, x1 = 0.0f, x2 = 0.0f;
      k4_sub(row, 2 * c, &d1, &m1);
      k4_sub(row, 2 * c + 1, &d2, &m2);
      for (int l = 0; l < 32; l++) {
        s1 += (float)((q[l] & 15) | (((qh[l] >> (2 * c)) & 1) << 4)) * x[l];
        s2 += (float)((q[l] >> 4) | (((qh[l] >> (2 * c + 1)) & 1) << 4)) * x[32 + l];
        x1 += x[l];
        x2 += x[32 + l];
      }
      acc += d1 * s1 - m1 * x1 + d2 * s2 - m2 * x2;
    }
  }
  return acc;
}

/* ---- Q6_K: 256 values, 16 sub-blocks of 16 ------------------------------------
 * [128 bytes ql][64 bytes qh][16 x int8 scales][d f16].  Per half h (128
 * values) and l < 32, the codes of elements 128 h + l + 32 k (k = 0..3) are:
 * low nibbles ql[64 h + l] (k = 0 low, k = 2 high) and ql[64 h + 32 + l]
 * (k = 1 low, k = 3 high); high two bits in qh[32 h + l] at bits 2k.
 * Value = d * scale[e / 16] * (code - 32). */
void rlx_wt_dequant_Q6_K(const uint8_t *src, float *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, src += 210) {
    const uint8_t *ql = src, *qh = src + 128;
    const int8_t *sc = (const int8_t *)(src + 192);
    float d = ld_f16(src + 208);
    for (int h = 0; h < 2; h++, ql += 64, qh += 32, sc += 8, dst += 128)
      for (int l = 0; l < 32; l++) {
        int s = l / 16;
        dst[l] = d * (float)sc[s] * (float)(((ql[l] & 15) | ((qh[l] & 3) << 4)) - 32);
        dst[l + 32] = d * (float)sc[s + 2] * (float)(((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32);
        dst[l + 64] = d * (float)sc[s + 4] * (float)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        dst[l + 96] = d * (float)sc[s + 6] * (float)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
  }
}
int64_t rlx_wt_quant_Q6_K(const float *x, uint8_t *dst, int64_t nb) {
  for (int64_t b = 0; b < nb; b++, x += 256, dst += 210) {
    float s[16], smax = 0.0f;
    for (int j = 0; j < 16; j++) {
      float a = 0.0f;
      for (int l = 0; l < 16; l++) a = fmaxf(a, fabsf(x[16 * j + l]));
      s[j] = a / 31.0f;
      smax = fmaxf(smax, s[j]);
    }
    uint16_t hd = f16_up(smax / 127.0f);
    if (!f16_finite(hd)) return b;
    float d = rlx_f16_to_f32(hd);
    int code[256];
    for (int j = 0; j < 16; j++) {
      int sc = d > 0.0f ? ceil_clamp(s[j] / d, 0, 127) : 0;
      dst[192 + j] = (uint8_t)(int8_t)sc;
      float id = inv(d * (float)sc);
      for (int l = 0; l < 16; l++) code[16 * j + l] = rnd_clamp(x[16 * j + l] * id, -32, 31) + 32;
    }
    st_f16(dst + 208, hd);
    for (int h = 0; h < 2; h++)
      for (int l = 0; l < 32; l++) {
        const int *c = code + 128 * h + l;
        dst[64 * h + l] = (uint8_t)((c[0] & 15) | ((c[64] & 15) << 4));
        dst[64 * h + 32 + l] = (uint8_t)((c[32] & 15) | ((c[96] & 15) << 4));
        dst[128 + 32 * h + l] = (uint8_t)((c[0] >> 4) | ((c[32] >> 4) << 2) | ((c[64] >> 4) << 4) | ((c[96] >> 4) << 6));
      }
  }
  return -1;
}
float rlx_wt_dot_Q6_K(const uint8_t *row, const float *x, int64_t nb) {
  float acc = 0.0f;
  for (int64_t b = 0; b < nb; b++, row += 210) {
    const uint8_t *ql = row, *qh = row + 128;
    const int8_t *sc = (const int8_t *)(row + 192);
    float d = ld_f16(row + 208), part[16] = {0};
    for (int h = 0; h < 2; h++, ql += 64, qh += 32, x += 128)
      for (int l = 0; l < 32; l++) {
        int s = 8 * h + l / 16;
        part[s] += (float)(((ql[l] & 15) | ((qh[l] & 3) << 4)) - 32) * x[l];
        part[s + 2] += (float)(((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32) * x[l + 32];
        part[s + 4] += (float)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32) * x[l + 64];
        part[s + 6] += (float)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32) * x[l + 96];
      }
    float s = 0.0f;
    for (int j = 0; j < 16; j++) s += (float)sc[j] * part[j];
    acc += d * s;
  }
  return acc;
}

/* ---- the table ------------------------------------------------------------------ */
static const rlx_wtype WTYPES[RLX_WT_CODES] = {
#define RLX_GGUF_TYPE(ID, nm, cd, be, bb) \
  [cd] = {nm, cd, be, bb, rlx_wt_dequant_##ID, rlx_wt_quant_##ID, rlx_wt_dot_##ID},
#include "rlx_gguf_types.def"
#undef RLX_GGUF_TYPE
};

const rlx_wtype *rlx_wtype_get(uint32_t code) {
  return code < RLX_WT_CODES && WTYPES[code].name ? &WTYPES[code] : NULL;
}

/* ---- the public calls ------------------------------------------------------------- */
/* The type's entry and n's block count, or an error naming the call. */
static rlx_status row_check(const char *fn, rlx_gguf_type t, int64_t n, const rlx_wtype **w, int64_t *nblocks,
                            uint64_t *bytes) {
  *w = rlx_wtype_get((uint32_t)t);
  if (!*w) {
    const char *known = rlx_wtype_known_name((uint32_t)t);
    return rlx_error(RLX_ERR_UNSUPPORTED, "%s: weight type %d%s%s%s is not supported", fn, (int)t,
                     known ? " (" : "", known ? known : "", known ? ")" : "");
  }
  if (n < 0 || n % (*w)->block_elems != 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: %lld values are not a whole number of %s blocks (%d values each)", fn,
                     (long long)n, (*w)->name, (int)(*w)->block_elems);
  *nblocks = n / (*w)->block_elems;
  if ((uint64_t)*nblocks > UINT64_MAX / (uint64_t)(*w)->block_bytes)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: %lld values of %s overflow a byte count", fn, (long long)n,
                     (*w)->name);
  *bytes = (uint64_t)*nblocks * (uint64_t)(*w)->block_bytes;
  return RLX_OK;
}

rlx_status rlx_gguf_row_bytes(rlx_gguf_type t, int64_t n, uint64_t *bytes) {
  const rlx_wtype *w;
  int64_t nb;
  uint64_t b;
  if (!bytes) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_row_bytes: bytes is NULL");
  rlx_status st = row_check("rlx_gguf_row_bytes", t, n, &w, &nb, &b);
  if (st == RLX_OK) *bytes = b;
  return st;
}

/* Checks the type, the count and both buffers of a row call. */
static rlx_status row_args(const char *fn, rlx_gguf_type t, int64_t n, const void *q, size_t q_bytes,
                           const void *f, const rlx_wtype **w, int64_t *nb) {
  uint64_t bytes;
  rlx_status st = row_check(fn, t, n, w, nb, &bytes);
  if (st != RLX_OK) return st;
  if (n > 0 && (!q || !f)) return rlx_error(RLX_ERR_INVALID_ARG, "%s: a buffer is NULL", fn);
  if (bytes > (uint64_t)q_bytes)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: %lld %s values take %llu bytes, the buffer has %zu", fn,
                     (long long)n, (*w)->name, (unsigned long long)bytes, q_bytes);
  if ((uint64_t)n > SIZE_MAX / sizeof(float))
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: %lld values do not fit this address space", fn, (long long)n);
  return RLX_OK;
}

rlx_status rlx_gguf_dequantize(rlx_gguf_type t, const void *src, size_t src_bytes, float *dst, int64_t n) {
  const rlx_wtype *w;
  int64_t nb;
  rlx_status st = row_args("rlx_gguf_dequantize", t, n, src, src_bytes, dst, &w, &nb);
  if (st != RLX_OK || n == 0) return st;
  w->dequant((const uint8_t *)src, dst, nb);
  return RLX_OK;
}

rlx_status rlx_gguf_quantize(rlx_gguf_type t, const float *src, int64_t n, void *dst, size_t dst_bytes) {
  const rlx_wtype *w;
  int64_t nb;
  rlx_status st = row_args("rlx_gguf_quantize", t, n, dst, dst_bytes, src, &w, &nb);
  if (st != RLX_OK || n == 0) return st;
  if (w->block_elems > 1)
    for (int64_t i = 0; i < n; i++)
      if (!isfinite(src[i]))
        return rlx_error(RLX_ERR_NUMERIC, "rlx_gguf_quantize: value %lld is %g; %s stores finite values only",
                         (long long)i, (double)src[i], w->name);
  int64_t bad = w->quant(src, (uint8_t *)dst, nb);
  if (bad >= 0) {
    float amax = 0.0f;
    for (int64_t i = bad * w->block_elems; i < (bad + 1) * w->block_elems; i++) amax = fmaxf(amax, fabsf(src[i]));
    return rlx_error(RLX_ERR_NUMERIC, "rlx_gguf_quantize: %s block %lld (values up to %g) needs a scale past f16's "
                     "65504", w->name, (long long)bad, (double)amax);
  }
  return RLX_OK;
}

rlx_status rlx_gguf_dot(rlx_gguf_type t, const void *row, size_t row_bytes, const float *x, int64_t n, float *out) {
  const rlx_wtype *w;
  int64_t nb;
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_dot: out is NULL");
  rlx_status st = row_args("rlx_gguf_dot", t, n, row, row_bytes, x, &w, &nb);
  if (st != RLX_OK) return st;
  *out = n ? w->dot((const uint8_t *)row, x, nb) : 0.0f;
  return RLX_OK;
}
