/* k_attention.c - scaled dot-product attention with causal, sliding-window,
 * padding and additive-bias masks.
 *
 * Per (batch, head) the keys are transposed once into scratch (kt[D][Sk8],
 * Sk8 = Sk rounded up to 8, zero padded).  Queries then go in blocks of 4
 * rows (single rows for the remainder): the block's scores against the keys
 * any of its rows may see come from a 4 x 8 register tile over D, each row
 * gets its mask, a numerically stable softmax (row max first, exp sum in
 * double) and the probabilities are multiplied into v with another 4 x 8
 * tile.  The fixed-width inner loops vectorize at -O2 without fast-math.
 *
 * Causal and sliding masks only narrow each row's key range [lo, hi);
 * padding and bias masks apply inside it.  A query row whose keys are all
 * masked (an empty causal/sliding range, an all-zero padding row, or a bias
 * of -inf everywhere) outputs zeros rather than NaN.
 *
 * rlx_gemm would be faster for long sequences, but the score buffer lives in
 * the same scratch that rlx_gemm uses for its packing buffers.
 *
 * The (batch, head) pairs are spread over the thread pool (src/core/pool.h),
 * each range with its own key block and scores. */
#include <math.h>
#include <string.h>
#include "../core/pool.h"
#include "kernels.h"
#include "seq_shared.h"
#include "row_math.h"

/* The tiles must inline into their callers, where the row count is a
 * constant, for the accumulators to live in registers.  clang (the wasm
 * build) needs to be told; gcc inlines them itself, and forcing it there
 * inlines them too early and costs the p.v tile its vectorization. */
#if defined(__clang__)
#define ATTN_TILE static inline __attribute__((always_inline))
#else
#define ATTN_TILE static inline
#endif

#define QB 4 /* query rows per block */
#define KW 8 /* keys (q.k) or value columns (p.v) per register tile */

typedef struct {
  int32_t Sq, Sk, D, Dv;
  size_t sk8;            /* Sk rounded up to KW: row length of kt and of the scores */
  int32_t kind, window;
  const float *pad;      /* padding mask row of this batch [Sk] (or NULL) */
  const float *bias;     /* bias at (b, h, 0, 0) (or NULL) */
  size_t bias_si, bias_sj; /* its strides along Sq and Sk */
} attn_head;

/* Keys that query i may see before padding/bias: [*lo, *hi), lo <= hi. */
static void attn_key_range(const attn_head *p, int32_t i, int32_t *lo, int32_t *hi) {
  rlx_attn_key_range(p->kind, p->window, p->Sq, p->Sk, i, lo, hi);
}

/* s[r][j0 + l] = sum_d qs[r][d] * kt[d][j0 + l] for r < nq, l < KW. */
ATTN_TILE void attn_qk_tile(int nq, const float *qs, int32_t D, const float *kt, size_t sk8, size_t j0,
                            float *s) {
  float acc[QB][KW] = {{0.0f}};
  for (int32_t d = 0; d < D; d++) {
    const float *k = kt + (size_t)d * sk8 + j0;
#pragma GCC unroll 4
    for (int r = 0; r < nq; r++) {
      float a = qs[(size_t)r * D + d];
#pragma GCC unroll 8
      for (int l = 0; l < KW; l++) acc[r][l] += a * k[l];
    }
  }
  for (int r = 0; r < nq; r++)
    for (int l = 0; l < KW; l++) s[(size_t)r * sk8 + j0 + l] = acc[r][l];
}

/* y[r][e0 + l] = inv[r] * sum_{j0 <= j < j1} p[r][j] * v[j][e0 + l]. */
ATTN_TILE void attn_pv_tile(int nq, const float *p, size_t sk8, const float *v, int32_t Dv, int32_t j0,
                            int32_t j1, int32_t e0, const float *inv, float *const *y) {
  float acc[QB][KW] = {{0.0f}};
  for (int32_t j = j0; j < j1; j++) {
    const float *vj = v + (size_t)j * Dv + e0;
#pragma GCC unroll 4
    for (int r = 0; r < nq; r++) {
      float pr = p[(size_t)r * sk8 + j];
#pragma GCC unroll 8
      for (int l = 0; l < KW; l++) acc[r][l] += pr * vj[l];
    }
  }
  for (int r = 0; r < nq; r++)
    for (int l = 0; l < KW; l++) y[r][e0 + l] = acc[r][l] * inv[r];
}

