/* cases_elementwise.c - op cases for the broadcasting binary ops, the
 * comparisons, where and the unary ops.  Every op runs on equal shapes with
 * odd sizes (7x33, not multiples of the SIMD width); the binary ops also on
 * rank-0 scalars on either side, a bias row ([N, D] + [D]), a column
 * ([N, D] + [N, 1]), both sides broadcasting ([3,1,5] + [4,1] -> [3,4,5]),
 * size-1 dims and rank 4.  Domain-restricted ops get fill ranges inside their
 * domain; comparisons draw small integers so that ties occur.  Every unary
 * row of include/rlx_ops.def gets <name>_7x33 and <name>_ieee_specials
 * from the op table, with the ranges of its row in ref_elementwise.c; the
 * other unary cases are written out.
 *
 * p[0] is the rlx_op; p[1..] hold up to three shapes of 5 ints each:
 * {rank, d0, d1, d2, d3} (see the S0..S4 macros). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../src/core/subops.h" /* RLX_SUBOP_ROW: the unary rows of the op table */
#include "op_case.h"

void ref_ew_binary(const op_case *c, const op_inputs *in, double *expect);
void ref_ew_where(const op_case *c, const op_inputs *in, double *expect);
void ref_ew_unary(const op_case *c, const op_inputs *in, double *expect);
int ref_unary_range(rlx_op op, int wide, float *lo, float *hi);

#define S0 0, 0, 0, 0, 0
#define S1(a) 1, a, 0, 0, 0
#define S2(a, b) 2, a, b, 0, 0
#define S3(a, b, c) 3, a, b, c, 0
#define S4(a, b, c, d) 4, a, b, c, d

/* Input `name` with the shape stored at p[at .. at+4]. */
static rlx_node shaped_input(rlx_graph *g, const op_case *c, int at, const char *name) {
  return rlx_input(g, name, c->p[at], &c->p[at + 1], RLX_F32);
}

static rlx_node build_binary(rlx_graph *g, const op_case *c) {
  rlx_node a = shaped_input(g, c, 1, "a"), b = shaped_input(g, c, 6, "b");
  switch ((rlx_op)c->p[0]) {
    case RLX_OP_ADD: return rlx_add(g, a, b);
    case RLX_OP_SUB: return rlx_sub(g, a, b);
    case RLX_OP_MUL: return rlx_mul(g, a, b);
    case RLX_OP_DIV: return rlx_div(g, a, b);
    case RLX_OP_MAX: return rlx_max(g, a, b);
    case RLX_OP_MIN: return rlx_min(g, a, b);
    case RLX_OP_POW: return rlx_pow(g, a, b);
    case RLX_OP_EQ: return rlx_eq(g, a, b);
    case RLX_OP_NE: return rlx_ne(g, a, b);
    case RLX_OP_LT: return rlx_lt(g, a, b);
    case RLX_OP_LE: return rlx_le(g, a, b);
    case RLX_OP_GT: return rlx_gt(g, a, b);
    case RLX_OP_GE: return rlx_ge(g, a, b);
    default: return RLX_NO_NODE;
  }
}

static rlx_node build_where(rlx_graph *g, const op_case *c) {
  rlx_node cond = shaped_input(g, c, 1, "cond");
  rlx_node a = shaped_input(g, c, 6, "a"), b = shaped_input(g, c, 11, "b");
  return rlx_where(g, cond, a, b);
}

static rlx_node build_unary(rlx_graph *g, const op_case *c) {
  rlx_node x = shaped_input(g, c, 1, "x");
  return rlx_op_node(g, (rlx_op)c->p[0], &x, 1, NULL, 0, NULL, 0);
}

/* A generated unary case: no graph (the case fails) when the op has no row
 * in ref_elementwise.c. */
static rlx_node build_unary_listed(rlx_graph *g, const op_case *c) {
  float lo, hi;
  if (ref_unary_range((rlx_op)c->p[0], 0, &lo, &hi)) return build_unary(g, c);
  fprintf(stderr, "%s: the op has no row in tests/c/ref_elementwise.c\n", c->name);
  return RLX_NO_NODE;
}

/* Uniform in the op's range from ref_elementwise.c. */
static void fill_unary_range(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  float lo = 0.0f, hi = 0.0f;
  ref_unary_range((rlx_op)c->p[0], 0, &lo, &hi);
  (void)k;
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, lo, hi);
}

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

/* pow: base of either sign with |base| in [0.25, 2), integer exponent in
 * {-3, ..., 3} (powf is defined for negative bases with integer exponents). */
