/* ref_grad_norm_attention.c - naive double-precision references for the grad_norm_attention group
 * (tests/c/cases_grad_norm_attention.c): the backward ops of RMS norm, layer norm and
 * attention.  Each is an explicit Jacobian-vector product written from the
 * forward definition, independently of the kernels' fused formulas:
 *
 *   norms      dx_j = sum_i dy_i dy_i/dx_j with the full D x D Jacobian of
 *              one row; dw_i = sum over rows of dy_i * (normalized x)_i
 *   attention  per query row: scores, softmax P, y = P V; then
 *              dL/dv_j += P_j dy, dL/dP_j = dy . v_j, dL/ds_l = sum_j dL/dP_j
 *              dP_j/ds_l with the softmax Jacobian P_j (delta_jl - P_l),
 *              and ds_l/dq = scale k_l, ds_l/dk_l = scale q
 *
 * Parameter layouts are documented in cases_grad_norm_attention.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "op_case.h"

void ref_norm_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_attention_grad_case(const op_case *c, const op_inputs *in, double *expect);

/* y_i = w_i xh_i (+ b_i) of one row; jac[i * d + j] = d xh_i / d x_j.
 * RMS norm: xh = x r, r = (mean(x^2) + eps)^-1/2, so
 *   d xh_i/d x_j = r delta_ij + x_i dr/dx_j, dr/dx_j = -r^3 x_j / D.
 * Layer norm: xh = (x - mu) r, r = (mean((x - mu)^2) + eps)^-1/2, so
 *   d xh_i/d x_j = r (delta_ij - 1/D) + (x_i - mu) dr/dx_j,
 *   dr/dx_j = -r^3 (x_j - mu) / D  (the mean's own derivative sums to 0). */
static void norm_row_jacobian(const float *x, int32_t d, int layer, double eps, double *xh, double *jac) {
  double mu = 0.0, var = 0.0;
  if (layer) {
    for (int32_t j = 0; j < d; j++) mu += x[j];
    mu /= d;
  }
  for (int32_t j = 0; j < d; j++) var += (x[j] - mu) * (x[j] - mu);
  var /= d;
  double r = 1.0 / sqrt(var + eps);
  for (int32_t i = 0; i < d; i++) {
    xh[i] = (x[i] - mu) * r;
    for (int32_t j = 0; j < d; j++) {
      double dr = -r * r * r * (x[j] - mu) / d;
      jac[(size_t)i * d + j] = r * ((i == j) - (layer ? 1.0 / d : 0.0)) + (x[i] - mu) * dr;
    }
  }
}

/* p = {op, eps * 1e6, rank, dims...}; op 0 rms dx, 1 rms dw, 2 layer dx,
 * 3 layer dw.  dx ops: inputs x, w, dy; dw ops: inputs x, dy. */
void ref_norm_grad_case(const op_case *c, const op_inputs *in, double *expect) {
  int layer = c->p[0] >= 2, weight = c->p[0] % 2;
  double eps = (double)(float)(c->p[1] * 1e-6);
  int32_t rank = in->rank[0], d = in->dims[0][rank - 1];
  size_t rows = ref_numel(rank, in->dims[0]) / (size_t)d;
  const float *x = in->data[0], *w = weight ? NULL : in->data[1], *dy = in->data[weight ? 1 : 2];
  double *xh = malloc(sizeof(double) * (size_t)d), *jac = malloc(sizeof(double) * (size_t)d * (size_t)d);
  if (weight) memset(expect, 0, sizeof(double) * (size_t)d);
  for (size_t row = 0; row < rows; row++) {
    const float *xr = x + row * (size_t)d, *dyr = dy + row * (size_t)d;
    norm_row_jacobian(xr, d, layer, eps, xh, jac);
    if (weight) {
      for (int32_t i = 0; i < d; i++) expect[i] += dyr[i] * xh[i];
      continue;
    }
    for (int32_t j = 0; j < d; j++) {
      double s = 0.0;
      for (int32_t i = 0; i < d; i++) s += (double)dyr[i] * w[i] * jac[(size_t)i * d + j];
      expect[row * (size_t)d + (size_t)j] = s;
    }
  }
  free(xh);
  free(jac);
}

