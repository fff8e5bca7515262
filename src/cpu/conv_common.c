/* conv_common.c - conv geometry, im2col / col2im and workspace helpers
 * shared by the conv2d forward and backward kernels (see conv_common.h). */
#include <string.h>
#include "../core/pool.h"
#include "conv_common.h"

conv_geom rlx_conv_geom(const int32_t *xd, const int32_t *wd, const int32_t *yd, const int32_t *attr) {
  conv_geom g;
  g.N = xd[0]; g.C = xd[1]; g.H = xd[2]; g.W = xd[3];
  g.O = wd[0]; g.KH = wd[2]; g.KW = wd[3];
  g.OH = yd[2]; g.OW = yd[3];
  g.sh = attr[RLX_IATTR_CONV_STRIDE_H]; g.sw = attr[RLX_IATTR_CONV_STRIDE_W]; g.ph = attr[RLX_IATTR_CONV_PAD_H]; g.pw = attr[RLX_IATTR_CONV_PAD_W];
  g.dh = attr[RLX_IATTR_CONV_DIL_H]; g.dw = attr[RLX_IATTR_CONV_DIL_W]; g.groups = attr[RLX_IATTR_CONV_GROUPS];
  g.Cg = g.C / g.groups; g.Og = g.O / g.groups;
  return g;
}

void rlx_conv_valid_range(int32_t off, int32_t stride, int32_t size, int32_t n_out, int32_t *o0, int32_t *o1) {
  /* 64 bits: -off + stride - 1 and size - 1 - off can pass int32 for huge strides and paddings */
  const int64_t before = -(int64_t)off + stride - 1, after = (int64_t)size - 1 - off;
  int64_t lo = off >= 0 ? 0 : before / stride;
  int64_t hi = after < 0 ? 0 : after / stride + 1;
  if (lo > n_out) lo = n_out;
  if (hi > n_out) hi = n_out;
  if (hi < lo) hi = lo;
  *o0 = (int32_t)lo;
  *o1 = (int32_t)hi;
}

int rlx_conv_is_pointwise(const conv_geom *g) {
  return g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* dst[i] = src[i * stride] for i < n. */
static void strided_copy(float *restrict dst, const float *restrict src, int32_t stride, int32_t n) {
  if (stride == 2) {
    for (int32_t i = 0; i < n; i++) dst[i] = src[2 * i];
  } else {
    for (int32_t i = 0; i < n; i++) dst[i] = src[(size_t)i * stride];
  }
}

void rlx_conv_im2col(const conv_geom *g, const float *x, int32_t oh0, int32_t oh1, float *cols) {
  const size_t band = (size_t)(oh1 - oh0) * g->OW;
  for (int32_t c = 0; c < g->Cg; c++) {
    const float *xc = x + (size_t)c * g->H * g->W;
    for (int32_t kh = 0; kh < g->KH; kh++) {
      for (int32_t kw = 0; kw < g->KW; kw++) {
        float *row = cols + ((size_t)(c * g->KH + kh) * g->KW + kw) * band;
        const int32_t off_w = kw * g->dw - g->pw;
        int32_t ow0, ow1;
        rlx_conv_valid_range(off_w, g->sw, g->W, g->OW, &ow0, &ow1);
        /* A tap that reaches into the left or right padding: zero its
         * whole band at once (cheaper than a few zeros per row), then copy
         * the valid cells. */
        const int edges = ow0 > 0 || ow1 < g->OW;
        if (edges) memset(row, 0, band * sizeof(float));
        for (int32_t oh = oh0; oh < oh1; oh++) {
          float *r = row + (size_t)(oh - oh0) * g->OW;
          const int32_t ih = oh * g->sh + kh * g->dh - g->ph;
          if (ih < 0 || ih >= g->H || ow0 == ow1) {
            if (!edges) memset(r, 0, (size_t)g->OW * sizeof(float));
            continue;
          }
          const float *xr = xc + (size_t)ih * g->W;
          if (g->sw == 1) {
            memcpy(r + ow0, xr + (ow0 + off_w), (size_t)(ow1 - ow0) * sizeof(float));
          } else {
            strided_copy(r + ow0, xr + (ow0 * g->sw + off_w), g->sw, ow1 - ow0);
          }
        }
      }
    }
  }
}

/* dst[i * stride] += src[i] for i < n. */
static void strided_add(float *restrict dst, const float *restrict src, int32_t stride, int32_t n) {
  if (stride == 1) {
    for (int32_t i = 0; i < n; i++) dst[i] += src[i];
  } else if (stride == 2) {
    for (int32_t i = 0; i < n; i++) dst[2 * i] += src[i];
  } else {
    for (int32_t i = 0; i < n; i++) dst[(size_t)i * stride] += src[i];
  }
}

void rlx_conv_col2im(const conv_geom *g, const float *cols, int32_t oh0, int32_t oh1, float *x) {
  const size_t band = (size_t)(oh1 - oh0) * g->OW;
  for (int32_t c = 0; c < g->Cg; c++) {
    float *xc = x + (size_t)c * g->H * g->W;
    for (int32_t kh = 0; kh < g->KH; kh++) {
      for (int32_t kw = 0; kw < g->KW; kw++) {
        const float *row = cols + ((size_t)(c * g->KH + kh) * g->KW + kw) * band;
        const int32_t off_w = kw * g->dw - g->pw;
        int32_t ow0, ow1;
        rlx_conv_valid_range(off_w, g->sw, g->W, g->OW, &ow0, &ow1);
        if (ow0 == ow1) continue;
        for (int32_t oh = oh0; oh < oh1; oh++) {
          const int32_t ih = oh * g->sh + kh * g->dh - g->ph;
          if (ih < 0 || ih >= g->H) continue;
          strided_add(xc + (size_t)ih * g->W + (ow0 * g->sw + off_w),
                      row + (size_t)(oh - oh0) * g->OW + ow0, g->sw, ow1 - ow0);
        }
      }
    }
  }
}

/* y[0:n] += a * x[0:n]; blocks of 8 so it vectorizes at -O2 too. */
static inline void axpy(float *restrict y, const float *restrict x, float a, int32_t n) {
  int32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int32_t l = 0; l < 8; l++) y[i + l] += a * x[i + l];
  for (; i < n; i++) y[i] += a * x[i];
}

