/* ref_vision.c - C twins of conv2d.frag, conv_grad_input.frag,
 * conv_grad_weight.frag, pool.frag, pool_grad.frag and pool_sum.frag for
 * the reference executor (reference.c): the same clipping, loop order and
 * float sums, element by element. */
#include <math.h>

#include "gl_plan.h"

/* The conv geometry block (lower_vision.c conv_ints). */
typedef struct {
  int32_t N, C, H, W, O, OH, OW, KH, KW, sh, sw, ph, pw, dh, dw, Cg, Og;
} conv_ints;

static conv_ints conv_of(const int32_t *u) {
  conv_ints g = {u[0], u[1], u[2],  u[3],  u[4],  u[5],  u[6],  u[7], u[8],
                 u[9], u[10], u[11], u[12], u[13], u[14], u[15], u[16]};
  return g;
}

static inline int32_t imin(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t imax(int32_t a, int32_t b) { return a > b ? a : b; }

/* conv2d.frag cv_taps: the taps [lo, hi) of a kernel axis inside the input. */
static void taps(int32_t start, int32_t dil, int32_t size, int32_t n, int32_t *lo, int32_t *hi) {
  *lo = start < 0 ? (dil - 1 - start) / dil : 0;
  const int32_t h = size > start ? imin(n, (size - start + dil - 1) / dil) : 0;
  *hi = imax(*lo, h);
}

/* conv2d.frag's K3 path adds +0 for the taps in the padding, which leaves
 * the sum as the clipped loops make it: one twin for both paths. */
void rlx_glref_conv2d(const rlx_glref_args *a) {
  const conv_ints g = conv_of(a->pass->ints);
  const float *x = a->in[0], *w = a->in[1];
  for (size_t e = 0; e < a->out_n; e++) {
    int32_t i = (int32_t)e, ow = i % g.OW, t = i / g.OW, oh = t % g.OH;
    t /= g.OH;
    int32_t o = t % g.O, n = t / g.O;
    int32_t ih0 = oh * g.sh - g.ph, iw0 = ow * g.sw - g.pw, kh0, kh1, kw0, kw1;
    taps(ih0, g.dh, g.H, g.KH, &kh0, &kh1);
    taps(iw0, g.dw, g.W, g.KW, &kw0, &kw1);
    float acc = 0.0f;
    if (kh0 < kh1 && kw0 < kw1) {
      const size_t xb = ((size_t)(n * g.C + (o / g.Og) * g.Cg) * g.H + ih0 + kh0 * g.dh) * g.W + iw0 + kw0 * g.dw;
      const size_t wb = ((size_t)o * g.Cg * g.KH + kh0) * g.KW + kw0;
      for (int32_t c = 0; c < g.Cg; c++)
        for (int32_t kh = kh0; kh < kh1; kh++)
          for (int32_t kw = kw0; kw < kw1; kw++)
            acc += x[xb + ((size_t)c * g.H + (size_t)(kh - kh0) * g.dh) * g.W + (size_t)(kw - kw0) * g.dw] *
                   w[wb + ((size_t)c * g.KH + (kh - kh0)) * g.KW + (kw - kw0)];
    }
    a->out[e] = acc;
  }
}

/* conv_grad_input.frag's K3 path (3x3, stride 1): filter, then taps,
 * those whose output lies outside dy skipped (the shader adds +0). */
static float grad_input_k3(const conv_ints *g, const float *dy, const float *w, int32_t ih, int32_t iw,
                           int32_t dy_base, int32_t w_base) {
  const size_t dy_filter = (size_t)g->OH * g->OW, w_filter = (size_t)g->Cg * 9;
  float acc = 0.0f;
  for (int32_t f = 0; f < g->Og; f++)
    for (int32_t kh = 0; kh < 3; kh++) {
      const int32_t oh = ih + g->ph - kh * g->dh;
      for (int32_t kw = 0; kw < 3; kw++) {
        const int32_t ow = iw + g->pw - kw * g->dw;
        if (oh < 0 || oh >= g->OH || ow < 0 || ow >= g->OW) continue;
        acc += dy[f * dy_filter + (size_t)(dy_base + oh) * g->OW + ow] * w[f * w_filter + (size_t)w_base * 3 + kh * 3 + kw];
      }
    }
  return acc;
}

void rlx_glref_conv_grad_input(const rlx_glref_args *a) {
  const conv_ints g = conv_of(a->pass->ints);
  const int k3 = rlx_gl_define_value(a->pass, "K3", 0) != 0;
  const float *dy = a->in[0], *w = a->in[1];
  const size_t dy_filter = (size_t)g.OH * g.OW, w_filter = (size_t)g.Cg * g.KH * g.KW;
  for (size_t e = 0; e < a->out_n; e++) {
    int32_t i = (int32_t)e, iw = i % g.W, t = i / g.W, ih = t % g.H;
    t /= g.H;
    int32_t c = t % g.C, n = t / g.C, grp = c / g.Cg;
    const int32_t dy_base = (n * g.O + grp * g.Og) * g.OH, w_base = ((grp * g.Og) * g.Cg + c - grp * g.Cg) * g.KH;
    if (k3) {
      a->out[e] = grad_input_k3(&g, dy, w, ih, iw, dy_base, w_base);
      continue;
    }
    float acc = 0.0f;
    for (int32_t kh = 0; kh < g.KH; kh++) {
      const int32_t th = ih + g.ph - kh * g.dh;
      if (th < 0) break;
      const int32_t oh = th / g.sh;
      if (oh * g.sh != th || oh >= g.OH) continue;
      for (int32_t kw = 0; kw < g.KW; kw++) {
        const int32_t tw = iw + g.pw - kw * g.dw;
        if (tw < 0) break;
        const int32_t ow = tw / g.sw;
        if (ow * g.sw != tw || ow >= g.OW) continue;
        const float *pd = dy + (size_t)(dy_base + oh) * g.OW + ow, *pw = w + (size_t)(w_base + kh) * g.KW + kw;
        for (int32_t f = 0; f < g.Og; f++) acc += pd[f * dy_filter] * pw[f * w_filter];
      }
    }
    a->out[e] = acc;
  }
}

/* conv_grad_weight.frag cv_valid (src/cpu/conv_common.c rlx_conv_valid_range). */
static void valid(int32_t off, int32_t stride, int32_t size, int32_t n_out, int32_t *lo, int32_t *hi) {
  const int64_t before = (int64_t)stride - 1 - off, after = (int64_t)size - 1 - off; /* 64 bits: no overflow */
  int32_t l = off >= 0 ? 0 : (int32_t)(before / stride < n_out ? before / stride : n_out);
  int32_t h = after < 0 ? 0 : (int32_t)(after / stride + 1 < n_out ? after / stride + 1 : n_out);
  l = imin(l, n_out);
  *lo = l;
  *hi = imax(l, imin(h, n_out));
}

void rlx_glref_conv_grad_weight(const rlx_glref_args *a) {
  const conv_ints g = conv_of(a->pass->ints);
  const int32_t P = a->pass->ints[17], L = a->pass->ints[18];
  const float *x = a->in[0], *dy = a->in[1];
  for (size_t e = 0; e < a->out_n; e++) {
    int32_t i = (int32_t)e, p = i % P, j = i / P;
    int32_t kw = j % g.KW, t = j / g.KW, kh = t % g.KH;
    t /= g.KH;
    int32_t cc = t % g.Cg, o = t / g.Cg, c = (o / g.Og) * g.Cg + cc;
    int32_t off_h = kh * g.dh - g.ph, off_w = kw * g.dw - g.pw, oh_lo, oh_hi, ow_lo, ow_hi;
    valid(off_h, g.sh, g.H, g.OH, &oh_lo, &oh_hi);
    valid(off_w, g.sw, g.W, g.OW, &ow_lo, &ow_hi);
    float acc = 0.0f;
    if (ow_lo < ow_hi) {
      int32_t r = p * L;
      const int32_t r_end = imin((p + 1) * L, g.N * g.OH);
      while (r < r_end) {
        const int32_t n = r / g.OH, first = r - n * g.OH, seg_end = imin(r_end, (n + 1) * g.OH);
        const int32_t oh0 = imax(first, oh_lo), oh1 = imin(first + seg_end - r, oh_hi);
        for (int32_t oh = oh0; oh < oh1; oh++) {
          const float *xr = x + ((size_t)(n * g.C + c) * g.H + oh * g.sh + off_h) * g.W + off_w;
          const float *dr = dy + ((size_t)(n * g.O + o) * g.OH + oh) * g.OW;
          for (int32_t ow = ow_lo; ow < ow_hi; ow++) acc += xr[(size_t)ow * g.sw] * dr[ow];
        }
        r = seg_end;
      }
    }
    a->out[e] = acc;
  }
}

/* The pool geometry block (lower_vision.c pool_ints). */
typedef struct {
  int32_t OW, OH, W, H, kh, kw, sh, sw, ph, pw;
} pool_ints;

static pool_ints pool_of(const int32_t *u) {
  pool_ints g = {u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9]};
  return g;
}

