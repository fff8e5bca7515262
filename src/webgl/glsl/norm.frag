#version 300 es
// norm.frag - RMS norm (LAYER 0) and layer norm (LAYER 1) over the last
// axis of x[rows, D], forward and backward (src/webgl/lower_norm.c, the
// formulas of src/cpu/k_norm.c and k_norm_grad.c).  Row statistics, with
// c = x[row, 0] (layer norm; 0 for RMS norm) and xc = (x - c) - dm the
// centred value (exact for rows far from zero: x - c loses nothing):
//   dm = mean(x - c) (layer norm; 0 for RMS), r = 1 / sqrt(mean(xc^2) + eps),
//   sg = sum(dy w), sgx = sum(dy w xc) (gradients only).
// MODE 0 writes K statistics per row: forward (GRAD 0) {r} or {dm, r},
//   gradient (GRAD 1) {r, sgx} or {dm, r, sg, sgx};
// MODE 1 the forward y = xc r w (+ b);
// MODE 2 dx = r g - shift - xc r^3 sgx / D with g = dy w, shift = r sg / D
//   (layer norm; 0 for RMS);
// MODE 3 partial sums of dw[j] = sum over rows of dy xc r: fragment i sums
//   chunk i % chunks of column j = i / chunks (rows per_chunk at a time).
// MODE 1 and 2 read the statistics of a MODE 0 pass from the last input,
// or with INLINE = 1 compute their row's themselves (short rows).
// Inputs (N of them): MODE 0: x (, w, dy); MODE 1: x, w (, b) (, stats);
// MODE 2: x, w, dy (, stats); MODE 3: x, dy, stats.
// u_i = {D, K, rows, chunks, per_chunk}; u_f = {eps}.  Sums go in blocks of 64.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;
#if N > 1
uniform highp sampler2D u_in1;
uniform int u_in1_w;
#endif
#if N > 2
uniform highp sampler2D u_in2;
uniform int u_in2_w;
#endif
#if N > 3
uniform highp sampler2D u_in3;
uniform int u_in3_w;
#endif

#define RLX_X(at) rlx_fetch(u_in0, u_in0_w, at)
#if MODE == 3
#define RLX_DY(at) rlx_fetch(u_in1, u_in1_w, at)
#define RLX_STATS(at) rlx_fetch(u_in2, u_in2_w, at)
#else
#define RLX_W(at) rlx_fetch(u_in1, u_in1_w, at)
#define RLX_DY(at) rlx_fetch(u_in2, u_in2_w, at)
#if MODE == 1 && LAYER
#define RLX_B(at) rlx_fetch(u_in2, u_in2_w, at)
#define RLX_STATS(at) rlx_fetch(u_in3, u_in3_w, at)
#elif MODE == 1
#define RLX_STATS(at) rlx_fetch(u_in2, u_in2_w, at)
#else
#define RLX_STATS(at) rlx_fetch(u_in3, u_in3_w, at)
#endif
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

struct rlx_norm_stats {
  float c, dm, r, sg, sgx;
};

// The statistics of the row at base (D values); the gradient sums only
// when grad is true (they read w and dy).
rlx_norm_stats rlx_row_stats(int base, int d, bool grad) {
  rlx_norm_stats st;
  st.c = 0.0;
  st.dm = 0.0;
#if LAYER
  st.c = RLX_X(base);
  float s1 = 0.0;
  ivec2 xy = rlx_xy(base, u_in0_w);
  for (int b = 0; b < d; b += 64) {
    int e = min(b + 64, d);
    float part = 0.0;
    for (int j = b; j < e; j++) {
      part += texelFetch(u_in0, xy, 0).r - st.c;
      xy = rlx_next(xy, ivec2(1, 0), u_in0_w);
    }
    s1 += part;
  }
  st.dm = s1 / float(d);
#endif
  float ss = 0.0;
  ivec2 xy0 = rlx_xy(base, u_in0_w);
  for (int b = 0; b < d; b += 64) {
    int e = min(b + 64, d);
    float part = 0.0;
    for (int j = b; j < e; j++) {
      float xc = (texelFetch(u_in0, xy0, 0).r - st.c) - st.dm;
      xy0 = rlx_next(xy0, ivec2(1, 0), u_in0_w);
      part += xc * xc;
    }
    ss += part;
  }
  st.r = 1.0 / sqrt(ss / float(d) + u_f[0]);
  st.sg = 0.0;
  st.sgx = 0.0;
#if (MODE == 0 && GRAD) || MODE == 2
  if (grad) {
    ivec2 xx = rlx_xy(base, u_in0_w), xw = ivec2(0), xd = rlx_xy(base, u_in2_w), one = ivec2(1, 0);
    for (int b = 0; b < d; b += 64) {
      int e = min(b + 64, d);
      float pg = 0.0, pgx = 0.0;
      for (int j = b; j < e; j++) {
        float g = texelFetch(u_in2, xd, 0).r * texelFetch(u_in1, xw, 0).r;
        pg += g;
        pgx += g * ((texelFetch(u_in0, xx, 0).r - st.c) - st.dm);
        xx = rlx_next(xx, one, u_in0_w);
        xw = rlx_next(xw, one, u_in1_w);
        xd = rlx_next(xd, one, u_in2_w);
      }
      st.sg += pg;
      st.sgx += pgx;
    }
  }
#endif
  return st;
}

