#version 300 es
// pointwise_grad.frag - gelu_grad (OP_GELU_GRAD) and silu_grad (OP_SILU_GRAD):
// dx = dy * f'(x), written as the CPU kernels do (src/cpu/k_grad_pointwise.c):
// s = sigmoid(t) and s (1 - s) from e = exp(-|t|), x clamped where f' has
// saturated.  u_in0 = x, u_in1 = dy (same element count as the output).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

float rlx_clamp_abs(float x, float limit) {
  x = x < -limit ? -limit : x;
  return x > limit ? limit : x;  // NaN passes through
}

float rlx_derivative(float x) {
#if OP == OP_GELU_GRAD
  const float k2 = 1.5957691216057308;  // 2 sqrt(2/pi)
  const float c = 0.044715;
  x = rlx_clamp_abs(x, 20.0);
  float x2 = x * x;
  float t = k2 * (x + c * x2 * x);
  float e = exp(-abs(t));
  float r = 1.0 / (1.0 + e);
  float s = t >= 0.0 ? r : e * r;
  return s + x * (e * r * r) * k2 * (1.0 + 3.0 * c * x2);
#elif OP == OP_SILU_GRAD
  x = rlx_clamp_abs(x, 88.0);
  float e = exp(-abs(x));
  float r = 1.0 / (1.0 + e);
  float s = x >= 0.0 ? r : e * r;
  return s + x * (e * r * r);
#else
  return RLX_NAN;  // an unknown code: NaN, never another op's result
#endif
}

float rlx_value(int i) {
  float x = rlx_fetch(u_in0, u_in0_w, i);
  if (isnan(x)) return x;  // GPUs need not propagate NaN through exp
  return rlx_fetch(u_in1, u_in1_w, i) * rlx_derivative(x);
}
