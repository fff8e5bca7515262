/* k_attention_grad.c - backward of scaled dot-product attention (all mask
 * kinds of k_attention.c): dq, dk and dv packed flat into one output.
 *
 * Softmax rows are independent, so each (batch, head) goes in blocks of up
 * to ATTN_GRAD_ROWS query rows.  A block recomputes its probabilities P
 * (scores -> mask -> softmax, as the forward does) over the union [ulo, uhi)
 * of the key ranges its rows may see (causal and sliding masks only narrow
 * that range), then with five GEMMs:
 *
 *   dV[ulo:uhi] += P^T dY          dP = dY V^T
 *   dS = scale P (dP - rowsum(dP P))
 *   dQ = dS K[ulo:uhi]             dK[ulo:uhi] += dS^T Q
 *
 * P and dS live in scratch (2 x rows x (uhi - ulo) floats); rlx_gemm gets
 * the scratch's tail, reserved up front for the largest product any block
 * makes.  A query row whose keys are all masked (empty range, all-zero
 * padding row, all -inf bias) has P = dS = 0 and contributes nothing; NaN
 * scores give NaN rows as in the forward. */
#include <math.h>
#include <string.h>
#include "kernels.h"
#include "seq_shared.h"
#include "row_math.h"

#define ATTN_GRAD_ROWS 64 /* query rows per block */

typedef struct {
  int32_t Sq, Sk, D, Dv;
  int32_t kind, window;
  float scale;
  const float *pad;        /* padding mask row of this batch [Sk] (or NULL) */
  const float *bias;       /* bias at (b, h, 0, 0) (or NULL) */
  size_t bias_si, bias_sj; /* its strides along Sq and Sk */
} attn_grad_head;

/* Keys that query i may see before padding/bias: [*lo, *hi), lo <= hi; both
 * never decrease with i (seq_shared.h). */
static void key_range(const attn_grad_head *p, int32_t i, int32_t *lo, int32_t *hi) {
  rlx_attn_key_range(p->kind, p->window, p->Sq, p->Sk, i, lo, hi);
}

/* Union [*ulo, *uhi) of the key ranges of rows [i0, i1). */
static void block_range(const attn_grad_head *p, int32_t i0, int32_t i1, int32_t *ulo, int32_t *uhi) {
  int32_t unused;
  key_range(p, i0, ulo, &unused);
  key_range(p, i1 - 1, &unused, uhi);
  if (*uhi < *ulo) *uhi = *ulo;
}

/* Row i's scores s[0, uhi - ulo) (keys ulo...) become probabilities: zero
 * outside the row's range [lo, hi), scaled, masked and softmaxed inside.
 * Returns 0 when no key is visible (the row is then all zeros); NaN scores
 * make the row NaN (returns 1, so dS is NaN too). */
static int row_probs(const attn_grad_head *p, int32_t i, float *s, int32_t ulo, int32_t uhi) {
  int32_t lo, hi;
  key_range(p, i, &lo, &hi);
  for (int32_t j = ulo; j < lo; j++) s[j - ulo] = 0.0f;
  for (int32_t j = hi; j < uhi; j++) s[j - ulo] = 0.0f;
  float *r = s + (lo - ulo);
  size_t n = (size_t)(hi - lo);
  for (size_t j = 0; j < n; j++) r[j] *= p->scale;
  if (p->pad)
    for (size_t j = 0; j < n; j++)
      if (p->pad[(size_t)lo + j] == 0.0f) r[j] = -INFINITY;
  if (p->bias) {
    const float *b = p->bias + (size_t)i * p->bias_si + (size_t)lo * p->bias_sj;
    for (size_t j = 0; j < n; j++) r[j] += b[j * p->bias_sj];
  }
  float m = rlx_cpu_row_max(r, n); /* skips NaN */
  if (!(m > -INFINITY)) {          /* nothing visible, unless NaNs hide there */
    int nan = 0;
    for (size_t j = 0; j < n; j++) nan |= r[j] != r[j];
    for (size_t j = 0; j < n; j++) r[j] = nan ? NAN : 0.0f;
    return nan;
  }
  float inv = (float)(1.0 / rlx_cpu_exp_shift_sum(r, m, r, n));
  for (size_t j = 0; j < n; j++) r[j] *= inv;
  return 1;
}

/* ds[j] = scale * P[j] * (dP[j] - sum_k dP[k] P[k]) over the row's range,
 * in place over dP (ds); zero outside it or when the row sees nothing. */
