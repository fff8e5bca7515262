/* k_fused_attention.c - the attention block as one kernel, made by the
 * compiler from qkv projection -> narrow x3 -> reshape/permute -> RoPE x2 ->
 * attention -> permute/reshape -> output projection:
 *
 *   qkv = x . [Wq | Wk | Wv]            one GEMM (or three into one buffer)
 *   RoPE on the q and k columns         in place, table of seq_shared.h
 *   per (batch, head), blocks of FA_ROWS query rows:
 *     P = softmax(mask(scale q . k^T))  GEMM over the block's key range,
 *                                       exponentials in a vectorized loop
 *     att[rows, head cols] = P . v      GEMM, rows scaled by 1 / sum
 *   y = att . Wo                        one GEMM
 *
 * q, k and v are never transposed: head h of row s is the Dh columns at
 * h Dh of the q, k and v thirds of qkv[rows, 3 H Dh], and the GEMMs read
 * them through their leading dimensions.  Causal and sliding masks narrow
 * each row's key range (the rule of the attention kernel, seq_shared.h);
 * padding and bias masks apply inside it.  A row with no visible key gives
 * zeros, NaN scores give NaN rows, as in k_attention.c.
 *
 * Scratch: qkv, att, one block of scores and the RoPE table, then the GEMM
 * workspace (reserved up front for the largest product, so rlx_gemm never
 * reallocates the scratch that holds the buffers). */
#include <math.h>
#include <string.h>

#include "fast_math.h"
#include "kernels.h"
#include "row_math.h"
#include "seq_shared.h"

#define FA_ROWS 64 /* query rows per block */

typedef struct {
  int32_t B, S, E, H, Dh, HD, Eo; /* x[B, S, E], H heads of Dh (HD = H Dh), y[B, S, Eo] */
  int32_t kind, window;
  float scale;
  const float *pad;          /* padding mask row of this batch [S] (or NULL) */
  const float *bias;         /* bias at (b, h, 0, 0) (or NULL) */
  size_t bias_si, bias_sj;   /* its strides along queries and keys */
} fa_block;

static rlx_gemm_args gemm_args(int32_t M, int32_t N, int32_t K, const float *A, int32_t lda, const float *B,
                               int32_t ldb, int32_t trans_b, float *C, int32_t ldc) {
  rlx_gemm_args g = {M, N, K, A, lda, 0, B, ldb, trans_b, C, ldc, 0};
  return g;
}

/* Union [*ulo, *uhi) of the key ranges of query rows [i0, i1). */
static void block_keys(const fa_block *p, int32_t i0, int32_t i1, int32_t *ulo, int32_t *uhi) {
  int32_t unused;
  rlx_attn_key_range(p->kind, p->window, p->S, p->S, i0, ulo, &unused);
  rlx_attn_key_range(p->kind, p->window, p->S, p->S, i1 - 1, &unused, uhi);
  if (*uhi < *ulo) *uhi = *ulo;
}

/* The products of one block of nq rows against w keys (shapes only when
 * the pointers are NULL): scores = q k^T and out = P v. */
static void block_products(const fa_block *p, int32_t nq, int32_t w, const float *q, const float *k, const float *v,
                           float *prob, float *out, rlx_gemm_args *scores, rlx_gemm_args *pv) {
  int32_t ld = 3 * p->HD;
  *scores = gemm_args(nq, w, p->Dh, q, ld, k, ld, 1, prob, w);
  *pv = gemm_args(nq, p->Dh, w, prob, w, v, ld, 0, out, p->HD);
}

/* Largest GEMM workspace of the whole kernel. */
static size_t gemm_bytes_bound(const fa_block *p, int packed) {
  int32_t rows = p->B * p->S;
  int32_t proj_n = packed ? 3 * p->HD : p->HD;
  rlx_gemm_args proj = gemm_args(rows, proj_n, p->E, NULL, p->E, NULL, proj_n, 0, NULL, 3 * p->HD);
  rlx_gemm_args outp = gemm_args(rows, p->Eo, p->HD, NULL, p->HD, NULL, p->Eo, 0, NULL, p->Eo);
  size_t most = rlx_gemm_scratch_bytes(&proj), b = rlx_gemm_scratch_bytes(&outp);
  if (b > most) most = b;
  for (int32_t i0 = 0; i0 < p->S; i0 += FA_ROWS) {
    int32_t i1 = i0 + FA_ROWS < p->S ? i0 + FA_ROWS : p->S, ulo, uhi;
    block_keys(p, i0, i1, &ulo, &uhi);
    if (uhi == ulo) continue;
    rlx_gemm_args sc, pv;
    block_products(p, i1 - i0, uhi - ulo, NULL, NULL, NULL, NULL, NULL, &sc, &pv);
    if ((b = rlx_gemm_scratch_bytes(&sc)) > most) most = b;
    if ((b = rlx_gemm_scratch_bytes(&pv)) > most) most = b;
  }
  return most;
}

/* row[j] = exp(row[j] - shift) for j < n, returning the sum in double
 * with the lane order of rlx_cpu_exp_shift_sum (the same bits), but with
 * the exponentials in their own loop, which gcc -O2 vectorizes. */
