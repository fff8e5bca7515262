/* k_pool_grad.c - the backward ops of 2-D max and average pooling (NCHW).
 * Windows are clipped to the input exactly as in the forward (k_pool.c):
 *  - max_pool2d_grad routes each dy to the first maximum of its window in
 *    row-major order (the first NaN when the window holds one, since the
 *    forward propagates NaN); padded cells never win.
 *  - avg_pool2d_grad spreads dy / (kernel_h * kernel_w) over the window's
 *    in-bounds cells (padding counts in the divisor, as in the forward).
 * Where windows overlap (stride < kernel) the contributions add up. */
#include <string.h>
#include "pool_common.h"

/* Offset in the plane of the cell the forward's max came from: the first
 * NaN, else the first cell holding the maximum. */
static size_t window_argmax(const float *xp, int32_t W, int32_t h0, int32_t h1, int32_t w0, int32_t w1) {
  size_t best = (size_t)h0 * W + w0;
  float m = xp[best];
  if (m != m) return best;
  for (int32_t ih = h0; ih < h1; ih++) {
    const size_t row = (size_t)ih * W;
    for (int32_t iw = ih == h0 ? w0 + 1 : w0; iw < w1; iw++) {
      const float v = xp[row + iw];
      if (v != v) return row + iw; /* the first NaN: nothing replaces it */
      if (v > m) {
        m = v;
        best = row + iw;
      }
    }
  }
  return best;
}

/* Whether v takes the place of the earlier candidate m as the window's
 * source: strictly larger, or the first NaN. */
static inline int replaces(float m, float v) { return v > m || (v != v && m == m); }

/* The 2x2 stride-2 unpadded case: the windows tile the input (but for an
 * odd last row or column), so every cell is written once, without a
 * separate zeroing pass. */
static void max_pool_grad_2x2s2(const pool_geom *g, const float *x, const float *dy, float *dx) {
  for (int32_t p = 0; p < g->planes; p++) {
    const float *xp = x + (size_t)p * g->H * g->W;
    const float *dyp = dy + (size_t)p * g->OH * g->OW;
    float *dxp = dx + (size_t)p * g->H * g->W;
    for (int32_t oh = 0; oh < g->OH; oh++) {
      const float *x0 = xp + (size_t)(2 * oh) * g->W, *x1 = x0 + g->W;
      float *d0 = dxp + (size_t)(2 * oh) * g->W, *d1 = d0 + g->W;
      const float *dyr = dyp + (size_t)oh * g->OW;
      for (int32_t ow = 0; ow < g->OW; ow++) {
        const int32_t i = 2 * ow;
        const int right0 = replaces(x0[i], x0[i + 1]), right1 = replaces(x1[i], x1[i + 1]);
        const int lower = replaces(right0 ? x0[i + 1] : x0[i], right1 ? x1[i + 1] : x1[i]);
        const float v = dyr[ow];
        d0[i] = !lower && !right0 ? v : 0.0f;
        d0[i + 1] = !lower && right0 ? v : 0.0f;
        d1[i] = lower && !right1 ? v : 0.0f;
        d1[i + 1] = lower && right1 ? v : 0.0f;
      }
      if (g->W & 1) d0[g->W - 1] = d1[g->W - 1] = 0.0f; /* odd last column */
    }
    if (g->H & 1) memset(dxp + (size_t)(g->H - 1) * g->W, 0, (size_t)g->W * sizeof(float)); /* odd last row */
  }
}

/* x[N,C,H,W], dy[N,C,OH,OW] -> dx[N,C,H,W]; iattr = the pool's 6
 * {kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w}. */
rlx_status rlx_cpu_max_pool2d_grad(const rlx_kargs *a) {
  const pool_geom g = pool_geom_make(a->in_node[0]->shape.dims, a->in_node[1]->shape.dims, a->node->iattr);
  const float *x = a->in[0], *dy = a->in[1];
  float *dx = a->out;
  if (pool_is_2x2s2(&g)) {
    max_pool_grad_2x2s2(&g, x, dy, dx);
    return RLX_OK;
  }
  memset(dx, 0, (size_t)g.planes * g.H * g.W * sizeof(float)); /* windows add into dx */
  for (int32_t p = 0; p < g.planes; p++) {
    const float *xp = x + (size_t)p * g.H * g.W;
    const float *dyp = dy + (size_t)p * g.OH * g.OW;
    float *dxp = dx + (size_t)p * g.H * g.W;
    for (int32_t oh = 0; oh < g.OH; oh++) {
      int32_t h0, h1;
      pool_window(oh, g.sh, g.ph, g.kh, g.H, &h0, &h1);
      for (int32_t ow = 0; ow < g.OW; ow++) {
        int32_t w0, w1;
        pool_window(ow, g.sw, g.pw, g.kw, g.W, &w0, &w1);
        dxp[window_argmax(xp, g.W, h0, h1, w0, w1)] += dyp[(size_t)oh * g.OW + ow];
      }
    }
  }
  return RLX_OK;
}

/* dy[N,C,OH,OW] -> dx[N,C,H,W]; iattr = the pool's 6 + {H, W}. */
rlx_status rlx_cpu_avg_pool2d_grad(const rlx_kargs *a) {
  const pool_geom g = pool_geom_make(a->node->shape.dims, a->in_node[0]->shape.dims, a->node->iattr);
  const float *dy = a->in[0];
  float *dx = a->out;
  const float inv = 1.0f / ((float)g.kh * (float)g.kw);
  memset(dx, 0, (size_t)g.planes * g.H * g.W * sizeof(float));
  for (int32_t p = 0; p < g.planes; p++) {
    const float *dyp = dy + (size_t)p * g.OH * g.OW;
    float *dxp = dx + (size_t)p * g.H * g.W;
    for (int32_t oh = 0; oh < g.OH; oh++) {
      int32_t h0, h1;
      pool_window(oh, g.sh, g.ph, g.kh, g.H, &h0, &h1);
      for (int32_t ow = 0; ow < g.OW; ow++) {
        int32_t w0, w1;
        pool_window(ow, g.sw, g.pw, g.kw, g.W, &w0, &w1);
        const float v = dyp[(size_t)oh * g.OW + ow] * inv;
        for (int32_t ih = h0; ih < h1; ih++) {
          float *dxr = dxp + (size_t)ih * g.W;
          for (int32_t iw = w0; iw < w1; iw++) dxr[iw] += v;
        }
      }
    }
  }
  return RLX_OK;
}
