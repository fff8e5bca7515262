#version 300 es
// conv_grad_input.frag - dy[N, O, OH, OW], w[O, C/g, KH, KW] -> dx[N, C,
// H, W], the transposed convolution: one input element per fragment,
// summing dy * w over the kernel taps that reach it from an output (the
// offset must divide by the stride and the output lie inside dy) and the
// O/g filters of its group.  u_in0 = dy, u_in1 = w; u_i = the conv
// geometry {N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, C/g,
// O/g} (src/webgl/lower_vision.c).
//  - K3 = 1 (3x3 kernels, stride 1): per filter, the nine taps written out,
//    each read even where its output falls outside dy (at a clamped texel)
//    and masked out there.  Sum order: filter, kernel row, column.
//  - else: per kernel row and column that reaches an output, a loop over
//    the filters.  Sum order: kernel row, column, filter.
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
#define CV_BACK(p, st, w) p -= st; if (p.x < 0.0) p += vec2(w, -1.0)

// The texel center of flat index idx >= 0 in a texture w wide.
vec2 cv_pos(int idx, int w) { return vec2(idx % w, idx / w) + 0.5; }

float rlx_value(int i) {
  int C = u_i[1], H = u_i[2], W = u_i[3], O = u_i[4], OH = u_i[5], OW = u_i[6];
  int KH = u_i[7], KW = u_i[8], sh = u_i[9], sw = u_i[10], dh = u_i[13], dw = u_i[14];
  int Cg = u_i[15], Og = u_i[16];
  int iw = i % W, t = i / W, ih = t % H;
  t /= H;
  int c = t % C, n = t / C, g = c / Cg;
  int wdy = u_in0_w, ww = u_in1_w;
  float fdy = float(wdy), fw = float(ww);
  vec2 inv_dy = 1.0 / vec2(textureSize(u_in0, 0)), inv_w = 1.0 / vec2(textureSize(u_in1, 0));
  int dy_base = (n * O + g * Og) * OH, w_base = ((g * Og) * Cg + c - g * Cg) * KH;
  float acc = 0.0;
#if K3
  // stride 1: tap (a, b) reads dy at (ih + ph - a dh, iw + pw - b dw)
  int oh0 = ih + u_i[11], ow0 = iw + u_i[12];
  bvec3 rows = bvec3(oh0 < OH, oh0 - dh >= 0 && oh0 - dh < OH, oh0 - 2 * dh >= 0 && oh0 - 2 * dh < OH);
  bvec3 cols = bvec3(ow0 < OW, ow0 - dw >= 0 && ow0 - dw < OW, ow0 - 2 * dw >= 0 && ow0 - 2 * dw < OW);
  if (!any(rows) || !any(cols)) return 0.0;
  bool t00 = rows.x && cols.x, t01 = rows.x && cols.y, t02 = rows.x && cols.z;
  bool t10 = rows.y && cols.x, t11 = rows.y && cols.y, t12 = rows.y && cols.z;
  bool t20 = rows.z && cols.x, t21 = rows.z && cols.y, t22 = rows.z && cols.z;
  vec2 dy_col = CV_STRIDE(dw, wdy), dy_row = CV_STRIDE(dh * OW, wdy), dy_filter = CV_STRIDE(OH * OW, wdy);
  vec2 w_col = CV_STRIDE(1, ww), w_next = CV_STRIDE(Cg * 9 - 8, ww);
  vec2 dc = cv_pos((dy_base + oh0) * OW + ow0, wdy), wp = cv_pos(w_base * 3, ww);
#define TAP(inside) { float v = texture(u_in0, dp * inv_dy).r * texture(u_in1, wp * inv_w).r; acc += inside ? v : 0.0; }
#define COL CV_BACK(dp, dy_col, fdy); CV_STEP(wp, w_col, fw);
#define ROW CV_BACK(dr, dy_row, fdy); dp = dr; CV_STEP(wp, w_col, fw);
  for (int f = 0; f < Og; f++) {
    vec2 dr = dc, dp = dc;
    TAP(t00) COL TAP(t01) COL TAP(t02) ROW
    TAP(t10) COL TAP(t11) COL TAP(t12) ROW
    TAP(t20) COL TAP(t21) COL TAP(t22)
    CV_STEP(dc, dy_filter, fdy);
    CV_STEP(wp, w_next, fw);
  }
#else
  vec2 dy_filter = CV_STRIDE(OH * OW, wdy), w_filter = CV_STRIDE(Cg * KH * KW, ww);
  for (int a = 0; a < KH; a++) {
    int th = ih + u_i[11] - a * dh;
    if (th < 0) break;
    int oh = th / sh;
    if (oh * sh != th || oh >= OH) continue;
    for (int b = 0; b < KW; b++) {
      int tw = iw + u_i[12] - b * dw;
      if (tw < 0) break;
      int ow = tw / sw;
      if (ow * sw != tw || ow >= OW) continue;
      vec2 pd = cv_pos((dy_base + oh) * OW + ow, wdy), pw = cv_pos((w_base + a) * KW + b, ww);
      for (int f = 0; f < Og; f++) {
        acc += texture(u_in0, pd * inv_dy).r * texture(u_in1, pw * inv_w).r;
        CV_STEP(pd, dy_filter, fdy);
        CV_STEP(pw, w_filter, fw);
      }
    }
  }
#endif
  return acc;
}
