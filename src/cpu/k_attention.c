/* k_attention.c - scaled dot-product attention with causal, sliding-window,
 * padding and additive-bias masks.
 *
 * For every query row the kernel scores the keys it may see (a contiguous
 * range [j_lo, j_hi) for causal/sliding masks, all keys otherwise), adds the
 * padding/bias mask, takes a numerically stable softmax (row max first, sum
 * in double) and accumulates the probability-weighted rows of v.  The score
 * row lives in scratch.
 *
 * A query row whose keys are all masked (an empty causal/sliding range, an
 * all-zero padding row, or a bias of -inf everywhere) outputs zeros rather
 * than NaN.
 *
 * The loops are written for auto-vectorization (a multi-accumulator dot for
 * q.k, an axpy over v rows for p.v) rather than calling rlx_gemm: the score
 * buffer lives in the same scratch rlx_gemm would use for packing. */
#include <math.h>
#include <string.h>
#include "kernels.h"

typedef struct {
  int32_t B, H, Sq, Sk, D, Dv;
  int32_t kind, window;
  float scale;
  const float *pad;         /* padding mask [B, Sk] (or NULL) */
  const float *bias;        /* additive bias (or NULL) */
  size_t bias_stride[4];    /* its strides over [B, H, Sq, Sk] */
} attn_plan;

static float attn_dot(const float *a, const float *b, int32_t n) {
  float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; i++) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

static int attn_pad_keep(const attn_plan *p, int32_t b, int32_t j) {
  return p->pad[(size_t)b * (size_t)p->Sk + (size_t)j] != 0.0f;
}

/* Keys that query i may see before padding/bias: [*lo, *hi). */
static void attn_key_range(const attn_plan *p, int32_t i, int32_t *lo, int32_t *hi) {
  int64_t diag = (int64_t)i + p->Sk - p->Sq; /* last key query i sees */
  int64_t l = 0, h = p->Sk;
  if (p->kind == RLX_MASK_CAUSAL || p->kind == RLX_MASK_SLIDING) {
    if (diag + 1 < h) h = diag + 1;
    if (p->kind == RLX_MASK_SLIDING && diag - p->window + 1 > l) l = diag - p->window + 1;
  }
  if (h < l) h = l;
  *lo = (int32_t)l;
  *hi = (int32_t)(h < 0 ? 0 : h);
  if (*lo > *hi) *lo = *hi;
}

/* One query row: y[Dv] = softmax(scores) . v over the visible keys. */
static void attn_row(const attn_plan *p, int32_t b, int32_t h, int32_t i, const float *qi, const float *kbh,
                     const float *vbh, float *score, float *y) {
  for (int32_t e = 0; e < p->Dv; e++) y[e] = 0.0f;
  int32_t lo, hi;
  attn_key_range(p, i, &lo, &hi);
  float m = -INFINITY;
  const float *bias_row = NULL;
  if (p->bias)
    bias_row = p->bias + (size_t)b * p->bias_stride[0] + (size_t)h * p->bias_stride[1] +
               (size_t)i * p->bias_stride[2];
  for (int32_t j = lo; j < hi; j++) {
    float s;
    if (p->pad && !attn_pad_keep(p, b, j)) {
      score[j] = -INFINITY;
      continue;
    }
    s = attn_dot(qi, kbh + (size_t)j * p->D, p->D) * p->scale;
    if (bias_row) s += bias_row[(size_t)j * p->bias_stride[3]];
    score[j] = s;
    m = s > m ? s : m;
  }
  if (!(m > -INFINITY)) return; /* nothing visible (or NaN max): zeros */
  double sum = 0.0;
  for (int32_t j = lo; j < hi; j++) {
    float e = expf(score[j] - m);
    score[j] = e;
    sum += e;
  }
  for (int32_t j = lo; j < hi; j++) {
    float pj = score[j];
    if (pj == 0.0f) continue; /* masked keys never touch y, even if v is inf there */
    const float *vj = vbh + (size_t)j * p->Dv;
    for (int32_t e = 0; e < p->Dv; e++) y[e] += pj * vj[e];
  }
  float inv = (float)(1.0 / sum);
  for (int32_t e = 0; e < p->Dv; e++) y[e] *= inv;
}

/* q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv] (, mask) -> y[B,H,Sq,Dv];
 * iattr = {mask kind, window}, fattr[0] = scale (<= 0: 1/sqrt(D));
 * mask: PADDING [B,Sk] nonzero = keep, BIAS additive, broadcast to [B,H,Sq,Sk] */
rlx_status rlx_cpu_attention(const rlx_kargs *a) {
  const rlx_shape *qs = &a->in_node[0]->shape, *ks = &a->in_node[1]->shape, *vs = &a->in_node[2]->shape;
  attn_plan p;
  memset(&p, 0, sizeof p);
  p.B = qs->dims[0];
  p.H = qs->dims[1];
  p.Sq = qs->dims[2];
  p.D = qs->dims[3];
  p.Sk = ks->dims[2];
  p.Dv = vs->dims[3];
  p.kind = a->node->iattr[0];
  p.window = a->node->iattr[1];
  p.scale = a->node->fattr[0] > 0.0f ? a->node->fattr[0] : (float)(1.0 / sqrt((double)p.D));
  if (a->node->n_inputs > 3 && p.kind == RLX_MASK_PADDING) {
    p.pad = a->in[3];
  } else if (a->node->n_inputs > 3 && p.kind == RLX_MASK_BIAS) {
    rlx_shape full = {4, {p.B, p.H, p.Sq, p.Sk}};
    rlx_broadcast_strides(&a->in_node[3]->shape, &full, p.bias_stride);
    p.bias = a->in[3];
  }

  float *score = (float *)rlx_scratch_get(a->scratch, (size_t)p.Sk * sizeof(float));
  if (!score) return rlx_error(RLX_ERR_NO_MEMORY, "attention: no memory for a %d-key score row", p.Sk);

  float *y = a->out;
  const float *q = a->in[0], *kbh = a->in[1], *vbh = a->in[2];
  size_t k_step = (size_t)p.Sk * (size_t)p.D, v_step = (size_t)p.Sk * (size_t)p.Dv;
  for (int32_t b = 0; b < p.B; b++) {
    for (int32_t h = 0; h < p.H; h++, kbh += k_step, vbh += v_step) {
      for (int32_t i = 0; i < p.Sq; i++, q += p.D, y += p.Dv) attn_row(&p, b, h, i, q, kbh, vbh, score, y);
    }
  }
  return RLX_OK;
}
