/* cases_fused.c - op cases for the fused ops, built directly with
 * rlx_op_node (references in ref_fused.c).  Parameter layouts (c->p):
 *   fused_matmul     {batch (0: none), M, K, N, trans_a, trans_b, act, bias
 *                    mode, mul mode, b batched}; bias modes 0 none, 1 [N],
 *                    2 [.., M, N], 3 [M, 1], 4 [1]; mul modes 0 none,
 *                    1 [.., M, N], 2 [N]
 *   fused_attention  {B (0: rank-2 x), S, E, H, Dh, Eo, mask kind, window,
 *                    packed, rope, pos_offset, inverse, scale * 1000 (<= 0:
 *                    1/sqrt(Dh)), bias mode, theta}; bias modes 0
 *                    [B, H, S, S], 1 [S, S], 2 [1, H, 1, S] */
#include <math.h>
#include "ref_fused.h"

static rlx_node build_fused_matmul(rlx_graph *g, const op_case *c) {
  int32_t batch = c->p[0], M = c->p[1], K = c->p[2], N = c->p[3], ta = c->p[4], tb = c->p[5];
  int32_t bias_mode = c->p[7], mul_mode = c->p[8], b_batched = c->p[9];
  int32_t ad[3], bd[3], r = 0;
  if (batch) ad[r] = batch, bd[r] = batch, r++;
  ad[r] = ta ? K : M, ad[r + 1] = ta ? M : K;
  bd[r] = tb ? N : K, bd[r + 1] = tb ? K : N;
  rlx_node in[4];
  int32_t n = 0;
  in[n++] = rlx_input(g, "a", r + 2, ad, RLX_F32);
  in[n++] = b_batched ? rlx_input(g, "b", r + 2, bd, RLX_F32) : rlx_input(g, "b", 2, bd + r, RLX_F32);
  int32_t od[3] = {batch, M, N};
  const int32_t *full = batch ? od : od + 1;
  if (bias_mode == 1) in[n++] = rlx_input(g, "bias", 1, &N, RLX_F32);
  if (bias_mode == 2) in[n++] = rlx_input(g, "bias", r + 2, full, RLX_F32);
  if (bias_mode == 3) in[n++] = rlx_input(g, "bias", 2, (const int32_t[]){M, 1}, RLX_F32);
  if (bias_mode == 4) in[n++] = rlx_input(g, "bias", 1, (const int32_t[]){1}, RLX_F32);
  if (mul_mode == 1) in[n++] = rlx_input(g, "mul", r + 2, full, RLX_F32);
  if (mul_mode == 2) in[n++] = rlx_input(g, "mul", 1, &N, RLX_F32);
  int32_t at[5] = {ta, tb, c->p[6], bias_mode != 0, mul_mode != 0};
  return rlx_op_node(g, RLX_OP_FUSED_MATMUL, in, n, at, 5, NULL, 0);
}

static rlx_node build_fused_attention(rlx_graph *g, const op_case *c) {
  int32_t B = c->p[0], S = c->p[1], E = c->p[2], H = c->p[3], Dh = c->p[4], Eo = c->p[5];
  int32_t kind = c->p[6], packed = c->p[8], HD = H * Dh, bias_mode = c->p[13];
  int32_t xd[3] = {B, S, E};
  rlx_node in[6];
  int32_t n = 0;
  in[n++] = B ? rlx_input(g, "x", 3, xd, RLX_F32) : rlx_input(g, "x", 2, xd + 1, RLX_F32);
  if (packed) {
    in[n++] = rlx_input(g, "wqkv", 2, (const int32_t[]){E, 3 * HD}, RLX_F32);
  } else {
    const char *names[3] = {"wq", "wk", "wv"};
    for (int t = 0; t < 3; t++) in[n++] = rlx_input(g, names[t], 2, (const int32_t[]){E, HD}, RLX_F32);
  }
  in[n++] = rlx_input(g, "wo", 2, (const int32_t[]){HD, Eo}, RLX_F32);
  int32_t Bm = B ? B : 1;
  if (kind == RLX_MASK_PADDING) in[n++] = rlx_input(g, "mask", 2, (const int32_t[]){Bm, S}, RLX_F32);
  if (kind == RLX_MASK_BIAS) {
    if (bias_mode == 0) in[n++] = rlx_input(g, "bias", 4, (const int32_t[]){Bm, H, S, S}, RLX_F32);
    if (bias_mode == 1) in[n++] = rlx_input(g, "bias", 2, (const int32_t[]){S, S}, RLX_F32);
    if (bias_mode == 2) in[n++] = rlx_input(g, "bias", 4, (const int32_t[]){1, H, 1, S}, RLX_F32);
  }
  int32_t at[8] = {H, Dh, kind, c->p[7], packed, c->p[9], c->p[10], c->p[11]};
  float ft[2] = {(float)(c->p[12] / 1000.0), (float)c->p[14]};
  return rlx_op_node(g, RLX_OP_FUSED_ATTENTION, in, n, at, 8, ft, 2);
}

/* Padding masks keep keys by a pattern (batch 1 keeps none, so its rows
 * give zeros); biases are uniform in [-2, 2) with some -inf. */
