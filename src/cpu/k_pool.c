/* k_pool.c - 2-D max and average pooling over NCHW tensors, and global
 * average pooling.  Windows are clipped to the input: max pooling ignores
 * padded cells (padding acts as -inf), average pooling counts them as zeros
 * and always divides by kernel_h * kernel_w.  Max pooling propagates NaN,
 * like the max and reduce_max kernels. */
#include <math.h>
#include "pool_common.h"

static pool_geom pool_geom_of(const rlx_kargs *a) {
  return pool_geom_make(a->in_node[0]->shape.dims, a->node->shape.dims, a->node->iattr);
}

/* max(m, v), NaN when either is NaN. */
static inline float nan_max(float m, float v) { return (v > m || v != v) ? v : m; }

/* Max of a 2x2 stride-2 unpadded window grid (the common downsampling). */
static void max_pool_2x2s2(const pool_geom *g, const float *x, float *y) {
  for (int32_t p = 0; p < g->planes; p++) {
    const float *xp = x + (size_t)p * g->H * g->W;
    float *yp = y + (size_t)p * g->OH * g->OW;
    for (int32_t oh = 0; oh < g->OH; oh++) {
      const float *r0 = xp + (size_t)(2 * oh) * g->W, *r1 = r0 + g->W;
      float *yr = yp + (size_t)oh * g->OW;
      for (int32_t ow = 0; ow < g->OW; ow++) {
        float a = nan_max(r0[2 * ow], r0[2 * ow + 1]), b = nan_max(r1[2 * ow], r1[2 * ow + 1]);
        yr[ow] = nan_max(a, b);
      }
    }
  }
}

/* x[N,C,H,W] -> y[N,C,OH,OW]; iattr = {kernel_h, kernel_w, stride_h,
 * stride_w, pad_h, pad_w}.  (The shape rule keeps padding below the kernel
 * size, so every window holds at least one input cell.) */
rlx_status rlx_cpu_max_pool2d(const rlx_kargs *a) {
  const pool_geom g = pool_geom_of(a);
  const float *x = a->in[0];
  float *y = a->out;
  if (pool_is_2x2s2(&g)) {
    max_pool_2x2s2(&g, x, y);
    return RLX_OK;
  }
  for (int32_t p = 0; p < g.planes; p++) {
    const float *xp = x + (size_t)p * g.H * g.W;
    float *yp = y + (size_t)p * g.OH * g.OW;
    for (int32_t oh = 0; oh < g.OH; oh++) {
      int32_t h0, h1;
      pool_window(oh, g.sh, g.ph, g.kh, g.H, &h0, &h1);
      for (int32_t ow = 0; ow < g.OW; ow++) {
        int32_t w0, w1;
        pool_window(ow, g.sw, g.pw, g.kw, g.W, &w0, &w1);
        float m = -INFINITY;
        for (int32_t ih = h0; ih < h1; ih++) {
          const float *xr = xp + (size_t)ih * g.W;
          for (int32_t iw = w0; iw < w1; iw++) m = nan_max(m, xr[iw]);
        }
        yp[(size_t)oh * g.OW + ow] = m;
      }
    }
  }
  return RLX_OK;
}

/* x[N,C,H,W] -> y[N,C,OH,OW]; same iattr as max pooling; the sum over the
 * clipped window is divided by kernel_h * kernel_w. */
rlx_status rlx_cpu_avg_pool2d(const rlx_kargs *a) {
  const pool_geom g = pool_geom_of(a);
  const float *x = a->in[0];
  float *y = a->out;
  const float inv = 1.0f / ((float)g.kh * (float)g.kw);
  for (int32_t p = 0; p < g.planes; p++) {
    const float *xp = x + (size_t)p * g.H * g.W;
    float *yp = y + (size_t)p * g.OH * g.OW;
    for (int32_t oh = 0; oh < g.OH; oh++) {
      int32_t h0, h1;
      pool_window(oh, g.sh, g.ph, g.kh, g.H, &h0, &h1);
      for (int32_t ow = 0; ow < g.OW; ow++) {
        int32_t w0, w1;
        pool_window(ow, g.sw, g.pw, g.kw, g.W, &w0, &w1);
        float s = 0.0f;
        for (int32_t ih = h0; ih < h1; ih++) {
          const float *xr = xp + (size_t)ih * g.W;
          for (int32_t iw = w0; iw < w1; iw++) s += xr[iw];
        }
        yp[(size_t)oh * g.OW + ow] = s * inv;
      }
    }
  }
  return RLX_OK;
}

/* x[N,C,H,W] -> y[N,C]: the mean of each H x W plane. */
rlx_status rlx_cpu_global_avg_pool(const rlx_kargs *a) {
  const int32_t *xd = a->in_node[0]->shape.dims;
  const size_t planes = (size_t)xd[0] * xd[1], hw = (size_t)xd[2] * xd[3];
  const float *x = a->in[0];
  for (size_t p = 0; p < planes; p++) {
    const float *xp = x + p * hw;
    /* four partial sums: shorter dependency chain, smaller rounding error */
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    size_t i = 0;
    for (; i + 4 <= hw; i += 4) {
      s0 += xp[i];
      s1 += xp[i + 1];
      s2 += xp[i + 2];
      s3 += xp[i + 3];
    }
    for (; i < hw; i++) s0 += xp[i];
    a->out[p] = ((s0 + s1) + (s2 + s3)) / (float)hw;
  }
  return RLX_OK;
}
