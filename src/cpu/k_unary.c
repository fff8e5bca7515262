/* k_unary.c - elementwise unary ops: neg abs exp log sqrt rsqrt tanh sigmoid
 * relu gelu silu.  Each is generated from a scalar expression into one
 * contiguous loop over the tensor (output shape = input shape).  exp, and
 * the sigmoid/tanh family built on it, use the branch-free polynomial exp
 * of fast_math.h (within 2 ulp of expf) so the loops vectorize instead of
 * calling libm once per element.  The same scalar expressions, by sub-op
 * code, are the WebGL2 reference executor's formulas for unary.frag
 * (rlx_cpu_unary_scalar, below). */
#include <math.h>

#include "../core/pool.h"
#include "../core/subops.h"
#include "fast_math.h"
#include "kernels.h"

/* tanh approximation 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
 * evaluated as the identical x * sigmoid(2u): no cancellation in 1 + tanh(u)
 * for negative x. */
static inline float gelu_tanh(float x) {
  const float k = 0.7978845608028654f; /* sqrt(2/pi) */
  return x * sigmoid_stable(2.0f * k * (x + 0.044715f * x * x * x));
}

/* x[...] -> y[...] (same shape).  Natively large tensors go over the thread
 * pool (src/core/pool.h) in ranges of RLX_ELEMENTWISE_GRAIN elements; the
 * threadless builds call the loop. */
#if RLX_THREADED
typedef void (*unary_loop)(const float *restrict xs, float *restrict o, size_t n);
typedef struct {
  unary_loop loop;
  const float *x;
  float *y;
} unary_ranges;

static void unary_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  (void)ws;
  const unary_ranges *u = ctx;
  u->loop(u->x + b, u->y + b, e - b);
}

static rlx_status unary_run(const rlx_kargs *a, unary_loop loop) {
  const unary_ranges u = {loop, a->in[0], a->out};
  rlx_parallel_for(rlx_shape_numel(&a->node->shape), RLX_ELEMENTWISE_GRAIN, 4, unary_range, (void *)&u, NULL);
  return RLX_OK;
}
#define UNARY_RUN(name) return unary_run(a, name##_loop)
#else
#define UNARY_RUN(name) return name##_loop(a->in[0], a->out, rlx_shape_numel(&a->node->shape)), RLX_OK
#endif

#define RLX_UNARY_KERNEL(name, EXPR)                                               \
  static inline float name##_op(float x) { return EXPR; }                          \
  static void name##_loop(const float *restrict xs, float *restrict o, size_t n) { \
    RLX_VEC_LOOP(i, n, o[i] = name##_op(xs[i]));                                   \
  }                                                                                \
  rlx_status rlx_cpu_##name(const rlx_kargs *a) { UNARY_RUN(name); }

RLX_UNARY_KERNEL(neg, -x)
RLX_UNARY_KERNEL(abs, fabsf(x))
RLX_UNARY_KERNEL(exp, exp_poly(x))
RLX_UNARY_KERNEL(log, logf(x))
RLX_UNARY_KERNEL(sqrt, sqrtf(x))
RLX_UNARY_KERNEL(rsqrt, 1.0f / sqrtf(x))
RLX_UNARY_KERNEL(tanh, tanh_poly(x))
RLX_UNARY_KERNEL(sigmoid, sigmoid_stable(x))
RLX_UNARY_KERNEL(relu, x < 0.0f ? 0.0f : x) /* NaN passes through */
RLX_UNARY_KERNEL(gelu, gelu_tanh(x))
RLX_UNARY_KERNEL(silu, x * sigmoid_stable(x))

/* Each op's scalar expression, indexed by its sub-op code. */
#define SCALAR_UNARY(ID, name) [RLX_SUBOP_##ID] = name##_op,
#define SCALAR_BINARY(ID, name)
#define SCALAR_POINTWISE_GRAD(ID, name)
#define SCALAR_NONE(ID, name)
static float (*const scalar_ops[])(float) = {
#define RLX_OP(ID, name, lo, hi, rule, attrs) RLX_SUBOP_ROW(rule, SCALAR, ID, name)
#include "rlx_ops.def"
#undef RLX_OP
};

float rlx_cpu_unary_scalar(int32_t subop, float x) {
  int32_t n = (int32_t)(sizeof scalar_ops / sizeof scalar_ops[0]);
  return subop >= 0 && subop < n ? scalar_ops[subop](x) : NAN;
}
