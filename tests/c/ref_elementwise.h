/* ref_elementwise.h - the elementwise ops' test table (ref_elementwise.c):
 * one row per unary and per binary op of include/rlx_ops.def, from which
 * cases_elementwise.c generates the op's cases and grad_cases.c its
 * gradient checks.  A new unary or binary op adds its row there and edits
 * no other test file; an op without a row fails its generated cases with a
 * message naming the missing row. */
#ifndef RLX_REF_ELEMENTWISE_H
#define RLX_REF_ELEMENTWISE_H

#include "../../src/core/subops.h" /* RLX_SUBOP_ROW: the binary rows of the op table */
#include "op_case.h"

/* ---- unary ops ----------------------------------------------------------- */

/* The range of the unary op's cases ([wide_lo, wide_hi) after the corner
 * values of <name>_ieee_specials when wide); 0 without a row. */
int ref_unary_range(rlx_op op, int wide, float *lo, float *hi);
/* The FILL_* kind (grad_case.h) of its gradient check's x; -1 without a row. */
int ref_unary_grad_fill(rlx_op op);

/* ---- binary ops ---------------------------------------------------------- */

/* The operand shapes of a binary op's generated cases <name>_<suffix>, one
 * bit each, in the order of the shape list in cases_elementwise.c. */
enum {
  BIN_SAME_7X33 = 1u << 0,          /* [7,33] . [7,33] */
  BIN_SCALAR_RIGHT = 1u << 1,       /* [5,7] . [] */
  BIN_SCALAR_LEFT = 1u << 2,        /* [] . [33] */
  BIN_ROW_BIAS = 1u << 3,           /* [9,33] . [33] */
  BIN_ROW_LEFT = 1u << 4,           /* [7] . [3,5,7] */
  BIN_COLUMN = 1u << 5,             /* [7,5] . [7,1] */
  BIN_BOTH_SIDES = 1u << 6,         /* [3,1,5] . [4,1] */
  BIN_SIZE1_BOTH_SIDES = 1u << 7,   /* [2,1,9] . [1,3,1] */
  BIN_RANK4_MIXED = 1u << 8,        /* [2,3,1,5] . [3,4,1] */
  BIN_BOTH_SCALARS = 1u << 9,       /* [] . [] */
  BIN_SCALAR_AND_SIZE1 = 1u << 10,  /* [] . [1,1,1] */
  BIN_SIZE1_DIMS = 1u << 11,        /* [1,7,1] . [1] */
  BIN_RANK4_MIDDLE = 1u << 12,      /* [2,1,4,1] . [1,3,1,5] */
  BIN_SAME_ODD_1D = 1u << 13,       /* [1031] . [1031] */
  BIN_SAME_1X1 = 1u << 14,          /* [1,1] . [1,1] */
};
#define BIN_N_SHAPES 15
/* The usual set: equal shapes, a scalar either side, a bias row, a row on
 * the left, a column, both sides broadcasting. */
#define BIN_STANDARD \
  (BIN_SAME_7X33 | BIN_SCALAR_RIGHT | BIN_SCALAR_LEFT | BIN_ROW_BIAS | BIN_ROW_LEFT | BIN_COLUMN | BIN_BOTH_SIDES)

/* The layouts of a binary op's gradient checks grad_<ID>_<k>, bit k
 * (grad_cases.c); NO_GRAD for an op without a gradient. */
enum {
  NO_GRAD = 0,
  GRAD_SAME = 1u << 0,   /* k = 0: [3,4] x [3,4] */
  GRAD_ROW = 1u << 1,    /* k = 1: [3,4] x [4] */
  GRAD_BOTH = 1u << 2,   /* k = 2: [2,1,3] x [4,1] */
  GRAD_SCALAR = 1u << 3, /* k = 3: [] x [5] */
};
#define GRAD_N_LAYOUTS 4

typedef void (*ref_fill)(const op_case *c, int32_t k, float *data, size_t n, unsigned seed);

/* A binary op's row: its double-precision reference; the shapes of its
 * cases; how their inputs are filled (NULL: uniform in [-1, 1)); the
 * suffix of its IEEE corner-case case (NULL: none); whether it has a
 * gradient (the layouts of its checks, or NO_GRAD) and how those fill x
 * and y (FILL_* of grad_case.h). */
typedef struct {
  rlx_op op;
  double (*f)(double x, double y);
  unsigned shapes;
  ref_fill fill;
  const char *specials;
  unsigned grad;
  int grad_fill_x, grad_fill_y;
} ref_binary;

/* The row of op; NULL without one. */
const ref_binary *ref_binary_row(rlx_op op);

/* The binary rows of include/rlx_ops.def, in file order (with a row in the
 * table above or not): the op, its ID and its name; REF_N_BINARY_OPS. */
typedef struct {
  rlx_op op;
  const char *id, *name;
} ref_op_row;
extern const ref_op_row ref_binary_ops[];
#define REF_COUNT_BINARY(ID, name) +1
#define REF_COUNT_UNARY(ID, name)
#define REF_COUNT_POINTWISE_GRAD(ID, name)
#define REF_COUNT_NONE(ID, name)
enum {
  REF_N_BINARY_OPS = 0
#define RLX_OP(ID, name, lo, hi, rule, attrs) RLX_SUBOP_ROW(rule, REF_COUNT, ID, name)
#include "rlx_ops.def"
#undef RLX_OP
};

/* ---- references (op_case.ref) -------------------------------------------- */
void ref_ew_binary(const op_case *c, const op_inputs *in, double *expect);
void ref_ew_where(const op_case *c, const op_inputs *in, double *expect);
void ref_ew_unary(const op_case *c, const op_inputs *in, double *expect);

#endif
