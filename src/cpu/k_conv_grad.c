/* k_conv_grad.c - the two backward ops of conv2d: the gradient with respect
 * to the input (conv2d_grad_input) and to the weight (conv2d_grad_weight).
 *
 * Both have the forward's two strategies (k_conv.c):
 *  - GEMM, per image n and group g, with cols the im2col unfolding:
 *      input:  dcols[C/g*KH*KW, OH*OW] = W[O/g, C/g*KH*KW]^T . dY[O/g, OH*OW],
 *              then col2im scatter-adds dcols into dx;
 *      weight: dW[O/g, C/g*KH*KW] += dY[O/g, OH*OW] . cols[C/g*KH*KW, OH*OW]^T.
 *    A 1x1 stride-1 unpadded conv needs no unfolding: the input (gradient)
 *    planes are the columns.  Large outputs go in bands of output rows, as
 *    in the forward.
 *  - direct: shifted rows of dy times a weight tap are added into dx, and
 *    each weight tap is a dot product of dy with shifted rows of x.  Used
 *    for depthwise-like convs (see input_prefers_direct and
 *    weight_prefers_direct).
 * On the thread pool (src/core/pool.h): dx by whole images (one image: the
 * GEMMs split their C), dw direct by output channel; dw through the GEMM
 * sums over images, so only each GEMM splits (over dw's rows or columns). */
#include <string.h>
#include "../core/pool.h"
#include "conv_common.h"

/* Direct loops for dx when a group has at most two output channels and
 * few taps, as in the forward: the GEMM's inner dimension is then one or
 * two and col2im costs more than the product.  Measured at batch 64
 * (bench/conv_bench.c), AVX2 / wasm SIMD128 under Node: depthwise 3x3 32ch
 * 32x32 direct 3.3 / 5.1 ms vs GEMM 14 / 17 ms; two outputs per group
 * 16x16 2.2 / 3.4 vs 3.8 / 5.0 ms; four 4.2 / 6.8 vs 4.6 / 6.2 ms; 1->2
 * 3x3 28x28 0.17 / 0.22 vs 0.27 / 0.35 ms, 1->4 0.37 / 0.43 vs 0.29 / 0.40. */
static int input_prefers_direct(const conv_geom *g) {
  return g->Og <= 2 && g->Cg * g->KH * g->KW <= 32;
}

/* Direct loops for dw with few taps per output (at most 32) and few
 * outputs per group (up to four, or up to 72 taps in all): each tap is one
 * long dot product, while the GEMM is a tiny product with a long inner
 * dimension whose operands both need transposed packing.  Measured as
 * above: depthwise 3x3 32x32 4.5 / 5.2 ms vs 5.5 / 18 ms; four outputs per
 * group 16x16 6.0 / 6.2 vs 7.1 / 11 ms, eight 13.6 / 14.8 vs 13.5 / 16 ms;
 * 1->4 3x3 28x28 0.22 / 0.27 vs 0.46 / 0.72 ms, 1->4 5x5 0.50 / 0.52 vs
 * 0.61 / 1.1 ms, 1->8 3x3 (mnist) 0.46 / 0.55 vs 0.67 / 0.87 ms; 1->16
 * 0.91 / 1.1 vs 0.81 / 1.2 ms, 3->8 1.4 / 1.7 vs 1.1 / 1.5 ms. */
static int weight_prefers_direct(const conv_geom *g) {
  const int32_t kdim = g->Cg * g->KH * g->KW;
  return kdim <= 32 && (g->Og <= 4 || g->Og * kdim <= 72);
}

/* sum over r < rows, i < n of a[r*lda + i] * b[r*ldb + i*stride]: eight
 * partial sums carried across the rows, so it vectorizes when stride is 1
 * and reduces once per region, not once per row.  Not inlined: inside the
 * six loops of grad_weight_direct, clang's wasm code for it ran 3x slower
 * under V8 (1->4 3x3 28x28 batch 64: 0.93 vs 0.28 ms). */
__attribute__((noinline)) static float region_dot(const float *a, size_t lda, const float *b, size_t ldb,
                                                  int32_t stride, int32_t rows, int32_t n) {
  float s[8] = {0.0f}, t = 0.0f;
  for (int32_t r = 0; r < rows; r++) {
    const float *restrict ar = a + (size_t)r * lda, *restrict br = b + (size_t)r * ldb;
    int32_t i = 0;
    if (stride == 1) {
      for (; i + 8 <= n; i += 8)
        for (int32_t l = 0; l < 8; l++) s[l] += ar[i + l] * br[i + l];
    }
    for (; i < n; i++) t += ar[i] * br[(size_t)i * stride];
  }
  return t + (((s[0] + s[4]) + (s[1] + s[5])) + ((s[2] + s[6]) + (s[3] + s[7])));
}

