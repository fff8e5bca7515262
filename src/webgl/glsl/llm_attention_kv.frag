#version 300 es
// llm_attention_kv.frag - causal attention over a KV cache after llm_kv_write.frag
// appended this step's rows (src/webgl/lower_llm.c; the semantics of
// src/cpu/k_attention_kv.c).  q[Hq, S, D], caches k_cache[Hkv, C, D],
// v_cache[Hkv, C, Dv]; query s of head h sees cache positions j <= pos + s
// of kv head h / (Hq / Hkv), none when pos < 0 or pos + s >= C (its output
// row is zero).  Row r = s Hq + h.
//   MODE 0: scores[S, Hq, C] = scale (q[h, s] . k_cache[h', j]) for the
//           keys the row sees (0 elsewhere, never read); u_in0 = q,
//           u_in1 = k_cache, u_in2 = pos
//   MODE 1: stats[S, Hq, 2] = (m, sum_j exp(score_j - m)), m the row's max
//           score ((0, 0) for a row that sees nothing); u_in0 = scores,
//           u_in1 = pos
//   MODE 2: out[S, Hq, Dv] = sum_j exp(score_j - m) v_cache[h', j] / sum;
//           u_in0 = scores, u_in1 = stats, u_in2 = v_cache, u_in3 = pos
// u_i = {Hq, Hkv, S, C, D, Dv}; u_f = {scale}.  pos is an integer stored
// as a float.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;
#if MODE != 1
uniform highp sampler2D u_in2;
uniform int u_in2_w;
#endif
#if MODE == 2
uniform highp sampler2D u_in3;
uniform int u_in3_w;
#define RLX_POS rlx_fetch(u_in3, u_in3_w, 0)
#elif MODE == 1
#define RLX_POS rlx_fetch(u_in1, u_in1_w, 0)
#else
#define RLX_POS rlx_fetch(u_in2, u_in2_w, 0)
#endif

// Keys query s sees: pos + s + 1, or 0.
int rlx_keys(int s) {
  int pos = int(floor(RLX_POS)), C = u_i[3];
  return pos < 0 || pos + s >= C ? 0 : pos + s + 1;
}

float rlx_value(int i) {
  int Hq = u_i[0], S = u_i[2], C = u_i[3], D = u_i[4], Dv = u_i[5], group = Hq / u_i[1];
#if MODE == 0
  ivec2 rj = rlx_divmod(i, C), sh = rlx_divmod(rj.x, Hq);
  if (rj.y >= rlx_keys(sh.x)) return 0.0;
  int qo = (sh.y * S + sh.x) * D, ko = ((sh.y / group) * C + rj.y) * D;
  float dot = 0.0;
  for (int t = 0; t < D; t++) dot += rlx_fetch(u_in0, u_in0_w, qo + t) * rlx_fetch(u_in1, u_in1_w, ko + t);
  return dot * u_f[0];
#elif MODE == 1
  ivec2 rw = rlx_divmod(i, 2);
  int n = rlx_keys(rw.x / Hq), o = rw.x * C;
  if (n == 0) return 0.0;
  float m = rlx_fetch(u_in0, u_in0_w, o);
  for (int j = 1; j < n; j++) m = max(m, rlx_fetch(u_in0, u_in0_w, o + j));
  if (rw.y == 0) return m;
  float sum = 0.0;
  for (int j = 0; j < n; j++) sum += exp(rlx_fetch(u_in0, u_in0_w, o + j) - m);
  return sum;
#else
  ivec2 re = rlx_divmod(i, Dv);
  int n = rlx_keys(re.x / Hq), o = re.x * C;
  if (n == 0) return 0.0;
  float m = rlx_fetch(u_in1, u_in1_w, 2 * re.x), sum = rlx_fetch(u_in1, u_in1_w, 2 * re.x + 1);
  int vo = ((re.x % Hq) / group) * C * Dv + re.y;
  float acc = 0.0;
  for (int j = 0; j < n; j++) acc += exp(rlx_fetch(u_in0, u_in0_w, o + j) - m) * rlx_fetch(u_in2, u_in2_w, vo + j * Dv);
  return acc * (1.0 / sum);
#endif
}
