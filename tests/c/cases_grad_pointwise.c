/* cases_grad_pointwise.c - op cases for the backward ops gelu_grad, silu_grad,
 * narrow_grad, scatter_add, softmax_grad, log_softmax_grad and
 * softmax_cross_entropy_grad, and the optimizer update adam_update
 * (references in ref_grad_pointwise.c).  Backward ops
 * have no typed builders, so the graphs use rlx_op_node.  Parameter
 * layouts (c->p):
 *   pointwise  {op (0 gelu, 1 silu), extremes, rank, dims...}; inputs x
 *              (case range; extremes also plants +-inf, +-1e30 and values
 *              around the kernels' saturation points), dy in [-1, 1)
 *   narrow     {axis (may be negative), start, full, rank, dy dims...}
 *   scatter    {i32 ids, V, ids rank, ids dims..., D}; ids uniform in
 *              [0, V) (so with more ids than V rows they repeat and sum)
 *   axis grad  {log flag, axis (may be negative), from forward, rank, dims...};
 *              from forward: inputs x, dy and y = softmax/log_softmax(x)
 *              built in the graph; otherwise inputs y (case range), dy
 *   CE grad    {i32 labels, logits rank, logits dims...}; inputs logits
 *              (case range), labels uniform in [0, C), dy in [-1, 1)
 *   adam       {beta1, beta2, eps, weight decay (each * 1e6), rank,
 *              dims...}; inputs p, g, m in [-1, 1), v in [0, 0.01), lr
 *              in [0.001, 0.1), bias1, bias2 in [0.05, 1) (the optimizer
 *              update adam_update; its output p' is checked, the moments
 *              it writes in place by tests/c/test_train_adam.c)
 * Out-of-range ids and labels make rlx_session_run fail
 * (RLX_KFLAG_BAD_INDEX), which an op case cannot express, so every id and
 * label here is in range. */
#include <math.h>
#include <string.h>
#include "op_case.h"

void ref_grad_pointwise_case(const op_case *c, const op_inputs *in, double *expect);
void ref_narrow_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_scatter_add_case(const op_case *c, const op_inputs *in, double *expect);
void ref_axis_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_softmax_ce_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_adam_update_case(const op_case *c, const op_inputs *in, double *expect);

/* Input 0 uniform in the case range, every later input in [-1, 1). */
static void fill_first_in_range(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  float lo = c->lo, hi = c->hi;
  if (k > 0 || lo == hi) lo = -1.0f, hi = 1.0f;
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, lo, hi);
}

/* An index uniform in [0, count), stored as int32 bits or as a float. */
static void store_index(float *dst, unsigned seed, size_t i, int32_t count, int as_i32) {
  int32_t v = (int32_t)opcase_uniform(seed, i, 0.0f, (float)count);
  if (v >= count) v = count - 1;
  if (as_i32)
    memcpy(dst, &v, sizeof v);
  else
    *dst = (float)v;
}

/* ---- gelu_grad, silu_grad ---- */

static rlx_node build_pointwise(rlx_graph *g, const op_case *c) {
  rlx_node in[2];
  in[0] = rlx_input(g, "x", c->p[2], &c->p[3], RLX_F32);
  in[1] = rlx_input(g, "dy", c->p[2], &c->p[3], RLX_F32);
  return rlx_op_node(g, c->p[0] ? RLX_OP_SILU_GRAD : RLX_OP_GELU_GRAD, in, 2, NULL, 0, NULL, 0);
}

static void fill_pointwise(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  static const float extremes[] = {INFINITY, -INFINITY, 1e30f, -1e30f, 19.5f, -19.5f, 20.5f, -20.5f,
                                   87.5f, -87.5f, 88.5f, -88.5f, 0.0f, -0.0f};
  const size_t n_extremes = sizeof extremes / sizeof extremes[0];
  fill_first_in_range(c, k, data, n, seed);
  if (k == 0 && c->p[1])
    for (size_t i = 0; i < n; i += 3) data[i] = extremes[(i / 3) % n_extremes];
}

