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
  for (int b = 0; b < d; b += 64) {
    int e = min(b + 64, d);
    float part = 0.0;
    for (int j = b; j < e; j++) part += RLX_X(base + j) - st.c;
    s1 += part;
  }
  st.dm = s1 / float(d);
#endif
  float ss = 0.0;
  for (int b = 0; b < d; b += 64) {
    int e = min(b + 64, d);
    float part = 0.0;
    for (int j = b; j < e; j++) {
      float xc = (RLX_X(base + j) - st.c) - st.dm;
      part += xc * xc;
    }
    ss += part;
  }
  st.r = 1.0 / sqrt(ss / float(d) + u_f[0]);
  st.sg = 0.0;
  st.sgx = 0.0;
#if (MODE == 0 && GRAD) || MODE == 2
  if (grad) {
    for (int b = 0; b < d; b += 64) {
      int e = min(b + 64, d);
      float pg = 0.0, pgx = 0.0;
      for (int j = b; j < e; j++) {
        float g = RLX_DY(base + j) * RLX_W(j);
        pg += g;
        pgx += g * ((RLX_X(base + j) - st.c) - st.dm);
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
  float acc = 0.0;
  for (int b = r0; b < r1; b += 64) {
    int e = min(b + 64, r1);
    float part = 0.0;
    for (int row = b; row < e; row++) {
      rlx_norm_stats st = rlx_read_stats(row, row * d, u_i[1]);
      float xc = (RLX_X(row * d + j) - st.c) - st.dm;
      part += RLX_DY(row * d + j) * (xc * st.r);
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