void rlx_conv_region_axpy(float *y, size_t ldy, int32_t sy, const float *x, size_t ldx, int32_t sx, float a,
                          int32_t rows, int32_t n) {
  for (int32_t r = 0; r < rows; r++) {
    float *yr = y + (size_t)r * ldy;
    const float *xr = x + (size_t)r * ldx;
    if (sy == 1 && sx == 1) {
      axpy(yr, xr, a, n);
    } else {
      for (int32_t i = 0; i < n; i++) yr[(size_t)i * sy] += a * xr[(size_t)i * sx];
    }
  }
}

int32_t rlx_conv_band_rows(const conv_geom *g) {
  const size_t row_bytes = (size_t)g->Cg * g->KH * g->KW * g->OW * sizeof(float);
  if (row_bytes * (size_t)g->OH <= CONV_COLS_BYTES) return g->OH;
  int32_t most = (int32_t)(CONV_COLS_BYTES / row_bytes);
  if (most < 1) most = 1;
  const int32_t n_bands = (g->OH + most - 1) / most;
  return (g->OH + n_bands - 1) / n_bands; /* equal bands, no thin last one */
}

int32_t rlx_conv_last_band(const conv_geom *g, int32_t band) { return (g->OH - 1) / band * band; }

size_t rlx_conv_workspace(rlx_scratch *scratch, size_t cols_bytes, const rlx_gemm_args *gemms, int32_t n,
                          float **cols, rlx_scratch *gemm) {
  size_t gemm_bytes = 0;
  for (int32_t i = 0; i < n; i++) {
    const size_t b = rlx_gemm_scratch_bytes(&gemms[i]);
    if (b > gemm_bytes) gemm_bytes = b;
  }
  cols_bytes = (cols_bytes + 63) & ~(size_t)63; /* the GEMM window stays 64-byte aligned */
  char *base = rlx_scratch_get(scratch, cols_bytes + gemm_bytes);
  *cols = (float *)base;
  gemm->ptr = base ? base + cols_bytes : NULL;
  gemm->bytes = base ? gemm_bytes : 0;
  return cols_bytes + gemm_bytes;
}

rlx_status rlx_conv_loop_status(const rlx_conv_loop *l, const char *what) {
  if (!RLX_THREADED) return (rlx_status)l->failed; /* inline: the range's own message stands */
  if (l->failed == RLX_ERR_NO_MEMORY) return rlx_error(RLX_ERR_NO_MEMORY, "%s: no memory for columns", what);
  if (l->failed) return rlx_error((rlx_status)l->failed, "%s: a product failed", what);
  return RLX_OK;
}
