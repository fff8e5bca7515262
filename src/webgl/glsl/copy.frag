#version 300 es
// copy.frag - out[i] = in[i]: reshape copies and the training assignments
// (a value copied into its param's texture after the steps).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_value(int i) { return rlx_fetch(u_in0, u_in0_w, i); }
