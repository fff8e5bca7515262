#version 300 es
// conv_grad_weight.frag - x[N, C, H, W], dy[N, O, OH, OW] -> dw[O, C/g, KH,
// KW], or P partial sums of it: element i = j * P + p is the part of weight
// j's sum of x * dy over the rows [p * L, (p + 1) * L) of the N * OH output
// rows (all of them when P = 1), each row clipped once to the outputs whose
// tap lands inside x.  u_in0 = x, u_in1 = dy; u_i = the conv geometry {N,
// C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, C/g, O/g}, then {P,
// L} (src/webgl/lower_vision.c; pool_sum.frag adds the partials up).  Sum
// order: rows, then columns.
// Reads: cursors at texel centers moved without dividing (the columns in
// runs of 4), texture() at texel centers (nearest, one level: exact; faster
// than texelFetch on SwiftShader).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

#define CV_POS(idx, w) (vec2((idx) % (w), (idx) / (w)) + 0.5)
#define CV_STRIDE(s, w) vec2((s) % (w), (s) / (w))
#define CV_STEP(p, st, w) p += st; if (p.x > w) p += vec2(-w, 1.0)

// The outputs [lo, hi) of an axis (n_out of them) whose input o * stride
// + off lies in [0, size) (src/cpu/conv_common.c rlx_conv_valid_range).
ivec2 cv_valid(int off, int stride, int size, int n_out) {
  int lo = off >= 0 ? 0 : (stride - 1 - off) / stride;
  int hi = size - 1 - off < 0 ? 0 : (size - 1 - off) / stride + 1;
  lo = min(lo, n_out);
  return ivec2(lo, max(lo, min(hi, n_out)));
}

float rlx_value(int i) {
  int C = u_i[1], H = u_i[2], W = u_i[3], O = u_i[4], OH = u_i[5], OW = u_i[6];
  int KH = u_i[7], KW = u_i[8], sh = u_i[9], sw = u_i[10], Cg = u_i[15], Og = u_i[16];
  int P = u_i[17], L = u_i[18];
  int p = i % P, j = i / P;
  int b = j % KW, t = j / KW, a = t % KH;
  t /= KH;
  int cc = t % Cg, o = t / Cg, c = (o / Og) * Cg + cc;
  int off_h = a * u_i[13] - u_i[11], off_w = b * u_i[14] - u_i[12];
  ivec2 rows = cv_valid(off_h, sh, H, OH), cols = cv_valid(off_w, sw, W, OW);
  if (cols.x == cols.y) return 0.0;
  int wx = u_in0_w, wdy = u_in1_w;
  float fx = float(wx), fdy = float(wdy);
  vec2 inv_x = 1.0 / vec2(textureSize(u_in0, 0)), inv_dy = 1.0 / vec2(textureSize(u_in1, 0));
  vec2 x_col = CV_STRIDE(sw, wx), x_row = CV_STRIDE(sh * W, wx), dy_col = vec2(1.0, 0.0), dy_row = CV_STRIDE(OW, wdy);
  int n_cols = cols.y - cols.x;
  float acc = 0.0;
  int r = p * L, r_end = min((p + 1) * L, u_i[0] * OH);
  while (r < r_end) { // one image's rows at a time
    int n = r / OH, first = r - n * OH, seg_end = min(r_end, (n + 1) * OH);
    int oh0 = max(first, rows.x), oh1 = min(first + seg_end - r, rows.y);
    if (oh0 < oh1) {
      vec2 xr = CV_POS(((n * C + c) * H + oh0 * sh + off_h) * W + cols.x * sw + off_w, wx);
      vec2 dr = CV_POS(((n * O + o) * OH + oh0) * OW + cols.x, wdy);
      for (int oh = oh0; oh < oh1; oh++) {
        vec2 xp = xr, dp = dr;
        int k = 0;
        for (; k + 4 <= n_cols; k += 4) {
          float x0 = texture(u_in0, xp * inv_x).r, d0 = texture(u_in1, dp * inv_dy).r;
          CV_STEP(xp, x_col, fx);
          CV_STEP(dp, dy_col, fdy);
          float x1 = texture(u_in0, xp * inv_x).r, d1 = texture(u_in1, dp * inv_dy).r;
          CV_STEP(xp, x_col, fx);
          CV_STEP(dp, dy_col, fdy);
          float x2 = texture(u_in0, xp * inv_x).r, d2 = texture(u_in1, dp * inv_dy).r;
          CV_STEP(xp, x_col, fx);
          CV_STEP(dp, dy_col, fdy);
          float x3 = texture(u_in0, xp * inv_x).r, d3 = texture(u_in1, dp * inv_dy).r;
          CV_STEP(xp, x_col, fx);
          CV_STEP(dp, dy_col, fdy);
          acc += x0 * d0;
          acc += x1 * d1;
          acc += x2 * d2;
          acc += x3 * d3;
        }
        for (; k < n_cols; k++) {
          acc += texture(u_in0, xp * inv_x).r * texture(u_in1, dp * inv_dy).r;
          CV_STEP(xp, x_col, fx);
          CV_STEP(dp, dy_col, fdy);
        }
        CV_STEP(xr, x_row, fx);
        CV_STEP(dr, dy_row, fdy);
      }
    }
    r = seg_end;
  }
  return acc;
}