#define GELU(name, lo, hi, extremes, rank, ...) \
  {"gelu_grad_" name, build_pointwise, ref_grad_pointwise_case, fill_pointwise, {0, extremes, rank, __VA_ARGS__}, lo, hi, 0}
#define SILU(name, lo, hi, extremes, rank, ...) \
  {"silu_grad_" name, build_pointwise, ref_grad_pointwise_case, fill_pointwise, {1, extremes, rank, __VA_ARGS__}, lo, hi, 0}

/* ---- narrow_grad ---- */

static rlx_node build_narrow_grad(rlx_graph *g, const op_case *c) {
  rlx_node dy = rlx_input(g, "dy", c->p[3], &c->p[4], RLX_F32);
  return rlx_op_node(g, RLX_OP_NARROW_GRAD, &dy, 1, c->p, 3, NULL, 0);
}

#define NARROW(name, axis, start, full, rank, ...) \
  {"narrow_grad_" name, build_narrow_grad, ref_narrow_grad_case, NULL, {axis, start, full, rank, __VA_ARGS__}, 0, 0, 0}

/* ---- scatter_add ---- */

static rlx_node build_scatter_add(rlx_graph *g, const op_case *c) {
  int32_t rank = c->p[2], dy_dims[RLX_MAX_RANK];
  memcpy(dy_dims, &c->p[3], sizeof(int32_t) * (size_t)rank);
  dy_dims[rank] = c->p[3 + rank];
  rlx_node in[2];
  in[0] = rlx_input(g, "ids", rank, &c->p[3], c->p[0] ? RLX_I32 : RLX_F32);
  in[1] = rlx_input(g, "dy", rank + 1, dy_dims, RLX_F32);
  return rlx_op_node(g, RLX_OP_SCATTER_ADD, in, 2, &c->p[1], 1, NULL, 0);
}

static void fill_scatter_add(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  if (k == 1) {
    fill_first_in_range(c, k, data, n, seed);
    return;
  }
  for (size_t i = 0; i < n; i++) store_index(&data[i], seed, i, c->p[1], c->p[0]);
}

#define SCATTER(name, i32, v, rank, ...) \
  {"scatter_add_" name, build_scatter_add, ref_scatter_add_case, fill_scatter_add, {i32, v, rank, __VA_ARGS__}, 0, 0, 0}

/* ---- softmax_grad, log_softmax_grad ---- */

static rlx_node build_axis_grad(rlx_graph *g, const op_case *c) {
  int log_out = c->p[0];
  int32_t axis = c->p[1];
  rlx_node in[2];
  in[0] = rlx_input(g, c->p[2] ? "x" : "y", c->p[3], &c->p[4], RLX_F32);
  in[1] = rlx_input(g, "dy", c->p[3], &c->p[4], RLX_F32);
  if (c->p[2]) in[0] = log_out ? rlx_log_softmax(g, in[0], axis) : rlx_softmax(g, in[0], axis);
  return rlx_op_node(g, log_out ? RLX_OP_LOG_SOFTMAX_GRAD : RLX_OP_SOFTMAX_GRAD, in, 2, &axis, 1, NULL, 0);
}

/* from the forward op (x in [-3, 3)) */
#define SOFTMAX_FWD(name, log_out, axis, rank, ...)                                                        \
  {name, build_axis_grad, ref_axis_grad_case, fill_first_in_range, {log_out, axis, 1, rank, __VA_ARGS__}, \
   -3.0f, 3.0f, 0}
/* y given directly, in [lo, hi) */
#define SOFTMAX_DIRECT(name, log_out, axis, lo, hi, rank, ...)                                             \
  {name, build_axis_grad, ref_axis_grad_case, fill_first_in_range, {log_out, axis, 0, rank, __VA_ARGS__}, \
   lo, hi, 0}

/* ---- softmax_cross_entropy_grad ---- */

static rlx_node build_softmax_ce_grad(rlx_graph *g, const op_case *c) {
  int32_t rank = c->p[1];
  rlx_node in[3];
  in[0] = rlx_input(g, "logits", rank, &c->p[2], RLX_F32);
  in[1] = rlx_input(g, "labels", rank - 1, &c->p[2], c->p[0] ? RLX_I32 : RLX_F32);
  in[2] = rlx_input(g, "dy", rank - 1, &c->p[2], RLX_F32);
  return rlx_op_node(g, RLX_OP_SOFTMAX_CE_GRAD, in, 3, NULL, 0, NULL, 0);
}

