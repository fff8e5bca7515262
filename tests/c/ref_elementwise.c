/* ref_elementwise.c - naive double-precision references for the broadcasting
 * binary ops, comparisons, where and the unary ops, written from the
 * definitions in include/rlx.h.  The op is c->p[0] (an rlx_op); input shapes
 * come from the filled inputs and the output shape is their numpy
 * broadcast, computed here independently of the library. */
#include <math.h>

#include "op_case.h"

void ref_ew_binary(const op_case *c, const op_inputs *in, double *expect);
void ref_ew_where(const op_case *c, const op_inputs *in, double *expect);
void ref_ew_unary(const op_case *c, const op_inputs *in, double *expect);

/* Broadcast shape of inputs 0..n-1 -> rank, dims. */
static int32_t broadcast_shape(const op_inputs *in, int32_t n, int32_t *dims) {
  int32_t rank = 0;
  for (int32_t k = 0; k < n; k++)
    if (in->rank[k] > rank) rank = in->rank[k];
  for (int32_t i = 0; i < rank; i++) {
    dims[i] = 1;
    for (int32_t k = 0; k < n; k++) {
      int32_t j = i - (rank - in->rank[k]);
      if (j >= 0 && in->dims[k][j] != 1) dims[i] = in->dims[k][j];
    }
  }
  return rank;
}

static double binary_op(rlx_op op, double x, double y) {
  switch (op) {
    case RLX_OP_ADD: return x + y;
    case RLX_OP_SUB: return x - y;
    case RLX_OP_MUL: return x * y;
    case RLX_OP_DIV: return x / y;
    case RLX_OP_MAX: return (isnan(x) || isnan(y)) ? NAN : (x > y ? x : y);
    case RLX_OP_MIN: return (isnan(x) || isnan(y)) ? NAN : (x < y ? x : y);
    case RLX_OP_POW: return pow(x, y);
    case RLX_OP_EQ: return x == y;
    case RLX_OP_NE: return x != y;
    case RLX_OP_LT: return x < y;
    case RLX_OP_LE: return x <= y;
    case RLX_OP_GT: return x > y;
    case RLX_OP_GE: return x >= y;
    default: return NAN;
  }
}

static double unary_op(rlx_op op, double x) {
  switch (op) {
    case RLX_OP_NEG: return -x;
    case RLX_OP_ABS: return fabs(x);
    case RLX_OP_EXP: return exp(x);
    case RLX_OP_LOG: return log(x);
    case RLX_OP_SQRT: return sqrt(x);
    case RLX_OP_RSQRT: return 1.0 / sqrt(x);
    case RLX_OP_TANH: return tanh(x);
    case RLX_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case RLX_OP_RELU: return x < 0.0 ? 0.0 : x; /* NaN passes through */
    case RLX_OP_GELU: {
      const double pi = 3.14159265358979323846;
      return 0.5 * x * (1.0 + tanh(sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
    }
    case RLX_OP_SILU: return x / (1.0 + exp(-x));
    default: return NAN;
  }
}

/* p[0] = op; out[i] = op(a[i'], b[i'']) with broadcast indices. */
void ref_ew_binary(const op_case *c, const op_inputs *in, double *expect) {
  int32_t dims[RLX_MAX_RANK], idx[RLX_MAX_RANK];
  int32_t rank = broadcast_shape(in, 2, dims);
  size_t n = ref_numel(rank, dims);
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, dims, idx);
    double x = in->data[0][ref_broadcast_index(idx, rank, in->rank[0], in->dims[0])];
    double y = in->data[1][ref_broadcast_index(idx, rank, in->rank[1], in->dims[1])];
    expect[f] = (float)binary_op((rlx_op)c->p[0], x, y); /* overflow -> inf as in float */
  }
}

/* where(cond, a, b): a where cond != 0, else b; all three broadcast. */
void ref_ew_where(const op_case *c, const op_inputs *in, double *expect) {
  (void)c;
  int32_t dims[RLX_MAX_RANK], idx[RLX_MAX_RANK];
  int32_t rank = broadcast_shape(in, 3, dims);
  size_t n = ref_numel(rank, dims);
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, dims, idx);
    double cond = in->data[0][ref_broadcast_index(idx, rank, in->rank[0], in->dims[0])];
    int k = cond != 0.0 ? 1 : 2;
    expect[f] = in->data[k][ref_broadcast_index(idx, rank, in->rank[k], in->dims[k])];
  }
}

/* p[0] = op; out[i] = op(x[i]), rounded to float (so that a result beyond
 * FLT_MAX is the inf that a float computation must give). */
void ref_ew_unary(const op_case *c, const op_inputs *in, double *expect) {
  size_t n = ref_numel(in->rank[0], in->dims[0]);
  for (size_t i = 0; i < n; i++) expect[i] = (float)unary_op((rlx_op)c->p[0], in->data[0][i]);
}
