/* cases_seq.c - op cases for rope and attention (references in ref_seq.c).
 * Parameter layouts (c->p):
 *   rope       {theta, pos_offset, rank, dims...} (rope_inverse: the same,
 *              built with iattr {pos_offset, 1} through rlx_op_node)
 *   attention  {B, H, Sq, Sk, D, Dv, mask kind, window, scale * 1000 (<= 0:
 *               default 1/sqrt(D)), variant, bias rank, bias dims...}
 * Attention variants: PADDING 0 = mask that drops some keys of some
 * batches, 2 = mask with batch 1 fully masked; BIAS 0 = uniform bias, 1 = some entries -inf,
 * 2 = like 1 and query row 0 fully -inf (rank-4 bias only).
 * Keep Sk <= 256 (the reference's score row). */
#include <math.h>
#include "op_case.h"

void ref_rope_case(const op_case *c, const op_inputs *in, double *expect);
void ref_rope_inverse_case(const op_case *c, const op_inputs *in, double *expect);
void ref_attention_case(const op_case *c, const op_inputs *in, double *expect);

static rlx_node build_rope(rlx_graph *g, const op_case *c) {
  rlx_node x = rlx_input(g, "x", c->p[2], &c->p[3], RLX_F32);
  return rlx_rope(g, x, (float)c->p[0], c->p[1]);
}

/* rope with inverse = 1 (the op autodiff emits; no typed builder) */
static rlx_node build_rope_inverse(rlx_graph *g, const op_case *c) {
  rlx_node x = rlx_input(g, "x", c->p[2], &c->p[3], RLX_F32);
  float theta = (float)c->p[0];
  return rlx_op_node(g, RLX_OP_ROPE, &x, 1, (int32_t[]){c->p[1], 1}, 2, &theta, 1);
}

static rlx_node build_attention(rlx_graph *g, const op_case *c) {
  int32_t B = c->p[0], H = c->p[1], sq = c->p[2], sk = c->p[3], d = c->p[4], dv = c->p[5];
  int32_t kind = c->p[6];
  int32_t qd[4] = {B, H, sq, d}, kd[4] = {B, H, sk, d}, vd[4] = {B, H, sk, dv};
  rlx_node q = rlx_input(g, "q", 4, qd, RLX_F32);
  rlx_node k = rlx_input(g, "k", 4, kd, RLX_F32);
  rlx_node v = rlx_input(g, "v", 4, vd, RLX_F32);
  rlx_node mask = RLX_NO_NODE;
  if (kind == RLX_MASK_PADDING) {
    int32_t md[2] = {B, sk};
    mask = rlx_input(g, "mask", 2, md, RLX_F32);
  } else if (kind == RLX_MASK_BIAS) {
    mask = rlx_input(g, "bias", c->p[10], &c->p[11], RLX_F32);
  }
  return rlx_attention(g, q, k, v, (rlx_mask_kind)kind, c->p[7], mask, (float)(c->p[8] / 1000.0));
}

/* Padding: batch b % 3 == 0 keeps every key, 1 drops the last two keys,
 * 2 keeps the even keys; kept entries are 1 or -2 (any nonzero keeps).
 * Variant 2 keeps keys j % 3 != 1 in batch 0 and none in batch 1.  Bias:
 * uniform in [-2, 2), with variant >= 1 about a quarter -inf. */
static void fill_attention(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  int32_t sq = c->p[2], sk = c->p[3], kind = c->p[6], variant = c->p[9];
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -1.0f, 1.0f);
  if (k != 3) return;
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

#define ROPE(name, theta, pos, rank, ...) \
  {name, build_rope, ref_rope_case, NULL, {theta, pos, rank, __VA_ARGS__}, 0, 0, 0}
#define ROPE_INV(name, theta, pos, rank, ...) \
  {name, build_rope_inverse, ref_rope_inverse_case, NULL, {theta, pos, rank, __VA_ARGS__}, 0, 0, 0}
#define ATTN(name, B, H, sq, sk, d, dv, kind, window, scale, variant, ...)                                 \
  {name, build_attention, ref_attention_case, fill_attention,                                              \
   {B, H, sq, sk, d, dv, kind, window, scale, variant, __VA_ARGS__}, 0, 0, 0}
