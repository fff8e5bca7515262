#version 300 es
// llm_swiglu_q.frag - swiglu_q in one pass (src/webgl/lower_llm.c; the
// semantics of src/cpu/k_matmul_q_swiglu.c): x[M, K] -> y[M, N],
// y[m, n] = silu(x[m] . Wg[n]) * (x[m] . Wu[n]), Wg and Wu N rows of K
// values of type QT, row n at byte n * u_i[2] of the words textures u_in1
// (gate) and u_in2 (up) (_llm_quant.glsl, read through rlx_word with
// rlx_qsel choosing the texture).  Each dot is llm_matmul_q.frag's (trans
// 0): block types sum each run of 16 values as sc * sum(code x) + mn *
// sum(x).  silu is unary.frag's (sigmoid from exp(-|g|)).  u_in0 = x (flat
// f32); u_i = {N, K, row bytes}.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp isampler2D u_in1;
uniform highp isampler2D u_in2;
uniform int u_in0_w;
uniform int u_in1_w;
uniform int u_in2_w;

int rlx_qsel = 0; // 0: the gate's words (u_in1), 1: the up's (u_in2)

uint rlx_word(int i) {
  ivec2 qr = rlx_divmod(i >> 2, rlx_qsel == 0 ? u_in1_w : u_in2_w);
  ivec4 t = rlx_qsel == 0 ? texelFetch(u_in1, ivec2(qr.y, qr.x), 0) : texelFetch(u_in2, ivec2(qr.y, qr.x), 0);
  return uint(t[i & 3]);
}
#define RLX_QWORD 1
//!include _llm_quant.glsl

#define RLX_X(at) rlx_fetch(u_in0, u_in0_w, at)

// x[xo .. xo + K) . the row at byte o of the table rlx_qsel names.
float rlx_qdot(int o, int xo, int K) {
  float acc = 0.0;
#if defined(RLX_QFLOAT)
  for (int k = 0; k < K; k++) acc += rlx_qfloat(o, k) * RLX_X(xo + k);
#else
  for (int g = 0; g < K; g += 16) {
    int ob = o + (g / RLX_QBE) * RLX_QBB, eb = g % RLX_QBE;
    vec2 sm = rlx_qgroup(ob, eb);
    float s = 0.0, sx = 0.0;
    for (int t = 0; t < 16; t++) {
      float xv = RLX_X(xo + g + t);
      s += float(rlx_qcode(ob, eb + t)) * xv;
      sx += xv;
    }
    acc += sm.x * s + sm.y * sx;
  }
#endif
  return acc;
}

float rlx_value(int i) {
  int N = u_i[0], K = u_i[1];
  ivec2 mn = rlx_divmod(i, N);
  int o = mn.y * u_i[2];
  rlx_qsel = 0;
  float g = rlx_qdot(o, mn.x * K, K);
  rlx_qsel = 1;
  float u = rlx_qdot(o, mn.x * K, K);
  if (isnan(g)) return g;
  float e = exp(-abs(g));
  return g * (g >= 0.0 ? 1.0 / (1.0 + e) : e / (1.0 + e)) * u;
}
