/* ref_llm.c - naive double-precision references for the quantized
 * language-model group (tests/c/cases_llm.c, which documents the
 * parameter layouts), written from the definitions in include/rlx.h.
 * Weights are expanded with rlx_gguf_dequantize (checked against
 * independent block decoders in test_gguf.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "op_case.h"
#include "rlx_gguf.h"

void ref_matmul_q_case(const op_case *c, const op_inputs *in, double *expect);
void ref_gather_q_case(const op_case *c, const op_inputs *in, double *expect);
void ref_swiglu_q_case(const op_case *c, const op_inputs *in, double *expect);
void ref_rope_ext_case(const op_case *c, const op_inputs *in, double *expect);
void ref_attention_kv_case(const op_case *c, const op_inputs *in, double *expect);
void ref_matmul_q_norm_case(const op_case *c, const op_inputs *in, double *expect);
void ref_swiglu_q_norm_case(const op_case *c, const op_inputs *in, double *expect);
void ref_attention_kv_rope_case(const op_case *c, const op_inputs *in, double *expect);

/* rows x cols floats of the quantized table in input k (NULL on failure). */
static float *expand(const op_case *c, const op_inputs *in, int32_t k, int32_t rows, int32_t cols) {
  size_t count = (size_t)rows * (size_t)cols;
  float *w = malloc(count * sizeof(float));
  size_t bytes = ref_numel(in->rank[k], in->dims[k]) * 4;
  if (w && rlx_gguf_dequantize((rlx_gguf_type)c->p[0], in->data[k], bytes, w, (int64_t)count) != RLX_OK) {
    free(w);
    return NULL;
  }
  return w;
}

void ref_matmul_q_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t N = c->p[1], K = c->p[2], trans = c->p[3];
  float *w = expand(c, in, 1, N, K);
  if (!w) return;
  size_t in_dim = (size_t)(trans ? N : K), out_dim = (size_t)(trans ? K : N);
  size_t M = ref_numel(in->rank[0], in->dims[0]) / in_dim;
  const float *x = in->data[0];
  for (size_t m = 0; m < M; m++)
    for (size_t o = 0; o < out_dim; o++) {
      double s = 0;
      for (size_t i = 0; i < in_dim; i++)
        s += (double)x[m * in_dim + i] * (trans ? w[i * (size_t)K + o] : w[o * (size_t)K + i]);
      expect[m * out_dim + o] = s + (in->n > 2 ? (double)in->data[2][m * out_dim + o] : 0.0); /* acc */
    }
  free(w);
}

void ref_gather_q_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t V = c->p[1], K = c->p[2];
  float *w = expand(c, in, 0, V, K);
  if (!w) return;
  size_t n = ref_numel(in->rank[1], in->dims[1]);
  for (size_t i = 0; i < n; i++) {
    int32_t id;
    if (c->p[3])
      memcpy(&id, &in->data[1][i], sizeof id);
    else
      id = (int32_t)in->data[1][i];
    for (int32_t k = 0; k < K; k++) expect[i * (size_t)K + (size_t)k] = w[(size_t)id * (size_t)K + (size_t)k];
  }
  free(w);
}

/* silu(x Wg^T) * (x Wu^T) with silu(g) = g / (1 + e^-g). */
void ref_swiglu_q_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t N = c->p[1], K = c->p[2];
  float *wg = expand(c, in, 1, N, K), *wu = expand(c, in, 2, N, K);
  size_t M = ref_numel(in->rank[0], in->dims[0]) / (size_t)K;
  const float *x = in->data[0];
  for (size_t m = 0; wg && wu && m < M; m++)
    for (size_t n = 0; n < (size_t)N; n++) {
      double g = 0, u = 0;
      for (size_t k = 0; k < (size_t)K; k++) {
        g += (double)x[m * (size_t)K + k] * wg[n * (size_t)K + k];
        u += (double)x[m * (size_t)K + k] * wu[n * (size_t)K + k];
      }
      expect[m * (size_t)N + n] = g / (1.0 + exp(-g)) * u;
    }
  free(wg);
  free(wu);
}

/* Mode 0 pairs (i, i + D/2), mode 1 pairs (2i, 2i + 1); both turn pair i by
 * (pos_offset + offset + s) theta^(-2i/D), negated when inverse. */
void ref_rope_ext_case(const op_case *c, const op_inputs *in, double *expect) {
  double theta = (double)(float)c->p[0], sign = c->p[4] ? -1.0 : 1.0;
  int32_t rank = in->rank[0], mode = c->p[2];
  const int32_t *dims = in->dims[0];
  int32_t seq = dims[rank - 2], d = dims[rank - 1], half = d / 2;
  double pos0 = (double)c->p[1] + (c->p[3] >= 0 ? (double)c->p[3] : 0.0);
  size_t n = ref_numel(rank, dims);
  const float *x = in->data[0];
  for (size_t f = 0; f < n; f++) {
    int32_t col = (int32_t)(f % (size_t)d);
    int32_t s = (int32_t)((f / (size_t)d) % (size_t)seq);
    size_t row = f - (size_t)col;
    int32_t i = mode ? col / 2 : (col < half ? col : col - half);
    int first = mode ? col % 2 == 0 : col < half;
    size_t a = mode ? row + 2 * (size_t)i : row + (size_t)i, b = mode ? a + 1 : a + (size_t)half;
    double angle = sign * (pos0 + s) * pow(theta, -2.0 * i / d);
    double x1 = x[a], x2 = x[b];
    expect[f] = first ? x1 * cos(angle) - x2 * sin(angle) : x2 * cos(angle) + x1 * sin(angle);
  }
}