static void fill_pow_int_exp(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c;
  for (size_t i = 0; i < n; i++) {
    if (k == 0) {
      float v = opcase_uniform(seed, i, -1.0f, 1.0f);
      data[i] = (v < 0.0f ? -0.25f : 0.25f) + 1.75f * v;
    } else {
      data[i] = (float)((int)opcase_uniform(seed, i, 0.0f, 7.0f) - 3);
    }
  }
}

/* where: condition 0 or 1 (input 0), values uniform in [-1, 1). */
static void fill_where01(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c;
  for (size_t i = 0; i < n; i++)
    data[i] = k == 0 ? (opcase_uniform(seed, i, 0.0f, 1.0f) < 0.5f ? 0.0f : 1.0f)
                     : opcase_uniform(seed, i, -1.0f, 1.0f);
}

/* where: condition from {0, 1, -2.5, NaN}: any nonzero value (NaN too)
 * selects a. */
static void fill_where_nonzero(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  static const float conds[4] = {0.0f, 1.0f, -2.5f, NAN};
  (void)c;
  for (size_t i = 0; i < n; i++)
    data[i] = k == 0 ? conds[(int)opcase_uniform(seed, i, 0.0f, 4.0f) & 3]
                     : opcase_uniform(seed, i, -1.0f, 1.0f);
}

/* IEEE corner cases, pairwise (x[i], y[i]) for the first 16 elements, then
 * uniform values: division by +-0, 0/0, infinities, NaN on either side,
 * signed zeros, and pow's special cases (negative base with a non-integer
 * exponent, 0 to a negative power, 1 to NaN, ...). */
static void fill_binary_specials(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  static const float xs[16] = {1.0f, -1.0f, 0.0f, 1.0f, INFINITY, -INFINITY, NAN, 1.0f,
                               NAN, 0.0f, -8.0f, 2.0f, -0.0f, INFINITY, 1.0f, -2.0f};
  static const float ys[16] = {0.0f, 0.0f, 0.0f, -0.0f, INFINITY, 2.0f, 1.0f, NAN,
                               NAN, -1.0f, 1.0f / 3.0f, 0.5f, -0.0f, 0.0f, INFINITY, -INFINITY};
  (void)c;
  for (size_t i = 0; i < n; i++)
    data[i] = i < 16 ? (k == 0 ? xs[i] : ys[i]) : opcase_uniform(seed, i, -2.0f, 2.0f);
}

/* Unary corner cases first (signed zeros, infinities, NaN, the overflow and
 * underflow edges of exp, huge and tiny magnitudes), then uniform values in
 * the op's wide range from ref_elementwise.c. */
static void fill_unary_specials(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  static const float sp[20] = {0.0f,   -0.0f,  INFINITY, -INFINITY, NAN,     88.7f,   88.73f,
                               89.0f,  100.0f, -87.0f,   -100.0f,   -103.9f, -104.5f, -200.0f,
                               1e-30f, -1e-30f, 1e-5f,   0.6f,      -0.65f,  1e30f};
  float lo = 0.0f, hi = 0.0f;
  ref_unary_range((rlx_op)c->p[0], 1, &lo, &hi);
  (void)k;
  for (size_t i = 0; i < n; i++) data[i] = i < 20 ? sp[i] : opcase_uniform(seed, i, lo, hi);
}