static void row_dscores(const attn_grad_head *p, int32_t i, const float *prob, float *ds, int32_t ulo, int32_t uhi,
                        int visible) {
  int32_t lo, hi;
  key_range(p, i, &lo, &hi);
  if (!visible) lo = hi = ulo;
  for (int32_t j = ulo; j < lo; j++) ds[j - ulo] = 0.0f;
  for (int32_t j = hi; j < uhi; j++) ds[j - ulo] = 0.0f;
  const float *pr = prob + (lo - ulo);
  float *d = ds + (lo - ulo);
  size_t n = (size_t)(hi - lo);
  double acc[8] = {0.0}, dot = 0.0;
  size_t j = 0;
  for (; j + 8 <= n; j += 8)
#pragma GCC unroll 8
    for (int l = 0; l < 8; l++) acc[l] += (double)(d[j + l] * pr[j + l]);
  for (; j < n; j++) dot += (double)(d[j] * pr[j]);
  for (int l = 0; l < 8; l++) dot += acc[l];
  float centre = (float)dot, scale = p->scale;
  for (j = 0; j < n; j++) d[j] = scale * pr[j] * (d[j] - centre);
}

static rlx_gemm_args gemm_args(int32_t M, int32_t N, int32_t K, const float *A, int32_t lda, int32_t trans_a,
                               const float *B, int32_t ldb, int32_t trans_b, float *C, int32_t ldc,
                               int32_t accumulate) {
  rlx_gemm_args g = {M, N, K, A, lda, trans_a, B, ldb, trans_b, C, ldc, accumulate};
  return g;
}

/* The five products of one block of nq rows against w = uhi - ulo keys; with
 * NULL pointers they only describe shapes (for sizing the scratch). */
typedef struct {
  rlx_gemm_args scores, dprob, dv, dq, dk;
} block_gemms;

static block_gemms block_products(const attn_grad_head *p, int32_t nq, int32_t w, const float *q, const float *k,
                                  const float *v, const float *dy, float *prob, float *ds, float *dq, float *dk,
                                  float *dv) {
  block_gemms b;
  int32_t D = p->D, Dv = p->Dv;
  b.scores = gemm_args(nq, w, D, q, D, 0, k, D, 1, prob, w, 0);   /* P = Q K^T */
  b.dprob = gemm_args(nq, w, Dv, dy, Dv, 0, v, Dv, 1, ds, w, 0);  /* dP = dY V^T */
  b.dv = gemm_args(w, Dv, nq, prob, w, 1, dy, Dv, 0, dv, Dv, 1);  /* dV += P^T dY */
  b.dq = gemm_args(nq, D, w, ds, w, 0, k, D, 0, dq, D, 0);        /* dQ = dS K */
  b.dk = gemm_args(w, D, nq, ds, w, 1, q, D, 0, dk, D, 1);        /* dK += dS^T Q */
  return b;
}

/* Largest GEMM workspace any block of a head asks for (the blocks and
 * their key ranges are the same for every head). */
