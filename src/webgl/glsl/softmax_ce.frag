#version 300 es
// softmax_ce.frag - softmax cross-entropy over the last axis of
// logits[rows, C] with labels[rows] (class ids stored as floats), and its
// gradient (src/webgl/lower_reduce.c, the formulas of src/cpu/k_softmax.c
// and k_grad_softmax.c).  GRAD 0: loss[r] = log(s) + (m - x[label]);
// GRAD 1: dx[r, c] = exp(x - m) * (dy[r] / s), and at the label
// (exp(x - m) - s) / s * dy[r] (no cancellation when p ~ 1), with m the
// row max (NaN skipped) and s the sum of exp(x - m).  A label outside
// [0, C) gives 0 (the GPU cannot raise the CPU's error flag).  With
// INLINE = 1 each fragment computes m and s itself; else the last input
// holds them, two per row (softmax.frag MODE 0).  u_in0 = logits,
// u_in1 = labels, u_in2 = dy (GRAD), then the statistics; u_i = {C}.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;
#if GRAD
uniform highp sampler2D u_in2;
uniform int u_in2_w;
#endif
#if !INLINE && GRAD
uniform highp sampler2D u_in3;
uniform int u_in3_w;
#define RLX_STATS u_in3, u_in3_w
#elif !INLINE
uniform highp sampler2D u_in2;
uniform int u_in2_w;
#define RLX_STATS u_in2, u_in2_w
#endif

float rlx_exp_shifted(float t) {
  return isnan(t) ? RLX_NAN : (t < -104.0 ? 0.0 : exp(t));
}

// Texel of flat index i in a texture w wide; with i a stride, the step
// rlx_next adds (walking a row without a division per element).
ivec2 rlx_xy(int i, int w) {
  return ivec2(i % w, i / w);
}
ivec2 rlx_next(ivec2 xy, ivec2 step, int w) {
  xy += step;
  return xy.x >= w ? xy + ivec2(-w, 1) : xy;
}

float rlx_value(int i) {
  int classes = u_i[0];
#if GRAD
  int r = i / classes, c = i % classes;
#else
  int r = i;
#endif
  int label = rlx_index(rlx_fetch(u_in1, u_in1_w, r), classes);
  if (label < 0) return 0.0;
  int base = r * classes;
#if INLINE
  ivec2 first = rlx_xy(base, u_in0_w), one = ivec2(1, 0), xy = first;
  float m = -RLX_INF;
  for (int j = 0; j < classes; j++) {
    float x = texelFetch(u_in0, xy, 0).r;
    xy = rlx_next(xy, one, u_in0_w);
    if (x > m) m = x;
  }
  float s = 0.0;
  xy = first;
  for (int b = 0; b < classes; b += 64) {
    int e = min(b + 64, classes);
    float part = 0.0;
    for (int j = b; j < e; j++) {
      part += rlx_exp_shifted(texelFetch(u_in0, xy, 0).r - m);
      xy = rlx_next(xy, one, u_in0_w);
    }
    s += part;
  }
#else
  float m = rlx_fetch(RLX_STATS, 2 * r);
  float s = rlx_fetch(RLX_STATS, 2 * r + 1);
#endif
#if GRAD
  float e = rlx_exp_shifted(rlx_fetch(u_in0, u_in0_w, i) - m);
  float dy = rlx_fetch(u_in2, u_in2_w, r);
  if (c == label) return (e - s) / s * dy;
  return e * (dy / s);
#else
  if (isnan(s)) return RLX_NAN;
  return log(s) + (m - rlx_fetch(u_in0, u_in0_w, base + label));
#endif
}