static double exp_shift_row(float *row, float shift, size_t n) {
  RLX_VEC_LOOP(j, n, row[j] = exp_poly(row[j] - shift));
  double acc[8] = {0.0}, sum = 0.0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
#pragma GCC unroll 8
    for (int l = 0; l < 8; l++) acc[l] += row[i + l];
  for (; i < n; i++) sum += row[i];
  for (int l = 0; l < 8; l++) sum += acc[l];
  return sum;
}

/* Row i's scores s[0, uhi - ulo) (keys ulo...) become unnormalized
 * probabilities: zero outside the row's range [lo, hi), masked and
 * exponentiated inside.  Returns 1 / sum, 0 when no key is visible, NaN
 * when the visible scores are NaN. */
static float row_softmax(const fa_block *p, int32_t i, float *s, int32_t ulo, int32_t uhi) {
  int32_t lo, hi;
  rlx_attn_key_range(p->kind, p->window, p->S, p->S, i, &lo, &hi);
  float *row = s - ulo; /* row[j] for key j */
  if (p->pad)
    for (int32_t j = lo; j < hi; j++)
      if (p->pad[j] == 0.0f) row[j] = -INFINITY;
  if (p->bias) {
    const float *bi = p->bias + (size_t)i * p->bias_si;
    for (int32_t j = lo; j < hi; j++) row[j] += bi[(size_t)j * p->bias_sj];
  }
  for (int32_t j = ulo; j < lo; j++) row[j] = 0.0f;
  for (int32_t j = hi; j < uhi; j++) row[j] = 0.0f;
  float m = rlx_cpu_row_max(row + lo, (size_t)(hi - lo)); /* skips NaN */
  if (!(m > -INFINITY)) {
    for (int32_t j = lo; j < hi; j++)
      if (row[j] != row[j]) return NAN;
    for (int32_t j = lo; j < hi; j++) row[j] = 0.0f;
    return 0.0f;
  }
  return (float)(1.0 / exp_shift_row(row + lo, m, (size_t)(hi - lo)));
}

/* Attention of one (batch, head): q, k, v point at its first row's head
 * columns in qkv, out at its columns in att. */
static rlx_status head_attention(const fa_block *p, const float *q, const float *k, const float *v, float *out,
                                 float *prob, rlx_scratch *gs) {
  const size_t ld = 3 * (size_t)p->HD;
  for (int32_t i0 = 0; i0 < p->S; i0 += FA_ROWS) {
    int32_t i1 = i0 + FA_ROWS < p->S ? i0 + FA_ROWS : p->S, nq = i1 - i0, ulo, uhi;
    float *y = out + (size_t)i0 * p->HD;
    block_keys(p, i0, i1, &ulo, &uhi);
    if (uhi == ulo) { /* no row of the block sees a key */
      for (int32_t r = 0; r < nq; r++) memset(y + (size_t)r * p->HD, 0, sizeof(float) * (size_t)p->Dh);
      continue;
    }
    int32_t w = uhi - ulo;
    rlx_gemm_args sc, pv;
    block_products(p, nq, w, q + (size_t)i0 * ld, k + (size_t)ulo * ld, v + (size_t)ulo * ld, prob, y, &sc, &pv);
    rlx_status st = rlx_gemm(&sc, gs);
    if (st != RLX_OK) return st;
    float inv[FA_ROWS];
    for (int32_t r = 0; r < nq; r++) inv[r] = row_softmax(p, i0 + r, prob + (size_t)r * w, ulo, uhi);
    if ((st = rlx_gemm(&pv, gs)) != RLX_OK) return st;
    for (int32_t r = 0; r < nq; r++) {
      float *yr = y + (size_t)r * p->HD, c = inv[r];
      if (c == 0.0f)
        memset(yr, 0, sizeof(float) * (size_t)p->Dh);
      else
        for (int32_t e = 0; e < p->Dh; e++) yr[e] *= c;
    }
  }
  return RLX_OK;
}

static size_t round16(size_t floats) { return (floats + 15) / 16 * 16; }

/* x[(B,) S, E], wqkv[E, 3 H Dh] | wq, wk, wv[E, H Dh], wo[H Dh, Eo][, mask]
 *   -> y[(B,) S, Eo]
 * iattr = {H, Dh, mask kind, window, packed, rope, pos_offset, inverse},
 * fattr = {scale (<= 0: 1/sqrt(Dh)), theta};
 * mask: PADDING [B, S] nonzero = keep, BIAS additive, broadcast to [B, H, S, S] */
