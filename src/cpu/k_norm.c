/* k_norm.c - RMS norm and layer norm over the last axis.  Row statistics
 * are accumulated in double (layer norm uses two passes: mean, then the
 * biased variance around it); the affine weight and bias apply in float. */
#include <math.h>
#include "kernels.h"

/* x[..., D], w[D] -> y[..., D]; y = x / sqrt(mean(x^2) + eps) * w, fattr[0] = eps */
rlx_status rlx_cpu_rms_norm(const rlx_kargs *a) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  size_t rows = rlx_shape_numel(s) / d;
  double eps = a->node->fattr[0];
  const float *x = a->in[0], *w = a->in[1];
  float *y = a->out;
  for (size_t r = 0; r < rows; r++, x += d, y += d) {
    double sq = 0.0;
    for (size_t i = 0; i < d; i++) sq += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(sq / (double)d + eps));
    for (size_t i = 0; i < d; i++) y[i] = x[i] * inv * w[i];
  }
  return RLX_OK;
}

/* x[..., D], w[D], b[D] -> y[..., D]; y = (x - mean) / sqrt(var + eps) * w + b,
 * biased variance, fattr[0] = eps */
rlx_status rlx_cpu_layer_norm(const rlx_kargs *a) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  size_t rows = rlx_shape_numel(s) / d;
  double eps = a->node->fattr[0];
  const float *x = a->in[0], *w = a->in[1], *b = a->in[2];
  float *y = a->out;
  for (size_t r = 0; r < rows; r++, x += d, y += d) {
    double sum = 0.0;
    for (size_t i = 0; i < d; i++) sum += x[i];
    double mean = sum / (double)d;
    double sq = 0.0;
    for (size_t i = 0; i < d; i++) {
      double c = (double)x[i] - mean;
      sq += c * c;
    }
    double inv = 1.0 / sqrt(sq / (double)d + eps);
    /* centre in double: with |mean| >> std a float mean would cost digits */
    for (size_t i = 0; i < d; i++) y[i] = (float)(((double)x[i] - mean) * inv) * w[i] + b[i];
  }
  return RLX_OK;
}
