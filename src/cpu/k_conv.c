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
 *    where unfolding costs more than the thin product it feeds.
 * The thread pool (src/core/pool.h) takes whole images (GEMM; one image:
 * the GEMMs split C themselves) or whole output planes (direct). */
#include <string.h>
#include "../core/pool.h"
#include "conv_common.h"

static conv_geom conv_geom_of(const rlx_kargs *a) {
  return rlx_conv_geom(a->in_node[0]->shape.dims, a->in_node[1]->shape.dims, a->node->shape.dims,
                       a->node->iattr);
}

/* Output rows [oh0, oh1) of one image and group: y[O/g, rows] =
 * w[O/g, kdim] . b[kdim, rows], where b is the unfolded columns (or, for a
 * pointwise conv, the group's input planes, b = x). */
static rlx_gemm_args forward_gemm(const conv_geom *g, const float *wg, const float *b, float *yg,
                                  int32_t oh0, int32_t oh1, int pointwise) {
  const int32_t kdim = g->Cg * g->KH * g->KW, ncols = (oh1 - oh0) * g->OW;
  rlx_gemm_args ga;
  ga.M = g->Og;
  ga.N = ncols;
  ga.K = kdim;
  ga.A = wg;
  ga.lda = kdim;
  ga.trans_a = 0;
  ga.B = b;
  ga.ldb = pointwise ? g->H * g->W : ncols;
  ga.trans_b = 0;
  ga.C = yg ? yg + (size_t)oh0 * g->OW : NULL;
  ga.ldc = g->OH * g->OW;
  ga.accumulate = 0;
  return ga;
}

/* Images [n0, n1) of x[N,C,H,W], w[O,C/g,KH,KW] -> y[N,O,OH,OW] through
 * im2col + GEMM, the columns and the GEMM's packing in scratch. */
static rlx_status conv_gemm(const conv_geom *g, const float *x, const float *w, float *y, int32_t n0, int32_t n1,
                            rlx_scratch *scratch) {
  const int32_t kdim = g->Cg * g->KH * g->KW;
  const size_t in_plane = (size_t)g->H * g->W, out_plane = (size_t)g->OH * g->OW;
  const int pointwise = rlx_conv_is_pointwise(g);
  /* output rows per band (the whole plane when the input is used as cols) */
  const int32_t band = pointwise ? g->OH : rlx_conv_band_rows(g);
  float *cols = NULL;
  rlx_scratch gemm_scratch = {NULL, 0};
  rlx_scratch *gs = scratch;
  if (!pointwise) {
    const int32_t last = rlx_conv_last_band(g, band);
    const rlx_gemm_args sizes[2] = {forward_gemm(g, w, NULL, NULL, 0, band, 0),
                                    forward_gemm(g, w, NULL, NULL, last, g->OH, 0)};
    const size_t bytes = rlx_conv_workspace(scratch, (size_t)kdim * band * g->OW * sizeof(float), sizes, 2,
                                            &cols, &gemm_scratch);
    if (!cols) return rlx_error(RLX_ERR_NO_MEMORY, "conv2d: no memory for im2col (%zu bytes)", bytes);
    gs = &gemm_scratch;
  }
  for (int32_t n = n0; n < n1; n++) {
    for (int32_t grp = 0; grp < g->groups; grp++) {
      const float *xg = x + ((size_t)n * g->C + (size_t)grp * g->Cg) * in_plane;
      const float *wg = w + (size_t)grp * g->Og * kdim;
      float *yg = y + ((size_t)n * g->O + (size_t)grp * g->Og) * out_plane;
      for (int32_t oh0 = 0; oh0 < g->OH; oh0 += band) {
        const int32_t oh1 = oh0 + band < g->OH ? oh0 + band : g->OH;
        if (!pointwise) rlx_conv_im2col(g, xg, oh0, oh1, cols);
        const rlx_gemm_args ga = forward_gemm(g, wg, pointwise ? xg : cols, yg, oh0, oh1, pointwise);
        rlx_status st = rlx_gemm(&ga, gs);
        if (st != RLX_OK) return st;
      }
    }
  }
  return RLX_OK;
}

