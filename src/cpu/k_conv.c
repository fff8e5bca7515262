/* k_conv.c - 2-D convolution over NCHW tensors with zero padding, stride,
 * dilation and groups.
 *
 * Two strategies:
 *  - GEMM: for each image n and group g,
 *      Y[O/g, OH*OW] = W[O/g, C/g*KH*KW] . cols[C/g*KH*KW, OH*OW]
 *    so the product lands in NCHW with no transpose.  cols is the im2col
 *    unfolding of the group's input; a 1x1 stride-1 unpadded conv uses the
 *    input planes themselves as cols.
 *  - direct: each output plane accumulates weight * shifted input rows.
 *    Used for depthwise-like convs (one or two outputs per group, few taps),
 *    where unfolding costs more than the thin product it feeds. */
#include <string.h>
#include "kernels.h"

typedef struct {
  int32_t N, C, H, W;     /* input  */
  int32_t O, KH, KW;      /* weight */
  int32_t OH, OW;         /* output */
  int32_t sh, sw, ph, pw, dh, dw, groups;
  int32_t Cg, Og;         /* channels per group (input, output) */
} conv_geom;

static conv_geom conv_geom_of(const rlx_kargs *a) {
  const int32_t *xd = a->in_node[0]->shape.dims, *wd = a->in_node[1]->shape.dims;
  const int32_t *yd = a->node->shape.dims, *at = a->node->iattr;
  conv_geom g;
  g.N = xd[0]; g.C = xd[1]; g.H = xd[2]; g.W = xd[3];
  g.O = wd[0]; g.KH = wd[2]; g.KW = wd[3];
  g.OH = yd[2]; g.OW = yd[3];
  g.sh = at[0]; g.sw = at[1]; g.ph = at[2]; g.pw = at[3];
  g.dh = at[4]; g.dw = at[5]; g.groups = at[6];
  g.Cg = g.C / g.groups; g.Og = g.O / g.groups;
  return g;
}

/* Output columns [ow0, ow1) whose input column ow*sw + off lies in [0, W). */
static void valid_cols(int32_t off, int32_t sw, int32_t W, int32_t OW, int32_t *ow0, int32_t *ow1) {
  int32_t lo = off >= 0 ? 0 : (-off + sw - 1) / sw;
  int32_t hi = (W - 1 - off) < 0 ? 0 : (W - 1 - off) / sw + 1;
  if (lo > OW) lo = OW;
  if (hi > OW) hi = OW;
  if (hi < lo) hi = lo;
  *ow0 = lo;
  *ow1 = hi;
}

/* dst[i] = src[i * stride] for i < n. */
static void strided_copy(float *restrict dst, const float *restrict src, int32_t stride, int32_t n) {
  if (stride == 2) {
    for (int32_t i = 0; i < n; i++) dst[i] = src[2 * i];
  } else {
    for (int32_t i = 0; i < n; i++) dst[i] = src[(size_t)i * stride];
  }
}

/* x[Cg,H,W] (one image, one group) -> cols[Cg*KH*KW, (oh1-oh0)*OW], the
 * unfolding of output rows [oh0, oh1); taps in the padding are zero. */
static void im2col(const conv_geom *g, const float *x, int32_t oh0, int32_t oh1, float *cols) {
  const size_t band = (size_t)(oh1 - oh0) * g->OW;
  for (int32_t c = 0; c < g->Cg; c++) {
    const float *xc = x + (size_t)c * g->H * g->W;
    for (int32_t kh = 0; kh < g->KH; kh++) {
      for (int32_t kw = 0; kw < g->KW; kw++) {
        float *row = cols + ((size_t)(c * g->KH + kh) * g->KW + kw) * band;
        const int32_t off_w = kw * g->dw - g->pw;
        int32_t ow0, ow1;
        valid_cols(off_w, g->sw, g->W, g->OW, &ow0, &ow1);
        for (int32_t oh = oh0; oh < oh1; oh++) {
          float *r = row + (size_t)(oh - oh0) * g->OW;
          const int32_t ih = oh * g->sh + kh * g->dh - g->ph;
          if (ih < 0 || ih >= g->H || ow0 == ow1) {
            memset(r, 0, (size_t)g->OW * sizeof(float));
            continue;
          }
          const float *xr = xc + (size_t)ih * g->W;
          for (int32_t ow = 0; ow < ow0; ow++) r[ow] = 0.0f;
          if (g->sw == 1) {
            memcpy(r + ow0, xr + (ow0 + off_w), (size_t)(ow1 - ow0) * sizeof(float));
          } else {
            strided_copy(r + ow0, xr + (ow0 * g->sw + off_w), g->sw, ow1 - ow0);
          }
          for (int32_t ow = ow1; ow < g->OW; ow++) r[ow] = 0.0f;
        }
      }
    }
  }
}