/* Is key j visible to query i of batch b (mask kinds other than bias)? */
static int ref_visible(const op_case *c, const op_inputs *in, int32_t b, int32_t i, int32_t j) {
  int32_t sq = c->p[2], sk = c->p[3], kind = c->p[6], window = c->p[7];
  int32_t last = i + (sk - sq);
  if (kind == RLX_MASK_CAUSAL) return j <= last;
  if (kind == RLX_MASK_SLIDING) return j <= last && j > last - window;
  if (kind == RLX_MASK_PADDING) return in->data[4][(size_t)b * (size_t)sk + (size_t)j] != 0.0f;
  return 1;
}

/* p = {B, H, Sq, Sk, D, Dv, mask kind, window, scale * 1000, variant,
 *      bias rank, bias dims...}; inputs q, k, v, dy (, mask) ->
 * [dq (B H Sq D), dk (B H Sk D), dv (B H Sk Dv)] flat. */
void ref_attention_grad_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t B = c->p[0], H = c->p[1], sq = c->p[2], sk = c->p[3], d = c->p[4], dv = c->p[5];
  int32_t kind = c->p[6];
  double scale = c->p[8] > 0 ? (double)(float)(c->p[8] / 1000.0) : 1.0 / sqrt((double)d);
  const float *q = in->data[0], *k = in->data[1], *v = in->data[2], *dy = in->data[3];
  size_t nq = (size_t)B * H * sq * d, nk = (size_t)B * H * sk * d, nv = (size_t)B * H * sk * dv;
  double *gq = expect, *gk = expect + nq, *gv = gk + nk;
  double *score = malloc(sizeof(double) * (size_t)sk), *prob = malloc(sizeof(double) * (size_t)sk);
  double *dprob = malloc(sizeof(double) * (size_t)sk), *dscore = malloc(sizeof(double) * (size_t)sk);
  memset(expect, 0, sizeof(double) * (nq + nk + nv));
  for (int32_t b = 0; b < B; b++)
    for (int32_t h = 0; h < H; h++)
      for (int32_t i = 0; i < sq; i++) {
        size_t head = (size_t)b * H + (size_t)h;
        const float *qi = q + (head * sq + i) * d, *dyi = dy + (head * sq + i) * dv;
        double m = -INFINITY;
        for (int32_t j = 0; j < sk; j++) {
          score[j] = -INFINITY;
          if (!ref_visible(c, in, b, i, j)) continue;
          const float *kj = k + (head * sk + j) * d;
          double s = 0.0;
          for (int32_t e = 0; e < d; e++) s += (double)qi[e] * kj[e];
          s *= scale;
          if (kind == RLX_MASK_BIAS) {
            int32_t idx[4] = {b, h, i, j};
            s += in->data[4][ref_broadcast_index(idx, 4, in->rank[4], in->dims[4])];
          }
          score[j] = s;
          if (s > m) m = s;
        }
        if (m == -INFINITY) continue; /* every key masked: no contribution */
        double sum = 0.0;
        for (int32_t j = 0; j < sk; j++) sum += exp(score[j] - m);
        for (int32_t j = 0; j < sk; j++) prob[j] = exp(score[j] - m) / sum;
        /* y = sum_j P_j v_j: dv_j += P_j dy, dP_j = dy . v_j */
        for (int32_t j = 0; j < sk; j++) {
          const float *vj = v + (head * sk + j) * dv;
          double *gvj = gv + (head * sk + j) * dv;
          dprob[j] = 0.0;
          for (int32_t e = 0; e < dv; e++) {
            gvj[e] += prob[j] * dyi[e];
            dprob[j] += (double)dyi[e] * vj[e];
          }
        }
        /* through the softmax Jacobian dP_j/ds_l = P_j (delta_jl - P_l) */
        for (int32_t l = 0; l < sk; l++) {
          double g = 0.0;
          for (int32_t j = 0; j < sk; j++) g += dprob[j] * prob[j] * ((j == l) - prob[l]);
          dscore[l] = g;
        }
        /* s_l = scale q . k_l (+ bias) */
        double *gqi = gq + (head * sq + i) * d;
        for (int32_t l = 0; l < sk; l++) {
          if (prob[l] == 0.0) continue; /* masked key: no path */
          const float *kl = k + (head * sk + l) * d;
          double *gkl = gk + (head * sk + l) * d;
          for (int32_t e = 0; e < d; e++) {
            gqi[e] += dscore[l] * scale * kl[e];
            gkl[e] += dscore[l] * scale * qi[e];
          }
        }
      }
  free(score);
  free(prob);
  free(dprob);
  free(dscore);
}
