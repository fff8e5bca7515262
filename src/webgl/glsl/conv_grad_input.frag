#version 300 es
// conv_grad_input.frag - dy[N, O, OH, OW], w[O, C/g, KH, KW] -> dx[N, C,
// H, W], the transposed convolution: one input element per fragment,
// summing dy * w over the kernel taps that reach it from an output (the
// offset must divide by the stride and the output lie inside dy) and, per
// tap, over the O/g filters of its group.  u_in0 = dy, u_in1 = w; u_i =
// the conv geometry {N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw,
// C/g, O/g} (src/webgl/lower_vision.c).  Sum order: kernel row, column,
// filter.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

// Read cursors: texel (x, y) of a flat index, moved by st = (step % width,
// step / width) without dividing.
#define CV_POS(idx, w) ivec2((idx) % (w), (idx) / (w))
#define CV_STEP(p, st, w) p += st; if (p.x >= w) p += ivec2(-w, 1)

float rlx_value(int i) {
  int C = u_i[1], H = u_i[2], W = u_i[3], O = u_i[4], OH = u_i[5], OW = u_i[6];
  int KH = u_i[7], KW = u_i[8], sh = u_i[9], sw = u_i[10], dh = u_i[13], dw = u_i[14];
  int Cg = u_i[15], Og = u_i[16];
  int iw = i % W, t = i / W, ih = t % H;
  t /= H;
  int c = t % C, n = t / C, g = c / Cg;
  int wdy = u_in0_w, ww = u_in1_w;
  ivec2 dy_filter = CV_POS(OH * OW, wdy), w_filter = CV_POS(Cg * KH * KW, ww);
  int dy_base = (n * O + g * Og) * OH, w_base = ((g * Og) * Cg + c - g * Cg) * KH;
  float acc = 0.0;
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
      ivec2 pd = CV_POS((dy_base + oh) * OW + ow, wdy), pw = CV_POS((w_base + a) * KW + b, ww);
      for (int f = 0; f < Og; f++) {
        acc += texelFetch(u_in0, pd, 0).r * texelFetch(u_in1, pw, 0).r;
        CV_STEP(pd, dy_filter, wdy);
        CV_STEP(pw, w_filter, ww);
      }
    }
  }
  return acc;
}
