/* cases_reduce.c - op cases for reduce_sum/mean/max, softmax, log_softmax,
 * softmax cross-entropy, rms_norm and layer_norm (references in
 * ref_reduce.c).  Parameter layouts (c->p):
 *   reduce   {op (0 sum, 1 mean, 2 max), axis mask, keepdim, negative axes, rank, dims...}
 *   softmax  {log flag, axis (may be negative), rank, dims...}
 *   CE       {i32 labels, logits rank, logits dims...}
 * Out-of-range labels make rlx_session_run fail (RLX_KFLAG_BAD_INDEX), which
 * an op case cannot express, so every label here is in range.
 *   norm     {kind (0 rms, 1 layer), eps in units of 1e-6, rank, dims...} */
#include <string.h>
#include "op_case.h"

void ref_reduce_case(const op_case *c, const op_inputs *in, double *expect);
void ref_softmax_case(const op_case *c, const op_inputs *in, double *expect);
void ref_softmax_ce_case(const op_case *c, const op_inputs *in, double *expect);
void ref_norm_case(const op_case *c, const op_inputs *in, double *expect);

static rlx_node build_reduce(rlx_graph *g, const op_case *c) {
  int32_t rank = c->p[4];
  rlx_node x = rlx_input(g, "x", rank, &c->p[5], RLX_F32);
  int32_t axes[RLX_MAX_RANK], n = 0;
  for (int32_t d = 0; d < rank; d++)
    if ((c->p[1] >> d) & 1) axes[n++] = c->p[3] ? d - rank : d;
  switch (c->p[0]) {
  case 0: return rlx_reduce_sum(g, x, axes, n, c->p[2]);
  case 1: return rlx_reduce_mean(g, x, axes, n, c->p[2]);
  default: return rlx_reduce_max(g, x, axes, n, c->p[2]);
  }
}

static rlx_node build_softmax(rlx_graph *g, const op_case *c) {
  rlx_node x = rlx_input(g, "x", c->p[2], &c->p[3], RLX_F32);
  return c->p[0] ? rlx_log_softmax(g, x, c->p[1]) : rlx_softmax(g, x, c->p[1]);
}

static rlx_node build_softmax_ce(rlx_graph *g, const op_case *c) {
  int32_t rank = c->p[1];
  rlx_node logits = rlx_input(g, "logits", rank, &c->p[2], RLX_F32);
  rlx_node labels = rlx_input(g, "labels", rank - 1, &c->p[2], c->p[0] ? RLX_I32 : RLX_F32);
  return rlx_softmax_cross_entropy(g, logits, labels);
}

/* Logits uniform in the case range; labels uniform in [0, C) (as floats or
 * as int32 bits). */
static void fill_softmax_ce(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  float lo = c->lo, hi = c->hi;
  if (lo == hi) lo = -1.0f, hi = 1.0f;
  int32_t classes = c->p[2 + c->p[1] - 1];
  for (size_t i = 0; i < n; i++) {
    if (k == 0) {
      data[i] = opcase_uniform(seed, i, lo, hi);
      continue;
    }
    int32_t label = (int32_t)opcase_uniform(seed, i, 0.0f, (float)classes);
    if (label >= classes) label = classes - 1;
    if (c->p[0])
      memcpy(&data[i], &label, sizeof label);
    else
      data[i] = (float)label;
  }
}

static rlx_node build_norm(rlx_graph *g, const op_case *c) {
  int32_t rank = c->p[2];
  const int32_t *dims = &c->p[3];
  float eps = (float)(c->p[1] * 1e-6);
  rlx_node x = rlx_input(g, "x", rank, dims, RLX_F32);
  rlx_node w = rlx_input(g, "w", 1, &dims[rank - 1], RLX_F32);
  if (!c->p[0]) return rlx_rms_norm(g, x, w, eps);
  rlx_node b = rlx_input(g, "b", 1, &dims[rank - 1], RLX_F32);
  return rlx_layer_norm(g, x, w, b, eps);
}

/* x uniform in the case range, weight and bias in [-1, 1) (a large bias
 * would cancel against a large x * w and measure float rounding only). */