void ref_attention_kv_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t hq = c->p[0], hkv = c->p[1], S = c->p[2], D = c->p[3], Dv = c->p[4], C = c->p[5], pos = c->p[6];
  double scale = c->p[7] > 0 ? c->p[7] / 1000.0 : 1.0 / sqrt((double)D);
  const float *q = in->data[0], *k = in->data[1], *v = in->data[2];
  double *kc = malloc(sizeof(double) * (size_t)(hkv * C * D)), *vc = malloc(sizeof(double) * (size_t)(hkv * C * Dv));
  double *score = malloc(sizeof(double) * (size_t)C);
  if (!kc || !vc || !score) goto done;
  for (int32_t i = 0; i < hkv * C * D; i++) kc[i] = in->data[3][i];
  for (int32_t i = 0; i < hkv * C * Dv; i++) vc[i] = in->data[4][i];
  for (int32_t h = 0; h < hkv; h++) /* this call's keys and values land at pos + s */
    for (int32_t s = 0; s < S && pos + s < C; s++) {
      for (int32_t i = 0; i < D; i++) kc[(h * C + pos + s) * D + i] = k[(h * S + s) * D + i];
      for (int32_t i = 0; i < Dv; i++) vc[(h * C + pos + s) * Dv + i] = v[(h * S + s) * Dv + i];
    }
  for (int32_t s = 0; s < S; s++)
    for (int32_t h = 0; h < hq; h++) {
      double *o = expect + ((size_t)s * (size_t)hq + (size_t)h) * (size_t)Dv;
      int32_t g = h / (hq / hkv), n_keys = pos + s + 1;
      for (int32_t i = 0; i < Dv; i++) o[i] = 0.0;
      if (pos + s >= C) continue;
      double mx = -INFINITY, sum = 0;
      for (int32_t j = 0; j < n_keys; j++) {
        double dot = 0;
        for (int32_t i = 0; i < D; i++) dot += (double)q[(h * S + s) * D + i] * kc[(g * C + j) * D + i];
        score[j] = dot * scale;
        mx = fmax(mx, score[j]);
      }
      for (int32_t j = 0; j < n_keys; j++) sum += (score[j] = exp(score[j] - mx));
      for (int32_t j = 0; j < n_keys; j++)
        for (int32_t i = 0; i < Dv; i++) o[i] += score[j] / sum * vc[(g * C + j) * Dv + i];
    }
done:
  free(kc);
  free(vc);
  free(score);
}

/* The rows of x (input 0, K values each) normalized in double by the
 * weight g (input gk): x / sqrt(mean(x^2) + eps) * g. */
static float *normed_x(const op_inputs *in, int32_t gk, size_t K, double eps) {
  const size_t n = ref_numel(in->rank[0], in->dims[0]);
  float *r = malloc(n * sizeof(float));
  for (size_t m = 0; r && m < n / K; m++) {
    const float *x = in->data[0] + m * K;
    double ss = 0;
    for (size_t k = 0; k < K; k++) ss += (double)x[k] * x[k];
    const double inv = 1.0 / sqrt(ss / (double)K + eps);
    for (size_t k = 0; k < K; k++) r[m * K + k] = (float)(x[k] * inv * in->data[gk][k]);
  }
  return r;
}

/* norm: x normalized with g (input 2), then matmul_q's reference (no acc). */
void ref_matmul_q_norm_case(const op_case *c, const op_inputs *in, double *expect) {
  op_inputs r = *in;
  float *x = normed_x(in, 2, (size_t)c->p[2], 1e-5);
  if (!x) return;
  r.data[0] = x;
  r.n = 2;
  ref_matmul_q_case(c, &r, expect);
  free(x);
}

/* norm: x normalized with g (input 3), then swiglu_q's reference. */
void ref_swiglu_q_norm_case(const op_case *c, const op_inputs *in, double *expect) {
  op_inputs r = *in;
  float *x = normed_x(in, 3, (size_t)c->p[2], 1e-5);
  if (!x) return;
  r.data[0] = x;
  ref_swiglu_q_case(c, &r, expect);
  free(x);
}

/* Rows of n values of D (heads x S) turned as rope does at positions pos +
 * s (s = row % S): mode 1 NeoX halves, 2 adjacent pairs, frequency
 * theta^(-2i/D). */
static float *rotated(const float *x, size_t rows, int32_t S, int32_t D, int32_t pos, int32_t mode, double theta) {
  float *r = malloc(rows * (size_t)D * sizeof(float));
  for (size_t row = 0; r && row < rows; row++)
    for (int32_t i = 0; i < D / 2; i++) {
      const double angle = (double)(pos + (int32_t)(row % (size_t)S)) * pow(theta, -2.0 * i / D);
      const size_t a = row * (size_t)D + (size_t)(mode == 2 ? 2 * i : i), b = a + (size_t)(mode == 2 ? 1 : D / 2);
      const double x1 = x[a], x2 = x[b];
      r[a] = (float)(x1 * cos(angle) - x2 * sin(angle));
      r[b] = (float)(x2 * cos(angle) + x1 * sin(angle));
    }
  return r;
}

/* rope (p[8]) with theta (p[9]): q and k rotated, then attention_kv's reference. */
void ref_attention_kv_rope_case(const op_case *c, const op_inputs *in, double *expect) {
  const int32_t hq = c->p[0], hkv = c->p[1], S = c->p[2], D = c->p[3];
  op_inputs r = *in;
  float *q = rotated(in->data[0], (size_t)(hq * S), S, D, c->p[6], c->p[8], c->p[9]);
  float *k = rotated(in->data[1], (size_t)(hkv * S), S, D, c->p[6], c->p[8], c->p[9]);
  if (q && k) {
    r.data[0] = q;
    r.data[1] = k;
    ref_attention_kv_case(c, &r, expect);
  }
  free(q);
  free(k);
}
