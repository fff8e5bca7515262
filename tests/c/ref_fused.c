/* ref_fused.c - naive double-precision references for the fused ops
 * (tests/c/cases_fused.c) and the attention-block tests of
 * test_transformer.c: the attention block written out step by step
 * (projections, RoPE with exact cos/sin, masked softmax, output
 * projection), and matmul with its epilogue. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_fused.h"

void ref_attention_block(const ref_attn_block *p, const float *x, const float *wq, const float *wk, const float *wv,
                         int32_t ldw, const float *wo, const float *mask, double *out) {
  const int32_t B = p->B, S = p->S, E = p->E, H = p->H, Dh = p->Dh, HD = H * Dh;
  double *q = calloc((size_t)B * S * HD, sizeof(double)), *k = calloc((size_t)B * S * HD, sizeof(double));
  double *v = calloc((size_t)B * S * HD, sizeof(double)), *att = calloc((size_t)B * S * HD, sizeof(double));
  double *sc = calloc((size_t)S, sizeof(double));
  const double scale = p->scale > 0 ? p->scale : 1.0 / sqrt((double)Dh);
  for (int32_t r = 0; r < B * S; r++)
    for (int32_t c = 0; c < HD; c++) {
      double aq = 0, ak = 0, av = 0;
      for (int32_t e = 0; e < E; e++) {
        double xv = x[(size_t)r * E + e];
        aq += xv * wq[(size_t)e * ldw + c];
        ak += xv * wk[(size_t)e * ldw + c];
        av += xv * wv[(size_t)e * ldw + c];
      }
      q[(size_t)r * HD + c] = aq, k[(size_t)r * HD + c] = ak, v[(size_t)r * HD + c] = av;
    }
  if (p->rope) {
    const int32_t half = Dh / 2;
    for (int32_t r = 0; r < B * S; r++)
      for (int32_t h = 0; h < H; h++)
        for (int32_t i = 0; i < half; i++) {
          double ang = (double)(p->pos + r % S) * pow(p->theta, -2.0 * i / Dh) * (p->inverse ? -1.0 : 1.0);
          double cs = cos(ang), sn = sin(ang);
          double *t[2] = {q, k};
          for (int u = 0; u < 2; u++) {
            double *row = t[u] + (size_t)r * HD + (size_t)h * Dh;
            double a = row[i], b = row[i + half];
            row[i] = a * cs - b * sn;
            row[i + half] = b * cs + a * sn;
          }
        }
  }
  for (int32_t b = 0; b < B; b++)
    for (int32_t h = 0; h < H; h++)
      for (int32_t i = 0; i < S; i++) {
        double m = -INFINITY;
        for (int32_t j = 0; j < S; j++) {
          int ok = 1;
          if (p->kind == RLX_MASK_CAUSAL || p->kind == RLX_MASK_SLIDING) ok = j <= i;
          if (p->kind == RLX_MASK_SLIDING) ok = ok && j > i - p->window;
          if (p->kind == RLX_MASK_PADDING) ok = mask[(size_t)b * S + j] != 0.0f;
          double s = -INFINITY;
          if (ok) {
            s = 0;
            for (int32_t d = 0; d < Dh; d++)
              s += q[((size_t)b * S + i) * HD + (size_t)h * Dh + d] * k[((size_t)b * S + j) * HD + (size_t)h * Dh + d];
            s *= scale;
            if (p->kind == RLX_MASK_BIAS) {
              int32_t idx[4] = {b, h, i, j};
              s += mask[ref_broadcast_index(idx, 4, p->bias_rank, p->bias_dims)];
            }
          }
          sc[j] = s;
          if (s > m) m = s;
        }
        double sum = 0;
        for (int32_t j = 0; j < S; j++) sum += sc[j] = m == -INFINITY ? 0.0 : exp(sc[j] - m);
        for (int32_t d = 0; d < Dh; d++) {
          double acc = 0;
          for (int32_t j = 0; j < S; j++) acc += sc[j] * v[((size_t)b * S + j) * HD + (size_t)h * Dh + d];
          att[((size_t)b * S + i) * HD + (size_t)h * Dh + d] = sum > 0 ? acc / sum : 0.0;
        }
      }
  for (int32_t r = 0; r < B * S; r++)
    for (int32_t c = 0; c < p->Eo; c++) {
      double acc = 0;
      for (int32_t e = 0; e < HD; e++) acc += att[(size_t)r * HD + e] * wo[(size_t)e * p->Eo + c];
      out[(size_t)r * p->Eo + c] = acc;
    }
  free(q), free(k), free(v), free(att), free(sc);
}

/* fused_attention case: p = {B (0: rank-2 x), S, E, H, Dh, Eo, kind, window,
 * packed, rope, pos, inverse, scale * 1000, bias mode, theta}; inputs x,
 * weights, wo, mask in that order.  Bias modes: 0 [B, H, S, S], 1 [S, S],
 * 2 [1, H, 1, S]. */
