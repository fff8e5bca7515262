/* k_norm.c - RMS norm and layer norm over the last axis.  Row statistics
 * are accumulated in double (layer norm uses two passes: mean, then the
 * biased variance around it, and centres in double too, so rows far from
 * zero keep their digits); the affine weight and bias apply in float.
 * The 8-wide inner loops vectorize at -O2 without fast-math. */
#include <math.h>
#include "../core/pool.h"
#include "kernels.h"

#define LANES 8

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
  for (int l = 0; l < LANES; l++) tail += acc[l]; /* in lane order: keeps clang's SLP 4-wide */
  return tail;
}

static double sum_row(const float *x, size_t n) {
  double acc[LANES] = {0.0}, tail = 0.0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) acc[l] += x[i + l];
  for (; i < n; i++) tail += x[i];
  for (int l = 0; l < LANES; l++) tail += acc[l]; /* in lane order: keeps clang's SLP 4-wide */
  return tail;
}

/* y = x * inv * w (restrict parameters so that clang vectorizes too) */
static void rms_apply(const float *restrict x, float inv, const float *restrict w, float *restrict y, size_t n) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) y[i + l] = x[i + l] * inv * w[i + l];
  for (; i < n; i++) y[i] = x[i] * inv * w[i];
}

/* y = (x - mean) * inv * w + b, centred and scaled in double */
static void layer_apply(const float *restrict x, double mean, double inv, const float *restrict w,
                        const float *restrict b, float *restrict y, size_t n) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) y[i + l] = (float)(((double)x[i + l] - mean) * inv) * w[i + l] + b[i + l];
  for (; i < n; i++) y[i] = (float)(((double)x[i] - mean) * inv) * w[i] + b[i];
}

/* The rows' loops of both norms over the thread pool (src/core/pool.h). */
typedef struct {
  const float *x, *w, *b; /* b: layer_norm's */
  float *y;
  double eps;
  size_t d;
} norm_rows;

static void rms_range(void *ctx, size_t r0, size_t r1, rlx_scratch *ws) {
  (void)ws;
  const norm_rows *l = ctx;
  const size_t d = l->d;
  for (size_t r = r0; r < r1; r++) {
    float inv = (float)(1.0 / sqrt(sum_sq(l->x + r * d, 0.0, d) / (double)d + l->eps));
    rms_apply(l->x + r * d, inv, l->w, l->y + r * d, d);
  }
}

static void layer_range(void *ctx, size_t r0, size_t r1, rlx_scratch *ws) {
  (void)ws;
  const norm_rows *l = ctx;
  const size_t d = l->d;
  for (size_t r = r0; r < r1; r++) {
    const float *x = l->x + r * d;
    double mean = sum_row(x, d) / (double)d;
    double inv = 1.0 / sqrt(sum_sq(x, mean, d) / (double)d + l->eps);
    layer_apply(x, mean, inv, l->w, l->b, l->y + r * d, d);
  }
}

void rlx_rms_norm_rows(const float *x, const float *w, double eps, size_t rows, size_t d, float *y) {
  const norm_rows l = {x, w, NULL, y, eps, d};
  rlx_parallel_for(rows, 1, 2 * d, rms_range, (void *)&l, NULL);
}

/* x[..., D], w[D] -> y[..., D]; y = x / sqrt(mean(x^2) + eps) * w, attribute eps */
rlx_status rlx_cpu_rms_norm(const rlx_kargs *a) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  rlx_rms_norm_rows(a->in[0], a->in[1], ATTR_F(a->node, NORM, EPS), rlx_shape_numel(s) / d, d, a->out);
  return RLX_OK;
}

/* x[..., D], w[D], b[D] -> y[..., D]; y = (x - mean) / sqrt(var + eps) * w + b,
 * biased variance, attribute eps */
rlx_status rlx_cpu_layer_norm(const rlx_kargs *a) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  const norm_rows l = {a->in[0], a->in[1], a->in[2], a->out, ATTR_F(a->node, NORM, EPS), d};
  rlx_parallel_for(rlx_shape_numel(s) / d, 1, 3 * d, layer_range, (void *)&l, NULL);
  return RLX_OK;
}