void rlx_glref_pool(const rlx_glref_args *a) {
  const pool_ints g = pool_of(a->pass->ints);
  const int is_max = rlx_gl_define_value(a->pass, "MAX", 0) != 0;
  const float scale = a->pass->floats[0], *x = a->in[0];
  for (size_t e = 0; e < a->out_n; e++) {
    int32_t i = (int32_t)e, ow = i % g.OW, t = i / g.OW, oh = t % g.OH, plane = t / g.OH;
    int32_t h_start = oh * g.sh - g.ph, w_start = ow * g.sw - g.pw;
    int32_t h0 = imax(h_start, 0), h1 = imin(h_start + g.kh, g.H);
    int32_t w0 = imax(w_start, 0), w1 = imin(w_start + g.kw, g.W);
    float acc = is_max ? -INFINITY : 0.0f;
    for (int32_t h = h0; h < h1; h++)
      for (int32_t w = w0; w < w1; w++) {
        const float v = x[((size_t)plane * g.H + h) * g.W + w];
        if (is_max)
          acc = (v > acc || isnan(v)) ? v : acc;
        else
          acc += v;
      }
    a->out[e] = is_max ? acc : acc * scale;
  }
}

/* pool_grad.frag pool_windows: the windows [lo, hi] of an axis holding cell
 * c (in 64 bits: c + pad and the rounding up can pass int32 for huge
 * strides and paddings; the results fit, being window indices). */