#if MODE == 3 || (MODE != 0 && !INLINE)
// The statistics of row `row` as a MODE 0 pass wrote them (k per row).
rlx_norm_stats rlx_read_stats(int row, int base, int k) {
  rlx_norm_stats st;
  int at = row * k;
  st.c = 0.0;
  st.dm = 0.0;
#if LAYER
  st.c = RLX_X(base);
  st.dm = RLX_STATS(at);
  at++;
#endif
  st.r = RLX_STATS(at);
  st.sg = 0.0;
  st.sgx = 0.0;
#if MODE == 2 && LAYER
  st.sg = RLX_STATS(at + 1);
  st.sgx = RLX_STATS(at + 2);
#elif MODE == 2
  st.sgx = RLX_STATS(at + 1);
#endif
  return st;
}
#endif

float rlx_value(int i) {
  int d = u_i[0];
#if MODE == 0
  int k = u_i[1], row = i / k, which = i % k;
  rlx_norm_stats st = rlx_row_stats(row * d, d, GRAD == 1 && which > LAYER);
  float v[4] = float[4](st.dm, st.r, st.sg, st.sgx);
  return v[LAYER == 1 ? which : (which == 0 ? 1 : 3)];
#elif MODE == 3
  int chunks = u_i[3], per = u_i[4], j = i / chunks, ch = i % chunks;
  int r0 = ch * per, r1 = min(r0 + per, u_i[2]);
  // walks x and dy down column j, x's row starts (c) and the statistics
  int k = u_i[1];
  ivec2 sx = rlx_xy(d, u_in0_w), sy = rlx_xy(d, u_in1_w), sk = rlx_xy(k, u_in2_w);
  ivec2 xx = rlx_xy(r0 * d + j, u_in0_w), xc0 = rlx_xy(r0 * d, u_in0_w), xd = rlx_xy(r0 * d + j, u_in1_w);
  ivec2 xs = rlx_xy(r0 * k, u_in2_w);
  float acc = 0.0;
  for (int b = r0; b < r1; b += 64) {
    int e = min(b + 64, r1);
    float part = 0.0;
    for (int row = b; row < e; row++) {
#if LAYER
      float c = texelFetch(u_in0, xc0, 0).r, dm = texelFetch(u_in2, xs, 0).r;
      float r = texelFetch(u_in2, rlx_next(xs, ivec2(1, 0), u_in2_w), 0).r;
      xc0 = rlx_next(xc0, sx, u_in0_w);
#else
      float c = 0.0, dm = 0.0, r = texelFetch(u_in2, xs, 0).r;
#endif
      float xc = (texelFetch(u_in0, xx, 0).r - c) - dm;
      part += texelFetch(u_in1, xd, 0).r * (xc * r);
      xx = rlx_next(xx, sx, u_in0_w);
      xd = rlx_next(xd, sy, u_in1_w);
      xs = rlx_next(xs, sk, u_in2_w);
    }
    acc += part;
  }
  return acc;
#else
  int row = i / d, j = i % d, base = row * d;
#if INLINE
  rlx_norm_stats st = rlx_row_stats(base, d, MODE == 2);
#else
  rlx_norm_stats st = rlx_read_stats(row, base, u_i[1]);
#endif
  float xc = (RLX_X(i) - st.c) - st.dm;
#if MODE == 1 && LAYER
  return xc * st.r * RLX_W(j) + RLX_B(j);
#elif MODE == 1
  return xc * st.r * RLX_W(j);
#else
  float g = RLX_DY(i) * RLX_W(j);
  float shift = LAYER == 1 ? st.r * st.sg / float(d) : 0.0;
  return st.r * g - shift - xc * (st.r * st.r * st.r * st.sgx / float(d));
#endif
#endif
}
