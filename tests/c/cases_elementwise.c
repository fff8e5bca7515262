/* cases_elementwise.c - op cases for the broadcasting binary ops, the
 * comparisons, where and the unary ops.  Every op runs on equal shapes with
 * odd sizes (7x33, not multiples of the SIMD width); the binary ops also on
 * rank-0 scalars on either side, a bias row ([N, D] + [D]), a column
 * ([N, D] + [N, 1]), both sides broadcasting ([3,1,5] + [4,1] -> [3,4,5]),
 * size-1 dims and rank 4.  Domain-restricted ops get fill ranges inside their
 * domain; comparisons draw small integers so that ties occur.
 *
 * The cases of the unary and binary rows of include/rlx_ops.def come from
 * their rows in the test table of ref_elementwise.c: a unary op gets
 * <name>_7x33 and <name>_ieee_specials; a binary op <name>_<shape> for
 * each shape of its row (the list below) and its IEEE corner cases,
 * built on first use into the group rlx_cases_binary (the harness's first).
 * The other cases are written out.
 *
 * p[0] is the rlx_op; p[1..] hold up to three shapes of 5 ints each:
 * {rank, d0, d1, d2, d3} (see the S0..S4 macros). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../src/core/subops.h" /* RLX_SUBOP_ROW: the unary rows of the op table */
#include "ref_elementwise.h"

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
  rlx_node in[2] = {shaped_input(g, c, 1, "a"), shaped_input(g, c, 6, "b")};
  return rlx_op_node(g, (rlx_op)c->p[0], in, 2, NULL, 0, NULL, 0);
}

/* A generated binary case: no graph (the case fails) when the op has no
 * row in ref_elementwise.c. */
static rlx_node build_binary_listed(rlx_graph *g, const op_case *c) {
  if (ref_binary_row((rlx_op)c->p[0])) return build_binary(g, c);
  fprintf(stderr, "%s: the op has no row in tests/c/ref_elementwise.c\n", c->name);
  return RLX_NO_NODE;
}

/* The fill of the op's row in ref_elementwise.c (uniform in [-1, 1) when
 * it has none). */
static void fill_binary_row(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  const ref_binary *row = ref_binary_row((rlx_op)c->p[0]);
  if (row && row->fill) {
    row->fill(c, k, data, n, seed);
    return;
  }
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -1.0f, 1.0f);
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

