#version 300 es
// adam_update.frag - the passes of the fused Adam / AdamW update
// (src/webgl/lower_optim.c; the formulas of src/cpu/k_optim.c).  MODE 0:
// a moment, out[i] = a x[i] + c y[i] (y = g) or, with SQUARE, a x[i] + c
// (y[i] y[i]) (u_in0 = m or v, u_in1 = g; u_f = {a, c}).  MODE 1: the new
// param, s = (m'[i] / bias1) / (sqrt(v'[i] / bias2) + eps) [+ wd p[i]],
// out[i] = p[i] - lr s (u_in0 = p, u_in1 = m', u_in2 = v', u_in3 = lr,
// u_in4 = bias1, u_in5 = bias2, one value each; u_f = {eps, wd}).  Every
// read goes through rlx_fetch, so the param may hold 1 or 4 floats per
// texel (plan_layout.c's flat-safe shaders): the layout the sessions that
// share it (the loss and gradients plans) give it.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;
#if MODE == 1
uniform highp sampler2D u_in2;
uniform highp sampler2D u_in3;
uniform highp sampler2D u_in4;
uniform highp sampler2D u_in5;
uniform int u_in2_w;
uniform int u_in3_w;
uniform int u_in4_w;
uniform int u_in5_w;
#endif

float rlx_value(int i) {
#if MODE == 0
  float y = rlx_fetch(u_in1, u_in1_w, i);
#if defined(SQUARE)
  y = y * y;
#endif
  return u_f[0] * rlx_fetch(u_in0, u_in0_w, i) + u_f[1] * y;
#else
  float p = rlx_fetch(u_in0, u_in0_w, i);
  float mhat = rlx_fetch(u_in1, u_in1_w, i) / rlx_fetch(u_in4, u_in4_w, 0);
  float vhat = rlx_fetch(u_in2, u_in2_w, i) / rlx_fetch(u_in5, u_in5_w, 0);
  float s = mhat / (sqrt(vhat) + u_f[0]);
  if (u_f[1] != 0.0) s = s + u_f[1] * p;
  return p - rlx_fetch(u_in3, u_in3_w, 0) * s;
#endif
}