static void fill_softmax_ce_grad(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  if (k != 1) {
    fill_first_in_range(c, k, data, n, seed);
    return;
  }
  int32_t classes = c->p[2 + c->p[1] - 1];
  for (size_t i = 0; i < n; i++) store_index(&data[i], seed, i, classes, c->p[0]);
}

#define CE_GRAD(name, i32, lo, hi, rank, ...)                                                                   \
  {"softmax_cross_entropy_grad_" name, build_softmax_ce_grad, ref_softmax_ce_grad_case, fill_softmax_ce_grad, \
   {i32, rank, __VA_ARGS__}, lo, hi, 0}

static rlx_node build_adam_update(rlx_graph *g, const op_case *c) {
  static const char *names[7] = {"p", "g", "m", "v", "lr", "bias1", "bias2"};
  rlx_node in[7];
  for (int32_t k = 0; k < 7; k++)
    in[k] = k < 4 ? rlx_input(g, names[k], c->p[4], &c->p[5], RLX_F32) : rlx_input(g, names[k], 0, NULL, RLX_F32);
  const float attrs[4] = {c->p[0] * 1e-6f, c->p[1] * 1e-6f, c->p[2] * 1e-6f, c->p[3] * 1e-6f};
  return rlx_op_node(g, RLX_OP_ADAM_UPDATE, in, 7, NULL, 0, attrs, 4);
}

static void fill_adam_update(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c;
  static const float lo[7] = {-1, -1, -1, 0, 0.001f, 0.05f, 0.05f}, hi[7] = {1, 1, 1, 0.01f, 0.1f, 1, 1};
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, lo[k], hi[k]);
}

#define ADAM(name, b1, b2, eps, wd, rank, ...) \
  {"adam_update_" name, build_adam_update, ref_adam_update_case, fill_adam_update, {b1, b2, eps, wd, rank, __VA_ARGS__}, 0, 0, 1e-5}

