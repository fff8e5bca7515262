/* ref_elementwise.c - naive double-precision references for the broadcasting
 * binary ops, comparisons, where and the unary ops, written from the
 * definitions in include/rlx.h.  The op is c->p[0] (an rlx_op); input shapes
 * come from the filled inputs and the output shape is their numpy
 * broadcast, computed here independently of the library.
 *
 * The unary and the binary ops each have one table here (unary_refs,
 * binary_refs; ref_elementwise.h): per op its reference, what its
 * generated op cases are and how they are filled, and its gradient
 * check.  cases_elementwise.c and grad_cases.c generate those cases for
 * every unary and binary row of include/rlx_ops.def, so a new such op
 * needs a row here and no other test edit; an op without a row fails its
 * cases (no graph is built). */
#include <math.h>

#include "grad_case.h"
#include "ref_elementwise.h"

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

static double add(double x, double y) { return x + y; }
static double sub(double x, double y) { return x - y; }
static double mul(double x, double y) { return x * y; }
static double div_(double x, double y) { return x / y; }
static double max_(double x, double y) { return (isnan(x) || isnan(y)) ? NAN : (x > y ? x : y); }
static double min_(double x, double y) { return (isnan(x) || isnan(y)) ? NAN : (x < y ? x : y); }
static double eq(double x, double y) { return x == y; }
static double ne(double x, double y) { return x != y; }
static double lt(double x, double y) { return x < y; }
static double le(double x, double y) { return x <= y; }
static double gt(double x, double y) { return x > y; }
static double ge(double x, double y) { return x >= y; }

/* Integers in {-2, ..., 2}: comparisons see ties as well as both orders. */
static void fill_small_ints(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c, (void)k;
  for (size_t i = 0; i < n; i++) data[i] = (float)((int)opcase_uniform(seed, i, 0.0f, 5.0f) - 2);
}

/* Divisors: magnitude in [0.5, 2) with either sign (no division by ~0). */
static void fill_divisor(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    float v = opcase_uniform(seed, i, -1.0f, 1.0f);
    data[i] = k == 0 ? v : (v < 0.0f ? -0.5f : 0.5f) + 1.5f * v;
  }
  (void)c;
}

/* pow: positive base in [0.1, 3), any exponent in [-3, 3). */
static void fill_pow(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c;
  for (size_t i = 0; i < n; i++)
    data[i] = k == 0 ? opcase_uniform(seed, i, 0.1f, 3.0f) : opcase_uniform(seed, i, -3.0f, 3.0f);
}

/* One row per binary op (ref_elementwise.h): reference; the shapes of its
 * cases <name>_<shape> (BIN_*); their fill, inside the domain (divisors
 * away from 0, positive bases) or with ties (comparisons); the suffix of
 * <name>_<specials> (fill_binary_specials in cases_elementwise.c); the
 * layouts of its gradient checks grad_<ID>_<k> (NO_GRAD: comparisons) and
 * how they fill x and y (max, min: apart, away from ties; div's divisor and
 * pow's base positive). */
#define U FILL_UNIFORM
static const ref_binary binary_refs[] = {
    {RLX_OP_ADD, add,
     BIN_STANDARD | BIN_SIZE1_BOTH_SIDES | BIN_RANK4_MIXED | BIN_BOTH_SCALARS | BIN_SCALAR_AND_SIZE1 | BIN_SIZE1_DIMS |
         BIN_RANK4_MIDDLE | BIN_SAME_ODD_1D | BIN_SAME_1X1,
     NULL, "ieee_specials", GRAD_SAME | GRAD_ROW | GRAD_BOTH | GRAD_SCALAR, U, U},
    {RLX_OP_SUB, sub, BIN_STANDARD, NULL, "ieee_specials", GRAD_ROW | GRAD_BOTH, U, U},
    {RLX_OP_MUL, mul, BIN_STANDARD | BIN_RANK4_MIXED, NULL, "ieee_specials", GRAD_SAME | GRAD_BOTH | GRAD_SCALAR, U, U},
    {RLX_OP_DIV, div_, BIN_STANDARD & ~BIN_ROW_LEFT, fill_divisor, "ieee_specials", GRAD_SAME | GRAD_BOTH, U,
     FILL_POSITIVE},
    {RLX_OP_MAX, max_, BIN_STANDARD | BIN_SIZE1_BOTH_SIDES, NULL, "nan_propagates", GRAD_SAME | GRAD_ROW,
     FILL_DISTINCT, FILL_DISTINCT},
    {RLX_OP_MIN, min_, BIN_STANDARD, NULL, "nan_propagates", GRAD_SAME | GRAD_BOTH, FILL_DISTINCT, FILL_DISTINCT},
    {RLX_OP_POW, pow, BIN_SAME_7X33 | BIN_BOTH_SIDES, fill_pow, "ieee_specials", GRAD_SAME | GRAD_ROW, FILL_POSITIVE,
     U},
    {RLX_OP_EQ, eq, BIN_SAME_7X33 | BIN_SCALAR_RIGHT | BIN_BOTH_SIDES, fill_small_ints, "ieee_specials", NO_GRAD, U, U},
    {RLX_OP_NE, ne, BIN_SAME_7X33 | BIN_SCALAR_LEFT | BIN_ROW_BIAS, fill_small_ints, "ieee_specials", NO_GRAD, U, U},
    {RLX_OP_LT, lt, BIN_SAME_7X33 | BIN_SCALAR_RIGHT | BIN_BOTH_SIDES, fill_small_ints, "ieee_specials", NO_GRAD, U, U},
    {RLX_OP_LE, le, BIN_SAME_7X33 | BIN_SCALAR_LEFT | BIN_COLUMN, fill_small_ints, "ieee_specials", NO_GRAD, U, U},
    {RLX_OP_GT, gt, BIN_SAME_7X33 | BIN_ROW_BIAS | BIN_BOTH_SIDES, fill_small_ints, "ieee_specials", NO_GRAD, U, U},
    {RLX_OP_GE, ge, BIN_SAME_7X33 | BIN_SCALAR_RIGHT | BIN_SIZE1_BOTH_SIDES, fill_small_ints, "ieee_specials", NO_GRAD,
     U, U},
};
#undef U

const ref_binary *ref_binary_row(rlx_op op) {
  for (size_t i = 0; i < sizeof binary_refs / sizeof binary_refs[0]; i++)
    if (binary_refs[i].op == op) return &binary_refs[i];
  return NULL;
}

#define BIN_OP_BINARY(ID, name) {RLX_OP_##ID, #ID, #name},
#define BIN_OP_UNARY(ID, name)
#define BIN_OP_POINTWISE_GRAD(ID, name)
#define BIN_OP_NONE(ID, name)
const ref_op_row ref_binary_ops[REF_N_BINARY_OPS] = {
#define RLX_OP(ID, name, lo, hi, rule, attrs) RLX_SUBOP_ROW(rule, BIN_OP, ID, name)
#include "rlx_ops.def"
#undef RLX_OP
};

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
  const ref_binary *row = ref_binary_row((rlx_op)c->p[0]);
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, dims, idx);
    double x = in->data[0][ref_broadcast_index(idx, rank, in->rank[0], in->dims[0])];
    double y = in->data[1][ref_broadcast_index(idx, rank, in->rank[1], in->dims[1])];
    expect[f] = row ? (float)row->f(x, y) : NAN; /* overflow -> inf as in float */
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
