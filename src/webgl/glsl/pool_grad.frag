#version 300 es
// pool_grad.frag - the backward of 2-D pooling, one input cell per
// fragment: dx[N, C, H, W] sums dy over the (clipped) windows holding the
// cell.  MAX = 1 (max_pool2d_grad, u_in0 = x, u_in1 = dy): a window counts
// only when the cell is its source, the first NaN of the window, else its
// first maximum in row-major order (src/cpu/k_pool_grad.c).  MAX = 0
// (avg_pool2d_grad, u_in0 = dy): every window counts, dy times u_f[0] = 1 /
// (kernel_h * kernel_w).  u_i = the pool geometry {OW, OH, W, H, kernel_h,
// kernel_w, stride_h, stride_w, pad_h, pad_w} (src/webgl/lower_vision.c).
// Sum order: windows in row-major order, as the CPU adds them.
// P2 = 1 (MAX = 1, 2x2 windows at stride 2, unpadded: the windows tile the
// input, one per cell at most): the four cells of the cell's window read
// and compared without loops (the common downsampling).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;
#if MAX
uniform highp sampler2D u_in1;
uniform int u_in1_w;
#define DY u_in1
#define DY_W u_in1_w
#else
#define DY u_in0
#define DY_W u_in0_w
#endif

// Element idx of a texture w texels wide (inv = 1 / its size) through
// texture() at the texel center (nearest, one level: exact; faster than
// texelFetch on SwiftShader).
float pg_fetch(highp sampler2D tex, vec2 inv, int w, int idx) {
  return texture(tex, (vec2(idx % w, idx / w) + 0.5) * inv).r;
}

// The windows [lo, hi] (inclusive) of an axis holding cell c.
ivec2 pool_windows(int c, int k, int stride, int pad, int n_out) {
  int top = c + pad - k + 1;
  int lo = top <= 0 ? 0 : (top + stride - 1) / stride;
  return ivec2(lo, min((c + pad) / stride, n_out - 1));
}

#if MAX && P2
// Whether v takes the place of the earlier candidate m as the window's
// source: strictly larger, or the first NaN (src/cpu/k_pool_grad.c).
bool pg_replaces(float m, float v) { return v > m || (isnan(v) && !isnan(m)); }

float rlx_value(int i) {
  int OW = u_i[0], OH = u_i[1], W = u_i[2], H = u_i[3];
  int iw = i % W, t = i / W, ih = t % H, plane = t / H;
  int oh = ih >> 1, ow = iw >> 1;
  if (oh >= OH || ow >= OW) return 0.0; // an odd last row or column
  int wx = u_in0_w, first = (plane * H + 2 * oh) * W + 2 * ow;
  float fx = float(wx);
  vec2 inv = 1.0 / vec2(textureSize(u_in0, 0)), inv_dy = 1.0 / vec2(textureSize(u_in1, 0));
  vec2 p00 = vec2(first % wx, first / wx) + 0.5, p01 = p00 + vec2(1 % wx, 1 / wx);
  if (p01.x > fx) p01 += vec2(-fx, 1.0);
  vec2 down = vec2(W % wx, W / wx), p10 = p00 + down, p11 = p01 + down;
  if (p10.x > fx) p10 += vec2(-fx, 1.0);
  if (p11.x > fx) p11 += vec2(-fx, 1.0);
  float x00 = texture(u_in0, p00 * inv).r, x01 = texture(u_in0, p01 * inv).r;
  float x10 = texture(u_in0, p10 * inv).r, x11 = texture(u_in0, p11 * inv).r;
  bool right0 = pg_replaces(x00, x01), right1 = pg_replaces(x10, x11);
  bool lower = pg_replaces(right0 ? x01 : x00, right1 ? x11 : x10);
  bool source = (ih & 1) == 1 ? lower && ((iw & 1) == 1) == right1 : !lower && ((iw & 1) == 1) == right0;
  return source ? pg_fetch(u_in1, inv_dy, u_in1_w, (plane * OH + oh) * OW + ow) : 0.0;
}
#else
float rlx_value(int i) {
  int OW = u_i[0], OH = u_i[1], W = u_i[2], H = u_i[3];
  int kh = u_i[4], kw = u_i[5], sh = u_i[6], sw = u_i[7], ph = u_i[8], pw = u_i[9];
  int iw = i % W, t = i / W, ih = t % H, plane = t / H;
  ivec2 wr = pool_windows(ih, kh, sh, ph, OH), wc = pool_windows(iw, kw, sw, pw, OW);
  int wx = u_in0_w, wd = DY_W;
  float fx = float(wx);
  vec2 inv = 1.0 / vec2(textureSize(u_in0, 0)), inv_dy = 1.0 / vec2(textureSize(DY, 0));
  vec2 down = vec2(W % wx, W / wx), right = vec2(1 % wx, 1 / wx);
  float acc = 0.0;
  for (int oh = wr.x; oh <= wr.y; oh++) {
    for (int ow = wc.x; ow <= wc.y; ow++) {
#if MAX
      // the window's source cell: the first NaN, else the first maximum
      int h0 = max(oh * sh - ph, 0), h1 = min(oh * sh - ph + kh, H);
      int w0 = max(ow * sw - pw, 0), w1 = min(ow * sw - pw + kw, W);
      int first = (plane * H + h0) * W + w0;
      vec2 row = vec2(first % wx, first / wx) + 0.5;
      float m = -RLX_INF;
      int best_h = h0, best_w = w0;
      bool nan_found = false;
      for (int h = h0; h < h1 && !nan_found; h++) {
        vec2 p = row;
        for (int w = w0; w < w1; w++) {
          float v = texture(u_in0, p * inv).r;
          if (isnan(v)) {
            best_h = h;
            best_w = w;
            nan_found = true;
            break;
          }
          if (v > m) {
            m = v;
            best_h = h;
            best_w = w;
          }
          p += right;
          if (p.x > fx) p += vec2(-fx, 1.0);
        }
        row += down;
        if (row.x > fx) row += vec2(-fx, 1.0);
      }
      if (best_h == ih && best_w == iw) acc += pg_fetch(DY, inv_dy, wd, (plane * OH + oh) * OW + ow);
#else
      acc += pg_fetch(DY, inv_dy, wd, (plane * OH + oh) * OW + ow) * u_f[0];
#endif
    }
  }
  return acc;
}
#endif
