#version 300 es
// unary.frag - elementwise unary ops, OP chosen by a define
// (src/webgl/lower_elementwise.c): OP_NEG .. OP_SILU, the unary rows of
// include/rlx_ops.def (gelu is the tanh form; any other code gives NaN).
// u_in0 = x, same element count as the output.  Domain edges are explicit
// (GLSL leaves log, sqrt and inversesqrt undefined there): log(0) = -inf,
// log(x < 0) = NaN, sqrt(x < 0) = NaN, rsqrt(+-0) = +-inf; sigmoid and tanh
// use exp(-|x|) so they never overflow, as the CPU kernels do.  NaN in,
// NaN out, checked first.
#if defined(F4_0)
#define RLX_VALUE4 1
#endif
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_sigmoid(float x) {
  float e = exp(-abs(x));
  return x >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e);
}

// Small |x|: the Cephes tanhf polynomial (no cancellation); else
// (1 - e) / (1 + e) with e = exp(-2|x|).  NaN stays NaN.
float rlx_tanh(float x) {
  float ax = abs(x), z = x * x;
  float t;
  if (ax < 0.625) {
    t = ((((-5.70498872745e-3 * z + 2.06390887954e-2) * z - 5.37397155531e-2) * z + 1.33314422036e-1) * z -
         3.33332819422e-1) * z * ax + ax;
  } else {
    float e = exp(-2.0 * ax);
    t = (1.0 - e) / (1.0 + e);
  }
  return x < 0.0 ? -t : t;
}

float un_op(float x) {
  if (isnan(x)) return x;  // GPUs need not propagate NaN through exp, log, ...
#if OP == OP_NEG
  return -x;
#elif OP == OP_ABS
  return abs(x);
#elif OP == OP_EXP
  return exp(x);
#elif OP == OP_LOG
  if (x == 0.0) return -RLX_INF;
  if (x < 0.0) return RLX_NAN;
  if (isinf(x)) return x;
  return log(x);
#elif OP == OP_SQRT
  if (x < 0.0) return RLX_NAN;
  if (isinf(x)) return x;
  return sqrt(x);
#elif OP == OP_RSQRT
  if (x == 0.0) return floatBitsToInt(x) < 0 ? -RLX_INF : RLX_INF;
  if (x < 0.0) return RLX_NAN;
  if (isinf(x)) return 0.0;
  return inversesqrt(x);
#elif OP == OP_TANH
  return rlx_tanh(x);
#elif OP == OP_SIGMOID
  return rlx_sigmoid(x);
#elif OP == OP_RELU
  return x < 0.0 ? 0.0 : x;
#elif OP == OP_GELU
  return x * rlx_sigmoid(1.5957691216057308 * (x + 0.044715 * x * x * x));
#elif OP == OP_SILU
  return x * rlx_sigmoid(x);
#else
  return RLX_NAN;  // an unknown code: NaN, never another op's result
#endif
}

float rlx_value(int i) { return un_op(rlx_fetch(u_in0, u_in0_w, i)); }

// F4_0 (4-floats-per-texel output): 2 = the input holds 4 floats per texel
// too (elements i..i+3 are one texel), else four fetches.
#if defined(F4_0)
vec4 rlx_value4(int i) {
#if F4_0 == 2
  vec4 x = rlx_texel4(u_in0, u_in0_w, i);
#else
  vec4 x = rlx_fetch_run4(u_in0, u_in0_w, i, 1);
#endif
  return vec4(un_op(x.x), un_op(x.y), un_op(x.z), un_op(x.w));
}
#endif
