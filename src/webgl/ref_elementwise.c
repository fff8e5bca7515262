/* ref_elementwise.c - C twins of binary.frag, where.frag, unary.frag and
 * pointwise_grad.frag: the same formulas in float, element by element, so
 * the reference executor (reference.c) computes what the GPU does.
 * unary.frag's and binary.frag's formulas are the CPU kernels' (k_unary.c,
 * k_elementwise.c), so their twins call those; pow, whose shader computes
 * through exp2/log2 where the CPU calls powf, keeps its own twin here. */
#include <math.h>
#include <string.h>

#include "../core/subops.h"
#include "../cpu/kernels.h"
#include "gl_plan.h"

static float glsl_pow(float x, float y) {
  if (y == 0.0f || x == 1.0f) return 1.0f;
  if (isnan(x) || isnan(y)) return NAN;
  float ax = fabsf(x);
  if (ax == 1.0f && isinf(y)) return 1.0f;
  int negative = signbit(x) != 0;
  int integer = floorf(y) == y;
  int odd = integer && fabsf(y) < 16777216.0f && ((int32_t)fabsf(y) & 1) == 1;
  if (negative && !integer && ax != 0.0f && !isinf(x)) return NAN;
  float r;
  if (ax == 0.0f)
    r = y > 0.0f ? 0.0f : INFINITY;
  else if (isinf(ax))
    r = y > 0.0f ? INFINITY : 0.0f;
  else
    r = exp2f(y * log2f(ax));
  return (negative && odd) ? -r : r;
}

/* binary.frag: the op's formula, which is the CPU kernel's except pow's;
 * an op whose GLSL formula differs from its kernel's needs its own branch
 * here. */
static float binary_op(int32_t op, float x, float y) {
  return op == RLX_SUBOP_POW ? glsl_pow(x, y) : rlx_cpu_binary_scalar(op, x, y);
}

void rlx_glref_binary(const rlx_glref_args *a) {
  int32_t op = rlx_gl_define_value(a->pass, "OP", 0), off[3];
  const int mul3 = rlx_gl_define_value(a->pass, "MUL3", 0) != 0;
  for (size_t i = 0; i < a->out_n; i++) {
    rlx_glref_iter(a->pass->ints, (int32_t)i, off);
    const float y = mul3 ? a->in[1][off[1]] * a->in[2][off[2]] : a->in[1][off[1]];
    a->out[i] = binary_op(op, a->in[0][off[0]], y);
  }
}

void rlx_glref_where(const rlx_glref_args *a) {
  int32_t off[3];
  for (size_t i = 0; i < a->out_n; i++) {
    rlx_glref_iter(a->pass->ints, (int32_t)i, off);
    float c = a->in[0][off[0]];
    a->out[i] = (c != 0.0f || isnan(c)) ? a->in[1][off[1]] : a->in[2][off[2]];
  }
}

/* unary.frag: NaN is returned first, then the op's formula, which is the
 * CPU kernel's (exp is the GPU's own there, a polynomial on the CPU, both
 * within a few ulp); an op whose GLSL formula differs from its kernel's
 * needs its own branch here. */
static float unary_op(int32_t op, float x) { return isnan(x) ? x : rlx_cpu_unary_scalar(op, x); }

void rlx_glref_unary(const rlx_glref_args *a) {
  int32_t op = rlx_gl_define_value(a->pass, "OP", 0);
  for (size_t i = 0; i < a->out_n; i++) a->out[i] = unary_op(op, a->in[0][i]);
}

static float clamp_abs(float x, float limit) {
  x = x < -limit ? -limit : x;
  return x > limit ? limit : x;
}

static float gelu_derivative(float x) {
  const float k2 = 1.5957691216057308f, c = 0.044715f;
  x = clamp_abs(x, 20.0f);
  float x2 = x * x, t = k2 * (x + c * x2 * x);
  float e = expf(-fabsf(t)), r = 1.0f / (1.0f + e);
  float s = t >= 0.0f ? r : e * r;
  return s + x * (e * r * r) * k2 * (1.0f + 3.0f * c * x2);
}

static float silu_derivative(float x) {
  x = clamp_abs(x, 88.0f);
  float e = expf(-fabsf(x)), r = 1.0f / (1.0f + e);
  float s = x >= 0.0f ? r : e * r;
  return s + x * (e * r * r);
}

/* pointwise_grad.frag: an unknown code gives NaN, as the shader does. */
void rlx_glref_pointwise_grad(const rlx_glref_args *a) {
  const int32_t op = rlx_gl_define_value(a->pass, "OP", 0);
  for (size_t i = 0; i < a->out_n; i++)
    a->out[i] = op == RLX_SUBOP_GELU_GRAD   ? a->in[1][i] * gelu_derivative(a->in[0][i])
                : op == RLX_SUBOP_SILU_GRAD ? a->in[1][i] * silu_derivative(a->in[0][i])
                                            : NAN;
}