static void fill_fused_attention(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  int32_t S = c->p[1], kind = c->p[6], mask_k = c->p[8] ? 3 : 5;
  float range = k == 0 ? 1.0f : 0.5f; /* weights a bit smaller than x */
  for (size_t i = 0; i < n; i++) data[i] = opcase_uniform(seed, i, -range, range);
  if (k != mask_k) return;
  if (kind == RLX_MASK_PADDING)
    for (size_t i = 0; i < n; i++) {
      int32_t b = (int32_t)(i / (size_t)S), j = (int32_t)(i % (size_t)S);
      int keep = b == 0 ? j % 3 != 1 : b == 1 ? 0 : j < S - 1;
      data[i] = keep ? (j % 2 ? -2.0f : 1.0f) : 0.0f;
    }
  if (kind == RLX_MASK_BIAS)
    for (size_t i = 0; i < n; i++) {
      data[i] = opcase_uniform(seed, i, -2.0f, 2.0f);
      if (opcase_uniform(seed ^ 0x5bd1e995u, i, 0.0f, 1.0f) < 0.2f) data[i] = -INFINITY;
    }
}

#define FMM(name, ...) {name, build_fused_matmul, ref_fused_matmul_case, NULL, {__VA_ARGS__}, 0, 0, 0}
#define FATT(name, ...) \
  {name, build_fused_attention, ref_fused_attention_case, fill_fused_attention, {__VA_ARGS__}, 0, 0, 0}

const op_case rlx_cases_fused[] = {
    /* batch, M, K, N, ta, tb, act, bias, mul, b batched */
    FMM("fused_matmul bias relu", 0, 5, 7, 9, 0, 0, 1, 1, 0, 0),
    FMM("fused_matmul bias gelu", 0, 13, 17, 19, 0, 0, 2, 1, 0, 0),
    FMM("fused_matmul bias silu", 0, 6, 33, 10, 0, 0, 3, 1, 0, 0),
    FMM("fused_matmul relu no bias", 0, 1, 3, 1, 0, 0, 1, 0, 0, 0),
    FMM("fused_matmul full bias (residual)", 0, 9, 16, 24, 0, 0, 0, 2, 0, 0),
    FMM("fused_matmul column bias", 0, 7, 5, 11, 0, 0, 1, 3, 0, 0),
    FMM("fused_matmul scalar bias", 0, 4, 4, 4, 0, 0, 3, 4, 0, 0),
    FMM("fused_matmul silu gate (swiglu)", 0, 10, 12, 21, 0, 0, 3, 0, 1, 0),
    FMM("fused_matmul bias gelu row mul", 0, 3, 8, 5, 0, 0, 2, 1, 2, 0),
    FMM("fused_matmul trans_a", 0, 6, 7, 8, 1, 0, 1, 1, 0, 0),
    FMM("fused_matmul trans_b", 0, 6, 7, 8, 0, 1, 3, 1, 1, 0),
    FMM("fused_matmul batched a", 3, 5, 6, 7, 0, 0, 1, 2, 0, 0),
    FMM("fused_matmul batched a and b", 2, 5, 6, 7, 1, 1, 2, 1, 1, 1),
    FMM("fused_matmul large", 0, 70, 40, 65, 0, 0, 3, 1, 1, 0),
    /* B, S, E, H, Dh, Eo, kind, window, packed, rope, pos, inverse, scale, bias mode, theta */
    FATT("fused_attention causal packed rope", 0, 5, 8, 2, 4, 8, RLX_MASK_CAUSAL, 0, 1, 1, 0, 0, 0, 0, 10000),
    FATT("fused_attention causal split weights", 0, 9, 12, 3, 4, 7, RLX_MASK_CAUSAL, 0, 0, 1, 0, 0, 0, 0, 10000),
    FATT("fused_attention no mask no rope", 0, 6, 7, 3, 3, 5, RLX_MASK_NONE, 0, 1, 0, 0, 0, 0, 0, 10000),
    FATT("fused_attention sliding 3", 0, 11, 8, 2, 4, 6, RLX_MASK_SLIDING, 3, 1, 1, 0, 0, 0, 0, 10000),
    FATT("fused_attention sliding 1", 0, 4, 6, 1, 6, 6, RLX_MASK_SLIDING, 1, 0, 1, 0, 0, 0, 0, 10000),
    FATT("fused_attention rope offset inverse", 0, 7, 6, 2, 2, 4, RLX_MASK_CAUSAL, 0, 1, 1, 5, 1, 500, 0, 100),
    FATT("fused_attention batch 2 causal", 2, 6, 10, 2, 4, 10, RLX_MASK_CAUSAL, 0, 0, 1, 0, 0, 0, 0, 10000),
    FATT("fused_attention padding", 3, 7, 9, 3, 2, 9, RLX_MASK_PADDING, 0, 1, 1, 0, 0, 0, 0, 10000),
    FATT("fused_attention bias full", 2, 5, 8, 2, 4, 8, RLX_MASK_BIAS, 0, 0, 0, 0, 0, 0, 0, 10000),
    FATT("fused_attention bias 2d", 0, 6, 8, 4, 2, 3, RLX_MASK_BIAS, 0, 1, 1, 0, 0, 250, 1, 10000),
    FATT("fused_attention bias per head", 2, 5, 8, 2, 4, 8, RLX_MASK_BIAS, 0, 1, 0, 0, 0, 0, 2, 10000),
    FATT("fused_attention long causal", 0, 70, 8, 2, 4, 8, RLX_MASK_CAUSAL, 0, 1, 1, 0, 0, 0, 0, 10000),
    FATT("fused_attention long sliding", 0, 133, 6, 1, 6, 5, RLX_MASK_SLIDING, 50, 0, 1, 0, 0, 0, 0, 10000),
};
const int rlx_n_cases_fused = sizeof rlx_cases_fused / sizeof rlx_cases_fused[0];
