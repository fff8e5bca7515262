/* ref_elementwise.c - naive double-precision references for the broadcasting
 * binary ops, comparisons, where and the unary ops, written from the
 * definitions in include/rlx.h.  The op is c->p[0] (an rlx_op); input shapes
 * come from the filled inputs and the output shape is their numpy
 * broadcast, computed here independently of the library.
 *
 * The unary ops have one table here (unary_refs): per op its reference,
 * the range of its generated op cases and how its gradient check fills x.
 * cases_elementwise.c and grad_cases.c generate those cases for every
 * unary row of include/rlx_ops.def, so a new unary op needs a row here and
 * no other test edit; an op without a row fails its cases (no graph is
 * built). */
#include <math.h>

#include "grad_case.h"
#include "op_case.h"

void ref_ew_binary(const op_case *c, const op_inputs *in, double *expect);
void ref_ew_where(const op_case *c, const op_inputs *in, double *expect);
void ref_ew_unary(const op_case *c, const op_inputs *in, double *expect);
int ref_unary_range(rlx_op op, int wide, float *lo, float *hi);
int ref_unary_grad_fill(rlx_op op);

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

static double neg(double x) { return -x; }
static double rsqrt(double x) { return 1.0 / sqrt(x); }
static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double relu(double x) { return x < 0.0 ? 0.0 : x; } /* NaN passes through */
static double gelu(double x) { /* the tanh approximation */
  const double pi = 3.14159265358979323846;
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / pi) * (x + 0.044715 * x * x * x)));
}
static double silu(double x) { return x / (1.0 + exp(-x)); }

/* One row per unary op: its reference; [lo, hi), the range of its case
 * <name>_7x33 (inside the domain: log, sqrt and rsqrt positive); [wide_lo,
 * wide_hi), the range after the corner values of <name>_ieee_specials
 * (cases_elementwise.c); grad_fill, how its gradient check fills x
 * (grad_case.h: in the domain, or away from a kink at 0). */
static const struct {
  rlx_op op;
  double (*f)(double x);
  float lo, hi, wide_lo, wide_hi;
  int grad_fill;
} unary_refs[] = {
    {RLX_OP_NEG, neg, -1.0f, 1.0f, -1.0f, 1.0f, FILL_UNIFORM},
    {RLX_OP_ABS, fabs, -1.0f, 1.0f, -1.0f, 1.0f, FILL_AWAY},
    {RLX_OP_EXP, exp, -5.0f, 5.0f, -90.0f, 90.0f, FILL_UNIFORM},
    {RLX_OP_LOG, log, 0.01f, 10.0f, 0.0f, 100.0f, FILL_POSITIVE},
    {RLX_OP_SQRT, sqrt, 0.0f, 10.0f, 0.0f, 100.0f, FILL_POSITIVE},
    {RLX_OP_RSQRT, rsqrt, 0.01f, 10.0f, 0.0f, 100.0f, FILL_POSITIVE},
    {RLX_OP_TANH, tanh, -4.0f, 4.0f, -3.0f, 3.0f, FILL_UNIFORM},
    {RLX_OP_SIGMOID, sigmoid, -8.0f, 8.0f, -20.0f, 20.0f, FILL_UNIFORM},
    {RLX_OP_RELU, relu, -1.0f, 1.0f, -1.0f, 1.0f, FILL_AWAY},
    {RLX_OP_GELU, gelu, -5.0f, 5.0f, -10.0f, 10.0f, FILL_UNIFORM},
    {RLX_OP_SILU, silu, -8.0f, 8.0f, -20.0f, 20.0f, FILL_UNIFORM},
};
#define N_UNARY_REFS ((int)(sizeof unary_refs / sizeof unary_refs[0]))

static int unary_row(rlx_op op) {
  for (int i = 0; i < N_UNARY_REFS; i++)
    if (unary_refs[i].op == op) return i;
  return -1;
}

/* The case range of op ([wide_lo, wide_hi) when wide): 0 without a row. */
int ref_unary_range(rlx_op op, int wide, float *lo, float *hi) {
  int i = unary_row(op);
  if (i < 0) return 0;
  *lo = wide ? unary_refs[i].wide_lo : unary_refs[i].lo;
  *hi = wide ? unary_refs[i].wide_hi : unary_refs[i].hi;
  return 1;
}

/* The FILL_* kind of op's gradient check; -1 without a row. */
int ref_unary_grad_fill(rlx_op op) {
  int i = unary_row(op);
  return i < 0 ? -1 : unary_refs[i].grad_fill;
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
  int row = unary_row((rlx_op)c->p[0]);
  for (size_t i = 0; i < n; i++) expect[i] = row < 0 ? NAN : (float)unary_refs[row].f(in->data[0][i]);
}
