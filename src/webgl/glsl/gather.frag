#version 300 es
// gather.frag - table[V, D], ids[...] -> out[..., D]: row ids[r] of the
// table, zeros for an id outside [0, V) (the GPU cannot raise the CPU's
// error flag).  u_in0 = table, u_in1 = ids (integers stored as floats);
// u_i = {D, V}.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

float rlx_value(int i) {
  int d = u_i[0];
  int id = rlx_index(rlx_fetch(u_in1, u_in1_w, i / d), u_i[1]);
  return id < 0 ? 0.0 : rlx_fetch(u_in0, u_in0_w, id * d + i % d);
}