/* Upper bound on the workspace rlx_gemm asks for on an M x N x K product:
 * its packed panels never exceed the whole of op(A) and op(B) padded to
 * register blocks (at most 8 rows, 32 columns) plus 16 floats of alignment.
 * The GEMM gets a window of this size past cols, so packing never
 * overwrites cols. */
static size_t gemm_scratch_bound(int32_t M, int32_t N, int32_t K) {
  return (((size_t)M + 8 + (size_t)N + 32) * (size_t)K + 16) * sizeof(float);
}

/* Most bytes of cols per GEMM call: larger outputs are unfolded in bands of
 * output rows, which bounds the workspace.  Smaller bands (64-256 KiB, to
 * stay in L2) measured no faster on the vision shapes, so the bound is
 * loose and whole planes of the models above go in one call. */
#ifndef CONV_COLS_BYTES
#define CONV_COLS_BYTES ((size_t)1 << 20)
#endif

/* x[N,C,H,W], w[O,C/g,KH,KW] -> y[N,O,OH,OW] through im2col + GEMM. */
static rlx_status conv_gemm(const conv_geom *g, const float *x, const float *w, float *y,
                            rlx_scratch *scratch) {
  const int32_t kdim = g->Cg * g->KH * g->KW;
  const size_t in_plane = (size_t)g->H * g->W, out_plane = (size_t)g->OH * g->OW;
  const int direct_cols = g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 &&
                          g->ph == 0 && g->pw == 0;
  /* output rows per band (the whole plane when the input is used as cols) */
  int32_t band = g->OH;
  float *cols = NULL;
  rlx_scratch gemm_scratch = {NULL, 0};
  rlx_scratch *gs = scratch;
  if (!direct_cols) {
    const size_t row_bytes = (size_t)kdim * g->OW * sizeof(float);
    if (row_bytes * band > CONV_COLS_BYTES) {
      int32_t most = (int32_t)(CONV_COLS_BYTES / row_bytes);
      if (most < 1) most = 1;
      const int32_t n_bands = (g->OH + most - 1) / most;
      band = (g->OH + n_bands - 1) / n_bands; /* equal bands, no thin last one */
    }
    const size_t cols_bytes = (row_bytes * band + 63) & ~(size_t)63;
    const size_t gemm_bytes = gemm_scratch_bound(g->Og, band * g->OW, kdim);
    char *base = rlx_scratch_get(scratch, cols_bytes + gemm_bytes);
    if (!base)
      return rlx_error(RLX_ERR_NO_MEMORY, "conv2d: no memory for im2col (%zu bytes)",
                       cols_bytes + gemm_bytes);
    cols = (float *)base;
    gemm_scratch.ptr = base + cols_bytes;
    gemm_scratch.bytes = gemm_bytes;
    gs = &gemm_scratch;
  }
  for (int32_t n = 0; n < g->N; n++) {
    for (int32_t grp = 0; grp < g->groups; grp++) {
      const float *xg = x + ((size_t)n * g->C + (size_t)grp * g->Cg) * in_plane;
      float *yg = y + ((size_t)n * g->O + (size_t)grp * g->Og) * out_plane;
      for (int32_t oh0 = 0; oh0 < g->OH; oh0 += band) {
        const int32_t oh1 = oh0 + band < g->OH ? oh0 + band : g->OH;
        const int32_t ncols = (oh1 - oh0) * g->OW;
        if (!direct_cols) im2col(g, xg, oh0, oh1, cols);
        rlx_gemm_args ga;
        ga.M = g->Og;
        ga.N = ncols;
        ga.K = kdim;
        ga.A = w + (size_t)grp * g->Og * kdim;
        ga.lda = kdim;
        ga.trans_a = 0;
        ga.B = direct_cols ? xg : cols;
        ga.ldb = direct_cols ? (int32_t)in_plane : ncols;
        ga.trans_b = 0;
        ga.C = yg + (size_t)oh0 * g->OW;
        ga.ldc = (int32_t)out_plane;
        ga.accumulate = 0;
        rlx_status st = rlx_gemm(&ga, gs);
        if (st != RLX_OK) return st;
      }
    }
  }
  return RLX_OK;
}

