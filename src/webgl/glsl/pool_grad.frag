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

// The windows [lo, hi] (inclusive) of an axis holding cell c.
ivec2 pool_windows(int c, int k, int stride, int pad, int n_out) {
  int top = c + pad - k + 1;
  int lo = top <= 0 ? 0 : (top + stride - 1) / stride;
  return ivec2(lo, min((c + pad) / stride, n_out - 1));
}

float rlx_value(int i) {
  int OW = u_i[0], OH = u_i[1], W = u_i[2], H = u_i[3];
  int kh = u_i[4], kw = u_i[5], sh = u_i[6], sw = u_i[7], ph = u_i[8], pw = u_i[9];
  int iw = i % W, t = i / W, ih = t % H, plane = t / H;
  ivec2 wr = pool_windows(ih, kh, sh, ph, OH), wc = pool_windows(iw, kw, sw, pw, OW);
  float acc = 0.0;
  for (int oh = wr.x; oh <= wr.y; oh++) {
    for (int ow = wc.x; ow <= wc.y; ow++) {
#if MAX
      // the window's source cell: the first NaN, else the first maximum
      int h0 = max(oh * sh - ph, 0), h1 = min(oh * sh - ph + kh, H);
      int w0 = max(ow * sw - pw, 0), w1 = min(ow * sw - pw + kw, W);
      int wx = u_in0_w, first = (plane * H + h0) * W + w0;
      ivec2 row = ivec2(first % wx, first / wx), down = ivec2(W % wx, W / wx);
      float m = -RLX_INF;
      int best_h = h0, best_w = w0;
      bool nan_found = false;
      for (int h = h0; h < h1 && !nan_found; h++) {
        ivec2 p = row;
        for (int w = w0; w < w1; w++) {
          float v = texelFetch(u_in0, p, 0).r;
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
          p.x += 1;
          if (p.x >= wx) p = ivec2(0, p.y + 1);
        }
        row += down;
        if (row.x >= wx) row += ivec2(-wx, 1);
      }
      if (best_h == ih && best_w == iw) acc += rlx_fetch(DY, DY_W, (plane * OH + oh) * OW + ow);
#else
      acc += rlx_fetch(DY, DY_W, (plane * OH + oh) * OW + ow) * u_f[0];
#endif
    }
  }
  return acc;
}
