/* cases_grad_norm_attention.c - op cases for the backward ops rms_norm_grad,
 * rms_norm_grad_weight, layer_norm_grad, layer_norm_grad_weight and
 * attention_grad (references in ref_grad_norm_attention.c).  Backward ops have no typed
 * builders, so the graphs use rlx_op_node.  Parameter layouts (c->p):
 *   norm grad  {op (0 rms dx, 1 rms dw, 2 layer dx, 3 layer dw), eps * 1e6,
 *              rank, x dims...}; dx ops take x, w, dy; dw ops x, dy.  x is
 *              uniform in the case range (default [-1, 1)), w and dy in [-1, 1)
 *   attention grad  {B, H, Sq, Sk, D, Dv, mask kind, window, scale * 1000
 *              (<= 0: default 1/sqrt(D)), variant, bias rank, bias dims...};
 *              inputs q, k, v, dy (, mask) in [-1, 1) except the mask:
 *              PADDING variant 0: batch b % 3 == 0 keeps every key, 1 drops
 *              the last two keys, 2 keeps the even keys; variant 2: batch 0
 *              keeps keys j % 3 != 1, batch 1 none (all its rows masked).
 *              BIAS uniform in [-2, 2); variant >= 1: about a quarter -inf;
 *              variant 2: also query row 0 all -inf (rank-4 bias only).
 * Attention cases with more than 64 query rows cross the kernel's row
 * blocks.  Keep the references' O(Sq Sk^2) Jacobians small. */
#include <math.h>
#include "op_case.h"

void ref_norm_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_attention_grad_case(const op_case *c, const op_inputs *in, double *expect);

/* ---- norm gradients ---- */

static rlx_node build_norm_grad(rlx_graph *g, const op_case *c) {
  static const rlx_op ops[4] = {RLX_OP_RMS_NORM_GRAD, RLX_OP_RMS_NORM_GRAD_W, RLX_OP_LAYER_NORM_GRAD,
                                RLX_OP_LAYER_NORM_GRAD_W};
  int32_t rank = c->p[2];
  const int32_t *dims = &c->p[3];
  int32_t d = dims[rank - 1];
  float eps = (float)(c->p[1] * 1e-6);
  rlx_node in[3];
  int32_t n = 0;
  in[n++] = rlx_input(g, "x", rank, dims, RLX_F32);
  if (c->p[0] % 2 == 0) in[n++] = rlx_input(g, "w", 1, &d, RLX_F32);
  in[n++] = rlx_input(g, "dy", rank, dims, RLX_F32);
  return rlx_op_node(g, ops[c->p[0]], in, n, NULL, 0, &eps, 1);
}

/* x (input 0) uniform in the case range, every later input in [-1, 1). */
static void fill_first_in_range(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  float lo = c->lo, hi = c->hi;
  if (k > 0 || lo == hi) lo = -1.0f, hi = 1.0f;
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, lo, hi);
}

#define NORM(name, op, eps_e6, lo, hi, rank, ...) \
  {name, build_norm_grad, ref_norm_grad_case, fill_first_in_range, {op, eps_e6, rank, __VA_ARGS__}, lo, hi, 0}
#define RMS_DX 0
#define RMS_DW 1
#define LAYER_DX 2
#define LAYER_DW 3

/* ---- attention_grad ---- */

static rlx_node build_attention_grad(rlx_graph *g, const op_case *c) {
  int32_t B = c->p[0], H = c->p[1], sq = c->p[2], sk = c->p[3], d = c->p[4], dv = c->p[5];
  int32_t kind = c->p[6];
  int32_t qd[4] = {B, H, sq, d}, kd[4] = {B, H, sk, d}, vd[4] = {B, H, sk, dv}, yd[4] = {B, H, sq, dv};
  rlx_node in[5];
  int32_t n = 0;
  in[n++] = rlx_input(g, "q", 4, qd, RLX_F32);
  in[n++] = rlx_input(g, "k", 4, kd, RLX_F32);
  in[n++] = rlx_input(g, "v", 4, vd, RLX_F32);
  in[n++] = rlx_input(g, "dy", 4, yd, RLX_F32);
  if (kind == RLX_MASK_PADDING) {
    int32_t md[2] = {B, sk};
    in[n++] = rlx_input(g, "mask", 2, md, RLX_F32);
  } else if (kind == RLX_MASK_BIAS) {
    in[n++] = rlx_input(g, "bias", c->p[10], &c->p[11], RLX_F32);
  }
  int32_t iattr[2] = {kind, c->p[7]};
  float scale = (float)(c->p[8] / 1000.0);
  return rlx_op_node(g, RLX_OP_ATTENTION_GRAD, in, n, iattr, 2, &scale, 1);
}