#define NONE RLX_MASK_NONE
#define CAUSAL RLX_MASK_CAUSAL
#define SLIDING RLX_MASK_SLIDING
#define PADDING RLX_MASK_PADDING
#define BIAS RLX_MASK_BIAS

const op_case rlx_cases_seq[] = {
    ROPE("rope_theta10000_pos0_2x3x5x8", 10000, 0, 4, 2, 3, 5, 8),
    ROPE("rope_theta500_pos5_3x7x6", 500, 5, 3, 3, 7, 6),
    ROPE("rope_theta10000_pos5_5x2", 10000, 5, 2, 5, 2),
    ROPE("rope_theta500_pos0_odd_half_2x3x9x10", 500, 0, 4, 2, 3, 9, 10),
    ROPE("rope_theta10000_pos4099_2x1x3x16", 10000, 4099, 4, 2, 1, 3, 16),
    ROPE("rope_theta500_pos100000_s1_1x4", 500, 100000, 2, 1, 4),
    ROPE("rope_theta10000_pos5_odd_s_1x2x7x34", 10000, 5, 4, 1, 2, 7, 34),
    /* 70 positions: crosses the table's exact re-syncs every 32 positions */
    ROPE("rope_theta10000_pos1000_long_s_2x70x8", 10000, 1000, 3, 2, 70, 8),
    ROPE("rope_theta500_pos0_wide_d_1x3x36", 500, 0, 3, 1, 3, 36),
    /* inverse rotation (iattr {pos_offset, 1}) */
    ROPE_INV("rope_inverse_theta10000_pos0_2x3x5x8", 10000, 0, 4, 2, 3, 5, 8),
    ROPE_INV("rope_inverse_theta500_pos5_odd_half_3x7x6", 500, 5, 3, 3, 7, 6),
    ROPE_INV("rope_inverse_theta10000_pos3_d2_1x4x2", 10000, 3, 3, 1, 4, 2),
    ROPE_INV("rope_inverse_theta10000_pos4099_2x1x3x16", 10000, 4099, 4, 2, 1, 3, 16),
    ROPE_INV("rope_inverse_theta10000_pos1000_long_s_2x70x18", 10000, 1000, 3, 2, 70, 18),
    ROPE_INV("rope_inverse_theta500_pos100000_s1_1x4", 500, 100000, 2, 1, 4),

    /* no mask; D != Dv; explicit and default scales */
    ATTN("attention_none_sq5_sk5", 2, 3, 5, 5, 8, 8, NONE, 0, 0, 0, 0),
    ATTN("attention_none_sq3_sk7_d5_dv7", 2, 3, 3, 7, 5, 7, NONE, 0, 0, 0, 0),
    ATTN("attention_none_scale0.3_sq4_sk6", 2, 3, 4, 6, 6, 3, NONE, 0, 300, 0, 0),
    ATTN("attention_none_negative_scale_default_sq2_sk5", 2, 3, 2, 5, 9, 4, NONE, 0, -500, 0, 0),
    /* causal */
    ATTN("attention_causal_sq5_sk5_d4_dv6", 2, 3, 5, 5, 4, 6, CAUSAL, 0, 0, 0, 0),
    ATTN("attention_causal_sq3_sk7_d6_dv5", 2, 3, 3, 7, 6, 5, CAUSAL, 0, 0, 0, 0),
    ATTN("attention_causal_decode_sq1_sk9", 2, 3, 1, 9, 8, 8, CAUSAL, 0, 0, 0, 0),
    ATTN("attention_causal_sq6_sk4_first_rows_zero", 2, 3, 6, 4, 5, 3, CAUSAL, 0, 0, 0, 0),
    ATTN("attention_sliding_w2_sq6_sk4", 2, 3, 6, 4, 5, 3, SLIDING, 2, 0, 0, 0),
    ATTN("attention_causal_long_1x2x67x67_d33", 1, 2, 67, 67, 33, 17, CAUSAL, 0, 0, 0, 0),
    /* longer rows: 4-query blocks whose key ranges start past the first 8-key tile */
    ATTN("attention_causal_sq5_sk23_d7_dv9", 2, 3, 5, 23, 7, 9, CAUSAL, 0, 0, 0, 0),
    ATTN("attention_sliding_w5_sq37_sk37_d12_dv9", 2, 3, 37, 37, 12, 9, SLIDING, 5, 0, 0, 0),
    ATTN("attention_sliding_w11_sq9_sk30_d8_dv16", 2, 3, 9, 30, 8, 16, SLIDING, 11, 0, 0, 0),
    ATTN("attention_padding_sq9_sk19_d5_dv11", 3, 2, 9, 19, 5, 11, PADDING, 0, 0, 0, 0),
    ATTN("attention_bias_neg_inf_sq10_sk21", 2, 3, 10, 21, 6, 8, BIAS, 0, 0, 1, 4, 2, 3, 10, 21),
    /* sliding window */
    ATTN("attention_sliding_w1_sq6_sk6", 2, 3, 6, 6, 5, 7, SLIDING, 1, 0, 0, 0),
    ATTN("attention_sliding_w3_sq6_sk6", 2, 3, 6, 6, 5, 7, SLIDING, 3, 0, 0, 0),
    ATTN("attention_sliding_w1_sq3_sk7", 2, 3, 3, 7, 4, 6, SLIDING, 1, 0, 0, 0),
    ATTN("attention_sliding_w3_sq3_sk7", 2, 3, 3, 7, 4, 6, SLIDING, 3, 0, 0, 0),
    ATTN("attention_sliding_w20_is_causal_sq4_sk4", 2, 3, 4, 4, 3, 5, SLIDING, 20, 0, 0, 0),
    /* padding: some keys of some batches; all keys of one batch (zeros) */
    ATTN("attention_padding_B3_sq5_sk5", 3, 3, 5, 5, 6, 4, PADDING, 0, 0, 0, 0),
    ATTN("attention_padding_sq3_sk7", 2, 3, 3, 7, 5, 8, PADDING, 0, 0, 0, 0),
    ATTN("attention_padding_batch_fully_masked_sq4_sk6", 2, 3, 4, 6, 4, 5, PADDING, 0, 0, 2, 0),
    /* additive bias, full and broadcast */
    ATTN("attention_bias_BHSqSk_sq5_sk5", 2, 3, 5, 5, 6, 6, BIAS, 0, 0, 0, 4, 2, 3, 5, 5),
    ATTN("attention_bias_11SqSk_sq3_sk7", 2, 3, 3, 7, 5, 4, BIAS, 0, 0, 0, 4, 1, 1, 3, 7),
    ATTN("attention_bias_SqSk_rank2_sq4_sk6", 2, 3, 4, 6, 3, 5, BIAS, 0, 0, 0, 2, 4, 6),
    ATTN("attention_bias_B11Sk_sq3_sk7", 2, 3, 3, 7, 4, 4, BIAS, 0, 0, 0, 4, 2, 1, 1, 7),
    ATTN("attention_bias_1H1Sk_scale0.5_sq2_sk5", 2, 3, 2, 5, 4, 3, BIAS, 0, 500, 0, 4, 1, 3, 1, 5),
    ATTN("attention_bias_neg_inf_BHSqSk_sq5_sk5", 2, 3, 5, 5, 6, 6, BIAS, 0, 0, 1, 4, 2, 3, 5, 5),
    /* a bias broadcast over keys only matters where it is -inf (whole rows) */
    ATTN("attention_bias_per_query_neg_inf_BHSq1_sq5_sk6", 2, 3, 5, 6, 4, 3, BIAS, 0, 0, 1, 4, 2, 3, 5, 1),
    ATTN("attention_bias_row_all_neg_inf_11SqSk_sq3_sk7", 2, 3, 3, 7, 5, 4, BIAS, 0, 0, 2, 4, 1, 1, 3, 7),
};
const int rlx_n_cases_seq = sizeof rlx_cases_seq / sizeof rlx_cases_seq[0];
