#version 300 es
// pool.frag - x[N, C, H, W] -> y[N, C, OH, OW], 2-D pooling over windows
// clipped to the input: MAX = 1 takes the maximum (padding never wins; NaN
// propagates, like src/cpu/k_pool.c), MAX = 0 the average (the clipped sum
// times u_f[0] = 1 / (kernel_h * kernel_w)).  u_in0 = x; u_i = the pool
// geometry {OW, OH, W, H, kernel_h, kernel_w, stride_h, stride_w, pad_h,
// pad_w} (src/webgl/lower_vision.c).  Reads through rlx_fetch (either
// layout).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_value(int i) {
  int OW = u_i[0], OH = u_i[1], W = u_i[2], H = u_i[3];
  int ow = i % OW, t = i / OW, oh = t % OH, plane = t / OH;
  int h_start = oh * u_i[6] - u_i[8], w_start = ow * u_i[7] - u_i[9];
  int h0 = max(h_start, 0), h1 = min(h_start + u_i[4], H);
  int w0 = max(w_start, 0), w1 = min(w_start + u_i[5], W);
  int first = (plane * H + h0) * W + w0;
#if MAX
  float acc = -RLX_INF;
#else
  float acc = 0.0;
#endif
  for (int h = h0; h < h1; h++) {
    int idx = first;
    for (int w = w0; w < w1; w++) {
      float v = rlx_fetch(u_in0, u_in0_w, idx);
#if MAX
      acc = (v > acc || isnan(v)) ? v : acc;
#else
      acc += v;
#endif
      idx++;
    }
    first += W;
  }
#if MAX
  return acc;
#else
  return acc * u_f[0];
#endif
}
