/* cases_layout.c - op cases for reshape, permute, narrow, concat, expand and
 * gather.  Sizes are odd on purpose (7, 33, 17: not multiples of the SIMD
 * width), size-1 dims and rank 0 appear, negative axes are used where the
 * API allows them, and permutes large enough to span several 16x16 tiles
 * reach the transposing path. */
#include <string.h>

#include "op_case.h"

void ref_layout_reshape(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_permute(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_narrow(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_concat(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_expand(const op_case *c, const op_inputs *in, double *expect);
void ref_layout_gather(const op_case *c, const op_inputs *in, double *expect);

/* Shapes in p[] are 5 ints: {rank, d0, d1, d2, d3}. */
#define S0 0, 0, 0, 0, 0
#define S1(a) 1, a, 0, 0, 0
#define S2(a, b) 2, a, b, 0, 0
#define S3(a, b, c) 3, a, b, c, 0
#define S4(a, b, c, d) 4, a, b, c, d

static rlx_node shaped_input(rlx_graph *g, const op_case *c, int at) {
  return rlx_input(g, "x", c->p[at], &c->p[at + 1], RLX_F32);
}

/* p = {x shape (5), target shape (5)} */
static rlx_node build_reshape(rlx_graph *g, const op_case *c) {
  return rlx_reshape(g, shaped_input(g, c, 0), c->p[5], &c->p[6]);
}

/* p = {x shape (5), perm[4]} */
static rlx_node build_permute(rlx_graph *g, const op_case *c) {
  return rlx_permute(g, shaped_input(g, c, 0), &c->p[5]);
}

/* p = {x shape (5), axis, start, length} */
static rlx_node build_narrow(rlx_graph *g, const op_case *c) {
  return rlx_narrow(g, shaped_input(g, c, 0), c->p[5], c->p[6], c->p[7]);
}

/* p = {n inputs, axis, rank, dims[4] (the concat axis entry is ignored),
 *      size along the axis of each input [8]} */
static rlx_node build_concat(rlx_graph *g, const op_case *c) {
  static const char *const names[8] = {"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7"};
  int32_t n = c->p[0], rank = c->p[2], axis = c->p[1] < 0 ? c->p[1] + rank : c->p[1];
  rlx_node xs[8];
  for (int32_t k = 0; k < n; k++) {
    int32_t dims[4];
    memcpy(dims, &c->p[3], sizeof dims);
    dims[axis] = c->p[7 + k];
    xs[k] = rlx_input(g, names[k], rank, dims, RLX_F32);
  }
  return rlx_concat(g, xs, n, c->p[1]);
}

/* p = {x shape (5), target shape (5)} */
static rlx_node build_expand(rlx_graph *g, const op_case *c) {
  return rlx_expand(g, shaped_input(g, c, 0), c->p[5], &c->p[6]);
}

/* p = {i32 ids, V, D, ids shape (5)} */
static rlx_node build_gather(rlx_graph *g, const op_case *c) {
  const int32_t table_dims[2] = {c->p[1], c->p[2]};
  rlx_node table = rlx_input(g, "table", 2, table_dims, RLX_F32);
  rlx_node ids = rlx_input(g, "ids", c->p[3], &c->p[4], c->p[0] ? RLX_I32 : RLX_F32);
  return rlx_gather(g, table, ids);
}

/* Table uniform in [-1, 1); ids uniform in [0, V) with the first id 0 and
 * the last V-1, as floats or as int32 bits for RLX_I32 ids. */
static void fill_gather(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  int32_t v = c->p[1];
  for (size_t i = 0; i < n; i++) {
    if (k == 0) {
      data[i] = opcase_uniform(seed, i, -1.0f, 1.0f);
      continue;
    }
    int32_t id = (int32_t)opcase_uniform(seed, i, 0.0f, (float)v);
    if (id >= v) id = v - 1;
    if (i == 0) id = 0;                /* both ends of the table */
    if (i == n - 1 && n > 1) id = v - 1;
    if (c->p[0])
      memcpy(&data[i], &id, sizeof id);
    else
      data[i] = (float)id;
  }
}

#define RESHAPE(name, X, T) {name, build_reshape, ref_layout_reshape, NULL, {X, T}, 0.0f, 0.0f, 0.0}
#define PERMUTE(name, X, p0, p1, p2, p3) \
  {name, build_permute, ref_layout_permute, NULL, {X, p0, p1, p2, p3}, 0.0f, 0.0f, 0.0}
#define NARROW(name, X, axis, start, len) \
  {name, build_narrow, ref_layout_narrow, NULL, {X, axis, start, len}, 0.0f, 0.0f, 0.0}
#define CONCAT(name, n, axis, rank, d0, d1, d2, d3, ...) \
  {name, build_concat, ref_layout_concat, NULL, {n, axis, rank, d0, d1, d2, d3, __VA_ARGS__}, 0.0f, 0.0f, 0.0}
#define EXPAND(name, X, T) {name, build_expand, ref_layout_expand, NULL, {X, T}, 0.0f, 0.0f, 0.0}
#define GATHER(name, i32, V, D, IDS) \
  {name, build_gather, ref_layout_gather, fill_gather, {i32, V, D, IDS}, 0.0f, 0.0f, 0.0}

const op_case rlx_cases_layout[] = {
    RESHAPE("reshape_3x4x5_to_5x12", S3(3, 4, 5), S2(5, 12)),
    RESHAPE("reshape_infer_dim", S3(2, 3, 7), S2(7, -1)),
    RESHAPE("reshape_size1_to_flat", S3(6, 1, 7), S1(42)),
    RESHAPE("reshape_to_scalar", S1(1), S0),
    RESHAPE("reshape_scalar_to_1x1", S0, S2(1, 1)),
    RESHAPE("reshape_33_to_rank4", S1(33), S4(1, 3, 11, 1)),

    /*       name                        x shape              perm */
    PERMUTE("permute_rank4_2031",        S4(2, 3, 4, 5),      2, 0, 3, 1),
    PERMUTE("permute_rank4_rotate",      S4(3, 4, 5, 6),      1, 2, 3, 0),
    PERMUTE("permute_rank4_reverse",     S4(2, 3, 4, 5),      3, 2, 1, 0),
    PERMUTE("permute_rank4_swap_last2",  S4(3, 2, 33, 17),    0, 1, 3, 2),
    PERMUTE("permute_rank4_heads",       S4(2, 7, 3, 5),      0, 2, 1, 3),
    PERMUTE("permute_rank4_size1",       S4(1, 7, 1, 9),      3, 1, 0, 2),
    PERMUTE("permute_rank3_negative",    S3(4, 5, 6),         -1, 0, 1, 0),
    PERMUTE("permute_rank3_identity",    S3(4, 5, 6),         0, 1, 2, 0),
    PERMUTE("permute_rank3_outer_swap",  S3(17, 3, 18),       2, 1, 0, 0),
    PERMUTE("permute_transpose_33x7",    S2(33, 7),           1, 0, 0, 0),
    PERMUTE("permute_transpose_40x37",   S2(40, 37),          1, 0, 0, 0),
    PERMUTE("permute_transpose_1x33",    S2(1, 33),           1, 0, 0, 0),
    PERMUTE("permute_rank1",             S1(7),               0, 0, 0, 0),

    /*      name                         x shape          axis start length */
    NARROW("narrow_axis0",               S3(4, 5, 6),     0, 1, 2),
    NARROW("narrow_axis1",               S3(4, 5, 6),     1, 2, 3),
    NARROW("narrow_axis1_full",          S3(4, 5, 6),     1, 0, 5),
    NARROW("narrow_axis2",               S3(4, 5, 6),     2, 3, 3),
    NARROW("narrow_axis_neg1_last",      S3(4, 5, 6),     -1, 5, 1),
    NARROW("narrow_rank4_axis3",         S4(2, 3, 4, 33), 3, 7, 17),
    NARROW("narrow_1d_odd",              S1(33),          0, 7, 20),
    NARROW("narrow_size1_dims",          S3(1, 7, 1),     1, 6, 1),

    /*      name                     n  axis rank  dims           sizes along axis */
    CONCAT("concat3_middle_axis",    3, 1,   3,    2, 0, 5, 0,    3, 1, 4),
    CONCAT("concat3_axis0",          3, 0,   2,    0, 3, 0, 0,    2, 5, 1),
    CONCAT("concat3_last_negative",  3, -1,  2,    3, 0, 0, 0,    2, 7, 1),
    CONCAT("concat_single_input",    1, 1,   3,    2, 0, 3, 0,    5),
    CONCAT("concat8_rank1",          8, 0,   1,    0, 0, 0, 0,    1, 2, 3, 4, 5, 6, 7, 8),
    CONCAT("concat2_rank4_axis2",    2, 2,   4,    2, 3, 0, 5,    4, 3),
    CONCAT("concat2_odd_rows",       2, 1,   2,    7, 0, 0, 0,    33, 17),

    /*      name                       x shape          target */
    EXPAND("expand_middle_size1",      S3(3, 1, 5),     S3(3, 4, 5)),
    EXPAND("expand_leading_axes",      S1(5),           S3(2, 3, 5)),
    EXPAND("expand_one_to_7x33",       S1(1),           S2(7, 33)),
    EXPAND("expand_scalar",            S0,              S2(4, 3)),
    EXPAND("expand_mixed",             S3(2, 1, 1),     S4(4, 2, 7, 3)),
    EXPAND("expand_same_shape",        S2(3, 5),        S2(3, 5)),
    EXPAND("expand_column",            S2(7, 1),        S2(7, 33)),
    EXPAND("expand_size1_kept",        S3(1, 6, 1),     S4(2, 1, 6, 3)),

    /*      name                       i32  V   D   ids shape */
    GATHER("gather_f32_ids",           0,   10, 7,  S1(5)),
    GATHER("gather_f32_ids_2d",        0,   17, 33, S2(2, 3)),
    GATHER("gather_f32_scalar_id",     0,   4,  5,  S0),
    GATHER("gather_i32_ids",           1,   17, 33, S2(2, 3)),
    GATHER("gather_i32_rank3_ids",     1,   50, 16, S3(2, 2, 3)),
    GATHER("gather_i32_dim1",          1,   3,  1,  S1(9)),
};
const int rlx_n_cases_layout = sizeof(rlx_cases_layout) / sizeof(rlx_cases_layout[0]);