/* Turns row i's scores s[lo, hi) into probabilities (masked keys 0) and
 * zeros s[ulo, uhi) outside [lo, hi).  Returns 1 / sum, 0 when no key is
 * visible, NaN when the scores are NaN. */
static float attn_row_softmax(const attn_head *p, int32_t i, float *s, int32_t ulo, int32_t uhi) {
  int32_t lo, hi;
  attn_key_range(p, i, &lo, &hi);
  if (p->pad)
    for (int32_t j = lo; j < hi; j++)
      if (p->pad[j] == 0.0f) s[j] = -INFINITY;
  if (p->bias) {
    const float *b = p->bias + (size_t)i * p->bias_si;
    for (int32_t j = lo; j < hi; j++) s[j] += b[(size_t)j * p->bias_sj];
  }
  for (int32_t j = ulo; j < lo; j++) s[j] = 0.0f;
  for (int32_t j = hi; j < uhi; j++) s[j] = 0.0f;
  float m = rlx_cpu_row_max(s + lo, (size_t)(hi - lo)); /* skips NaN */
  if (!(m > -INFINITY)) { /* nothing visible, unless NaNs hide there */
    for (int32_t j = lo; j < hi; j++)
      if (s[j] != s[j]) return NAN; /* keep NaN visible (e.g. poisoned memory) */
    for (int32_t j = lo; j < hi; j++) s[j] = 0.0f;
    return 0.0f;
  }
  double sum = rlx_cpu_exp_shift_sum(s + lo, m, s + lo, (size_t)(hi - lo));
  return (float)(1.0 / sum);
}

/* Rows [i0, i0 + nq) of one head (nq is QB or 1): q rows at q, outputs at y. */
static void attn_block(int nq, const attn_head *p, int32_t i0, const float *q, float scale, const float *kt,
                       const float *v, float *qs, float *s, float *y) {
  /* key ranges only move forward with i: the block's union is [ulo, uhi) */
  int32_t ulo, uhi, first_hi, last_lo;
  attn_key_range(p, i0, &ulo, &first_hi);
  attn_key_range(p, i0 + nq - 1, &last_lo, &uhi);
  float *rows[QB];
  float inv[QB];
  for (int r = 0; r < nq; r++) rows[r] = y + (size_t)r * p->Dv;
  if (uhi <= ulo) { /* every row of the block sees nothing */
    memset(y, 0, sizeof(float) * (size_t)nq * (size_t)p->Dv);
    return;
  }
  for (size_t t = 0; t < (size_t)nq * (size_t)p->D; t++) qs[t] = q[t] * scale;
  size_t c_lo = (size_t)ulo & ~(size_t)(KW - 1);
  /* constant row counts let the compiler keep the tiles in registers */
  for (size_t j0 = c_lo; j0 < (size_t)uhi; j0 += KW) {
    if (nq == QB)
      attn_qk_tile(QB, qs, p->D, kt, p->sk8, j0, s);
    else
      attn_qk_tile(1, qs, p->D, kt, p->sk8, j0, s);
  }
  for (int r = 0; r < nq; r++) inv[r] = attn_row_softmax(p, i0 + r, s + (size_t)r * p->sk8, ulo, uhi);
  int32_t e0 = 0;
  for (; e0 + KW <= p->Dv; e0 += KW) {
    if (nq == QB)
      attn_pv_tile(QB, s, p->sk8, v, p->Dv, ulo, uhi, e0, inv, rows);
    else
      attn_pv_tile(1, s, p->sk8, v, p->Dv, ulo, uhi, e0, inv, rows);
  }
  for (; e0 < p->Dv; e0++)
    for (int r = 0; r < nq; r++) {
      float acc = 0.0f;
      for (int32_t j = ulo; j < uhi; j++) acc += s[(size_t)r * p->sk8 + j] * v[(size_t)j * p->Dv + e0];
      rows[r][e0] = acc * inv[r];
    }
  for (int r = 0; r < nq; r++)
    if (inv[r] == 0.0f) memset(rows[r], 0, sizeof(float) * (size_t)p->Dv);
}

/* The heads' loop: the shared head description, the tensors, the mask. */
typedef struct {
  attn_head *p;
  const float *q, *k, *v, *mask;
  float *y, scale;
  int32_t H;
  const size_t *bias_stride; /* the mask's, over [B, H, Sq, Sk] */
  int failed;
} attn_heads;

/* (batch, head) pairs [b0, e) of the B * H, pair b * H + h, with the
 * transposed keys, scores and a block of q rows in ws. */
