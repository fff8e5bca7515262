#version 300 es
// strided.frag - out[i] = in[offset(i)] with the offset from the iteration
// block in u_i (operand 0): permute (permuted strides), narrow (a base
// offset), expand (zero strides on broadcast axes).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_value(int i) { return rlx_fetch(u_in0, u_in0_w, rlx_iter(i).x); }
