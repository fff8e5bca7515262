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
// final fraction of a turn becomes a float for cos/sin.
// MODE 0: y directly; MODE 1: the table [S, D] of cos (first half) and
// (signed) sin (second half) per position; MODE 2: y from that table
// (u_in1), when many [S, D] slices share it.
// u_in0 = x (MODE 0, 2); u_i = {D, S, pos0, nbits, 1/2pi limbs (3, least
// significant first), then 3 limbs per factor k < nbits}; u_f = {sign}.
#include "common.glsl"

#if MODE != 1
uniform highp sampler2D u_in0;
uniform int u_in0_w;
#endif
#if MODE == 2
uniform highp sampler2D u_in1;
uniform int u_in1_w;
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

// The angle of position s at frequency i, in radians within [-pi, pi].
float rlx_angle(int s, int i) {
  uvec3 f = rlx_limbs(4);
  for (int k = 0; k < 13; k++) {
    if (k >= u_i[3]) break;
    if (((i >> k) & 1) == 1) f = rlx_mul48(f, rlx_limbs(7 + 3 * k));
  }
  int pos = u_i[2] + s;
  uint p = uint(pos < 0 ? -pos : pos), m = 0xffffu;
  uint p0 = p & m, p1 = p >> 16;
  uint q00 = p0 * f.x, q01 = p0 * f.y, q10 = p1 * f.x;
  uint c1 = (q00 >> 16) + (q01 & m) + (q10 & m);
  uint c2 = (q01 >> 16) + (q10 >> 16) + ((p0 * f.z) & m) + ((p1 * f.y) & m) + (c1 >> 16);
  float t = float(c2 & m) / 65536.0 + float(c1 & m) / 4294967296.0 + float(q00 & m) / 281474976710656.0;
  if (pos < 0) t = -t;
  return (t - floor(t + 0.5)) * 6.283185307179586;
}

float rlx_value(int e) {
  int d = u_i[0], half_d = d / 2, j = e % d;
  int i = j < half_d ? j : j - half_d;
#if MODE == 1
  float a = rlx_angle(e / d, i);
  return j < half_d ? cos(a) : u_f[0] * sin(a);
#else
  int s = (e / d) % u_i[1];
#if MODE == 0
  float a = rlx_angle(s, i);
  float c = cos(a), sn = u_f[0] * sin(a);
#else
  float c = rlx_fetch(u_in1, u_in1_w, s * d + i), sn = rlx_fetch(u_in1, u_in1_w, s * d + half_d + i);
#endif
  float x = rlx_fetch(u_in0, u_in0_w, e);
  if (j < half_d) return x * c - rlx_fetch(u_in0, u_in0_w, e + half_d) * sn;
  return x * c + rlx_fetch(u_in0, u_in0_w, e - half_d) * sn;
#endif
}
