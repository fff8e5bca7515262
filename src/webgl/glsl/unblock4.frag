#version 300 es
// unblock4.frag - the 4 layers of glsl/matmul_block4.frag's output into the
// packed matmul's output layout: output texel t (= y * width + x) holds
// row r = t / ort, texels c = t % ort (packed rows, or the flat 4-floats-
// per-texel layout of [M, 4 * ort]); it is layer r % 4, texel (c, r / 4).
// Rows past M are 0.  u_in0 = the layers; u_i = {M, ort}.
#define RLX_CUSTOM_MAIN 1
#include "common.glsl"

uniform highp sampler2DArray u_in0;

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  ivec2 rc = rlx_divmod(p.y * u_out_w + p.x, u_i[1]);
  rlx_color = rc.x < u_i[0] ? texelFetch(u_in0, ivec3(rc.y, rc.x >> 2, rc.x & 3), 0) : vec4(0.0);
}
