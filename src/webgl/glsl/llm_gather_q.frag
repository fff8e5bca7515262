#version 300 es
// llm_gather_q.frag - rows of a GGUF-typed table read in place
// (src/webgl/lower_llm.c; src/cpu/k_matmul_q.c rlx_cpu_gather_q): table
// (V rows of K values of type QT, row v at byte v * u_i[2] of the words
// texture u_in0, _llm_quant.glsl), ids[...] -> out[..., K], row ids[r]
// dequantized, zeros for an id outside [0, V) (the GPU cannot raise the
// CPU's error flag).  u_in1 = ids (integers stored as floats); u_i = {V, K, 0,
// row bytes}.
#include "common.glsl"

uniform highp isampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

#define RLX_QTEX u_in0
#define RLX_QTEX_W u_in0_w
//!include _llm_quant.glsl

float rlx_value(int i) {
  ivec2 rk = rlx_divmod(i, u_i[1]);
  int id = rlx_index(rlx_fetch(u_in1, u_in1_w, rk.x), u_i[0]);
  return id < 0 ? 0.0 : rlx_qvalue(id * u_i[3], rk.y);
}
