/* ref_grad_vision.c - naive double-precision references for the grad_vision group
 * (tests/c/cases_grad_vision.c): conv2d_grad_input, conv2d_grad_weight,
 * max_pool2d_grad and avg_pool2d_grad, written from the forward
 * definitions (include/rlx.h) as sums over every (output, tap) pair that
 * touches a cell, independently of the kernels.  Parameter layouts are
 * documented in cases_grad_vision.c. */
#include <math.h>
#include "op_case.h"

void ref_conv2d_grad_input_case(const op_case *c, const op_inputs *in, double *expect);
void ref_conv2d_grad_weight_case(const op_case *c, const op_inputs *in, double *expect);
void ref_max_pool2d_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_avg_pool2d_grad_case(const op_case *c, const op_inputs *in, double *expect);

/* Output size of a window sweep along one axis. */
static int out_size(int in, int k, int stride, int pad, int dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

/* conv p = {N, C, H, W, O, KH, KW, sh, sw, ph, pw, dh, dw, groups, ...};
 * inputs dy[N,O,OH,OW], w[O,C/g,KH,KW].
 * dx[n,c,h,w] = sum of dy[n,o,oh,ow] * w[o,c%Cg,kh,kw] over the o of c's
 * group and every (kh, kw, oh, ow) with oh*sh - ph + kh*dh == h and
 * ow*sw - pw + kw*dw == w (solved for oh, ow per tap). */
void ref_conv2d_grad_input_case(const op_case *c, const op_inputs *in, double *expect) {
  const int *p = c->p;
  const int N = p[0], C = p[1], H = p[2], W = p[3], O = p[4], KH = p[5], KW = p[6];
  const int sh = p[7], sw = p[8], ph = p[9], pw = p[10], dh = p[11], dw = p[12], G = p[13];
  const int Cg = C / G, Og = O / G;
  const int OH = out_size(H, KH, sh, ph, dh), OW = out_size(W, KW, sw, pw, dw);
  const float *dy = in->data[0], *w = in->data[1];
  for (int n = 0; n < N; n++)
    for (int ch = 0; ch < C; ch++)
      for (int h = 0; h < H; h++)
        for (int x = 0; x < W; x++) {
          const int grp = ch / Cg;
          double sum = 0.0;
          for (int o = grp * Og; o < (grp + 1) * Og; o++)
            for (int kh = 0; kh < KH; kh++)
              for (int kw = 0; kw < KW; kw++) {
                /* the one output (oh, ow) this tap maps onto (h, x), if any */
                const int th = h + ph - kh * dh, tw = x + pw - kw * dw;
                if (th < 0 || tw < 0 || th % sh || tw % sw) continue;
                const int oh = th / sh, ow = tw / sw;
                if (oh >= OH || ow >= OW) continue;
                sum += (double)dy[((n * O + o) * OH + oh) * OW + ow] *
                       (double)w[((o * Cg + ch % Cg) * KH + kh) * KW + kw];
              }
          expect[((n * C + ch) * H + h) * W + x] = sum;
        }
}

/* conv p as above; inputs x[N,C,H,W], dy[N,O,OH,OW].
 * dw[o,ci,kh,kw] = sum over n, oh, ow of dy[n,o,oh,ow] * x[n,grp*Cg+ci,ih,iw]
 * with ih = oh*sh - ph + kh*dh, iw = ow*sw - pw + kw*dw inside the input. */
void ref_conv2d_grad_weight_case(const op_case *c, const op_inputs *in, double *expect) {
  const int *p = c->p;
  const int N = p[0], C = p[1], H = p[2], W = p[3], O = p[4], KH = p[5], KW = p[6];
  const int sh = p[7], sw = p[8], ph = p[9], pw = p[10], dh = p[11], dw = p[12], G = p[13];
  const int Cg = C / G, Og = O / G;
  const int OH = out_size(H, KH, sh, ph, dh), OW = out_size(W, KW, sw, pw, dw);
  const float *x = in->data[0], *dy = in->data[1];
  for (int o = 0; o < O; o++)
    for (int ci = 0; ci < Cg; ci++)
      for (int kh = 0; kh < KH; kh++)
        for (int kw = 0; kw < KW; kw++) {
          const int ch = (o / Og) * Cg + ci;
          double sum = 0.0;
          for (int n = 0; n < N; n++)
            for (int oh = 0; oh < OH; oh++)
              for (int ow = 0; ow < OW; ow++) {
                const int ih = oh * sh - ph + kh * dh, iw = ow * sw - pw + kw * dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                sum += (double)dy[((n * O + o) * OH + oh) * OW + ow] * (double)x[((n * C + ch) * H + ih) * W + iw];
              }
          expect[((o * Cg + ci) * KH + kh) * KW + kw] = sum;
        }
}

/* pool p = {N, C, H, W, KH, KW, sh, sw, ph, pw, ...}; inputs x, dy.
 * Each window's dy goes to the cell the forward's max came from: the first
 * NaN of the window in row-major order, else the first cell equal to the
 * window's maximum; cells in the padding are not part of the window. */
void ref_max_pool2d_grad_case(const op_case *c, const op_inputs *in, double *expect) {
  const int *p = c->p;
  const int N = p[0], C = p[1], H = p[2], W = p[3], KH = p[4], KW = p[5];
  const int sh = p[6], sw = p[7], ph = p[8], pw = p[9];
  const int OH = out_size(H, KH, sh, ph, 1), OW = out_size(W, KW, sw, pw, 1);
  const float *x = in->data[0], *dy = in->data[1];
  for (int i = 0; i < N * C * H * W; i++) expect[i] = 0.0;
  for (int nc = 0; nc < N * C; nc++)
    for (int oh = 0; oh < OH; oh++)
      for (int ow = 0; ow < OW; ow++) {
        /* the maximum (or NaN) of the in-bounds cells */
        double m = -INFINITY;
        int any_nan = 0;
        for (int kh = 0; kh < KH; kh++)
          for (int kw = 0; kw < KW; kw++) {
            const int ih = oh * sh - ph + kh, iw = ow * sw - pw + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[(nc * H + ih) * W + iw];
            if (isnan(v)) any_nan = 1;
            else if (v > m) m = v;
          }
        /* its first cell */
        int found = -1;
        for (int kh = 0; kh < KH && found < 0; kh++)
          for (int kw = 0; kw < KW && found < 0; kw++) {
            const int ih = oh * sh - ph + kh, iw = ow * sw - pw + kw;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const double v = x[(nc * H + ih) * W + iw];
            if (any_nan ? isnan(v) : v == m) found = (nc * H + ih) * W + iw;
          }
        expect[found] += dy[(nc * OH + oh) * OW + ow];
      }
}

/* pool p = {N, C, H, W, KH, KW, sh, sw, ph, pw, ...}; input dy.
 * dx[h, w] = sum of dy[oh, ow] / (KH * KW) over the windows holding (h, w). */
void ref_avg_pool2d_grad_case(const op_case *c, const op_inputs *in, double *expect) {
  const int *p = c->p;
  const int N = p[0], C = p[1], H = p[2], W = p[3], KH = p[4], KW = p[5];
  const int sh = p[6], sw = p[7], ph = p[8], pw = p[9];
  const int OH = out_size(H, KH, sh, ph, 1), OW = out_size(W, KW, sw, pw, 1);
  const float *dy = in->data[0];
  for (int nc = 0; nc < N * C; nc++)
    for (int h = 0; h < H; h++)
      for (int x = 0; x < W; x++) {
        double sum = 0.0;
        for (int oh = 0; oh < OH; oh++)
          for (int ow = 0; ow < OW; ow++) {
            const int h0 = oh * sh - ph, w0 = ow * sw - pw;
            if (h >= h0 && h < h0 + KH && x >= w0 && x < w0 + KW) sum += dy[(nc * OH + oh) * OW + ow];
          }
        expect[(nc * H + h) * W + x] = sum / (KH * KW);
      }
}
