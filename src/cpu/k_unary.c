/* k_unary.c - elementwise unary ops: neg abs exp log sqrt rsqrt tanh sigmoid
 * relu gelu silu.  Each is generated from a scalar expression into one
 * contiguous loop over the tensor (output shape = input shape). */
#include <math.h>

#include "kernels.h"

/* for (i = 0; i < n; i++) BODY, run as blocks of 8 with a constant trip
 * count plus a scalar tail: gcc -O2 (whose cheap vectorizer skips loops of
 * unknown trip count) vectorizes the blocks, clang -O3 the whole loop. */
#define VEC_LOOP(i, n, BODY)                               \
  do {                                                     \
    size_t i##_block = 0;                                  \
    for (; i##_block + 8 <= (n); i##_block += 8)           \
      for (size_t i = i##_block; i < i##_block + 8; i++) { \
        BODY;                                              \
      }                                                    \
    for (size_t i = i##_block; i < (n); i++) {             \
      BODY;                                                \
    }                                                      \
  } while (0)

/* 1/(1+e^-x) computed from e = e^-|x| in (0, 1], so it neither overflows
 * nor divides inf by inf for large |x|. */
static inline float sigmoid_stable(float x) {
  float e = expf(-fabsf(x));
  return x >= 0.0f ? 1.0f / (1.0f + e) : e / (1.0f + e);
}

/* tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
static inline float gelu_tanh(float x) {
  const float k = 0.7978845608028654f; /* sqrt(2/pi) */
  return 0.5f * x * (1.0f + tanhf(k * (x + 0.044715f * x * x * x)));
}

/* x[...] -> y[...] (same shape) */
#define RLX_UNARY_KERNEL(name, EXPR)                                               \
  static inline float name##_op(float x) { return EXPR; }                          \
  static void name##_loop(const float *restrict xs, float *restrict o, size_t n) { \
    VEC_LOOP(i, n, o[i] = name##_op(xs[i]));                                       \
  }                                                                                \
  rlx_status rlx_cpu_##name(const rlx_kargs *a) {                                  \
    name##_loop(a->in[0], a->out, rlx_shape_numel(&a->node->shape));               \
    return RLX_OK;                                                                 \
  }

RLX_UNARY_KERNEL(neg, -x)
RLX_UNARY_KERNEL(abs, fabsf(x))
RLX_UNARY_KERNEL(exp, expf(x))
RLX_UNARY_KERNEL(log, logf(x))
RLX_UNARY_KERNEL(sqrt, sqrtf(x))
RLX_UNARY_KERNEL(rsqrt, 1.0f / sqrtf(x))
RLX_UNARY_KERNEL(tanh, tanhf(x))
RLX_UNARY_KERNEL(sigmoid, sigmoid_stable(x))
RLX_UNARY_KERNEL(relu, x < 0.0f ? 0.0f : x) /* NaN passes through */
RLX_UNARY_KERNEL(gelu, gelu_tanh(x))
RLX_UNARY_KERNEL(silu, x * sigmoid_stable(x))