/* ---- gradient with respect to the input ---- */

/* Output rows [oh0, oh1) of one image and group: d[kdim, rows] =
 * w[O/g, kdim]^T . dy[O/g, rows], where d is the column gradient (or, for
 * a pointwise conv, the group's dx planes themselves). */
static rlx_gemm_args input_gemm(const conv_geom *g, const float *wg, const float *dyg, float *d,
                                int32_t oh0, int32_t oh1, int pointwise) {
  const int32_t kdim = g->Cg * g->KH * g->KW, ncols = (oh1 - oh0) * g->OW;
  rlx_gemm_args ga;
  ga.M = kdim;
  ga.N = ncols;
  ga.K = g->Og;
  ga.A = wg;
  ga.lda = kdim;
  ga.trans_a = 1;
  ga.B = dyg ? dyg + (size_t)oh0 * g->OW : NULL;
  ga.ldb = g->OH * g->OW;
  ga.trans_b = 0;
  ga.C = d;
  ga.ldc = pointwise ? g->H * g->W : ncols;
  ga.accumulate = 0;
  return ga;
}

/* dy[N,O,OH,OW], w[O,C/g,KH,KW] -> dx[N,C,H,W] through GEMM + col2im, for
 * images [n0, n1). */
static rlx_status grad_input_gemm(const conv_geom *g, const float *dy, const float *w, float *dx, int32_t n0,
                                  int32_t n1, rlx_scratch *scratch) {
  const int32_t kdim = g->Cg * g->KH * g->KW;
  const size_t in_plane = (size_t)g->H * g->W, out_plane = (size_t)g->OH * g->OW;
  const int pointwise = rlx_conv_is_pointwise(g);
  const int32_t band = pointwise ? g->OH : rlx_conv_band_rows(g);
  float *dcols = NULL;
  rlx_scratch gemm_scratch = {NULL, 0};
  rlx_scratch *gs = scratch;
  if (!pointwise) {
    const int32_t last = rlx_conv_last_band(g, band);
    const rlx_gemm_args sizes[2] = {input_gemm(g, w, NULL, NULL, 0, band, 0),
                                    input_gemm(g, w, NULL, NULL, last, g->OH, 0)};
    const size_t bytes = rlx_conv_workspace(scratch, (size_t)kdim * band * g->OW * sizeof(float), sizes, 2,
                                            &dcols, &gemm_scratch);
    if (!dcols)
      return rlx_error(RLX_ERR_NO_MEMORY, "conv2d_grad_input: no memory for columns (%zu bytes)", bytes);
    gs = &gemm_scratch;
    /* col2im accumulates */
    memset(dx + (size_t)n0 * g->C * in_plane, 0, (size_t)(n1 - n0) * g->C * in_plane * sizeof(float));
  }
  for (int32_t n = n0; n < n1; n++) {
    for (int32_t grp = 0; grp < g->groups; grp++) {
      const float *dyg = dy + ((size_t)n * g->O + (size_t)grp * g->Og) * out_plane;
      const float *wg = w + (size_t)grp * g->Og * kdim;
      float *dxg = dx + ((size_t)n * g->C + (size_t)grp * g->Cg) * in_plane;
      for (int32_t oh0 = 0; oh0 < g->OH; oh0 += band) {
        const int32_t oh1 = oh0 + band < g->OH ? oh0 + band : g->OH;
        const rlx_gemm_args ga = input_gemm(g, wg, dyg, pointwise ? dxg : dcols, oh0, oh1, pointwise);
        rlx_status st = rlx_gemm(&ga, gs);
        if (st != RLX_OK) return st;
        if (!pointwise) rlx_conv_col2im(g, dcols, oh0, oh1, dxg);
      }
    }
  }
  return RLX_OK;
}

/* dy[N,O,OH,OW], w[O,C/g,KH,KW] -> dx[N,C,H,W] for images [n0, n1), one
 * output-gradient plane at a time: dx plane c += w[o,c,kh,kw] * (dy plane
 * o shifted by the tap), over the outputs whose tap lands inside the input. */