#define BIN(name, op, A, B) {name, build_binary, ref_ew_binary, NULL, {RLX_OP_##op, A, B}, 0.0f, 0.0f, 0.0}
#define BIN_FILL(name, op, A, B, fill) {name, build_binary, ref_ew_binary, fill, {RLX_OP_##op, A, B}, 0.0f, 0.0f, 0.0}
/* (not written through BIN_FILL: A and B would be expanded into commas first) */
#define CMP(name, op, A, B) {name, build_binary, ref_ew_binary, fill_small_ints, {RLX_OP_##op, A, B}, 0.0f, 0.0f, 0.0}
#define WHERE(name, C, A, B, fill) {name, build_where, ref_ew_where, fill, {0, C, A, B}, 0.0f, 0.0f, 0.0}
#define BIN_SPECIAL(name, op) \
  {name, build_binary, ref_ew_binary, fill_binary_specials, {RLX_OP_##op, 1, 19, 0, 0, 0, 1, 19}, 0.0f, 0.0f, 0.0}
#define UN(name, op, X, lo, hi) {name, build_unary, ref_ew_unary, NULL, {RLX_OP_##op, X}, lo, hi, 0.0}
/* Every unary row of the op table: 7x33 in its range, then its IEEE
 * corner cases (the reference applies the same rules in double). */
#define UN_TABLE_UNARY(ID, name)                                                                            \
  {#name "_7x33", build_unary_listed, ref_ew_unary, fill_unary_range, {RLX_OP_##ID, S2(7, 33)}, 0.0f, 0.0f, 0.0}, \
  {#name "_ieee_specials", build_unary_listed, ref_ew_unary, fill_unary_specials, {RLX_OP_##ID, 1, 27}, 0.0f, 0.0f, 0.0},
#define UN_TABLE_BINARY(ID, name)
#define UN_TABLE_POINTWISE_GRAD(ID, name)
#define UN_TABLE_NONE(ID, name)

/* The same op over the standard broadcasting patterns. */
#define BIN_PATTERNS(op, lname)                                            \
  BIN(lname "_same_7x33", op, S2(7, 33), S2(7, 33)),                       \
  BIN(lname "_scalar_right", op, S2(5, 7), S0),                            \
  BIN(lname "_scalar_left", op, S0, S1(33)),                               \
  BIN(lname "_row_bias", op, S2(9, 33), S1(33)),                           \
  BIN(lname "_row_left", op, S1(7), S3(3, 5, 7)),                          \
  BIN(lname "_column", op, S2(7, 5), S2(7, 1)),                            \
  BIN(lname "_both_sides", op, S3(3, 1, 5), S2(4, 1))

const op_case rlx_cases_elementwise[] = {
    /* add: every broadcasting pattern, plus the rarer ones */
    BIN_PATTERNS(ADD, "add"),
    BIN("add_both_scalars", ADD, S0, S0),
    BIN("add_scalar_and_size1", ADD, S0, S3(1, 1, 1)),
    BIN("add_size1_dims", ADD, S3(1, 7, 1), S1(1)),
    BIN("add_size1_both_sides", ADD, S3(2, 1, 9), S3(1, 3, 1)),
    BIN("add_rank4_mixed", ADD, S4(2, 3, 1, 5), S3(3, 4, 1)),
    BIN("add_rank4_middle", ADD, S4(2, 1, 4, 1), S4(1, 3, 1, 5)),
    BIN("add_same_odd_1d", ADD, S1(1031), S1(1031)),
    BIN("add_same_1x1", ADD, S2(1, 1), S2(1, 1)),
    /* sub, mul, max, min: operand order matters for sub only, all patterns */
    BIN_PATTERNS(SUB, "sub"),
    BIN_PATTERNS(MUL, "mul"),
    BIN_PATTERNS(MAX, "max"),
    BIN_PATTERNS(MIN, "min"),
    BIN("mul_rank4_mixed", MUL, S4(2, 3, 1, 5), S3(3, 4, 1)),
    BIN("max_size1_both_sides", MAX, S3(2, 1, 9), S3(1, 3, 1)),
    /* div: divisors kept away from zero */
    BIN_FILL("div_same_7x33", DIV, S2(7, 33), S2(7, 33), fill_divisor),
    BIN_FILL("div_scalar_right", DIV, S2(5, 7), S0, fill_divisor),
    BIN_FILL("div_scalar_left", DIV, S0, S1(33), fill_divisor),
    BIN_FILL("div_row_bias", DIV, S2(9, 33), S1(33), fill_divisor),
    BIN_FILL("div_column", DIV, S2(7, 5), S2(7, 1), fill_divisor),
    BIN_FILL("div_both_sides", DIV, S3(3, 1, 5), S2(4, 1), fill_divisor),
    /* pow: positive bases with real exponents, signed bases with integers */
    BIN_FILL("pow_same_7x33", POW, S2(7, 33), S2(7, 33), fill_pow),
    BIN_FILL("pow_scalar_exponent", POW, S2(5, 7), S0, fill_pow),
    BIN_FILL("pow_scalar_base", POW, S0, S1(33), fill_pow),
    BIN_FILL("pow_row", POW, S2(9, 33), S1(33), fill_pow),
    BIN_FILL("pow_both_sides", POW, S3(3, 1, 5), S2(4, 1), fill_pow),
    BIN_FILL("pow_negative_base_int_exp", POW, S2(7, 33), S2(7, 33), fill_pow_int_exp),
    BIN_FILL("pow_negative_base_int_row", POW, S2(6, 9), S1(9), fill_pow_int_exp),
    /* comparisons on small integers (ties included) */
    CMP("eq_same_7x33", EQ, S2(7, 33), S2(7, 33)),
    CMP("eq_scalar_right", EQ, S2(5, 7), S0),
    CMP("eq_both_sides", EQ, S3(3, 1, 5), S2(4, 1)),
    CMP("ne_same_7x33", NE, S2(7, 33), S2(7, 33)),
    CMP("ne_scalar_left", NE, S0, S1(33)),
    CMP("ne_row_bias", NE, S2(9, 33), S1(33)),
    CMP("lt_same_7x33", LT, S2(7, 33), S2(7, 33)),
    CMP("lt_scalar_right", LT, S2(5, 7), S0),
    CMP("lt_both_sides", LT, S3(3, 1, 5), S2(4, 1)),
    CMP("le_same_7x33", LE, S2(7, 33), S2(7, 33)),
    CMP("le_scalar_left", LE, S0, S1(33)),
    CMP("le_column", LE, S2(7, 5), S2(7, 1)),
    CMP("gt_same_7x33", GT, S2(7, 33), S2(7, 33)),
    CMP("gt_row_bias", GT, S2(9, 33), S1(33)),
    CMP("gt_both_sides", GT, S3(3, 1, 5), S2(4, 1)),
    CMP("ge_same_7x33", GE, S2(7, 33), S2(7, 33)),
    CMP("ge_scalar_right", GE, S2(5, 7), S0),
    CMP("ge_size1_both_sides", GE, S3(2, 1, 9), S3(1, 3, 1)),
    /* where: 3-way broadcasting */
    WHERE("where_same_7x33", S2(7, 33), S2(7, 33), S2(7, 33), fill_where01),
    WHERE("where_three_way", S3(3, 1, 5), S2(4, 1), S0, fill_where01),
    WHERE("where_scalar_cond", S0, S2(5, 7), S1(7), fill_where01),
    WHERE("where_cond_column", S2(6, 1), S2(1, 9), S2(6, 9), fill_where01),
    WHERE("where_cond_row", S1(33), S2(7, 33), S2(7, 1), fill_where01),
    WHERE("where_rank4", S4(2, 1, 3, 1), S4(1, 4, 1, 5), S1(5), fill_where01),
    WHERE("where_all_scalars", S0, S0, S0, fill_where01),
    WHERE("where_nonzero_cond", S2(7, 33), S2(7, 33), S2(7, 33), fill_where_nonzero),
    /* unary: every op on 7x33 and on its IEEE corner cases */
#define RLX_OP(ID, name, lo, hi, rule, attrs) RLX_SUBOP_ROW(rule, UN_TABLE, ID, name)
#include "rlx_ops.def"
#undef RLX_OP
    /* unary: rank 0, size-1 dims, odd lengths */
    UN("neg_scalar", NEG, S0, -1.0f, 1.0f),
    UN("exp_scalar", EXP, S0, -1.0f, 1.0f),
    UN("log_size1_dims", LOG, S3(1, 5, 1), 0.5f, 2.0f),
    UN("sqrt_33", SQRT, S1(33), 0.01f, 4.0f),
    UN("relu_rank4", RELU, S4(2, 3, 1, 7), -1.0f, 1.0f),
    UN("gelu_scalar", GELU, S0, -2.0f, 2.0f),
    UN("silu_1031", SILU, S1(1031), -6.0f, 6.0f),
    UN("rsqrt_scalar", RSQRT, S0, 0.1f, 3.0f),
    /* large |x|: sigmoid/silu/tanh/gelu must stay finite and saturate */
    UN("sigmoid_large", SIGMOID, S2(5, 33), -100.0f, 100.0f),
    UN("silu_large", SILU, S2(5, 33), -100.0f, 100.0f),
    UN("tanh_large", TANH, S2(5, 33), -100.0f, 100.0f),
    UN("gelu_large", GELU, S2(5, 33), -100.0f, 100.0f),
    UN("exp_large_negative", EXP, S1(33), -100.0f, 0.0f),
    /* IEEE corner cases: the reference applies the same rules in double */
    BIN_SPECIAL("add_ieee_specials", ADD),
    BIN_SPECIAL("sub_ieee_specials", SUB),
    BIN_SPECIAL("mul_ieee_specials", MUL),
    BIN_SPECIAL("div_ieee_specials", DIV),
    BIN_SPECIAL("max_nan_propagates", MAX),
    BIN_SPECIAL("min_nan_propagates", MIN),
    BIN_SPECIAL("pow_ieee_specials", POW),
    BIN_SPECIAL("eq_ieee_specials", EQ),
    BIN_SPECIAL("ne_ieee_specials", NE),
    BIN_SPECIAL("lt_ieee_specials", LT),
    BIN_SPECIAL("le_ieee_specials", LE),
    BIN_SPECIAL("gt_ieee_specials", GT),
    BIN_SPECIAL("ge_ieee_specials", GE),
};
const int rlx_n_cases_elementwise = sizeof(rlx_cases_elementwise) / sizeof(rlx_cases_elementwise[0]);
