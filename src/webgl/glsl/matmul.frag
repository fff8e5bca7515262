#version 300 es
// matmul.frag - a[..., M, K] . b[..., K, N] -> out[..., M, N] (either
// operand possibly stored transposed, batch dims broadcast): one output
// element per fragment, a loop over K unrolled by 4.  u_in0 = a, u_in1 = b;
// u_i = the iteration block over the output (operand 0: a's offset of
// element (batch, m, 0), operand 1: b's offset of (batch, 0, n); the
// transposes and broadcasts are in its strides), then {K, a's step along
// k, b's step along k} (src/webgl/lower_matmul.c).  The inner loop never
// divides: each operand is a read cursor (texel x, y) moved by its step.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

// Moves cursor p by st = (step % width, step / width) (both < width).
#define MM_STEP(p, st, w) p += st; if (p.x >= w) p += ivec2(-w, 1)

float rlx_value(int i) {
  ivec3 off = rlx_iter(i);
  int k_len = u_i[36], wa = u_in0_w, wb = u_in1_w;
  ivec2 pa = ivec2(off.x % wa, off.x / wa), pb = ivec2(off.y % wb, off.y / wb);
  ivec2 sa = ivec2(u_i[37] % wa, u_i[37] / wa), sb = ivec2(u_i[38] % wb, u_i[38] / wb);
  float acc = 0.0;
  int k = 0;
  for (; k + 4 <= k_len; k += 4) {
    float a0 = texelFetch(u_in0, pa, 0).r, b0 = texelFetch(u_in1, pb, 0).r;
    MM_STEP(pa, sa, wa);
    MM_STEP(pb, sb, wb);
    float a1 = texelFetch(u_in0, pa, 0).r, b1 = texelFetch(u_in1, pb, 0).r;
    MM_STEP(pa, sa, wa);
    MM_STEP(pb, sb, wb);
    float a2 = texelFetch(u_in0, pa, 0).r, b2 = texelFetch(u_in1, pb, 0).r;
    MM_STEP(pa, sa, wa);
    MM_STEP(pb, sb, wb);
    float a3 = texelFetch(u_in0, pa, 0).r, b3 = texelFetch(u_in1, pb, 0).r;
    MM_STEP(pa, sa, wa);
    MM_STEP(pb, sb, wb);
    acc += a0 * b0;
    acc += a1 * b1;
    acc += a2 * b2;
    acc += a3 * b3;
  }
  for (; k < k_len; k++) {
    acc += texelFetch(u_in0, pa, 0).r * texelFetch(u_in1, pb, 0).r;
    MM_STEP(pa, sa, wa);
    MM_STEP(pb, sb, wb);
  }
  return acc;
}