/* x[N,C,H,W], w[O,C/g,KH,KW] -> y[N,O,OH,OW], output planes [b, e) of
 * the N * O: plane += w[o,c,kh,kw] * (input plane c shifted by the tap),
 * over the outputs whose tap lands inside the input. */
static void direct_planes(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  (void)ws;
  const rlx_conv_loop *l = ctx;
  const conv_geom *g = l->g;
  const float *x = l->a, *w = l->b;
  float *y = l->out;
  const size_t in_plane = (size_t)g->H * g->W, out_plane = (size_t)g->OH * g->OW;
  for (size_t plane = b; plane < e; plane++) {
    const int32_t n = (int32_t)(plane / (size_t)g->O), o = (int32_t)(plane % (size_t)g->O);
    const int32_t grp = o / g->Og;
    float *yp = y + ((size_t)n * g->O + o) * out_plane;
    memset(yp, 0, out_plane * sizeof(float));
    for (int32_t c = 0; c < g->Cg; c++) {
      const float *xc = x + ((size_t)n * g->C + (size_t)grp * g->Cg + c) * in_plane;
      const float *wc = w + ((size_t)o * g->Cg + c) * g->KH * g->KW;
      for (int32_t kh = 0; kh < g->KH; kh++) {
        const int32_t off_h = kh * g->dh - g->ph;
        int32_t oh0, oh1;
        rlx_conv_valid_range(off_h, g->sh, g->H, g->OH, &oh0, &oh1);
        if (oh0 == oh1) continue;
        for (int32_t kw = 0; kw < g->KW; kw++) {
          const int32_t off_w = kw * g->dw - g->pw;
          int32_t ow0, ow1;
          rlx_conv_valid_range(off_w, g->sw, g->W, g->OW, &ow0, &ow1);
          if (ow0 == ow1) continue;
          const size_t x_first = (size_t)(oh0 * g->sh + off_h) * g->W + (size_t)(ow0 * g->sw + off_w);
          rlx_conv_region_axpy(yp + (size_t)oh0 * g->OW + ow0, (size_t)g->OW, 1, xc + x_first,
                               (size_t)g->sh * g->W, g->sw, wc[kh * g->KW + kw], oh1 - oh0, ow1 - ow0);
        }
      }
    }
  }
}

/* Direct when a group has at most two output channels (depthwise, 1->2)
 * and few taps each: the GEMM then runs one or two rows and im2col costs
 * as much as the product.  Measured at batch 64 (bench/conv_bench.c), AVX2
 * GEMM / wasm SIMD128 under Node: depthwise 3x3 32ch 32x32 direct 2.9 /
 * 4.9 ms vs im2col+GEMM 5.0 / 19 ms; two outputs per group 16x16 2.1 / 3.4
 * vs 2.2 / 5.7 ms; four 5.1 / 6.9 vs 2.9 / 4.8 ms; 1->2 3x3 28x28 0.12 /
 * 0.22 vs 0.15 / 0.36 ms, 1->4 0.23 / 0.44 vs 0.16 / 0.30 ms. */
static int conv_prefers_direct(const conv_geom *g) {
  return g->Og <= 2 && g->Cg * g->KH * g->KW <= 32;
}

/* x[N,C,H,W], w[O,C/groups,KH,KW] -> y[N,O,OH,OW];
 * iattr = {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups}. */
rlx_status rlx_cpu_conv2d(const rlx_kargs *a) {
  const conv_geom g = conv_geom_of(a);
  rlx_conv_loop l = {&g, a->in[0], a->in[1], a->out, conv_gemm, 0};
  const size_t macs_per_plane = (size_t)g.Cg * g.KH * g.KW * g.OH * g.OW;
  if (conv_prefers_direct(&g)) {
    rlx_parallel_for((size_t)g.N * g.O, 1, macs_per_plane, direct_planes, &l, NULL);
    return RLX_OK;
  }
  rlx_parallel_for((size_t)g.N, 1, macs_per_plane * g.O, rlx_conv_images_range, &l, a->scratch);
  return rlx_conv_loop_status(&l, "conv2d");
}
