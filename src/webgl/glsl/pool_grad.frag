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
// and compared without loops (the common downsampling).  Reads through
// rlx_fetch (either layout).  PG_RUN4 (src/webgl/plan_layout.c: PG_V4 and a
// 4-floats-per-texel output): one fragment = 4 cells, two window row halves.
#if defined(PG_RUN4)
#define RLX_VALUE4 1
#endif
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

#if MAX && P2
// Whether v takes the place of the earlier candidate m as the window's
// source: strictly larger, or the first NaN (src/cpu/k_pool_grad.c).
bool pg_replaces(float m, float v) { return v > m || (isnan(v) && !isnan(m)); }

float rlx_value(int i) {
  int OW = u_i[0], OH = u_i[1], W = u_i[2], H = u_i[3];
  ivec2 a = rlx_divmod(i, W), b = rlx_divmod(a.x, H);
  int iw = a.y, ih = b.y, plane = b.x;
  int oh = ih >> 1, ow = iw >> 1;
  if (oh >= OH || ow >= OW) return 0.0; // an odd last row or column
  int first = (plane * H + 2 * oh) * W + 2 * ow;
#if defined(PG_V4)
  // x holds 4 floats per texel and W is even (src/webgl/plan_gl.c): each
  // row pair of the window starts at an even index, so it is one texel's
  // x, y or z, w.
  vec4 r0 = rlx_texel4(u_in0, u_in0_w, first & ~3), r1 = rlx_texel4(u_in0, u_in0_w, (first + W) & ~3);
  bool hi0 = (first & 2) != 0, hi1 = ((first + W) & 2) != 0;
  float x00 = hi0 ? r0.z : r0.x, x01 = hi0 ? r0.w : r0.y, x10 = hi1 ? r1.z : r1.x, x11 = hi1 ? r1.w : r1.y;
#else
  float x00 = rlx_fetch(u_in0, u_in0_w, first), x01 = rlx_fetch(u_in0, u_in0_w, first + 1);
  float x10 = rlx_fetch(u_in0, u_in0_w, first + W), x11 = rlx_fetch(u_in0, u_in0_w, first + W + 1);
#endif
  bool right0 = pg_replaces(x00, x01), right1 = pg_replaces(x10, x11);
  bool lower = pg_replaces(right0 ? x01 : x00, right1 ? x11 : x10);
  bool source = (ih & 1) == 1 ? lower && ((iw & 1) == 1) == right1 : !lower && ((iw & 1) == 1) == right0;
  return source ? rlx_fetch(u_in1, u_in1_w, (plane * OH + oh) * OW + ow) : 0.0;
}
#if defined(PG_RUN4)
// Cells e, e + 1 (e even: one row of one window, as W is even): dy where
// the cell is its window's source, else 0; its rows are texel halves of x.
vec2 pg_pair(int e) {
  int OW = u_i[0], OH = u_i[1], W = u_i[2], H = u_i[3];
  ivec2 a = rlx_divmod(e, W), b = rlx_divmod(a.x, H);
  int oh = b.y >> 1, first = (b.x * H + 2 * oh) * W + a.y;
  if (oh >= OH) return vec2(0.0); // an odd last row
  vec4 r0 = rlx_texel4(u_in0, u_in0_w, first & ~3), r1 = rlx_texel4(u_in0, u_in0_w, (first + W) & ~3);
  vec2 t = (first & 2) != 0 ? r0.zw : r0.xy, u = ((first + W) & 2) != 0 ? r1.zw : r1.xy;
  bool r = pg_replaces(t.x, t.y), s = pg_replaces(u.x, u.y), odd = (b.y & 1) == 1;
  bool on = odd == pg_replaces(r ? t.y : t.x, s ? u.y : u.x), right = odd ? s : r;
  float g = rlx_fetch(u_in1, u_in1_w, (b.x * OH + oh) * OW + (a.y >> 1));
  return vec2(on && !right ? g : 0.0, on && right ? g : 0.0);
}

vec4 rlx_value4(int i) { return vec4(pg_pair(i), pg_pair(i + 2)); }
#endif
#else
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
      int first = (plane * H + h0) * W + w0;
      float m = -RLX_INF;
      int best_h = h0, best_w = w0;
      bool nan_found = false;
      for (int h = h0; h < h1 && !nan_found; h++) {
        int idx = first;
        for (int w = w0; w < w1; w++) {
          float v = rlx_fetch(u_in0, u_in0_w, idx);
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
          idx++;
        }
        first += W;
      }
      if (best_h == ih && best_w == iw) acc += rlx_fetch(DY, DY_W, (plane * OH + oh) * OW + ow);
#else
      acc += rlx_fetch(DY, DY_W, (plane * OH + oh) * OW + ow) * u_f[0];
#endif
    }
  }
  return acc;
}
#endif
