#version 300 es
// col2im.frag - the input gradient of a conv from the packed product
// P[(n, oh, ow), (c, kh, kw)] = sum_o dy[n, o, oh, ow] * w[o, c, kh, kw]
// (src/webgl/lower_vision.c): dx[n, c, h, w] = sum over kh, kw (in that
// order) of P[(n, oh, ow), (c, kh, kw)] where h = oh * sh - ph + kh * dh
// and w = ow * sw - pw + kw * dw with oh < OH, ow < OW.  u_in0 = P (packed
// rows of rt texels, per rows a line); u_i = {N, C, H, W, OH, OW, KH, KW,
// sh, sw, ph, pw, dh, dw, rt, per, P's width}.  Every window cell is fetched (a
// clamped row when it is not a source, then ignored): a software
// rasterizer runs both sides of a branch anyway.
#include "common.glsl"

uniform highp sampler2D u_in0;

float rlx_value(int i) {
  int C = u_i[1], H = u_i[2], W = u_i[3], OH = u_i[4], OW = u_i[5], KH = u_i[6], KW = u_i[7];
  int sh = u_i[8], sw = u_i[9], ph = u_i[10], pw = u_i[11], dh = u_i[12], dw = u_i[13], rt = u_i[14], per = u_i[15];
  ivec2 a = rlx_divmod(i, W), b = rlx_divmod(a.x, H), c = rlx_divmod(b.x, C);
  int w = a.y, h = b.y, ch = c.y, n = c.x;
  float acc = 0.0;
  for (int kh = 0; kh < KH; kh++) {
    int th = h + ph - kh * dh;
    ivec2 qh = rlx_divmod(max(th, 0), sh);
    bool row_ok = th >= 0 && qh.y == 0 && qh.x < OH;
    for (int kw = 0; kw < KW; kw++) {
      int tw = w + pw - kw * dw;
      ivec2 qw = rlx_divmod(max(tw, 0), sw);
      bool ok = row_ok && tw >= 0 && qw.y == 0 && qw.x < OW;
      int row = ok ? (n * OH + qh.x) * OW + qw.x : 0, col = (ch * KH + kh) * KW + kw;
      float v = texelFetch(u_in0, rlx_packed_texel(row, col >> 2, rt, per), 0)[col & 3];
      acc += ok ? v : 0.0;
    }
  }
  return acc;
}