static void fill_attention_grad(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  int32_t sq = c->p[2], sk = c->p[3], kind = c->p[6], variant = c->p[9];
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -1.0f, 1.0f);
  if (k != 4) return;
  if (kind == RLX_MASK_PADDING) {
    for (size_t i = 0; i < n; i++) {
      int32_t b = (int32_t)(i / (size_t)sk), j = (int32_t)(i % (size_t)sk);
      int keep;
      if (variant == 2)
        keep = b == 0 ? j % 3 != 1 : b == 1 ? 0 : 1;
      else
        keep = b % 3 == 0 ? 1 : b % 3 == 1 ? j < sk - 2 || j == 0 : j % 2 == 0;
      data[i] = keep ? (j % 2 ? -2.0f : 1.0f) : 0.0f;
    }
  } else if (kind == RLX_MASK_BIAS) {
    for (size_t i = 0; i < n; i++) {
      data[i] = opcase_uniform(seed, i, -2.0f, 2.0f);
      if (variant >= 1 && opcase_uniform(seed ^ 0x5bd1e995u, i, 0.0f, 1.0f) < 0.25f) data[i] = -INFINITY;
      if (variant == 2 && (i / (size_t)sk) % (size_t)sq == 0) data[i] = -INFINITY;
    }
  }
}

#define ATTN(name, B, H, sq, sk, d, dv, kind, window, scale, variant, ...)                                 \
  {"attention_grad_" name, build_attention_grad, ref_attention_grad_case, fill_attention_grad,            \
   {B, H, sq, sk, d, dv, kind, window, scale, variant, __VA_ARGS__}, 0, 0, 0}
#define NONE RLX_MASK_NONE
#define CAUSAL RLX_MASK_CAUSAL
#define SLIDING RLX_MASK_SLIDING
#define PADDING RLX_MASK_PADDING
#define BIAS RLX_MASK_BIAS

