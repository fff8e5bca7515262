#version 300 es
// where.frag - where(cond, a, b): a where cond != 0 (NaN counts as
// nonzero), else b; all three broadcast.  u_in0 = cond, u_in1 = a,
// u_in2 = b; u_i = the iteration block (operands cond, a, b).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform highp sampler2D u_in2;
uniform int u_in0_w;
uniform int u_in1_w;
uniform int u_in2_w;

float rlx_value(int i) {
  ivec3 o = rlx_iter(i);
  float c = rlx_fetch(u_in0, u_in0_w, o.x);
  return (c != 0.0 || isnan(c)) ? rlx_fetch(u_in1, u_in1_w, o.y) : rlx_fetch(u_in2, u_in2_w, o.z);
}
