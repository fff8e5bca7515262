#version 300 es
// conv2d.frag - x[N, C, H, W], w[O, C/g, KH, KW] -> y[N, O, OH, OW] with
// stride, zero padding, dilation and groups: one output element per
// fragment, summing over its group's C/g channels and the kernel taps that
// land inside the input (the tap range is clipped once, so the loops have
// no bounds tests).  u_in0 = x, u_in1 = w; u_i = the conv geometry {N, C,
// H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, C/g, O/g}
// (src/webgl/lower_vision.c).  Sum order: channel, kernel row, column.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

// Read cursors: texel (x, y) of a flat index, moved by st = (step % width,
// step / width) without dividing.
#define CV_POS(idx, w) ivec2((idx) % (w), (idx) / (w))
#define CV_STEP(p, st, w) p += st; if (p.x >= w) p += ivec2(-w, 1)

// First k in [0, n) with start + k * dil >= 0 and the end of the k with
// start + k * dil < size: the taps of a kernel axis inside the input.
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
  ivec2 kh = cv_taps(ih0, dh, H, KH), kw = cv_taps(iw0, dw, W, KW);
  if (kh.x == kh.y || kw.x == kw.y) return 0.0;
  int wx = u_in0_w, ww = u_in1_w;
  int xb = ((n * C + (o / Og) * Cg) * H + ih0 + kh.x * dh) * W + iw0 + kw.x * dw;
  int wb = (o * Cg * KH + kh.x) * KW + kw.x;
  ivec2 xc = CV_POS(xb, wx), wc = CV_POS(wb, ww);
  ivec2 x_col = CV_POS(dw, wx), x_row = CV_POS(dh * W, wx), x_chan = CV_POS(H * W, wx);
  ivec2 w_col = CV_POS(1, ww), w_row = CV_POS(KW, ww), w_chan = CV_POS(KH * KW, ww);
  float acc = 0.0;
  for (int c = 0; c < Cg; c++) {
    ivec2 xr = xc, wr = wc;
    for (int a = kh.x; a < kh.y; a++) {
      ivec2 xp = xr, wp = wr;
      for (int b = kw.x; b < kw.y; b++) {
        acc += texelFetch(u_in0, xp, 0).r * texelFetch(u_in1, wp, 0).r;
        CV_STEP(xp, x_col, wx);
        CV_STEP(wp, w_col, ww);
      }
      CV_STEP(xr, x_row, wx);
      CV_STEP(wr, w_row, ww);
    }
    CV_STEP(xc, x_chan, wx);
    CV_STEP(wc, w_chan, ww);
  }
  return acc;
}
