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

// sum over row r of dy * y (LOG 0) or of dy (LOG 1), in blocks of 64
float rlx_row_sum(int r, int n, int inner) {
  int base = (r / inner) * n * inner + r % inner;
  float acc = 0.0;
  for (int b = 0; b < n; b += 64) {
    int e = min(b + 64, n);
    float part = 0.0;
    for (int j = b; j < e; j++) {
      int at = base + j * inner;
#if LOG
      part += rlx_fetch(u_in1, u_in1_w, at);
#else
      part += rlx_fetch(u_in1, u_in1_w, at) * rlx_fetch(u_in0, u_in0_w, at);
#endif
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
