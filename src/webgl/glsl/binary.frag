#version 300 es
// binary.frag - broadcasting binary ops and comparisons, OP chosen by a
// define (src/webgl/lower_elementwise.c): OP_ADD .. OP_GE, the binary rows
// of include/rlx_ops.def (any other code gives NaN).
// u_in0 = a, u_in1 = b; u_i = the iteration block (operands a, b).
// MUL3 = 1: a OP (b * c) with u_in2 = c, operand 2 of the iteration block
// (the planner's fused add/sub of a product, src/webgl/plan_gl.c).
// NaN rules follow the CPU kernels (src/cpu/k_elementwise.c): max/min
// propagate NaN, comparisons with NaN are false except ne; pow follows C's
// powf for negative bases, zeros, infinities and NaN.
#if defined(RLX_RUN4)
#define RLX_VALUE4 1
#endif
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;
#if defined(MUL3)
uniform highp sampler2D u_in2;
uniform int u_in2_w;
#endif

// powf: |x|^y through exp2/log2, with the sign for odd integer y and the
// special cases of C99 (pow(x, 0) = pow(1, y) = 1, pow(-1, +-inf) = 1).
float rlx_pow(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return RLX_NAN;
  float ax = abs(x);
  if (ax == 1.0 && isinf(y)) return 1.0;
  bool negative = floatBitsToInt(x) < 0;  // also -0
  bool integer = floor(y) == y;           // infinities count as even
  bool odd = integer && abs(y) < 16777216.0 && (int(abs(y)) & 1) == 1;
  if (negative && !integer && ax != 0.0 && !isinf(x)) return RLX_NAN;
  float r;
  if (ax == 0.0) r = y > 0.0 ? 0.0 : RLX_INF;
  else if (isinf(ax)) r = y > 0.0 ? RLX_INF : 0.0;
  else r = exp2(y * log2(ax));
  return (negative && odd) ? -r : r;
}

float bin_op(float x, float y) {
#if OP == OP_ADD
  return x + y;
#elif OP == OP_SUB
  return x - y;
#elif OP == OP_MUL
  return x * y;
#elif OP == OP_DIV
  return x / y;
#elif OP == OP_MAX
  return (x > y || isnan(x)) ? x : y;
#elif OP == OP_MIN
  return (x < y || isnan(x)) ? x : y;
#elif OP == OP_POW
  return rlx_pow(x, y);
#elif OP == OP_EQ
  return x == y ? 1.0 : 0.0;
#elif OP == OP_NE
  return (x != y || isnan(x) || isnan(y)) ? 1.0 : 0.0;
#elif OP == OP_LT
  return x < y ? 1.0 : 0.0;
#elif OP == OP_LE
  return x <= y ? 1.0 : 0.0;
#elif OP == OP_GT
  return x > y ? 1.0 : 0.0;
#elif OP == OP_GE
  return x >= y ? 1.0 : 0.0;
#else
  return RLX_NAN;  // an unknown code: NaN, never another op's result
#endif
}

float rlx_value(int i) {
  ivec3 o = rlx_iter(i);
#if defined(MUL3)
  return bin_op(rlx_fetch(u_in0, u_in0_w, o.x), rlx_fetch(u_in1, u_in1_w, o.y) * rlx_fetch(u_in2, u_in2_w, o.z));
#else
  return bin_op(rlx_fetch(u_in0, u_in0_w, o.x), rlx_fetch(u_in1, u_in1_w, o.y));
#endif
}

// RLX_RUN4 (4-floats-per-texel output whose innermost iteration axis is a
// multiple of 4 long): elements i..i+3 sit at o, o + s, .. in each operand
// (s = its innermost stride); F4_k: 1 = s is 0, 2 = a 4-aligned texel of
// a 4-floats-per-texel input, 0 = four fetches.
#if defined(RLX_RUN4)
vec4 rlx_value4(int i) {
  ivec3 o = rlx_iter(i);
#if F4_0 == 1
  vec4 a = vec4(rlx_fetch(u_in0, u_in0_w, o.x));
#elif F4_0 == 2
  vec4 a = rlx_texel4(u_in0, u_in0_w, o.x);
#else
  vec4 a = rlx_fetch_run4(u_in0, u_in0_w, o.x, u_i[9]);
#endif
#if F4_1 == 1
  vec4 b = vec4(rlx_fetch(u_in1, u_in1_w, o.y));
#elif F4_1 == 2
  vec4 b = rlx_texel4(u_in1, u_in1_w, o.y);
#else
  vec4 b = rlx_fetch_run4(u_in1, u_in1_w, o.y, u_i[17]);
#endif
#if defined(MUL3)
#if F4_2 == 1
  b *= vec4(rlx_fetch(u_in2, u_in2_w, o.z));
#elif F4_2 == 2
  b *= rlx_texel4(u_in2, u_in2_w, o.z);
#else
  b *= rlx_fetch_run4(u_in2, u_in2_w, o.z, u_i[25]);
#endif
#endif
  return vec4(bin_op(a.x, b.x), bin_op(a.y, b.y), bin_op(a.z, b.z), bin_op(a.w, b.w));
}
#endif