static size_t gemm_bytes_bound(const attn_grad_head *p) {
  size_t most = 0;
  for (int32_t i0 = 0; i0 < p->Sq; i0 += ATTN_GRAD_ROWS) {
    int32_t i1 = i0 + ATTN_GRAD_ROWS < p->Sq ? i0 + ATTN_GRAD_ROWS : p->Sq, ulo, uhi;
    block_range(p, i0, i1, &ulo, &uhi);
    if (uhi == ulo) continue;
    block_gemms b = block_products(p, i1 - i0, uhi - ulo, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    const rlx_gemm_args *all[5] = {&b.scores, &b.dprob, &b.dv, &b.dq, &b.dk};
    for (int t = 0; t < 5; t++) {
      size_t bytes = rlx_gemm_scratch_bytes(all[t]);
      if (bytes > most) most = bytes;
    }
  }
  return most;
}

/* One head: q[Sq,D], k[Sk,D], v[Sk,Dv], dy[Sq,Dv] -> dq[Sq,D], dk[Sk,D], dv[Sk,Dv]. */
static rlx_status head_grad(const attn_grad_head *p, const float *q, const float *k, const float *v, const float *dy,
                            float *dq, float *dk, float *dv, float *prob, float *ds, rlx_scratch *gs) {
  memset(dk, 0, sizeof(float) * (size_t)p->Sk * (size_t)p->D);
  memset(dv, 0, sizeof(float) * (size_t)p->Sk * (size_t)p->Dv);
  for (int32_t i0 = 0; i0 < p->Sq; i0 += ATTN_GRAD_ROWS) {
    int32_t i1 = i0 + ATTN_GRAD_ROWS < p->Sq ? i0 + ATTN_GRAD_ROWS : p->Sq, ulo, uhi;
    int32_t nq = i1 - i0;
    const float *qb = q + (size_t)i0 * p->D, *dyb = dy + (size_t)i0 * p->Dv;
    float *dqb = dq + (size_t)i0 * p->D;
    block_range(p, i0, i1, &ulo, &uhi);
    if (uhi == ulo) { /* no row of the block sees a key */
      memset(dqb, 0, sizeof(float) * (size_t)nq * (size_t)p->D);
      continue;
    }
    int32_t w = uhi - ulo;
    block_gemms b = block_products(p, nq, w, qb, k + (size_t)ulo * p->D, v + (size_t)ulo * p->Dv, dyb, prob, ds, dqb,
                                   dk + (size_t)ulo * p->D, dv + (size_t)ulo * p->Dv);
    rlx_status st = rlx_gemm(&b.scores, gs);
    if (st == RLX_OK) st = rlx_gemm(&b.dprob, gs);
    if (st != RLX_OK) return st;
    for (int32_t r = 0; r < nq; r++) {
      float *pr = prob + (size_t)r * w;
      int visible = row_probs(p, i0 + r, pr, ulo, uhi);
      row_dscores(p, i0 + r, pr, ds + (size_t)r * w, ulo, uhi, visible);
    }
    st = rlx_gemm(&b.dv, gs);
    if (st == RLX_OK) st = rlx_gemm(&b.dq, gs);
    if (st == RLX_OK) st = rlx_gemm(&b.dk, gs);
    if (st != RLX_OK) return st;
  }
  return RLX_OK;
}

/* q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv], dy[B,H,Sq,Dv] (, mask) ->
 * [numel(q) + numel(k) + numel(v)] = dq, dk, dv flat;
 * attributes mask, window, scale (<= 0: 1/sqrt(D));
 * mask: PADDING [B,Sk] nonzero = keep, BIAS additive, broadcast to [B,H,Sq,Sk] */
rlx_status rlx_cpu_attention_grad(const rlx_kargs *a) {
  const rlx_shape *qshape = &a->in_node[0]->shape;
  int32_t B = qshape->dims[0], H = qshape->dims[1];
  attn_grad_head p;
  memset(&p, 0, sizeof p);
  p.Sq = qshape->dims[2];
  p.D = qshape->dims[3];
  p.Sk = a->in_node[1]->shape.dims[2];
  p.Dv = a->in_node[2]->shape.dims[3];
  p.kind = ATTR_I(a->node, ATTENTION, MASK);
  p.window = ATTR_I(a->node, ATTENTION, WINDOW);
  p.scale = ATTR_F(a->node, ATTENTION, SCALE) > 0.0f ? ATTR_F(a->node, ATTENTION, SCALE) : (float)(1.0 / sqrt((double)p.D));
  const float *mask = a->node->n_inputs > 4 ? a->in[4] : NULL;
  size_t bias_stride[4] = {0, 0, 0, 0};
  if (mask && p.kind == RLX_MASK_BIAS) {
    rlx_shape scores = {4, {B, H, p.Sq, p.Sk}};
    rlx_broadcast_strides(&a->in_node[4]->shape, &scores, bias_stride);
    p.bias_si = bias_stride[2];
    p.bias_sj = bias_stride[3];
  }

  /* P and dS for one block, rounded to 64 bytes, then the GEMM workspace */
  int32_t rows = p.Sq < ATTN_GRAD_ROWS ? p.Sq : ATTN_GRAD_ROWS;
  size_t block_floats = ((size_t)rows * (size_t)p.Sk + 15) / 16 * 16;
  size_t own = 2 * block_floats * sizeof(float), gemm_bytes = gemm_bytes_bound(&p);
  float *prob = (float *)rlx_scratch_get(a->scratch, own + gemm_bytes);
  if (!prob)
    return rlx_error(RLX_ERR_NO_MEMORY, "attention_grad: no memory for %d x %d score blocks", (int)rows, (int)p.Sk);
  float *ds = prob + block_floats;
  rlx_scratch gemm_scratch = {(char *)prob + own, gemm_bytes};

  size_t q_head = (size_t)p.Sq * p.D, k_head = (size_t)p.Sk * p.D, v_head = (size_t)p.Sk * p.Dv;
  size_t y_head = (size_t)p.Sq * p.Dv, heads = (size_t)B * (size_t)H;
  const float *q = a->in[0], *k = a->in[1], *v = a->in[2], *dy = a->in[3];
  float *dq = a->out, *dk = dq + heads * q_head, *dv = dk + heads * k_head;
  for (int32_t b = 0; b < B; b++) {
    if (mask && p.kind == RLX_MASK_PADDING) p.pad = mask + (size_t)b * p.Sk;
    for (int32_t h = 0; h < H; h++) {
      if (mask && p.kind == RLX_MASK_BIAS) p.bias = mask + (size_t)b * bias_stride[0] + (size_t)h * bias_stride[1];
      rlx_status st = head_grad(&p, q, k, v, dy, dq, dk, dv, prob, ds, &gemm_scratch);
      if (st != RLX_OK) return st;
      q += q_head, k += k_head, v += v_head, dy += y_head;
      dq += q_head, dk += k_head, dv += v_head;
    }
  }
  return RLX_OK;
}