static void input_direct_images(void *ctx, size_t n0, size_t n1, rlx_scratch *ws) {
  (void)ws;
  const rlx_conv_loop *l = ctx;
  const conv_geom *g = l->g;
  const float *dy = l->a, *w = l->b;
  float *dx = l->out;
  const size_t in_plane = (size_t)g->H * g->W, out_plane = (size_t)g->OH * g->OW;
  memset(dx + n0 * g->C * in_plane, 0, (n1 - n0) * g->C * in_plane * sizeof(float));
  for (size_t n = n0; n < n1; n++) {
    for (int32_t o = 0; o < g->O; o++) {
      const int32_t grp = o / g->Og;
      const float *dyp = dy + ((size_t)n * g->O + o) * out_plane;
      for (int32_t c = 0; c < g->Cg; c++) {
        float *dxc = dx + ((size_t)n * g->C + (size_t)grp * g->Cg + c) * in_plane;
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
            rlx_conv_region_axpy(dxc + x_first, (size_t)g->sh * g->W, g->sw, dyp + (size_t)oh0 * g->OW + ow0,
                                 (size_t)g->OW, 1, wc[kh * g->KW + kw], oh1 - oh0, ow1 - ow0);
          }
        }
      }
    }
  }
}

/* dy[N,O,OH,OW], w[O,C/g,KH,KW] -> dx[N,C,H,W]; iattr = conv2d's 7 + {H, W}. */
rlx_status rlx_cpu_conv2d_grad_input(const rlx_kargs *a) {
  const conv_geom g = rlx_conv_geom(a->node->shape.dims, a->in_node[1]->shape.dims,
                                    a->in_node[0]->shape.dims, a->node->iattr);
  rlx_conv_loop l = {&g, a->in[0], a->in[1], a->out, grad_input_gemm, 0};
  const size_t macs = (size_t)g.O * g.Cg * g.KH * g.KW * g.OH * g.OW; /* per image */
  rlx_parallel_for((size_t)g.N, 1, macs, input_prefers_direct(&g) ? input_direct_images : rlx_conv_images_range, &l,
                   a->scratch);
  return rlx_conv_loop_status(&l, "conv2d_grad_input");
}

/* ---- gradient with respect to the weight ---- */

/* Output rows [oh0, oh1) of one image and group: dw[O/g, kdim] (+)=
 * dy[O/g, rows] . b[kdim, rows]^T, where b is the unfolded columns (or, for
 * a pointwise conv, the group's input planes, b = x). */
static rlx_gemm_args weight_gemm(const conv_geom *g, const float *dyg, const float *b, float *dwg,
                                 int32_t oh0, int32_t oh1, int pointwise, int accumulate) {
  const int32_t kdim = g->Cg * g->KH * g->KW, ncols = (oh1 - oh0) * g->OW;
  rlx_gemm_args ga;
  ga.M = g->Og;
  ga.N = kdim;
  ga.K = ncols;
  ga.A = dyg ? dyg + (size_t)oh0 * g->OW : NULL;
  ga.lda = g->OH * g->OW;
  ga.trans_a = 0;
  ga.B = b;
  ga.ldb = pointwise ? g->H * g->W : ncols;
  ga.trans_b = 1;
  ga.C = dwg;
  ga.ldc = kdim;
  ga.accumulate = accumulate;
  return ga;
}

/* x[N,C,H,W], dy[N,O,OH,OW] -> dw[O,C/g,KH,KW] through im2col + GEMM,
 * accumulated over images and bands. */
static rlx_status grad_weight_gemm(const conv_geom *g, const float *x, const float *dy, float *dw,
                                   rlx_scratch *scratch) {
  const int32_t kdim = g->Cg * g->KH * g->KW;
  const size_t in_plane = (size_t)g->H * g->W, out_plane = (size_t)g->OH * g->OW;
  const int pointwise = rlx_conv_is_pointwise(g);
  const int32_t band = pointwise ? g->OH : rlx_conv_band_rows(g);
  float *cols = NULL;
  rlx_scratch gemm_scratch = {NULL, 0};
  rlx_scratch *gs = scratch;
  if (!pointwise) {
    const int32_t last = rlx_conv_last_band(g, band);
    const rlx_gemm_args sizes[2] = {weight_gemm(g, NULL, NULL, NULL, 0, band, 0, 1),
                                    weight_gemm(g, NULL, NULL, NULL, last, g->OH, 0, 1)};
    const size_t bytes = rlx_conv_workspace(scratch, (size_t)kdim * band * g->OW * sizeof(float), sizes, 2,
                                            &cols, &gemm_scratch);
    if (!cols)
      return rlx_error(RLX_ERR_NO_MEMORY, "conv2d_grad_weight: no memory for im2col (%zu bytes)", bytes);
    gs = &gemm_scratch;
  }
  for (int32_t n = 0; n < g->N; n++) {
    for (int32_t grp = 0; grp < g->groups; grp++) {
      const float *xg = x + ((size_t)n * g->C + (size_t)grp * g->Cg) * in_plane;
      const float *dyg = dy + ((size_t)n * g->O + (size_t)grp * g->Og) * out_plane;
      float *dwg = dw + (size_t)grp * g->Og * kdim;
      for (int32_t oh0 = 0; oh0 < g->OH; oh0 += band) {
        const int32_t oh1 = oh0 + band < g->OH ? oh0 + band : g->OH;
        if (!pointwise) rlx_conv_im2col(g, xg, oh0, oh1, cols);
        const rlx_gemm_args ga =
            weight_gemm(g, dyg, pointwise ? xg : cols, dwg, oh0, oh1, pointwise, n > 0 || oh0 > 0);
        rlx_status st = rlx_gemm(&ga, gs);
        if (st != RLX_OK) return st;
      }
    }
  }
  return RLX_OK;
}

