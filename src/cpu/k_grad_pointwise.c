/* k_grad_pointwise.c - backward kernels of the pointwise activations:
 * gelu_grad and silu_grad, dx = dy * f'(x), one contiguous loop each.
 *
 * Both derivatives are written with s = sigmoid(t) and s (1 - s) taken
 * from e = e^-|t| (s (1 - s) = e / (1 + e)^2), so nothing overflows or
 * cancels for large |t|.  x is clamped first to where f' has already
 * saturated in float (f' = 1 above, ~0 below); that keeps x * s (1 - s)
 * from becoming inf * 0 for huge or infinite x.  NaN stays NaN. */
#include <math.h>

#include "fast_math.h"
#include "kernels.h"

/* x clamped to [-limit, limit]; NaN passes through. */
static inline float clamp_abs(float x, float limit) {
  x = x < -limit ? -limit : x;
  return x > limit ? limit : x;
}

/* d/dx of the tanh-approximated gelu x * sigmoid(t), t = 2k (x + c x^3):
 * sigmoid(t) + x * sigmoid'(t) * 2k (1 + 3c x^2).  Beyond |x| = 20 the
 * derivative is 1 or 0 to float precision. */
static inline float gelu_derivative(float x) {
  const float k2 = 2.0f * 0.7978845608028654f; /* 2 sqrt(2/pi) */
  const float c = 0.044715f;
  x = clamp_abs(x, 20.0f);
  float x2 = x * x;
  float t = k2 * (x + c * x2 * x);
  float e = exp_poly(-fabsf(t));
  float r = 1.0f / (1.0f + e);
  float s = t >= 0.0f ? r : e * r;
  float ds = e * r * r; /* sigmoid'(t) = s (1 - s) */
  return s + x * ds * k2 * (1.0f + 3.0f * c * x2);
}

/* d/dx of x * sigmoid(x) = s + x s (1 - s).  Beyond |x| = 88 e^-|x| is 0
 * in float. */
static inline float silu_derivative(float x) {
  x = clamp_abs(x, 88.0f);
  float e = exp_poly(-fabsf(x));
  float r = 1.0f / (1.0f + e);
  float s = x >= 0.0f ? r : e * r;
  return s + x * (e * r * r);
}

static void gelu_grad_loop(const float *restrict x, const float *restrict dy, float *restrict dx, size_t n) {
  RLX_VEC_LOOP(i, n, dx[i] = dy[i] * gelu_derivative(x[i]));
}

static void silu_grad_loop(const float *restrict x, const float *restrict dy, float *restrict dx, size_t n) {
  RLX_VEC_LOOP(i, n, dx[i] = dy[i] * silu_derivative(x[i]));
}

/* x[...], dy[...] -> dx[...] = dy * gelu'(x) */
rlx_status rlx_cpu_gelu_grad(const rlx_kargs *a) {
  gelu_grad_loop(a->in[0], a->in[1], a->out, rlx_shape_numel(&a->node->shape));
  return RLX_OK;
}

/* x[...], dy[...] -> dx[...] = dy * silu'(x) */
rlx_status rlx_cpu_silu_grad(const rlx_kargs *a) {
  silu_grad_loop(a->in[0], a->in[1], a->out, rlx_shape_numel(&a->node->shape));
  return RLX_OK;
}
