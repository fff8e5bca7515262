/* ref_vision.c - naive double-precision references for conv2d, max/avg
 * pooling and global average pooling (NCHW), written straight from the
 * definitions in include/rlx.h.  Case parameters (p[]) are laid out as in
 * tests/c/cases_vision.c; tensor dims come from the filled inputs. */
#include <math.h>
#include "op_case.h"

/* p = {N, C, H, W, O, KH, KW, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups}
 * x[N,C,H,W], w[O,C/groups,KH,KW] -> [N,O,OH,OW], zero padding. */
void ref_vision_conv2d(const op_case *c, const op_inputs *in, double *expect) {
  const float *x = in->data[0], *w = in->data[1];
  const int N = in->dims[0][0], C = in->dims[0][1], H = in->dims[0][2], W = in->dims[0][3];
  const int O = in->dims[1][0], KH = in->dims[1][2], KW = in->dims[1][3];
  const int sh = c->p[7], sw = c->p[8], ph = c->p[9], pw = c->p[10];
  const int dh = c->p[11], dw = c->p[12], groups = c->p[13];
  const int Cg = C / groups, Og = O / groups;
  const int OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
  const int OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
  for (int n = 0; n < N; n++)
    for (int o = 0; o < O; o++)
      for (int oh = 0; oh < OH; oh++)
        for (int ow = 0; ow < OW; ow++) {
          const int grp = o / Og;
          double sum = 0.0;
          for (int ci = 0; ci < Cg; ci++)
            for (int kh = 0; kh < KH; kh++)
              for (int kw = 0; kw < KW; kw++) {
                const int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue; /* zero padding */
                const int cin = grp * Cg + ci;
                const double xv = x[((n * C + cin) * H + ih) * W + iw];
                const double wv = w[((o * Cg + ci) * KH + kh) * KW + kw];
                sum += xv * wv;
              }
          expect[((n * O + o) * OH + oh) * OW + ow] = sum;
        }
}

/* p = {N, C, H, W, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w}
 * is_max: max over the window cells inside the input (padding = -inf, NaN
 * propagates);
 * otherwise the sum of those cells over kernel_h * kernel_w. */
static void ref_pool(const op_case *c, const op_inputs *in, double *expect, int is_max) {
  const float *x = in->data[0];
  const int N = in->dims[0][0], C = in->dims[0][1], H = in->dims[0][2], W = in->dims[0][3];
  const int KH = c->p[4], KW = c->p[5], sh = c->p[6], sw = c->p[7], ph = c->p[8], pw = c->p[9];
  const int OH = (H + 2 * ph - KH) / sh + 1, OW = (W + 2 * pw - KW) / sw + 1;
  for (int nc = 0; nc < N * C; nc++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        double acc = is_max ? -INFINITY : 0.0;
        for (int kh = 0; kh < KH; kh++)
          for (int kw = 0; kw < KW; kw++) {
            const int ih = oh * sh - ph + kh, iw = ow * sw - pw + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[(nc * H + ih) * W + iw];
            if (is_max) {
              if (v > acc || isnan(v)) acc = v; /* NaN propagates */
            } else {
              acc += v;
            }
          }
        expect[(nc * OH + oh) * OW + ow] = is_max ? acc : acc / (KH * KW);
      }
}

void ref_vision_max_pool2d(const op_case *c, const op_inputs *in, double *expect) {
  ref_pool(c, in, expect, 1);
}

void ref_vision_avg_pool2d(const op_case *c, const op_inputs *in, double *expect) {
  ref_pool(c, in, expect, 0);
}

/* x[N,C,H,W] -> [N,C]: plane means. */
void ref_vision_global_avg_pool(const op_case *c, const op_inputs *in, double *expect) {
  (void)c;
  const float *x = in->data[0];
  const int NC = in->dims[0][0] * in->dims[0][1], HW = in->dims[0][2] * in->dims[0][3];
  for (int p = 0; p < NC; p++) {
    double s = 0.0;
    for (int i = 0; i < HW; i++) s += x[p * HW + i];
    expect[p] = s / HW;
  }
}
