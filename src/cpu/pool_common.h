/* pool_common.h - the window geometry shared by the 2-D pooling kernels
 * (forward in k_pool.c, backward in k_pool_grad.c). */
#ifndef RLX_CPU_POOL_COMMON_H
#define RLX_CPU_POOL_COMMON_H

#include "kernels.h"

typedef struct {
  int32_t planes, H, W, OH, OW; /* planes = N * C */
  int32_t kh, kw, sh, sw, ph, pw;
} pool_geom;

/* From the input dims [N,C,H,W], output dims [N,C,OH,OW] and the pool's
 * iattr {kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w}. */
static inline pool_geom pool_geom_make(const int32_t *xd, const int32_t *yd, const int32_t *at) {
  pool_geom g;
  g.planes = xd[0] * xd[1];
  g.H = xd[2]; g.W = xd[3];
  g.OH = yd[2]; g.OW = yd[3];
  g.kh = at[RLX_IATTR_POOL_KERNEL_H]; g.kw = at[RLX_IATTR_POOL_KERNEL_W]; g.sh = at[RLX_IATTR_POOL_STRIDE_H]; g.sw = at[RLX_IATTR_POOL_STRIDE_W]; g.ph = at[RLX_IATTR_POOL_PAD_H]; g.pw = at[RLX_IATTR_POOL_PAD_W];
  return g;
}

/* Window [lo, hi) of output position o along an axis, clipped to [0, size). */
static inline void pool_window(int32_t o, int32_t stride, int32_t pad, int32_t k, int32_t size,
                               int32_t *lo, int32_t *hi) {
  const int64_t start = (int64_t)o * stride - pad, end = start + k; /* 64 bits: huge strides */
  *lo = start < 0 ? 0 : start > size ? size : (int32_t)start;
  *hi = end > size ? size : end < 0 ? 0 : (int32_t)end;
}

/* The 2x2 stride-2 unpadded pooling (the common downsampling), which both
 * directions run through a dedicated loop. */
static inline int pool_is_2x2s2(const pool_geom *g) {
  return g->kh == 2 && g->kw == 2 && g->sh == 2 && g->sw == 2 && g->ph == 0 && g->pw == 0;
}

#endif
