/* k_norm_grad.c - backward kernels of RMS norm and layer norm (over the
 * last axis): the input gradient dx, and the weight gradient dw summed over
 * every leading row.  With g = dy * w and r = 1 / sqrt(stat + eps):
 *
 *   rms_norm    dx = r g - x r^3 mean(g x)             dw = sum_rows dy x r
 *   layer_norm  dx = r (g - mean(g) - xh mean(g xh))   dw = sum_rows dy xh
 *               with xh = (x - mean) r
 *
 * As in the forward (k_norm.c), the row statistics are accumulated in
 * double, and so are the per-element combinations, where the terms of dx
 * can cancel (D = 1 gives dx = 0 for layer norm, and a tiny eps / x^3 for
 * RMS norm).  dw accumulates in a double row in scratch.  The 8-wide inner
 * loops vectorize at -O2 without fast-math. */
#include <math.h>
#include <string.h>
#include "kernels.h"

#define LANES 8

/* Row statistics of x (length d): centre = mean (layer norm) or 0 (RMS
 * norm), r = 1 / sqrt(mean((x - centre)^2) + eps). */
typedef struct {
  double centre, r;
} norm_stats;

static double sum_row(const float *x, size_t n) {
  double acc[LANES] = {0.0}, tail = 0.0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) acc[l] += x[i + l];
  for (; i < n; i++) tail += x[i];
  for (int l = 0; l < LANES; l++) tail += acc[l];
  return tail;
}

/* sum of (x[i] - centre)^2 */
static double sum_sq(const float *x, double centre, size_t n) {
  double acc[LANES] = {0.0}, tail = 0.0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) {
      double c = (double)x[i + l] - centre;
      acc[l] += c * c;
    }
  for (; i < n; i++) tail += ((double)x[i] - centre) * ((double)x[i] - centre);
  for (int l = 0; l < LANES; l++) tail += acc[l];
  return tail;
}

static norm_stats row_stats(const float *x, size_t d, int centred, double eps) {
  norm_stats st;
  st.centre = centred ? sum_row(x, d) / (double)d : 0.0;
  st.r = 1.0 / sqrt(sum_sq(x, st.centre, d) / (double)d + eps);
  return st;
}

/* sum of dy[i] w[i] (the sum of g) into *sum_g and of dy[i] w[i] (x[i] -
 * centre) into *sum_gx, in double */
static void grad_sums(const float *restrict x, const float *restrict w, const float *restrict dy, double centre,
                      double *sum_g, double *sum_gx, size_t n) {
  double ag[LANES] = {0.0}, agx[LANES] = {0.0}, tg = 0.0, tgx = 0.0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) {
      double g = (double)dy[i + l] * (double)w[i + l];
      ag[l] += g;
      agx[l] += g * ((double)x[i + l] - centre);
    }
  for (; i < n; i++) {
    double g = (double)dy[i] * (double)w[i];
    tg += g;
    tgx += g * ((double)x[i] - centre);
  }
  for (int l = 0; l < LANES; l++) {
    tg += ag[l];
    tgx += agx[l];
  }
  *sum_g = tg;
  *sum_gx = tgx;
}

/* dx[i] = r dy[i] w[i] - shift - (x[i] - centre) c, in double */
static void grad_apply(const float *restrict x, const float *restrict w, const float *restrict dy, double centre,
                       double r, double shift, double c, float *restrict dx, size_t n) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++)
      dx[i + l] = (float)(r * ((double)dy[i + l] * (double)w[i + l]) - shift - ((double)x[i + l] - centre) * c);
  for (; i < n; i++) dx[i] = (float)(r * ((double)dy[i] * (double)w[i]) - shift - ((double)x[i] - centre) * c);
}

/* acc[i] += dy[i] (x[i] - centre) r */
static void weight_accumulate(double *restrict acc, const float *restrict x, const float *restrict dy,
                              double centre, double r, size_t n) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) acc[i + l] += (double)dy[i + l] * (((double)x[i + l] - centre) * r);
  for (; i < n; i++) acc[i] += (double)dy[i] * (((double)x[i] - centre) * r);
}

/* dx for both norms; centred selects layer norm (the mean of g is removed
 * too).  d(xh_i)/d(x_j) = r (delta_ij - [centred] / D - xh_i xh_j / D), so
 * dx_j = r g_j - r [centred] mean(g) - (x_j - centre) r^3 mean(g (x - centre)). */
static rlx_status norm_grad(const rlx_kargs *a, int centred) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  size_t rows = rlx_shape_numel(s) / d;
  double eps = ATTR_F(a->node, NORM, EPS);
  const float *x = a->in[0], *w = a->in[1], *dy = a->in[2];
  float *dx = a->out;
  for (size_t row = 0; row < rows; row++, x += d, dy += d, dx += d) {
    norm_stats st = row_stats(x, d, centred, eps);
    double sum_g, sum_gx;
    grad_sums(x, w, dy, st.centre, &sum_g, &sum_gx, d);
    double shift = centred ? st.r * sum_g / (double)d : 0.0;
    double c = st.r * st.r * st.r * sum_gx / (double)d;
    grad_apply(x, w, dy, st.centre, st.r, shift, c, dx, d);
  }
  return RLX_OK;
}

/* dw[D] = sum over rows of dy * xh (xh = the normalized x, before w) */
static rlx_status norm_grad_weight(const rlx_kargs *a, int centred, const char *name) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  size_t rows = rlx_shape_numel(s) / d;
  double eps = ATTR_F(a->node, NORM, EPS);
  double *acc = (double *)rlx_scratch_get(a->scratch, d * sizeof(double));
  if (!acc) return rlx_error(RLX_ERR_NO_MEMORY, "%s: no memory for a %zu-wide accumulator", name, d);
  memset(acc, 0, d * sizeof(double));
  const float *x = a->in[0], *dy = a->in[1];
  for (size_t row = 0; row < rows; row++, x += d, dy += d) {
    norm_stats st = row_stats(x, d, centred, eps);
    weight_accumulate(acc, x, dy, st.centre, st.r, d);
  }
  for (size_t i = 0; i < d; i++) a->out[i] = (float)acc[i];
  return RLX_OK;
}

/* x[..., D], w[D], dy[..., D] -> dx[..., D]; attribute eps */
rlx_status rlx_cpu_rms_norm_grad(const rlx_kargs *a) { return norm_grad(a, 0); }

/* x[..., D], dy[..., D] -> dw[D]; attribute eps */
rlx_status rlx_cpu_rms_norm_grad_weight(const rlx_kargs *a) { return norm_grad_weight(a, 0, "rms_norm_grad_weight"); }

/* x[..., D], w[D], dy[..., D] -> dx[..., D]; attribute eps */
rlx_status rlx_cpu_layer_norm_grad(const rlx_kargs *a) { return norm_grad(a, 1); }

/* x[..., D], dy[..., D] -> dw[D]; attribute eps */
rlx_status rlx_cpu_layer_norm_grad_weight(const rlx_kargs *a) {
  return norm_grad_weight(a, 1, "layer_norm_grad_weight");
}
