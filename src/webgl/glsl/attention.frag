#version 300 es
// attention.frag - scaled dot-product attention and its gradient
// (src/webgl/lower_attention.c; the semantics of src/cpu/k_attention.c and
// k_attention_grad.c) for q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv].
// Score of query row i and key j: (q_i . k_j) scale, -inf where a padding
// mask [B,Sk] is 0 (MASK 3), plus a bias broadcast through strides
// (MASK 4); causal (1) and sliding (2) masks narrow the keys query i sees
// to [lo, hi) (the last query aligned with the last key).
// MODE 0 writes K statistics per query row: m, the max score (NaN
// skipped), s, the sum of exp(score - m) (0 when the row sees no key, NaN
// when it sees NaN), and with GRAD = 1 delta = sum_j P_j dP_j, where
// P_j = exp(score_j - m) / s and dP_j = dy_i . v_j.
// MODE 1 writes y[i, e] = sum_j P_j v[j, e] (zeros for a row that sees no key).
// MODE 2 writes the packed gradient [dq | dk | dv] with dS_j = scale P_j
// (dP_j - delta): dq_i = sum_j dS_ij k_j, dk_j = sum_i dS_ij q_i,
// dv_j = sum_i P_ij dy_i; each fragment loops over the keys (dq) or the
// queries (dk, dv) it needs, recomputing scores.
// Inputs: q, k, v, dy (GRAD), the mask (HAS_MASK), the statistics (MODE 1, 2).
// u_i = {B, H, Sq, Sk, D, Dv, mask kind, window, bias strides along
// B, H, Sq, Sk}; u_f = {scale}.  Long sums go in blocks of 64.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform highp sampler2D u_in2;
uniform int u_in0_w;
uniform int u_in1_w;
uniform int u_in2_w;
#if GRAD + HAS_MASK + (MODE != 0) > 0
uniform highp sampler2D u_in3;
uniform int u_in3_w;
#endif
#if GRAD + HAS_MASK + (MODE != 0) > 1
uniform highp sampler2D u_in4;
uniform int u_in4_w;
#endif
#if GRAD + HAS_MASK + (MODE != 0) > 2
uniform highp sampler2D u_in5;
uniform int u_in5_w;
#endif

#define RLX_Q(at) rlx_fetch(u_in0, u_in0_w, at)
#define RLX_K(at) rlx_fetch(u_in1, u_in1_w, at)
#define RLX_V(at) rlx_fetch(u_in2, u_in2_w, at)
#define RLX_DY(at) rlx_fetch(u_in3, u_in3_w, at)
#if GRAD + HAS_MASK == 1
#define RLX_STATS(at) rlx_fetch(u_in4, u_in4_w, at)
#elif GRAD + HAS_MASK == 2
#define RLX_STATS(at) rlx_fetch(u_in5, u_in5_w, at)
#else
#define RLX_STATS(at) rlx_fetch(u_in3, u_in3_w, at)
#endif
#if HAS_MASK && GRAD
#define RLX_MASK(at) rlx_fetch(u_in4, u_in4_w, at)
#elif HAS_MASK
#define RLX_MASK(at) rlx_fetch(u_in3, u_in3_w, at)
#endif

float rlx_exp_shifted(float t) {
  return isnan(t) ? RLX_NAN : (t < -104.0 ? 0.0 : exp(t));
}

// Keys [lo, hi) query i sees under a causal or sliding mask.
ivec2 rlx_key_range(int i) {
  int sq = u_i[2], sk = u_i[3], kind = u_i[6];
  int last = i + sk - sq, lo = 0, hi = sk;
  if (kind == 1 || kind == 2) {
    if (last + 1 < hi) hi = last + 1;
    if (kind == 2 && last - u_i[7] + 1 > lo) lo = last - u_i[7] + 1;
  }
  if (hi < 0) hi = 0;
  if (lo > hi) lo = hi;
  return ivec2(lo, hi);
}

// Score of query i and key j of head bh (batch b, head h).
float rlx_score(int bh, int b, int h, int i, int j) {
  int d = u_i[4], qo = (bh * u_i[2] + i) * d, ko = (bh * u_i[3] + j) * d;
  float acc = 0.0;
  for (int t = 0; t < d; t++) acc += RLX_Q(qo + t) * RLX_K(ko + t);
  float s = acc * u_f[0];
#if HAS_MASK && MASK == 3
  if (RLX_MASK(b * u_i[3] + j) == 0.0) s = -RLX_INF;
#elif HAS_MASK && MASK == 4
  s += RLX_MASK(b * u_i[8] + h * u_i[9] + i * u_i[10] + j * u_i[11]);
#endif
  return s;
}

#if GRAD
// dP = dy_i . v_j
float rlx_dprob(int bh, int i, int j) {
  int dv = u_i[5], yo = (bh * u_i[2] + i) * dv, vo = (bh * u_i[3] + j) * dv;
  float acc = 0.0;
  for (int t = 0; t < dv; t++) acc += RLX_DY(yo + t) * RLX_V(vo + t);
  return acc;
}
#endif