/* y[0:n] += a * x[0:n]; blocks of 8 so it vectorizes at -O2 too. */
static void axpy(float *restrict y, const float *restrict x, float a, int32_t n) {
  int32_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int32_t l = 0; l < 8; l++) y[i + l] += a * x[i + l];
  for (; i < n; i++) y[i] += a * x[i];
}

/* x[N,C,H,W], w[O,C/g,KH,KW] -> y[N,O,OH,OW], one output plane at a time:
 * plane += w[o,c,kh,kw] * (input plane c shifted by the tap). */
static void conv_direct(const conv_geom *g, const float *x, const float *w, float *y) {
  const size_t in_plane = (size_t)g->H * g->W, out_plane = (size_t)g->OH * g->OW;
  for (int32_t n = 0; n < g->N; n++) {
    for (int32_t o = 0; o < g->O; o++) {
      const int32_t grp = o / g->Og;
      float *yp = y + ((size_t)n * g->O + o) * out_plane;
      memset(yp, 0, out_plane * sizeof(float));
      for (int32_t c = 0; c < g->Cg; c++) {
        const float *xc = x + ((size_t)n * g->C + (size_t)grp * g->Cg + c) * in_plane;
        const float *wc = w + ((size_t)o * g->Cg + c) * g->KH * g->KW;
        for (int32_t kh = 0; kh < g->KH; kh++) {
          for (int32_t kw = 0; kw < g->KW; kw++) {
            const float wv = wc[kh * g->KW + kw];
            const int32_t off_w = kw * g->dw - g->pw;
            int32_t ow0, ow1;
            valid_cols(off_w, g->sw, g->W, g->OW, &ow0, &ow1);
            if (ow0 == ow1) continue;
            for (int32_t oh = 0; oh < g->OH; oh++) {
              const int32_t ih = oh * g->sh + kh * g->dh - g->ph;
              if (ih < 0 || ih >= g->H) continue;
              const float *xr = xc + (size_t)ih * g->W;
              float *yr = yp + (size_t)oh * g->OW;
              if (g->sw == 1) {
                axpy(yr + ow0, xr + (ow0 + off_w), wv, ow1 - ow0);
              } else {
                for (int32_t ow = ow0; ow < ow1; ow++) yr[ow] += wv * xr[ow * g->sw + off_w];
              }
            }
          }
        }
      }
    }
  }
}

/* Direct when a group has at most two output channels (depthwise, 1->2)
 * and few taps each: the GEMM then runs one or two rows and im2col costs
 * as much as the product.  Measured at batch 64 with the AVX2 GEMM
 * (bench/conv_bench.c): depthwise 3x3 32ch 32x32 3.5 ms direct vs 8.2 ms
 * im2col+GEMM; two outputs per group 2.7 vs 3.0 ms; from four outputs per
 * group the GEMM wins (1->4 3x3 28x28: 0.17 vs 0.28 ms).  Same picture
 * under wasm SIMD128. */
static int conv_prefers_direct(const conv_geom *g) {
  return g->Og <= 2 && g->Cg * g->KH * g->KW <= 32;
}

/* x[N,C,H,W], w[O,C/groups,KH,KW] -> y[N,O,OH,OW];
 * iattr = {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups}. */
rlx_status rlx_cpu_conv2d(const rlx_kargs *a) {
  const conv_geom g = conv_geom_of(a);
  if (conv_prefers_direct(&g)) {
    conv_direct(&g, a->in[0], a->in[1], a->out);
    return RLX_OK;
  }
  return conv_gemm(&g, a->in[0], a->in[1], a->out, a->scratch);
}