static void fill_norm_x_range(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  float lo = k == 0 ? c->lo : -1.0f, hi = k == 0 ? c->hi : 1.0f;
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, lo, hi);
}

#define RED(name, op, mask, keep, neg, rank, ...) \
  {name, build_reduce, ref_reduce_case, NULL, {op, mask, keep, neg, rank, __VA_ARGS__}, 0, 0, 0}
#define SMX(name, log, axis, rank, ...) \
  {name, build_softmax, ref_softmax_case, NULL, {log, axis, rank, __VA_ARGS__}, 0, 0, 0}
#define CE(name, i32, lo, hi, rank, ...) \
  {name, build_softmax_ce, ref_softmax_ce_case, fill_softmax_ce, {i32, rank, __VA_ARGS__}, lo, hi, 0}
#define NORM(name, kind, eps_e6, lo, hi, rank, ...) \
  {name, build_norm, ref_norm_case, fill_norm_x_range, {kind, eps_e6, rank, __VA_ARGS__}, lo, hi, 0}

const op_case rlx_cases_reduce[] = {
    /* single axes */
    RED("reduce_sum_last_2x7", 0, 0x2, 0, 0, 2, 2, 7),
    RED("reduce_sum_first_keepdim_5x3", 0, 0x1, 1, 0, 2, 5, 3),
    RED("reduce_mean_middle_3x5x4", 1, 0x2, 0, 0, 3, 3, 5, 4),
    RED("reduce_max_middle_keepdim_6x9x5", 2, 0x2, 1, 1, 3, 6, 9, 5),
    RED("reduce_mean_first_7x1", 1, 0x1, 0, 0, 2, 7, 1),
    RED("reduce_sum_rank1_keepdim_33", 0, 0x1, 1, 0, 1, 33),
    /* several axes, adjacent and not */
    RED("reduce_sum_axes02_3x4x5x6", 0, 0x5, 0, 0, 4, 3, 4, 5, 6),
    RED("reduce_sum_axes13_keepdim_neg_2x3x5x7", 0, 0xA, 1, 1, 4, 2, 3, 5, 7),
    RED("reduce_max_axes03_4x3x5x2", 2, 0x9, 0, 0, 4, 4, 3, 5, 2),
    RED("reduce_mean_axes12_3x4x5x3", 1, 0x6, 0, 1, 4, 3, 4, 5, 3),
    RED("reduce_mean_axes124_2x3x1x4x5", 1, 0x16, 0, 0, 5, 2, 3, 1, 4, 5),
    RED("reduce_max_axes024_keepdim_3x2x5x2x3", 2, 0x15, 1, 0, 5, 3, 2, 5, 2, 3),
    /* size-1 dims: reducing only them is a copy */
    RED("reduce_sum_size1_axis_4x1x3", 0, 0x2, 0, 0, 3, 4, 1, 3),
    RED("reduce_sum_axes12_1x5x1x3", 0, 0x6, 0, 0, 4, 1, 5, 1, 3),
    /* all axes */
    RED("reduce_sum_all_3x5x7", 0, 0x7, 0, 0, 3, 3, 5, 7),
    RED("reduce_mean_all_keepdim_3x5x7", 1, 0x7, 1, 0, 3, 3, 5, 7),
    RED("reduce_max_all_17", 2, 0x1, 0, 0, 1, 17),
    RED("reduce_max_all_neg_2x3x1", 2, 0x7, 0, 1, 3, 2, 3, 1),
    /* max of all-negative values (the max must not start at 0) */
    {"reduce_max_negative_values_5x9", build_reduce, ref_reduce_case, NULL, {2, 0x2, 0, 0, 2, 5, 9}, -5, -1, 0},
    /* 100k values near 1.5 per output: a float running sum drifts by ~1e-5
     * relative here, so the tighter tolerance checks the accumulation */
    {"reduce_sum_long_rows_2x100003", build_reduce, ref_reduce_case, NULL, {0, 0x2, 0, 0, 2, 2, 100003}, 1, 2,
     1e-6},
    {"reduce_mean_long_cols_60001x2", build_reduce, ref_reduce_case, NULL, {1, 0x1, 0, 0, 2, 60001, 2}, 1, 2,
     1e-6},

    /* softmax / log_softmax on first, middle and last axes */
    SMX("softmax_last_3x11", 0, 1, 2, 3, 11),
    SMX("softmax_last_neg_2x3x9", 0, -1, 3, 2, 3, 9),
    SMX("softmax_first_5x3x4", 0, 0, 3, 5, 3, 4),
    SMX("softmax_middle_2x7x5", 0, 1, 3, 2, 7, 5),
    SMX("softmax_middle_neg_2x3x6x5", 0, -2, 4, 2, 3, 6, 5),
    SMX("softmax_rank1_9", 0, 0, 1, 9),
    SMX("softmax_size1_axis_3x1x4", 0, 1, 3, 3, 1, 4),
    SMX("log_softmax_last_3x11", 1, 1, 2, 3, 11),
    SMX("log_softmax_first_5x3x4", 1, 0, 3, 5, 3, 4),
    SMX("log_softmax_middle_2x7x5", 1, -2, 3, 2, 7, 5),
    SMX("log_softmax_size1_axis_6x1", 1, -1, 2, 6, 1),
    /* exp(100) overflows float: these fail without the max subtraction */
    {"softmax_large_values_4x33", build_softmax, ref_softmax_case, NULL, {0, 1, 2, 4, 33}, -100, 100, 0},
    {"softmax_large_values_first_axis_13x3", build_softmax, ref_softmax_case, NULL, {0, 0, 2, 13, 3}, -100, 100, 0},
    {"softmax_moderate_values_mid_3x9x5", build_softmax, ref_softmax_case, NULL, {0, 1, 3, 3, 9, 5}, -8, 8, 0},
    {"log_softmax_large_values_4x33", build_softmax, ref_softmax_case, NULL, {1, 1, 2, 4, 33}, -100, 100, 0},
    {"log_softmax_large_values_mid_3x17x5", build_softmax, ref_softmax_case, NULL, {1, 1, 3, 3, 17, 5}, -100, 100,
     0},

    /* softmax cross-entropy */
    CE("softmax_ce_f32_labels_4x10", 0, 0, 0, 2, 4, 10),
    CE("softmax_ce_i32_labels_3x5x7", 1, 0, 0, 3, 3, 5, 7),
    CE("softmax_ce_f32_large_logits_6x33", 0, -50, 50, 2, 6, 33),
    CE("softmax_ce_i32_large_logits_5x3x9", 1, -50, 50, 3, 5, 3, 9),
    CE("softmax_ce_f32_huge_logits_7x19", 0, -120, 120, 2, 7, 19),
    CE("softmax_ce_one_class_5x1", 0, 0, 0, 2, 5, 1),
    CE("softmax_ce_rank1_logits_13", 1, -3, 3, 1, 13),

    /* rms_norm / layer_norm over the last axis */
    NORM("rms_norm_4x33", 0, 10, -1, 1, 2, 4, 33),
    NORM("rms_norm_d1_3x1", 0, 10, -1, 1, 2, 3, 1),
    NORM("rms_norm_eps1e-6_2x3x8", 0, 1, -1, 1, 3, 2, 3, 8),
    NORM("rms_norm_big_eps_5x7", 0, 500000, -1, 1, 2, 5, 7),
    NORM("rms_norm_offset_values_2x9", 0, 10, 50, 51, 2, 2, 9),
    NORM("rms_norm_rank1_17", 0, 10, -1, 1, 1, 17),
    NORM("layer_norm_4x33", 1, 10, -1, 1, 2, 4, 33),
    NORM("layer_norm_d1_3x1", 1, 10, -1, 1, 2, 3, 1),
    NORM("layer_norm_eps1e-6_2x3x17", 1, 1, -1, 1, 3, 2, 3, 17),
    NORM("layer_norm_big_eps_6x5", 1, 250000, -1, 1, 2, 6, 5),
    /* values far from zero: the variance must be taken around the mean */
    NORM("layer_norm_offset_values_3x33", 1, 10, 100, 101, 2, 3, 33),
};
const int rlx_n_cases_reduce = sizeof rlx_cases_reduce / sizeof rlx_cases_reduce[0];
