#version 300 es
// pool.frag - x[N, C, H, W] -> y[N, C, OH, OW], 2-D pooling over windows
// clipped to the input: MAX = 1 takes the maximum (padding never wins; NaN
// propagates, like src/cpu/k_pool.c), MAX = 0 the average (the clipped sum
// times u_f[0] = 1 / (kernel_h * kernel_w)).  u_in0 = x; u_i = the pool
// geometry {OW, OH, W, H, kernel_h, kernel_w, stride_h, stride_w, pad_h,
// pad_w} (src/webgl/lower_vision.c).  Reads: a cursor at texel centers
// moved without dividing, texture() at texel centers (nearest, one level:
// exact; faster than texelFetch on SwiftShader).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_value(int i) {
  int OW = u_i[0], OH = u_i[1], W = u_i[2], H = u_i[3];
  int ow = i % OW, t = i / OW, oh = t % OH, plane = t / OH;
  int h_start = oh * u_i[6] - u_i[8], w_start = ow * u_i[7] - u_i[9];
  int h0 = max(h_start, 0), h1 = min(h_start + u_i[4], H);
  int w0 = max(w_start, 0), w1 = min(w_start + u_i[5], W);
  int wx = u_in0_w, first = (plane * H + h0) * W + w0;
  float fx = float(wx);
  vec2 inv = 1.0 / vec2(textureSize(u_in0, 0));
  vec2 row = vec2(first % wx, first / wx) + 0.5, down = vec2(W % wx, W / wx), right = vec2(1 % wx, 1 / wx);
#if MAX
  float acc = -RLX_INF;
#else
  float acc = 0.0;
#endif
  for (int h = h0; h < h1; h++) {
    vec2 p = row;
    for (int w = w0; w < w1; w++) {
      float v = texture(u_in0, p * inv).r;
#if MAX
      acc = (v > acc || isnan(v)) ? v : acc;
#else
      acc += v;
#endif
      p += right;
      if (p.x > fx) p += vec2(-fx, 1.0);
    }
    row += down;
    if (row.x > fx) row += vec2(-fx, 1.0);
  }
#if MAX
  return acc;
#else
  return acc * u_f[0];
#endif
}