rlx_status rlx_cpu_fused_attention(const rlx_kargs *a) {
  const rlx_node_t *nd = a->node;
  const rlx_shape *xs = &a->in_node[0]->shape;
  const int32_t packed = ATTR_I(nd, FUSED_ATTENTION, PACKED), rope = ATTR_I(nd, FUSED_ATTENTION, ROPE), n_w = packed ? 1 : 3;
  fa_block p;
  memset(&p, 0, sizeof p);
  p.B = xs->rank == 3 ? xs->dims[0] : 1;
  p.S = xs->dims[xs->rank - 2];
  p.E = xs->dims[xs->rank - 1];
  p.H = ATTR_I(nd, FUSED_ATTENTION, HEADS);
  p.Dh = ATTR_I(nd, FUSED_ATTENTION, HEAD_DIM);
  p.HD = p.H * p.Dh;
  p.Eo = nd->shape.dims[nd->shape.rank - 1];
  p.kind = ATTR_I(nd, FUSED_ATTENTION, MASK);
  p.window = ATTR_I(nd, FUSED_ATTENTION, WINDOW);
  p.scale = ATTR_F(nd, FUSED_ATTENTION, SCALE) > 0.0f ? ATTR_F(nd, FUSED_ATTENTION, SCALE) : (float)(1.0 / sqrt((double)p.Dh));
  const float *mask = nd->n_inputs > 2 + n_w ? a->in[2 + n_w] : NULL;
  size_t bias_st[4] = {0, 0, 0, 0};
  if (mask && p.kind == RLX_MASK_BIAS) {
    rlx_shape scores = {4, {p.B, p.H, p.S, p.S}};
    rlx_broadcast_strides(&a->in_node[2 + n_w]->shape, &scores, bias_st);
    p.bias_si = bias_st[2];
    p.bias_sj = bias_st[3];
  }

  const size_t rows = (size_t)p.B * (size_t)p.S, ld = 3 * (size_t)p.HD;
  const int32_t blk = p.S < FA_ROWS ? p.S : FA_ROWS;
  const size_t qkv_f = round16(rows * ld), att_f = round16(rows * (size_t)p.HD);
  const size_t prob_f = round16((size_t)blk * (size_t)p.S), table_f = rope ? round16((size_t)p.S * (size_t)p.Dh) : 0;
  const size_t own = (qkv_f + att_f + prob_f + table_f) * sizeof(float), gemm_bytes = gemm_bytes_bound(&p, packed);
  float *qkv = (float *)rlx_scratch_get(a->scratch, own + gemm_bytes);
  if (!qkv)
    return rlx_error(RLX_ERR_NO_MEMORY, "fused_attention: no memory for the %zu x %zu projections", rows, ld);
  float *att = qkv + qkv_f, *prob = att + att_f, *table = prob + prob_f;
  rlx_scratch gs = {(char *)qkv + own, gemm_bytes};

  /* qkv = x . [wq | wk | wv] */
  rlx_status st;
  for (int32_t c = 0; c < n_w; c++) {
    rlx_gemm_args g = gemm_args((int32_t)rows, packed ? (int32_t)ld : p.HD, p.E, a->in[0], p.E, a->in[1 + c],
                                packed ? (int32_t)ld : p.HD, 0, qkv + (size_t)c * p.HD, (int32_t)ld);
    if ((st = rlx_gemm(&g, &gs)) != RLX_OK) return st;
  }
  /* RoPE on the q and k heads, then q scaled */
  if (rope) {
    double sign = ATTR_I(nd, FUSED_ATTENTION, ROPE_INVERSE) ? -1.0 : 1.0;
    size_t half = (size_t)p.Dh / 2;
    rlx_rope_table(table, (size_t)p.S, (size_t)p.Dh, ATTR_F(nd, FUSED_ATTENTION, THETA), (double)ATTR_I(nd, FUSED_ATTENTION, POS_OFFSET), sign);
    for (size_t r = 0; r < rows; r++) {
      const float *cs = table + (r % (size_t)p.S) * (size_t)p.Dh;
      float *row = qkv + r * ld;
      for (int32_t h = 0; h < 2 * p.H; h++) {
        float *head = row + (size_t)h * p.Dh;
        rlx_rope_rotate_inplace(head, head + half, cs, cs + half, half);
      }
    }
  }
  for (size_t r = 0; r < rows; r++) {
    float *q = qkv + r * ld;
    for (int32_t e = 0; e < p.HD; e++) q[e] *= p.scale;
  }
  /* attention per (batch, head) into att[rows, H Dh] */
  for (int32_t b = 0; b < p.B; b++) {
    if (mask && p.kind == RLX_MASK_PADDING) p.pad = mask + (size_t)b * p.S;
    const float *base = qkv + (size_t)b * p.S * ld;
    for (int32_t h = 0; h < p.H; h++) {
      if (mask && p.kind == RLX_MASK_BIAS) p.bias = mask + (size_t)b * bias_st[0] + (size_t)h * bias_st[1];
      size_t col = (size_t)h * p.Dh;
      st = head_attention(&p, base + col, base + p.HD + col, base + 2 * (size_t)p.HD + col,
                          att + (size_t)b * p.S * p.HD + col, prob, &gs);
      if (st != RLX_OK) return st;
    }
  }
  /* y = att . wo */
  rlx_gemm_args g = gemm_args((int32_t)rows, p.Eo, p.HD, att, p.HD, a->in[1 + n_w], p.Eo, 0, a->out, p.Eo);
  return rlx_gemm(&g, &gs);
}