void ref_fused_attention_case(const op_case *c, const op_inputs *in, double *expect) {
  ref_attn_block p;
  memset(&p, 0, sizeof p);
  p.B = c->p[0] ? c->p[0] : 1, p.S = c->p[1], p.E = c->p[2], p.H = c->p[3], p.Dh = c->p[4], p.Eo = c->p[5];
  p.kind = c->p[6], p.window = c->p[7], p.rope = c->p[9], p.pos = c->p[10], p.inverse = c->p[11];
  p.scale = c->p[12] / 1000.0, p.theta = c->p[14];
  int32_t packed = c->p[8], n_w = packed ? 1 : 3, HD = p.H * p.Dh;
  const float *w0 = in->data[1];
  const float *wq = w0, *wk = packed ? w0 + HD : in->data[2], *wv = packed ? w0 + 2 * HD : in->data[3];
  const float *mask = in->n > 2 + n_w ? in->data[2 + n_w] : NULL;
  if (mask && p.kind == RLX_MASK_BIAS) {
    p.bias_rank = in->rank[2 + n_w];
    memcpy(p.bias_dims, in->dims[2 + n_w], sizeof p.bias_dims);
  }
  ref_attention_block(&p, in->data[0], wq, wk, wv, packed ? 3 * HD : HD, in->data[1 + n_w], mask, expect);
}

static double ref_act(int32_t act, double x) {
  switch (act) {
    case 1: return x < 0 ? 0 : x;
    case 2: return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case 3: return x / (1.0 + exp(-x));
    default: return x;
  }
}

/* fused_matmul case: p = {batch (0: none), M, K, N, trans_a, trans_b, act,
 * bias mode, mul mode, b batched}; bias modes 0 none, 1 [N], 2 [.., M, N],
 * 3 [M, 1], 4 [1]; mul modes 0 none, 1 [.., M, N], 2 [N]. */
void ref_fused_matmul_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t batch = c->p[0] ? c->p[0] : 1, M = c->p[1], K = c->p[2], N = c->p[3], ta = c->p[4], tb = c->p[5];
  int32_t act = c->p[6], bias_mode = c->p[7], mul_mode = c->p[8], b_batched = c->p[9];
  const float *A = in->data[0], *Bm = in->data[1];
  const float *bias = bias_mode ? in->data[2] : NULL, *mul = mul_mode ? in->data[2 + (bias_mode != 0)] : NULL;
  for (int32_t t = 0; t < batch; t++)
    for (int32_t i = 0; i < M; i++)
      for (int32_t j = 0; j < N; j++) {
        const float *a = A + (size_t)t * M * K, *b = Bm + (b_batched ? (size_t)t * K * N : 0);
        double acc = 0;
        for (int32_t kk = 0; kk < K; kk++)
          acc += (double)(ta ? a[(size_t)kk * M + i] : a[(size_t)i * K + kk]) *
                 (tb ? b[(size_t)j * K + kk] : b[(size_t)kk * N + j]);
        size_t o = ((size_t)t * M + i) * N + j;
        if (bias_mode == 1) acc += bias[j];
        if (bias_mode == 2) acc += bias[o];
        if (bias_mode == 3) acc += bias[i];
        if (bias_mode == 4) acc += bias[0];
        acc = ref_act(act, acc);
        if (mul_mode == 1) acc *= mul[o];
        if (mul_mode == 2) acc *= mul[j];
        expect[o] = acc;
      }
}
