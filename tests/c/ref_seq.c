/* ref_seq.c - naive double-precision references for the sequence-model
 * group (tests/c/cases_seq.c): rotary embedding and masked attention,
 * written straight from the definitions in include/rlx.h.  The case
 * parameter layouts are documented in cases_seq.c. */
#include <math.h>
#include "op_case.h"

void ref_rope_case(const op_case *c, const op_inputs *in, double *expect);
void ref_rope_inverse_case(const op_case *c, const op_inputs *in, double *expect);
void ref_attention_case(const op_case *c, const op_inputs *in, double *expect);

/* p = {theta, pos_offset, rank, dims...}; x[..., S, D]; sign -1 rotates
 * by the negative angle (the inverse) */
static void ref_rope(const op_case *c, const op_inputs *in, double sign, double *expect) {
  double theta = (double)(float)c->p[0];
  int32_t rank = in->rank[0];
  const int32_t *dims = in->dims[0];
  int32_t seq = dims[rank - 2], d = dims[rank - 1], half = d / 2;
  size_t n = ref_numel(rank, dims);
  const float *x = in->data[0];
  for (size_t f = 0; f < n; f++) {
    int32_t col = (int32_t)(f % (size_t)d);
    int32_t s = (int32_t)((f / (size_t)d) % (size_t)seq);
    size_t row = f - (size_t)col;
    int32_t i = col < half ? col : col - half;
    double angle = sign * ((double)c->p[1] + s) * pow(theta, -2.0 * i / d);
    double x1 = x[row + (size_t)i], x2 = x[row + (size_t)(i + half)];
    expect[f] = col < half ? x1 * cos(angle) - x2 * sin(angle) : x2 * cos(angle) + x1 * sin(angle);
  }
}

void ref_rope_case(const op_case *c, const op_inputs *in, double *expect) { ref_rope(c, in, 1.0, expect); }
void ref_rope_inverse_case(const op_case *c, const op_inputs *in, double *expect) { ref_rope(c, in, -1.0, expect); }

/* Is key j of batch b kept by the padding mask? */
static int ref_pad_keep(const op_inputs *in, int32_t b, int32_t j, int32_t sk) {
  return in->data[3][(size_t)b * (size_t)sk + (size_t)j] != 0.0f;
}

/* p = {B, H, Sq, Sk, D, Dv, mask kind, window, scale * 1000, variant,
 *      bias rank, bias dims...}; q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv]
 * (, mask) -> [B,H,Sq,Dv].  A row with no visible key gives zeros. */
void ref_attention_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t B = c->p[0], H = c->p[1], sq = c->p[2], sk = c->p[3], d = c->p[4], dv = c->p[5];
  int32_t kind = c->p[6], window = c->p[7];
  double scale = c->p[8] > 0 ? (double)(float)(c->p[8] / 1000.0) : 1.0 / sqrt((double)d);
  const float *q = in->data[0], *k = in->data[1], *v = in->data[2];
  double score[256];
  for (int32_t b = 0; b < B; b++)
    for (int32_t h = 0; h < H; h++)
      for (int32_t i = 0; i < sq; i++) {
        const float *qi = q + (((size_t)b * H + h) * sq + i) * d;
        double *y = expect + (((size_t)b * H + h) * sq + i) * dv;
        double m = -INFINITY;
        for (int32_t j = 0; j < sk; j++) {
          int visible = 1;
          int32_t last = i + (sk - sq);
          if (kind == RLX_MASK_CAUSAL || kind == RLX_MASK_SLIDING) visible = j <= last;
          if (kind == RLX_MASK_SLIDING) visible = visible && j > last - window;
          if (kind == RLX_MASK_PADDING) visible = ref_pad_keep(in, b, j, sk);
          if (!visible) {
            score[j] = -INFINITY;
            continue;
          }
          const float *kj = k + (((size_t)b * H + h) * sk + j) * d;
          double s = 0.0;
          for (int32_t e = 0; e < d; e++) s += (double)qi[e] * kj[e];
          s *= scale;
          if (kind == RLX_MASK_BIAS) {
            int32_t idx[4] = {b, h, i, j};
            s += in->data[3][ref_broadcast_index(idx, 4, in->rank[3], in->dims[3])];
          }
          score[j] = s;
          if (s > m) m = s;
        }
        for (int32_t e = 0; e < dv; e++) y[e] = 0.0;
        if (m == -INFINITY) continue; /* every key masked: zeros */
        double sum = 0.0;
        for (int32_t j = 0; j < sk; j++) sum += exp(score[j] - m);
        for (int32_t j = 0; j < sk; j++) {
          double pj = exp(score[j] - m) / sum;
          if (pj == 0.0) continue;
          const float *vj = v + (((size_t)b * H + h) * sk + j) * dv;
          for (int32_t e = 0; e < dv; e++) y[e] += pj * vj[e];
        }
      }
}
