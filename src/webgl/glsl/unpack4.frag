#version 300 es
// unpack4.frag - out[i] = element (row, col) of a packed texture (rows of
// rt texels, 4 values per texel, per rows on a texture line), row and col
// being the offsets of operands 0 and 1 of the iteration block: the
// packed matmul's result back in the flat layout (src/webgl/lower_packed.c).
// u_in0 = the packed texture; u_i = the iteration block, then {rt, per,
// its width}.
#if defined(RLX_RUN4)
#define RLX_VALUE4 1
#endif
#include "common.glsl"

uniform highp sampler2D u_in0;

float unpack_at(int row, int col) {
  vec4 v = texelFetch(u_in0, rlx_packed_texel(row, col >> 2, u_i[36], u_i[37]), 0);
  return v[col & 3];
}

float rlx_value(int i) {
  ivec3 o = rlx_iter(i);
  return unpack_at(o.x, o.y);
}

// RLX_RUN4 (src/webgl/plan_gl.c): elements i..i+3 lie on one line of the
// iteration's innermost axis, so one rlx_iter serves the four.
#if defined(RLX_RUN4)
vec4 rlx_value4(int i) {
  ivec3 o = rlx_iter(i);
  int s0 = u_i[9], s1 = u_i[17];
  return vec4(unpack_at(o.x, o.y), unpack_at(o.x + s0, o.y + s1), unpack_at(o.x + 2 * s0, o.y + 2 * s1),
              unpack_at(o.x + 3 * s0, o.y + 3 * s1));
}
#endif
