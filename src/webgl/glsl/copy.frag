#version 300 es
// copy.frag - out[i] = in[i]: reshape copies and the training assignments
// (a value copied into its param's texture after the steps).
#if defined(F4_0)
#define RLX_VALUE4 1
#endif
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_value(int i) { return rlx_fetch(u_in0, u_in0_w, i); }

// F4_0 (4-floats-per-texel output): 2 = the input holds 4 floats per texel
// too (elements i..i+3 are one texel), else four fetches.
#if defined(F4_0)
vec4 rlx_value4(int i) {
#if F4_0 == 2
  vec4 x = rlx_texel4(u_in0, u_in0_w, i);
#else
  vec4 x = rlx_fetch_run4(u_in0, u_in0_w, i, 1);
#endif
  return x;
}
#endif
