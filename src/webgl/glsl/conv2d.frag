#version 300 es
// conv2d.frag - x[N, C, H, W], w[O, C/g, KH, KW] -> y[N, O, OH, OW] with
// stride, zero padding, dilation and groups: one output element per
// fragment, summing over its group's C/g channels and the kernel taps.
// u_in0 = x, u_in1 = w; u_i = the conv geometry {N, C, H, W, O, OH, OW, KH,
// KW, sh, sw, ph, pw, dh, dw, C/g, O/g} (src/webgl/lower_vision.c).  Sum
// order: channel, kernel row, column.
//  - K3 = 1 (3x3 kernels): the nine taps of a channel written out, each
//    read even where it falls into the padding (at a clamped texel) and
//    masked out there (SwiftShader does not unroll loops; this halves the
//    time of mnist-cnn's second conv);
//  - else loops over the taps inside the input (clipped once per output).
// Reads: cursors at texel centers moved without dividing, texture() at
// texel centers (nearest, one level: exact; faster than texelFetch on
// SwiftShader).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

#define CV_STRIDE(s, w) vec2((s) % (w), (s) / (w))
#define CV_STEP(p, st, w) p += st; if (p.x > w) p += vec2(-w, 1.0)

// The texel center of flat index idx in a texture w wide (idx < 0: a row
// above the texture, which clamped reads never use unmasked).
vec2 cv_pos(int idx, int w) {
  int up = idx < 0 ? (w - 1 - idx) / w : 0;
  idx += up * w;
  return vec2(idx % w, idx / w - up) + 0.5;
}

// The taps [lo, hi) of a kernel axis inside the input: start + k * dil in
// [0, size) for k < n.
ivec2 cv_taps(int start, int dil, int size, int n) {
  int lo = start < 0 ? (dil - 1 - start) / dil : 0;
  int hi = size > start ? min(n, (size - start + dil - 1) / dil) : 0;
  return ivec2(lo, max(lo, hi));
}

float rlx_value(int i) {
  int C = u_i[1], H = u_i[2], W = u_i[3], O = u_i[4], OH = u_i[5], OW = u_i[6];
  int KH = u_i[7], KW = u_i[8], dh = u_i[13], dw = u_i[14], Cg = u_i[15], Og = u_i[16];
  int ow = i % OW, t = i / OW, oh = t % OH;
  t /= OH;
  int o = t % O, n = t / O;
  int ih0 = oh * u_i[9] - u_i[11], iw0 = ow * u_i[10] - u_i[12];
  int wx = u_in0_w, ww = u_in1_w;
  float fx = float(wx), fw = float(ww);
  vec2 inv_x = 1.0 / vec2(textureSize(u_in0, 0)), inv_w = 1.0 / vec2(textureSize(u_in1, 0));
  vec2 x_chan = CV_STRIDE(H * W, wx), w_col = CV_STRIDE(1, ww);
  int x_first = (n * C + (o / Og) * Cg) * H * W;
  float acc = 0.0;
#if K3
  bvec3 rows = bvec3(ih0 >= 0 && ih0 < H, ih0 + dh >= 0 && ih0 + dh < H, ih0 + 2 * dh >= 0 && ih0 + 2 * dh < H);
  bvec3 cols = bvec3(iw0 >= 0 && iw0 < W, iw0 + dw >= 0 && iw0 + dw < W, iw0 + 2 * dw >= 0 && iw0 + 2 * dw < W);
  if (!any(rows) || !any(cols)) return 0.0;
  bool t00 = rows.x && cols.x, t01 = rows.x && cols.y, t02 = rows.x && cols.z;
  bool t10 = rows.y && cols.x, t11 = rows.y && cols.y, t12 = rows.y && cols.z;
  bool t20 = rows.z && cols.x, t21 = rows.z && cols.y, t22 = rows.z && cols.z;
  vec2 x_col = CV_STRIDE(dw, wx), x_row = CV_STRIDE(dh * W, wx);
  vec2 xc = cv_pos(x_first + ih0 * W + iw0, wx), wp = cv_pos(o * Cg * 9, ww);
// one tap: the product where it lies inside the input, else +0
#define TAP(inside) { float v = texture(u_in0, xp * inv_x).r * texture(u_in1, wp * inv_w).r; acc += inside ? v : 0.0; CV_STEP(wp, w_col, fw); }
#define COL CV_STEP(xp, x_col, fx);
#define ROW CV_STEP(xr, x_row, fx); xp = xr;
  for (int c = 0; c < Cg; c++) {
    vec2 xr = xc, xp = xc;
    TAP(t00) COL TAP(t01) COL TAP(t02) ROW
    TAP(t10) COL TAP(t11) COL TAP(t12) ROW
    TAP(t20) COL TAP(t21) COL TAP(t22)
    CV_STEP(xc, x_chan, fx);
  }
#else
  ivec2 kh = cv_taps(ih0, dh, H, KH), kw = cv_taps(iw0, dw, W, KW);
  if (kh.x == kh.y || kw.x == kw.y) return 0.0;
  vec2 x_col = CV_STRIDE(dw, wx), x_row = CV_STRIDE(dh * W, wx);
  vec2 w_row = CV_STRIDE(KW, ww), w_chan = CV_STRIDE(KH * KW, ww);
  vec2 xc = cv_pos(x_first + (ih0 + kh.x * dh) * W + iw0 + kw.x * dw, wx);
  vec2 wc = cv_pos((o * Cg * KH + kh.x) * KW + kw.x, ww);
  for (int c = 0; c < Cg; c++) {
    vec2 xr = xc, wr = wc;
    for (int a = kh.x; a < kh.y; a++) {
      vec2 xp = xr, wp = wr;
      for (int b = kw.x; b < kw.y; b++) {
        acc += texture(u_in0, xp * inv_x).r * texture(u_in1, wp * inv_w).r;
        CV_STEP(xp, x_col, fx);
        CV_STEP(wp, w_col, fw);
      }
      CV_STEP(xr, x_row, fx);
      CV_STEP(wr, w_row, fw);
    }
    CV_STEP(xc, x_chan, fx);
    CV_STEP(wc, w_chan, fw);
  }
#endif
  return acc;
}