static void attn_head_range(void *ctx, size_t b0, size_t e, rlx_scratch *ws) {
  attn_heads *l = ctx;
  /* each range its own copy (pad and bias change per head); threadless
   * builds change the kernel's */
#if RLX_THREADED
  attn_head own = *l->p, *p = &own;
#else
  attn_head *p = l->p;
#endif
  size_t kt_floats = (size_t)p->D * p->sk8, s_floats = (size_t)QB * p->sk8, qs_floats = (size_t)QB * p->D;
  float *kt = (float *)rlx_scratch_get(ws, (kt_floats + s_floats + qs_floats) * sizeof(float));
  if (!kt) {
    rlx_task_failed(&l->failed, 1);
    return;
  }
  float *s = kt + kt_floats, *qs = s + s_floats;
  size_t q_head = (size_t)p->Sq * p->D, k_head = (size_t)p->Sk * p->D, v_head = (size_t)p->Sk * p->Dv;
  size_t y_head = (size_t)p->Sq * p->Dv;
  const float *q = l->q + b0 * q_head, *k = l->k + b0 * k_head, *v = l->v + b0 * v_head;
  float *y = l->y + b0 * y_head;
  for (size_t bh = b0; bh < e; bh++, q += q_head, k += k_head, v += v_head, y += y_head) {
    const size_t b = bh / (size_t)l->H, h = bh % (size_t)l->H;
    if (l->mask && p->kind == RLX_MASK_PADDING) p->pad = l->mask + b * p->Sk;
    if (l->mask && p->kind == RLX_MASK_BIAS) p->bias = l->mask + b * l->bias_stride[0] + h * l->bias_stride[1];
    for (int32_t d = 0; d < p->D; d++) {
      float *row = kt + (size_t)d * p->sk8;
      for (int32_t j = 0; j < p->Sk; j++) row[j] = k[(size_t)j * p->D + d];
      for (size_t j = (size_t)p->Sk; j < p->sk8; j++) row[j] = 0.0f;
    }
    int32_t i = 0;
    for (; i + QB <= p->Sq; i += QB)
      attn_block(QB, p, i, q + (size_t)i * p->D, l->scale, kt, v, qs, s, y + (size_t)i * p->Dv);
    for (; i < p->Sq; i++) attn_block(1, p, i, q + (size_t)i * p->D, l->scale, kt, v, qs, s, y + (size_t)i * p->Dv);
  }
}

/* q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv] (, mask) -> y[B,H,Sq,Dv];
 * attributes mask, window, scale (<= 0: 1/sqrt(D));
 * mask: PADDING [B,Sk] nonzero = keep, BIAS additive, broadcast to [B,H,Sq,Sk] */
rlx_status rlx_cpu_attention(const rlx_kargs *a) {
  const rlx_shape *qshape = &a->in_node[0]->shape;
  int32_t B = qshape->dims[0], H = qshape->dims[1];
  attn_head p;
  memset(&p, 0, sizeof p);
  p.Sq = qshape->dims[2];
  p.D = qshape->dims[3];
  p.Sk = a->in_node[1]->shape.dims[2];
  p.Dv = a->in_node[2]->shape.dims[3];
  p.sk8 = ((size_t)p.Sk + KW - 1) / KW * KW;
  p.kind = ATTR_I(a->node, ATTENTION, MASK);
  p.window = ATTR_I(a->node, ATTENTION, WINDOW);
  float scale = ATTR_F(a->node, ATTENTION, SCALE) > 0.0f ? ATTR_F(a->node, ATTENTION, SCALE) : (float)(1.0 / sqrt((double)p.D));
  const float *mask = a->node->n_inputs > 3 ? a->in[3] : NULL;
  size_t bias_stride[4] = {0, 0, 0, 0};
  if (mask && p.kind == RLX_MASK_BIAS) {
    rlx_shape scores = {4, {B, H, p.Sq, p.Sk}};
    rlx_broadcast_strides(&a->in_node[3]->shape, &scores, bias_stride);
    p.bias_si = bias_stride[2];
    p.bias_sj = bias_stride[3];
  }

  attn_heads l = {&p, a->in[0], a->in[1], a->in[2], mask, a->out, scale, H, bias_stride, 0};
  const size_t macs = (size_t)p.Sq * p.Sk * (size_t)(p.D + p.Dv); /* per head */
  rlx_parallel_for((size_t)B * H, 1, macs, attn_head_range, &l, a->scratch);
  if (l.failed) return rlx_error(RLX_ERR_NO_MEMORY, "attention: no memory for a %d x %d key block", p.D, p.Sk);
  return RLX_OK;
}
