/* k_fused_matmul.c - a matrix product with its epilogue,
 * y = act(op(a) . op(b) + bias) * mul, made by the compiler from matmul ->
 * add -> relu/gelu/silu -> mul chains.  The product is rlx_cpu_matmul's (the
 * node's first two attributes are its trans flags, and its shape is the
 * product's); the epilogue then passes over each output row once while it
 * is in cache, with the scalar expressions of the separate add, activation
 * and mul kernels, so fused and unfused graphs give the same numbers. */
#include "fast_math.h"
#include "kernels.h"

enum { ACT_NONE = 0, ACT_RELU = 1, ACT_GELU = 2, ACT_SILU = 3 };

/* As k_unary.c: 0.5 x (1 + tanh(u)) evaluated as x * sigmoid(2u). */
static inline float gelu_tanh(float x) {
  const float k = 0.7978845608028654f; /* sqrt(2/pi) */
  return x * sigmoid_stable(2.0f * k * (x + 0.044715f * x * x * x));
}

/* y[j] (op)= v[j * stride] for j < n; stride is 0 (broadcast) or 1. */
static void row_add(float *restrict y, const float *restrict v, size_t stride, size_t n) {
  if (stride) {
    RLX_VEC_LOOP(j, n, y[j] = y[j] + v[j]);
  } else {
    float c = v[0];
    RLX_VEC_LOOP(j, n, y[j] = y[j] + c);
  }
}

static void row_mul(float *restrict y, const float *restrict v, size_t stride, size_t n) {
  if (stride) {
    RLX_VEC_LOOP(j, n, y[j] = y[j] * v[j]);
  } else {
    float c = v[0];
    RLX_VEC_LOOP(j, n, y[j] = y[j] * c);
  }
}

static void row_act(float *restrict y, int32_t act, size_t n) {
  switch (act) {
    case ACT_RELU: RLX_VEC_LOOP(j, n, y[j] = y[j] < 0.0f ? 0.0f : y[j]); break; /* NaN passes through */
    case ACT_GELU: RLX_VEC_LOOP(j, n, y[j] = gelu_tanh(y[j])); break;
    case ACT_SILU: RLX_VEC_LOOP(j, n, y[j] = y[j] * sigmoid_stable(y[j])); break;
    default: break;
  }
}

/* a[..., M, K], b[..., K, N] (trans flags as matmul)[, bias][, mul]
 *   -> y[..., M, N]; bias and mul broadcast to y.
 * iattr = {trans_a, trans_b, act, has_bias, has_mul} */
rlx_status rlx_cpu_fused_matmul(const rlx_kargs *a) {
  rlx_status st = rlx_cpu_matmul(a); /* reads inputs 0, 1 and trans_a, trans_b only */
  if (st != RLX_OK) return st;
  const rlx_shape *so = &a->node->shape;
  const int32_t act = ATTR_I(a->node, FUSED_MATMUL, ACT), has_bias = ATTR_I(a->node, FUSED_MATMUL, HAS_BIAS) != 0, has_mul = ATTR_I(a->node, FUSED_MATMUL, HAS_MUL) != 0;
  const float *bias = has_bias ? a->in[2] : NULL, *mul = has_mul ? a->in[2 + has_bias] : NULL;
  size_t bias_st[RLX_MAX_RANK] = {0}, mul_st[RLX_MAX_RANK] = {0};
  if (bias) rlx_broadcast_strides(&a->in_node[2]->shape, so, bias_st);
  if (mul) rlx_broadcast_strides(&a->in_node[2 + has_bias]->shape, so, mul_st);

  const int32_t last = so->rank - 1;
  const size_t n = (size_t)so->dims[last], rows = rlx_shape_numel(so) / n;
  int32_t idx[RLX_MAX_RANK] = {0};
  size_t boff = 0, moff = 0;
  float *y = a->out;
  for (size_t r = 0; r < rows; r++, y += n) {
    if (bias) row_add(y, bias + boff, bias_st[last], n);
    row_act(y, act, n);
    if (mul) row_mul(y, mul + moff, mul_st[last], n);
    /* odometer over the row axes, moving the operand offsets along */
    for (int32_t i = last - 1; i >= 0; i--) {
      boff += bias_st[i];
      moff += mul_st[i];
      if (++idx[i] < so->dims[i]) break;
      boff -= bias_st[i] * (size_t)so->dims[i];
      moff -= mul_st[i] * (size_t)so->dims[i];
      idx[i] = 0;
    }
  }
  return RLX_OK;
}