static void windows(int32_t c, int32_t k, int32_t stride, int32_t pad, int32_t n_out, int32_t *lo, int32_t *hi) {
  const int64_t top = (int64_t)c + pad - k + 1;
  *lo = top <= 0 ? 0 : (int32_t)((top + stride - 1) / stride);
  *hi = (int32_t)((((int64_t)c + pad) / stride) < n_out - 1 ? ((int64_t)c + pad) / stride : n_out - 1);
}

/* The source cell of a max-pooling window: the first NaN, else the first maximum. */
static void window_source(const float *xp, const pool_ints *g, int32_t oh, int32_t ow, int32_t *bh, int32_t *bw) {
  const int32_t h0 = imax(oh * g->sh - g->ph, 0), h1 = imin(oh * g->sh - g->ph + g->kh, g->H);
  const int32_t w0 = imax(ow * g->sw - g->pw, 0), w1 = imin(ow * g->sw - g->pw + g->kw, g->W);
  float m = -INFINITY;
  *bh = h0;
  *bw = w0;
  for (int32_t h = h0; h < h1; h++)
    for (int32_t w = w0; w < w1; w++) {
      const float v = xp[(size_t)h * g->W + w];
      if (isnan(v)) {
        *bh = h;
        *bw = w;
        return;
      }
      if (v > m) {
        m = v;
        *bh = h;
        *bw = w;
      }
    }
}

/* pool_grad.frag's P2 path (2x2 windows at stride 2) picks the same source
 * cell as window_source, without loops: one twin for both paths. */
void rlx_glref_pool_grad(const rlx_glref_args *a) {
  const pool_ints g = pool_of(a->pass->ints);
  const int is_max = rlx_gl_define_value(a->pass, "MAX", 0) != 0;
  const float scale = a->pass->floats[0], *dy = a->in[is_max ? 1 : 0];
  for (size_t e = 0; e < a->out_n; e++) {
    int32_t i = (int32_t)e, iw = i % g.W, t = i / g.W, ih = t % g.H, plane = t / g.H;
    int32_t oh_lo, oh_hi, ow_lo, ow_hi;
    windows(ih, g.kh, g.sh, g.ph, g.OH, &oh_lo, &oh_hi);
    windows(iw, g.kw, g.sw, g.pw, g.OW, &ow_lo, &ow_hi);
    float acc = 0.0f;
    for (int32_t oh = oh_lo; oh <= oh_hi; oh++)
      for (int32_t ow = ow_lo; ow <= ow_hi; ow++) {
        const float d = dy[((size_t)plane * g.OH + oh) * g.OW + ow];
        if (is_max) {
          int32_t bh, bw;
          window_source(a->in[0] + (size_t)plane * g.H * g.W, &g, oh, ow, &bh, &bw);
          if (bh == ih && bw == iw) acc += d;
        } else {
          acc += d * scale;
        }
      }
    a->out[e] = acc;
  }
}

void rlx_glref_pool_sum(const rlx_glref_args *a) {
  const int32_t len = a->pass->ints[0], L = a->pass->ints[1], Q = a->pass->ints[2];
  const float div = a->pass->floats[0], *x = a->in[0];
  for (size_t e = 0; e < a->out_n; e++) {
    const int32_t i = (int32_t)e, q = i % Q, r = i / Q, j0 = q * L, j1 = imin(len, j0 + L);
    float acc = 0.0f;
    for (int32_t j = j0; j < j1; j++) acc += x[(size_t)r * len + j];
    a->out[e] = acc / div;
  }
}