#if MODE == 0
float rlx_value(int idx) {
  int k = GRAD == 1 ? 3 : 2, r = idx / k, which = idx % k;
  int bh = r / u_i[2], i = r % u_i[2], b = bh / u_i[1], h = bh % u_i[1];
  ivec2 range = rlx_key_range(i);
  float m = -RLX_INF;
  for (int j = range.x; j < range.y; j++) {
    float s = rlx_score(bh, b, h, i, j);
    if (s > m) m = s;
  }
  if (which == 0) return m;
  float sum = 0.0;
  for (int j0 = range.x; j0 < range.y; j0 += 64) {
    int j1 = min(j0 + 64, range.y);
    float part = 0.0;
    for (int j = j0; j < j1; j++) {
      float s = rlx_score(bh, b, h, i, j);
      part += rlx_exp_shifted(m > -RLX_INF ? s - m : (isnan(s) ? RLX_NAN : -RLX_INF));
    }
    sum += part;
  }
  if (which == 1) return sum;
  float delta = 0.0;
#if GRAD
  if (sum == 0.0) return 0.0;
  float inv = 1.0 / sum;
  for (int j0 = range.x; j0 < range.y; j0 += 64) {
    int j1 = min(j0 + 64, range.y);
    float part = 0.0;
    for (int j = j0; j < j1; j++)
      part += rlx_exp_shifted(rlx_score(bh, b, h, i, j) - m) * inv * rlx_dprob(bh, i, j);
    delta += part;
  }
#endif
  return delta;
}
#elif MODE == 1
float rlx_value(int idx) {
  int dv = u_i[5], r = idx / dv, e = idx % dv;
  int bh = r / u_i[2], i = r % u_i[2], b = bh / u_i[1], h = bh % u_i[1];
  float m = RLX_STATS(2 * r), sum = RLX_STATS(2 * r + 1);
  if (sum == 0.0) return 0.0;
  ivec2 range = rlx_key_range(i);
  float acc = 0.0;
  for (int j0 = range.x; j0 < range.y; j0 += 64) {
    int j1 = min(j0 + 64, range.y);
    float part = 0.0;
    for (int j = j0; j < j1; j++)
      part += rlx_exp_shifted(rlx_score(bh, b, h, i, j) - m) * RLX_V((bh * u_i[3] + j) * dv + e);
    acc += part;
  }
  return acc * (1.0 / sum);
}
#else
// dS of query i, key j given the row's statistics (m, 1 / s, delta).
float rlx_dscore(int bh, int b, int h, int i, int j, vec3 st) {
  float p = rlx_exp_shifted(rlx_score(bh, b, h, i, j) - st.x) * st.y;
  return u_f[0] * p * (rlx_dprob(bh, i, j) - st.z);
}

float rlx_value(int idx) {
  int heads = u_i[0] * u_i[1], sq = u_i[2], sk = u_i[3], d = u_i[4], dv = u_i[5];
  int nq = heads * sq * d, nk = heads * sk * d;
  float acc = 0.0;
  if (idx < nq) { // dq[bh, i, t] = sum over keys j of dS_ij k[bh, j, t]
    int r = idx / d, t = idx % d;
    int bh = r / sq, i = r % sq, b = bh / u_i[1], h = bh % u_i[1];
    float sum = RLX_STATS(3 * r + 1);
    if (sum == 0.0) return 0.0;
    vec3 st = vec3(RLX_STATS(3 * r), 1.0 / sum, RLX_STATS(3 * r + 2));
    ivec2 range = rlx_key_range(i);
    for (int j0 = range.x; j0 < range.y; j0 += 64) {
      int j1 = min(j0 + 64, range.y);
      float part = 0.0;
      for (int j = j0; j < j1; j++) part += rlx_dscore(bh, b, h, i, j, st) * RLX_K((bh * sk + j) * d + t);
      acc += part;
    }
    return acc;
  }
  // dk[bh, j, t] = sum_i dS_ij q[bh, i, t]; dv[bh, j, t] = sum_i P_ij dy[bh, i, t]
  bool is_k = idx < nq + nk;
  int width = is_k ? d : dv, rel = is_k ? idx - nq : idx - nq - nk;
  int kr = rel / width, t = rel % width;
  int bh = kr / sk, j = kr % sk, b = bh / u_i[1], h = bh % u_i[1];
  for (int i0 = 0; i0 < sq; i0 += 64) {
    int i1 = min(i0 + 64, sq);
    float part = 0.0;
    for (int i = i0; i < i1; i++) {
      ivec2 range = rlx_key_range(i);
      int r = bh * sq + i;
      float sum = RLX_STATS(3 * r + 1);
      if (j < range.x || j >= range.y || sum == 0.0) continue;
      vec3 st = vec3(RLX_STATS(3 * r), 1.0 / sum, RLX_STATS(3 * r + 2));
      if (is_k) {
        part += rlx_dscore(bh, b, h, i, j, st) * RLX_Q(r * d + t);
      } else {
        float p = rlx_exp_shifted(rlx_score(bh, b, h, i, j) - st.x) * st.y;
        part += p * RLX_DY(r * dv + t);
      }
    }
    acc += part;
  }
  return acc;
}
#endif