/* x[N,C,H,W], dy[N,O,OH,OW] -> dw[O,C/g,KH,KW] for output channels
 * [o0, o1): each tap is the dot product of dy plane o with input plane c
 * shifted by the tap (over the outputs whose tap lands inside the input),
 * summed over images. */
static void weight_direct_channels(void *ctx, size_t o0, size_t o1, rlx_scratch *ws) {
  (void)ws;
  const rlx_conv_loop *l = ctx;
  const conv_geom *g = l->g;
  const float *x = l->a, *dy = l->b;
  float *dw = l->out;
  const size_t in_plane = (size_t)g->H * g->W, out_plane = (size_t)g->OH * g->OW;
  for (int32_t o = (int32_t)o0; o < (int32_t)o1; o++) {
    const int32_t grp = o / g->Og;
    for (int32_t c = 0; c < g->Cg; c++) {
      float *dwc = dw + ((size_t)o * g->Cg + c) * g->KH * g->KW;
      for (int32_t kh = 0; kh < g->KH; kh++) {
        const int32_t off_h = kh * g->dh - g->ph;
        int32_t oh0, oh1;
        rlx_conv_valid_range(off_h, g->sh, g->H, g->OH, &oh0, &oh1);
        for (int32_t kw = 0; kw < g->KW; kw++) {
          const int32_t off_w = kw * g->dw - g->pw;
          int32_t ow0, ow1;
          rlx_conv_valid_range(off_w, g->sw, g->W, g->OW, &ow0, &ow1);
          float s = 0.0f;
          if (oh0 < oh1 && ow0 < ow1) {
            /* first input cell of the region: (oh0*sh + off_h, ow0*sw + off_w) */
            const size_t x_first = (size_t)(oh0 * g->sh + off_h) * g->W + (size_t)(ow0 * g->sw + off_w);
            const size_t dy_first = (size_t)oh0 * g->OW + ow0;
            for (int32_t n = 0; n < g->N; n++) {
              const float *dyp = dy + ((size_t)n * g->O + o) * out_plane;
              const float *xc = x + ((size_t)n * g->C + (size_t)grp * g->Cg + c) * in_plane;
              s += region_dot(dyp + dy_first, (size_t)g->OW, xc + x_first, (size_t)g->sh * g->W, g->sw,
                              oh1 - oh0, ow1 - ow0);
            }
          }
          dwc[kh * g->KW + kw] = s;
        }
      }
    }
  }
}

/* x[N,C,H,W], dy[N,O,OH,OW] -> dw[O,C/g,KH,KW]; iattr = conv2d's 7 + {KH, KW}. */
rlx_status rlx_cpu_conv2d_grad_weight(const rlx_kargs *a) {
  const conv_geom g = rlx_conv_geom(a->in_node[0]->shape.dims, a->node->shape.dims,
                                    a->in_node[1]->shape.dims, a->node->iattr);
  if (weight_prefers_direct(&g)) {
    rlx_conv_loop l = {&g, a->in[0], a->in[1], a->out, NULL, 0};
    const size_t macs = (size_t)g.N * g.Cg * g.KH * g.KW * g.OH * g.OW; /* per output channel */
    rlx_parallel_for((size_t)g.O, 1, macs, weight_direct_channels, &l, NULL);
    return RLX_OK;
  }
  return grad_weight_gemm(&g, a->in[0], a->in[1], a->out, a->scratch);
}
