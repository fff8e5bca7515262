#version 300 es
// rope.frag - rotary position embedding, NeoX layout, over x[..., S, D]
// (src/webgl/lower_attention.c; the rotation of src/cpu/k_rope.c):
//   y[i] = x[i] cos - x[i + D/2] sin,  y[i + D/2] = x[i + D/2] cos + x[i] sin
// with angle = (pos0 + s) freq_i, freq_i = theta^(-2i/D), sin negated for
// the inverse rotation.  Float angles would lose the digits of large
// positions (1e5 rad in float is off by 4e-3), so the angle is taken in
// turns with exact integer arithmetic: freq_i / 2pi as a 48-bit fixed-point
// fraction (16-bit limbs), the product of 1/2pi and of theta^(-2 * 2^k / D)
// for the bits k of i (those factors are computed in double on the CPU and
// passed as limbs); the position times it modulo 1 is exact; only the
// final fraction of a turn becomes a float (cos and sin within ~1e-7).
// MODE 0: y directly; MODE 1: the table [S, D] of cos (first half) and
// (signed) sin (second half) per position; MODE 2: y from that table
// (u_in1), when many [S, D] slices share it.
// PAIRS 1 rotates adjacent pairs (x[2i], x[2i + 1]) instead of the halves
// (rope's mode 1; the table is the same).  OFFSET 1: positions are shifted
// by the op's offset input (an integer stored as a float), the pass's last
// input (MODE 0, 1).
// u_in0 = x (MODE 0, 2); u_i = {D, S, pos0, nbits, 1/2pi limbs (3, least
// significant first), then 3 limbs per factor k < nbits}; u_f = {sign}.
#include "common.glsl"

#ifndef PAIRS
#define PAIRS 0
#endif
#ifndef OFFSET
#define OFFSET 0
#endif
#if MODE != 1
uniform highp sampler2D u_in0;
uniform int u_in0_w;
#endif
#if MODE == 2 || (MODE == 0 && OFFSET == 1)
uniform highp sampler2D u_in1;
uniform int u_in1_w;
#endif
#if OFFSET == 1 && MODE == 0
#define RLX_OFFSET int(floor(rlx_fetch(u_in1, u_in1_w, 0)))
#elif OFFSET == 1 && MODE == 1
uniform highp sampler2D u_in0;
uniform int u_in0_w;
#define RLX_OFFSET int(floor(rlx_fetch(u_in0, u_in0_w, 0)))
#else
#define RLX_OFFSET 0
#endif

uvec3 rlx_limbs(int at) {
  return uvec3(uint(u_i[at]), uint(u_i[at + 1]), uint(u_i[at + 2]));
}

// floor(a b / 2^48) for 48-bit fractions a, b (limbs x, y, z = bits 0-15,
// 16-31, 32-47): column sums of the 16-bit halves of the limb products.
uvec3 rlx_mul48(uvec3 a, uvec3 b) {
  uint m = 0xffffu;
  uint p00 = a.x * b.x, p01 = a.x * b.y, p02 = a.x * b.z;
  uint p10 = a.y * b.x, p11 = a.y * b.y, p12 = a.y * b.z;
  uint p20 = a.z * b.x, p21 = a.z * b.y, p22 = a.z * b.z;
  uint c1 = (p00 >> 16) + (p01 & m) + (p10 & m);
  uint c2 = (p01 >> 16) + (p10 >> 16) + (p02 & m) + (p11 & m) + (p20 & m) + (c1 >> 16);
  uint c3 = (p02 >> 16) + (p11 >> 16) + (p20 >> 16) + (p12 & m) + (p21 & m) + (c2 >> 16);
  uint c4 = (p12 >> 16) + (p21 >> 16) + (p22 & m) + (c3 >> 16);
  uint c5 = (p22 >> 16) + (c4 >> 16);
  return uvec3(c3 & m, c4 & m, c5 & m);
}

// (cos, sin) of the angle of position s at frequency i.  The fraction of
// a turn t picks the quadrant q = round(4 t); the rest, within +-pi/4, goes
// through the Cephes sinf/cosf polynomials (GLSL's sin/cos are only good
// to ~2e-4 on SwiftShader).
vec2 rlx_cos_sin(int s, int i) {
  uvec3 f = rlx_limbs(4);
  for (int k = 0; k < 13; k++) {
    if (k >= u_i[3]) break;
    if (((i >> k) & 1) == 1) f = rlx_mul48(f, rlx_limbs(7 + 3 * k));
  }
  int pos = u_i[2] + RLX_OFFSET + s;
  uint p = uint(pos < 0 ? -pos : pos), m = 0xffffu;
  uint p0 = p & m, p1 = p >> 16;
  uint q00 = p0 * f.x, q01 = p0 * f.y, q10 = p1 * f.x;
  uint c1 = (q00 >> 16) + (q01 & m) + (q10 & m);
  uint c2 = (q01 >> 16) + (q10 >> 16) + ((p0 * f.z) & m) + ((p1 * f.y) & m) + (c1 >> 16);
  float t = float(c2 & m) / 65536.0 + float(c1 & m) / 4294967296.0 + float(q00 & m) / 281474976710656.0;
  float q = floor(4.0 * t + 0.5);
  float x = (t - 0.25 * q) * 6.283185307179586;
  float z = x * x;
  float sn = x + x * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
  float cs = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
  int quadrant = int(q) & 3;
  vec2 r = quadrant == 0 ? vec2(cs, sn) : quadrant == 1 ? vec2(-sn, cs) : quadrant == 2 ? vec2(-cs, -sn) : vec2(sn, -cs);
  if (pos < 0) r.y = -r.y;
  return r;
}

float rlx_value(int e) {
  int d = u_i[0], half_d = d / 2, j = e % d;
#if PAIRS == 1 && MODE != 1
  int i = j >> 1;
#else
  int i = j < half_d ? j : j - half_d;
#endif
#if MODE == 1
  vec2 cs = rlx_cos_sin(e / d, i);
  return j < half_d ? cs.x : u_f[0] * cs.y;
#else
  int s = (e / d) % u_i[1];
#if MODE == 0
  vec2 cs = rlx_cos_sin(s, i);
  float c = cs.x, sn = u_f[0] * cs.y;
#else
  float c = rlx_fetch(u_in1, u_in1_w, s * d + i), sn = rlx_fetch(u_in1, u_in1_w, s * d + half_d + i);
#endif
  float x = rlx_fetch(u_in0, u_in0_w, e);
#if PAIRS == 1
  if ((j & 1) == 0) return x * c - rlx_fetch(u_in0, u_in0_w, e + 1) * sn;
  return x * c + rlx_fetch(u_in0, u_in0_w, e - 1) * sn;
#endif
  if (j < half_d) return x * c - rlx_fetch(u_in0, u_in0_w, e + half_d) * sn;
  return x * c + rlx_fetch(u_in0, u_in0_w, e - half_d) * sn;
#endif
}