const op_case rlx_cases_grad_norm_attention[] = {
    /* RMS norm: odd D, D = 1, exactly 8 lanes, rank 1, larger eps */
    NORM("rms_norm_grad_2x3x9", RMS_DX, 10, 0, 0, 3, 2, 3, 9),
    NORM("rms_norm_grad_d1_4x1", RMS_DX, 10, 0, 0, 2, 4, 1),
    NORM("rms_norm_grad_d8_3x8", RMS_DX, 10, 0, 0, 2, 3, 8),
    NORM("rms_norm_grad_rank1_d21", RMS_DX, 10, 0, 0, 1, 21),
    NORM("rms_norm_grad_eps0.1_5x37", RMS_DX, 100000, 0, 0, 2, 5, 37),
    NORM("rms_norm_grad_offset_3x17", RMS_DX, 10, 3.0f, 4.0f, 2, 3, 17),
    NORM("rms_norm_grad_weight_2x3x9", RMS_DW, 10, 0, 0, 3, 2, 3, 9),
    NORM("rms_norm_grad_weight_d1_6x1", RMS_DW, 10, 0, 0, 2, 6, 1),
    NORM("rms_norm_grad_weight_rank1_d13", RMS_DW, 10, 0, 0, 1, 13),
    NORM("rms_norm_grad_weight_many_rows_4x25x19", RMS_DW, 10, 0, 0, 3, 4, 25, 19),
    NORM("rms_norm_grad_weight_eps0.1_7x16", RMS_DW, 100000, 0, 0, 2, 7, 16),
    /* layer norm: odd D, D = 1 (dx = 0, dw = 0), rows far from zero */
    NORM("layer_norm_grad_2x3x9", LAYER_DX, 10, 0, 0, 3, 2, 3, 9),
    NORM("layer_norm_grad_d1_4x1", LAYER_DX, 10, 0, 0, 2, 4, 1),
    NORM("layer_norm_grad_d2_5x2", LAYER_DX, 10, 0, 0, 2, 5, 2),
    NORM("layer_norm_grad_rank1_d21", LAYER_DX, 10, 0, 0, 1, 21),
    NORM("layer_norm_grad_eps0.1_5x37", LAYER_DX, 100000, 0, 0, 2, 5, 37),
    NORM("layer_norm_grad_offset100_3x17", LAYER_DX, 10, 100.0f, 101.0f, 2, 3, 17),
    NORM("layer_norm_grad_weight_2x3x9", LAYER_DW, 10, 0, 0, 3, 2, 3, 9),
    NORM("layer_norm_grad_weight_d1_6x1", LAYER_DW, 10, 0, 0, 2, 6, 1),
    NORM("layer_norm_grad_weight_rank1_d13", LAYER_DW, 10, 0, 0, 1, 13),
    NORM("layer_norm_grad_weight_many_rows_4x25x19", LAYER_DW, 10, 0, 0, 3, 4, 25, 19),
    NORM("layer_norm_grad_weight_offset100_6x24", LAYER_DW, 10, 100.0f, 101.0f, 2, 6, 24),

    /* no mask; D != Dv; explicit and default scales */
    ATTN("none_sq5_sk5", 2, 3, 5, 5, 8, 8, NONE, 0, 0, 0, 0),
    ATTN("none_sq3_sk7_d5_dv7", 2, 3, 3, 7, 5, 7, NONE, 0, 0, 0, 0),
    ATTN("none_scale0.3_sq4_sk6_d6_dv3", 2, 3, 4, 6, 6, 3, NONE, 0, 300, 0, 0),
    ATTN("none_sq1_sk1_d1_dv1", 1, 1, 1, 1, 1, 1, NONE, 0, 0, 0, 0),
    ATTN("none_sq9_sk2_d3_dv1", 1, 2, 9, 2, 3, 1, NONE, 0, 0, 0, 0),
    /* causal, incl. Sq < Sk, decode and Sq > Sk (first rows see nothing) */
    ATTN("causal_sq5_sk5_d4_dv6", 2, 3, 5, 5, 4, 6, CAUSAL, 0, 0, 0, 0),
    ATTN("causal_sq3_sk7_d6_dv5", 2, 3, 3, 7, 6, 5, CAUSAL, 0, 0, 0, 0),
    ATTN("causal_decode_sq1_sk9", 2, 3, 1, 9, 8, 8, CAUSAL, 0, 0, 0, 0),
    ATTN("causal_sq6_sk4_first_rows_zero", 2, 3, 6, 4, 5, 3, CAUSAL, 0, 0, 0, 0),
    /* more than one 64-row block; blocked GEMM sizes */
    ATTN("causal_long_1x2x67x67_d33_dv17", 1, 2, 67, 67, 33, 17, CAUSAL, 0, 0, 0, 0),
    ATTN("causal_sq_gt_sk_1x1x150x40_d9_dv12", 1, 1, 150, 40, 9, 12, CAUSAL, 0, 0, 0, 0),
    ATTN("none_1x1x70x50_d16_dv24", 1, 1, 70, 50, 16, 24, NONE, 0, 0, 0, 0),
    /* sliding window */
    ATTN("sliding_w2_sq6_sk4", 2, 3, 6, 4, 5, 3, SLIDING, 2, 0, 0, 0),
    ATTN("sliding_w1_sq6_sk6", 2, 3, 6, 6, 5, 7, SLIDING, 1, 0, 0, 0),
    ATTN("sliding_w3_sq3_sk7", 2, 3, 3, 7, 4, 6, SLIDING, 3, 0, 0, 0),
    ATTN("sliding_w20_is_causal_sq4_sk4", 2, 3, 4, 4, 3, 5, SLIDING, 20, 0, 0, 0),
    ATTN("sliding_w5_sq37_sk37_d12_dv9", 2, 3, 37, 37, 12, 9, SLIDING, 5, 0, 0, 0),
    ATTN("sliding_w11_1x1x140x90_d8_dv5", 1, 1, 140, 90, 8, 5, SLIDING, 11, 0, 0, 0),
    /* padding: some keys of some batches; a batch with every key masked */
    ATTN("padding_B3_sq5_sk5", 3, 3, 5, 5, 6, 4, PADDING, 0, 0, 0, 0),
    ATTN("padding_sq3_sk7_d5_dv8", 2, 3, 3, 7, 5, 8, PADDING, 0, 0, 0, 0),
    ATTN("padding_sq9_sk19_d5_dv11", 3, 2, 9, 19, 5, 11, PADDING, 0, 0, 0, 0),
    ATTN("padding_batch_fully_masked_sq4_sk6", 2, 3, 4, 6, 4, 5, PADDING, 0, 0, 2, 0),
    /* additive bias, full and broadcast, with -inf entries and rows */
    ATTN("bias_BHSqSk_sq5_sk5", 2, 3, 5, 5, 6, 6, BIAS, 0, 0, 0, 4, 2, 3, 5, 5),
    ATTN("bias_11SqSk_sq3_sk7", 2, 3, 3, 7, 5, 4, BIAS, 0, 0, 0, 4, 1, 1, 3, 7),
    ATTN("bias_SqSk_rank2_sq4_sk6", 2, 3, 4, 6, 3, 5, BIAS, 0, 0, 0, 2, 4, 6),
    ATTN("bias_Sk_rank1_sq4_sk6", 2, 3, 4, 6, 3, 5, BIAS, 0, 0, 0, 1, 6),
    ATTN("bias_B11Sk_sq3_sk7", 2, 3, 3, 7, 4, 4, BIAS, 0, 0, 0, 4, 2, 1, 1, 7),
    ATTN("bias_1H1Sk_scale0.5_sq2_sk5", 2, 3, 2, 5, 4, 3, BIAS, 0, 500, 0, 4, 1, 3, 1, 5),
    ATTN("bias_neg_inf_BHSqSk_sq5_sk5", 2, 3, 5, 5, 6, 6, BIAS, 0, 0, 1, 4, 2, 3, 5, 5),
    ATTN("bias_neg_inf_sq10_sk21", 2, 3, 10, 21, 6, 8, BIAS, 0, 0, 1, 4, 2, 3, 10, 21),
    ATTN("bias_per_query_neg_inf_BHSq1_sq5_sk6", 2, 3, 5, 6, 4, 3, BIAS, 0, 0, 1, 4, 2, 3, 5, 1),
    ATTN("bias_row_all_neg_inf_11SqSk_sq3_sk7", 2, 3, 3, 7, 5, 4, BIAS, 0, 0, 2, 4, 1, 1, 3, 7),
};
const int rlx_n_cases_grad_norm_attention = sizeof rlx_cases_grad_norm_attention / sizeof rlx_cases_grad_norm_attention[0];
