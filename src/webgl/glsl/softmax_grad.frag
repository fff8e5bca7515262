#version 300 es
// softmax_grad.frag - the gradients of softmax (LOG 0) and log-softmax
// (LOG 1) over one axis (src/webgl/lower_reduce.c, the formulas of
// src/cpu/k_grad_softmax.c), on the [outer, n, inner] view of softmax.frag:
//   softmax      dx = y * (dy - sum(dy * y))
//   log_softmax  dx = dy - exp(y) * sum(dy)
// MODE 0 writes the row sums (one per row), MODE 1 the gradient with the
// sums read from u_in2, MODE 2 the gradient with each fragment summing its
// row itself (short rows).  u_in0 = y, u_in1 = dy; u_i = {n, inner}.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;
#if MODE == 1
uniform highp sampler2D u_in2;
uniform int u_in2_w;
#endif

// Texel of flat index i in a texture w wide; with i a stride, the step
// rlx_next adds (walking a row without a division per element).
ivec2 rlx_xy(int i, int w) {
  return ivec2(i % w, i / w);
}
ivec2 rlx_next(ivec2 xy, ivec2 step, int w) {
  xy += step;
  return xy.x >= w ? xy + ivec2(-w, 1) : xy;
}

// sum over row r of dy * y (LOG 0) or of dy (LOG 1), in blocks of 64
float rlx_row_sum(int r, int n, int inner) {
  int base = (r / inner) * n * inner + r % inner;
  float acc = 0.0;
  ivec2 xy1 = rlx_xy(base, u_in1_w), step1 = rlx_xy(inner, u_in1_w);
#if !LOG
  ivec2 xy0 = rlx_xy(base, u_in0_w), step0 = rlx_xy(inner, u_in0_w);
#endif
  for (int b = 0; b < n; b += 64) {
    int e = min(b + 64, n);
    float part = 0.0;
    for (int j = b; j < e; j++) {
#if LOG
      part += texelFetch(u_in1, xy1, 0).r;
#else
      part += texelFetch(u_in1, xy1, 0).r * texelFetch(u_in0, xy0, 0).r;
      xy0 = rlx_next(xy0, step0, u_in0_w);
#endif
      xy1 = rlx_next(xy1, step1, u_in1_w);
    }
    acc += part;
  }
  return acc;
}

float rlx_value(int i) {
  int n = u_i[0], inner = u_i[1];
#if MODE == 0
  return rlx_row_sum(i, n, inner);
#else
  int r = (i / (n * inner)) * inner + i % inner;
#if MODE == 1
  float s = rlx_fetch(u_in2, u_in2_w, r);
#else
  float s = rlx_row_sum(r, n, inner);
#endif
  float y = rlx_fetch(u_in0, u_in0_w, i), dy = rlx_fetch(u_in1, u_in1_w, i);
#if LOG
  float e = isnan(y) ? RLX_NAN : (y < -104.0 ? 0.0 : exp(y));
  return dy - e * s;
#else
  return y * (dy - s);
#endif
#endif
}
