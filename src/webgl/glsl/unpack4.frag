#version 300 es
// unpack4.frag - out[i] = element (row, col) of a packed texture (rows of
// rt texels, 4 values per texel, per rows on a texture line), row and col
// being the offsets of operands 0 and 1 of the iteration block: the
// packed matmul's result back in the flat layout (src/webgl/lower_packed.c).
// u_in0 = the packed texture; u_i = the iteration block, then {rt, per,
// its width}.
#include "common.glsl"

uniform highp sampler2D u_in0;

float rlx_value(int i) {
  ivec3 o = rlx_iter(i);
  vec4 v = texelFetch(u_in0, rlx_packed_texel(o.x, o.y >> 2, u_i[36], u_i[37]), 0);
  return v[o.y & 3];
}
