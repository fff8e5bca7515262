#version 300 es
// pool_sum.frag - sums of runs: x viewed as [rows, len] -> out[rows, Q],
// element r * Q + q = (the sum of x[r, q * L .. min(len, (q + 1) * L)))
// / u_f[0].  global_avg_pool (u_f[0] = H * W, or 1 for the partial sums
// of a long plane) and the last passes of conv2d_grad_weight (adding its
// partial sums, u_f[0] = 1).  u_in0 = x; u_i = {len, L, Q}
// (src/webgl/lower_vision.c).  Reads: a cursor at texel centers, texture()
// (nearest, one level: exact; faster than texelFetch on SwiftShader).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_value(int i) {
  int len = u_i[0], L = u_i[1], Q = u_i[2];
  int q = i % Q, r = i / Q;
  int j0 = q * L, j1 = min(len, j0 + L), wx = u_in0_w, first = r * len + j0;
  float fx = float(wx);
  vec2 inv = 1.0 / vec2(textureSize(u_in0, 0));
  vec2 p = vec2(first % wx, first / wx) + 0.5, right = vec2(1 % wx, 1 / wx);
  float acc = 0.0;
  for (int j = j0; j < j1; j++) {
    acc += texture(u_in0, p * inv).r;
    p += right;
    if (p.x > fx) p += vec2(-fx, 1.0);
  }
  return acc / u_f[0];
}
