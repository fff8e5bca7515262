#version 300 es
// llm_matmul_q.frag - x times GGUF-typed weights read in place
// (src/webgl/lower_llm.c; the semantics of src/cpu/k_matmul_q.c).  W is N
// rows of K values of type QT, row n at byte n * u_i[3] of the words
// texture u_in1 (_llm_quant.glsl).  u_in0 = x (flat f32); u_i = {N, K, trans,
// row bytes}.
//   trans 0: x[M, K] -> y[M, N], y[m, n] = sum_k x[m, k] W[n, k]: block
//            types sum each run of 16 values as sc * sum(code x) + mn * sum(x)
//   trans 1: x[M, N] -> y[M, K], y[m, k] = sum_n x[m, n] W[n, k]
// ACC 1: u_in2 (y's shape) is added (matmul_q's optional acc input).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp isampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

#define RLX_QTEX u_in1
#define RLX_QTEX_W u_in1_w
//!include _llm_quant.glsl

#define RLX_X(at) rlx_fetch(u_in0, u_in0_w, at)

#if defined(ACC)
uniform highp sampler2D u_in2;
uniform int u_in2_w;
#endif

float rlx_product(int i) {
  int N = u_i[0], K = u_i[1], stride = u_i[3];
  float acc = 0.0;
  if (u_i[2] != 0) {
    ivec2 mk = rlx_divmod(i, K);
    for (int n = 0; n < N; n++) acc += RLX_X(mk.x * N + n) * rlx_qvalue(n * stride, mk.y);
    return acc;
  }
  ivec2 mn = rlx_divmod(i, N);
  int o = mn.y * stride, xo = mn.x * K;
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
#if defined(ACC)
  return rlx_product(i) + rlx_fetch(u_in2, u_in2_w, i);
#else
  return rlx_product(i);
#endif
}
