#version 300 es
// softmax.frag - softmax and log-softmax over one axis
// (src/webgl/lower_reduce.c).  The tensor is viewed as [outer, n, inner]:
// row r = o * inner + j holds the n values inner apart from
// o * n * inner + j.  MODE 0 writes the row statistics, two per row:
// [2r] = m, the row max (NaN skipped, as the CPU kernel), [2r + 1] = s,
// the sum of exp(x - m); MODE 1 writes softmax exp(x - m) / s, MODE 2
// log-softmax (x - m) - log(s).  With INLINE = 1 each fragment computes
// its row's m and s itself (short rows: one pass); else u_in1 holds the
// statistics of a MODE 0 pass.  u_in0 = x; u_i = {n, inner}.
// exp is guarded: NaN stays NaN (GPUs need not propagate it), arguments
// below -104 give 0 (as the CPU's exp does, to within denormals).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;
#if MODE != 0 && !INLINE
uniform highp sampler2D u_in1;
uniform int u_in1_w;
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

float rlx_row_max(int base, int n, int stride) {
  float m = -RLX_INF;
  ivec2 xy = rlx_xy(base, u_in0_w), step = rlx_xy(stride, u_in0_w);
  for (int j = 0; j < n; j++) {
    float x = texelFetch(u_in0, xy, 0).r;
    xy = rlx_next(xy, step, u_in0_w);
    if (x > m) m = x;
  }
  return m;
}

// Sum of exp(x - m) over the row, in blocks of 64.
float rlx_row_exp_sum(int base, int n, int stride, float m) {
  float acc = 0.0;
  ivec2 xy = rlx_xy(base, u_in0_w), step = rlx_xy(stride, u_in0_w);
  for (int b = 0; b < n; b += 64) {
    int e = min(b + 64, n);
    float part = 0.0;
    for (int j = b; j < e; j++) {
      part += rlx_exp_shifted(texelFetch(u_in0, xy, 0).r - m);
      xy = rlx_next(xy, step, u_in0_w);
    }
    acc += part;
  }
  return acc;
}

float rlx_value(int i) {
  int n = u_i[0], inner = u_i[1];
#if MODE == 0
  int r = i / 2;
  int base = (r / inner) * n * inner + r % inner;
  float m = rlx_row_max(base, n, inner);
  if (i % 2 == 0) return m;
  return rlx_row_exp_sum(base, n, inner, m);
#else
  int r = (i / (n * inner)) * inner + i % inner;
#if INLINE
  int base = (r / inner) * n * inner + r % inner;
  float m = rlx_row_max(base, n, inner);
  float s = rlx_row_exp_sum(base, n, inner, m);
#else
  float m = rlx_fetch(u_in1, u_in1_w, 2 * r);
  float s = rlx_fetch(u_in1, u_in1_w, 2 * r + 1);
#endif
  float x = rlx_fetch(u_in0, u_in0_w, i);
#if MODE == 1
  return rlx_exp_shifted(x - m) * (1.0 / s);
#else
  return isnan(s) ? RLX_NAN : (x - m) - log(s);
#endif
#endif
}