const op_case rlx_cases_grad_pointwise[] = {
    ADAM("adam_37", 900000, 999000, 10, 0, 1, 37),
    ADAM("adamw_5x33", 900000, 999000, 10, 10000, 2, 5, 33),
    ADAM("adamw_2x3x40_eps", 800000, 990000, 1000, 500000, 3, 2, 3, 40),
    ADAM("adam_1", 0, 0, 1, 0, 1, 1),

    GELU("37", -4.0f, 4.0f, 0, 1, 37),
    GELU("3x1x17_wide", -12.0f, 12.0f, 0, 3, 3, 1, 17),
    GELU("1", -1.0f, 1.0f, 0, 1, 1),
    GELU("2x8_small", -0.01f, 0.01f, 0, 2, 2, 8),
    GELU("5x13_extremes", -3.0f, 3.0f, 1, 2, 5, 13),
    SILU("37", -6.0f, 6.0f, 0, 1, 37),
    SILU("2x9x1x5_wide", -100.0f, 100.0f, 0, 4, 2, 9, 1, 5),
    SILU("1", -1.0f, 1.0f, 0, 1, 1),
    SILU("4x11_extremes", -3.0f, 3.0f, 1, 2, 4, 11),

    NARROW("axis0", 0, 2, 7, 2, 3, 4),
    NARROW("axis1_of3_start0", 1, 0, 9, 3, 2, 3, 5),
    NARROW("axis2_of3_at_end", 2, 4, 9, 3, 2, 3, 5),
    NARROW("axis_neg1_rank1", -1, 1, 11, 1, 6),
    NARROW("neg_axis_middle", -2, 3, 12, 3, 2, 7, 3),
    NARROW("full_range", 1, 0, 5, 3, 2, 5, 1),
    NARROW("size1_dims", 0, 3, 4, 3, 1, 1, 3),
    NARROW("len1_middle", 1, 6, 13, 3, 2, 1, 3),
    NARROW("axis3_of4", 3, 2, 19, 4, 2, 1, 3, 9),

    SCATTER("f32_repeats", 0, 3, 1, 7, 5),
    SCATTER("i32_2x9", 1, 4, 2, 2, 9, 13),
    SCATTER("i32_scalar_id", 1, 5, 0, 3),
    SCATTER("f32_1x1", 0, 1, 1, 1, 1),
    SCATTER("i32_sparse", 1, 40, 3, 3, 2, 5, 9),
    SCATTER("f32_many_repeats", 0, 2, 1, 40, 17),
    SCATTER("i32_d1", 1, 6, 2, 5, 3, 1),

    SOFTMAX_FWD("softmax_grad_13_axis0", 0, 0, 1, 13),
    SOFTMAX_FWD("softmax_grad_3x19_last", 0, -1, 2, 3, 19),
    SOFTMAX_FWD("softmax_grad_4x7x5_middle", 0, 1, 3, 4, 7, 5),
    SOFTMAX_FWD("softmax_grad_6x3x2_first", 0, 0, 3, 6, 3, 2),
    SOFTMAX_FWD("softmax_grad_5x1x9_size1_axis", 0, 1, 3, 5, 1, 9),
    SOFTMAX_FWD("softmax_grad_17x11_first", 0, -2, 2, 17, 11),
    SOFTMAX_FWD("softmax_grad_1x33_last", 0, 1, 2, 1, 33),
    SOFTMAX_FWD("softmax_grad_2x3x5x4_axis2", 0, 2, 4, 2, 3, 5, 4),
    SOFTMAX_DIRECT("softmax_grad_direct_2x3x1_last", 0, 2, 0.0f, 1.0f, 3, 2, 3, 1),
    SOFTMAX_DIRECT("softmax_grad_direct_3x10_first", 0, 0, 0.0f, 1.0f, 2, 3, 10),
    SOFTMAX_DIRECT("softmax_grad_direct_2x21_last", 0, 1, 0.0f, 1.0f, 2, 2, 21),
    SOFTMAX_FWD("log_softmax_grad_13_axis0", 1, 0, 1, 13),
    SOFTMAX_FWD("log_softmax_grad_3x19_last", 1, -1, 2, 3, 19),
    SOFTMAX_FWD("log_softmax_grad_4x7x5_middle", 1, 1, 3, 4, 7, 5),
    SOFTMAX_FWD("log_softmax_grad_6x3x2_first", 1, 0, 3, 6, 3, 2),
    SOFTMAX_FWD("log_softmax_grad_5x1x9_size1_axis", 1, 1, 3, 5, 1, 9),
    SOFTMAX_FWD("log_softmax_grad_17x11_first", 1, -2, 2, 17, 11),
    SOFTMAX_FWD("log_softmax_grad_2x3x1x9_axis2", 1, 2, 4, 2, 3, 1, 9),
    SOFTMAX_FWD("log_softmax_grad_2x3x5x4_axis2", 1, 2, 4, 2, 3, 5, 4),
    SOFTMAX_FWD("log_softmax_grad_1x33_last", 1, 1, 2, 1, 33),
    SOFTMAX_DIRECT("log_softmax_grad_direct_3x10_first", 1, 0, -4.0f, 0.0f, 2, 3, 10),
    SOFTMAX_DIRECT("log_softmax_grad_direct_2x21_last", 1, 1, -4.0f, 0.0f, 2, 2, 21),

    CE_GRAD("f32_5x7", 0, -1.0f, 1.0f, 2, 5, 7),
    CE_GRAD("i32_2x3x10", 1, -2.0f, 2.0f, 3, 2, 3, 10),
    CE_GRAD("f32_1x1", 0, -1.0f, 1.0f, 2, 1, 1),
    CE_GRAD("i32_4x33_large_logits", 1, -60.0f, 60.0f, 2, 4, 33),
    CE_GRAD("i32_rank1", 1, -1.0f, 1.0f, 1, 9),
    CE_GRAD("f32_3x1x17", 0, -3.0f, 3.0f, 3, 3, 1, 17),
};
const int rlx_n_cases_grad_pointwise = sizeof rlx_cases_grad_pointwise / sizeof rlx_cases_grad_pointwise[0];