/* A written-out binary case with the fill of the op's row. */
#define BIN_ROW(name, op, A, B) \
  {name, build_binary, ref_ew_binary, fill_binary_row, {RLX_OP_##op, A, B}, 0.0f, 0.0f, 0.0}
#define BIN_FILL(name, op, A, B, fill) {name, build_binary, ref_ew_binary, fill, {RLX_OP_##op, A, B}, 0.0f, 0.0f, 0.0}
#define WHERE(name, C, A, B, fill) {name, build_where, ref_ew_where, fill, {0, C, A, B}, 0.0f, 0.0f, 0.0}
#define UN(name, op, X, lo, hi) {name, build_unary, ref_ew_unary, NULL, {RLX_OP_##op, X}, lo, hi, 0.0}
/* Every unary row of the op table: 7x33 in its range, then its IEEE
 * corner cases (the reference applies the same rules in double). */
#define UN_TABLE_UNARY(ID, name)                                                                            \
  {#name "_7x33", build_unary_listed, ref_ew_unary, fill_unary_range, {RLX_OP_##ID, S2(7, 33)}, 0.0f, 0.0f, 0.0}, \
  {#name "_ieee_specials", build_unary_listed, ref_ew_unary, fill_unary_specials, {RLX_OP_##ID, 1, 27}, 0.0f, 0.0f, 0.0},
#define UN_TABLE_BINARY(ID, name)
#define UN_TABLE_POINTWISE_GRAD(ID, name)
#define UN_TABLE_NONE(ID, name)

/* The binary case shapes, bit k of a row's shapes being entry k (the
 * BIN_* order of ref_elementwise.h): suffix, shape of a, shape of b. */
static const struct {
  const char *suffix;
  int32_t a[5], b[5];
} bin_shapes[BIN_N_SHAPES] = {
    {"same_7x33", {S2(7, 33)}, {S2(7, 33)}},
    {"scalar_right", {S2(5, 7)}, {S0}},
    {"scalar_left", {S0}, {S1(33)}},
    {"row_bias", {S2(9, 33)}, {S1(33)}},
    {"row_left", {S1(7)}, {S3(3, 5, 7)}},
    {"column", {S2(7, 5)}, {S2(7, 1)}},
    {"both_sides", {S3(3, 1, 5)}, {S2(4, 1)}},
    {"size1_both_sides", {S3(2, 1, 9)}, {S3(1, 3, 1)}},
    {"rank4_mixed", {S4(2, 3, 1, 5)}, {S3(3, 4, 1)}},
    {"both_scalars", {S0}, {S0}},
    {"scalar_and_size1", {S0}, {S3(1, 1, 1)}},
    {"size1_dims", {S3(1, 7, 1)}, {S1(1)}},
    {"rank4_middle", {S4(2, 1, 4, 1)}, {S4(1, 3, 1, 5)}},
    {"same_odd_1d", {S1(1031)}, {S1(1031)}},
    {"same_1x1", {S2(1, 1)}, {S2(1, 1)}},
};

/* The generated binary cases: per op, <name>_<suffix> for each shape of its
 * row with the row's fill (NULL: the harness's uniform [-1, 1)), then
 * <name>_<specials> on 19 corner-case pairs; an op without a row gets
 * <name>_same_7x33 alone, which fails. */
static op_case binary_cases[REF_N_BINARY_OPS * (BIN_N_SHAPES + 1)];
static char binary_names[REF_N_BINARY_OPS * (BIN_N_SHAPES + 1)][48];
static int n_binary_cases = -1;

static void add_binary_case(const char *op_name, const char *suffix, rlx_op op, const int32_t *a,
                            const int32_t *b, ref_fill fill) {
  op_case *c = &binary_cases[n_binary_cases];
  char *name = binary_names[n_binary_cases++];
  snprintf(name, sizeof binary_names[0], "%s_%s", op_name, suffix);
  *c = (op_case){name, build_binary_listed, ref_ew_binary, fill, {op}, 0.0f, 0.0f, 0.0};
  memcpy(&c->p[1], a, 5 * sizeof *a);
  memcpy(&c->p[6], b, 5 * sizeof *b);
}

const op_case *rlx_cases_binary(int *n) {
  static const int32_t specials[5] = {S1(19)};
  if (n_binary_cases < 0) {
    n_binary_cases = 0;
    for (int i = 0; i < REF_N_BINARY_OPS; i++) {
      const ref_op_row *op = &ref_binary_ops[i];
      const ref_binary *row = ref_binary_row(op->op);
      unsigned shapes = row ? row->shapes : BIN_SAME_7X33;
      for (int k = 0; k < BIN_N_SHAPES; k++)
        if (shapes & (1u << k))
          add_binary_case(op->name, bin_shapes[k].suffix, op->op, bin_shapes[k].a, bin_shapes[k].b,
                          row ? row->fill : NULL);
      if (row && row->specials)
        add_binary_case(op->name, row->specials, op->op, specials, specials, fill_binary_specials);
    }
  }
  *n = n_binary_cases;
  return binary_cases;
}

const op_case rlx_cases_elementwise[] = {
    /* pow beyond its generated cases: named scalar and row cases, signed
     * bases with integer exponents */
    BIN_ROW("pow_scalar_exponent", POW, S2(5, 7), S0),
    BIN_ROW("pow_scalar_base", POW, S0, S1(33)),
    BIN_ROW("pow_row", POW, S2(9, 33), S1(33)),
    BIN_FILL("pow_negative_base_int_exp", POW, S2(7, 33), S2(7, 33), fill_pow_int_exp),
    BIN_FILL("pow_negative_base_int_row", POW, S2(6, 9), S1(9), fill_pow_int_exp),
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
};
const int rlx_n_cases_elementwise = sizeof(rlx_cases_elementwise) / sizeof(rlx_cases_elementwise[0]);
