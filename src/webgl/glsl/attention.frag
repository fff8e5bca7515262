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

// Texel of flat index i in a texture w wide, and the next one (walking a
// row without a division per element).
ivec2 rlx_xy(int i, int w) {
  return ivec2(i % w, i / w);
}
ivec2 rlx_next(ivec2 xy, int w) {
  xy.x++;
  return xy.x >= w ? ivec2(0, xy.y + 1) : xy;
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
  ivec2 xq = rlx_xy(qo, u_in0_w), xk = rlx_xy(ko, u_in1_w);
  for (int t = 0; t < d; t++) {
    acc += texelFetch(u_in0, xq, 0).r * texelFetch(u_in1, xk, 0).r;
    xq = rlx_next(xq, u_in0_w);
    xk = rlx_next(xk, u_in1_w);
  }
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
  ivec2 xy = rlx_xy(yo, u_in3_w), xv = rlx_xy(vo, u_in2_w);
  for (int t = 0; t < dv; t++) {
    acc += texelFetch(u_in3, xy, 0).r * texelFetch(u_in2, xv, 0).r;
    xy = rlx_next(xy, u_in3_w);
    xv = rlx_next(xv, u_in2_w);
  }
  return acc;
}
#endif

#if MODE == 0
// Phase 0 takes the max score m, phase 1 the sum s of exp(score - m),
// phase 2 (GRAD) delta; fragment `which` of a row runs phases 0..which.
// One loop body keeps the shader small (SwiftShader compiles it faster).
float rlx_value(int idx) {
  int k = GRAD == 1 ? 3 : 2, r = idx / k, which = idx % k;
  int bh = r / u_i[2], i = r % u_i[2], b = bh / u_i[1], h = bh % u_i[1];
  ivec2 range = rlx_key_range(i);
  float m = -RLX_INF, sum = 0.0, inv = 0.0, acc = 0.0;
  for (int phase = 0; phase < 3; phase++) {
    if (phase > which) break;
    if (phase == 2) {
      if (sum == 0.0) return 0.0;
      inv = 1.0 / sum;
    }
    acc = 0.0;
    for (int j0 = range.x; j0 < range.y; j0 += 64) {
      int j1 = min(j0 + 64, range.y);
      float part = 0.0;
      for (int j = j0; j < j1; j++) {
        float s = rlx_score(bh, b, h, i, j);
        if (phase == 0) {
          if (s > m) m = s;
        } else if (phase == 1) {
          part += rlx_exp_shifted(m > -RLX_INF ? s - m : (isnan(s) ? RLX_NAN : -RLX_INF));
        } else {
#if GRAD
          part += rlx_exp_shifted(s - m) * inv * rlx_dprob(bh, i, j);
#endif
        }
      }
      acc += part;
    }
    if (phase == 1) sum = acc;
  }
  return which == 0 ? m : which == 1 ? sum : acc;
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
// One loop for the three parts: dq[bh, i, t] runs over the keys j that
// query i sees, dk[bh, j, t] and dv[bh, j, t] over the queries i that see
// key j (rows that see no key contribute nothing).
float rlx_value(int idx) {
  int heads = u_i[0] * u_i[1], sq = u_i[2], sk = u_i[3], d = u_i[4], dv = u_i[5];
  int nq = heads * sq * d, nk = heads * sk * d;
  int part_id = idx < nq ? 0 : idx < nq + nk ? 1 : 2; // dq, dk, dv
  int width = part_id == 2 ? dv : d, rel = idx - (part_id == 0 ? 0 : part_id == 1 ? nq : nq + nk);
  int row = rel / width, t = rel % width;
  int bh = part_id == 0 ? row / sq : row / sk, own = part_id == 0 ? row % sq : row % sk;
  int b = bh / u_i[1], h = bh % u_i[1];
  int n0 = 0, n1 = sq;
  if (part_id == 0) {
    ivec2 range = rlx_key_range(own);
    n0 = range.x;
    n1 = range.y;
  }
  float acc = 0.0;
  for (int c0 = n0; c0 < n1; c0 += 64) {
    int c1 = min(c0 + 64, n1);
    float part = 0.0;
    for (int n = c0; n < c1; n++) {
      int i = part_id == 0 ? own : n, j = part_id == 0 ? n : own, r = bh * sq + i;
      ivec2 range = rlx_key_range(i);
      float sum = RLX_STATS(3 * r + 1);
      if (j < range.x || j >= range.y || sum == 0.0) continue;
      float p = rlx_exp_shifted(rlx_score(bh, b, h, i, j) - RLX_STATS(3 * r)) * (1.0 / sum);
      if (part_id == 2) {
        part += p * RLX_DY(r * dv + t);
      } else {
        float ds = u_f[0] * p * (rlx_dprob(bh, i, j) - RLX_STATS(3 * r + 2));
        part += ds * (part_id == 0 ? RLX_K((bh * sk + j) * d + t) : RLX_Q(r * d + t));
      }
    }
    acc += part;
  }
  return acc;
}
#endif
