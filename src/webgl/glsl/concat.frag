#version 300 es
// concat.frag - up to 6 inputs of a concat along one axis.  Viewed as
// [outer, axis, inner]: u_i = {inner, axis size of the output, then per
// input its start and length on the axis}.  N inputs in this pass
// (u_in0 .. u_in(N-1)); with PREV = 1 the next sampler u_inN holds the
// result of the previous pass (concats of more inputs take several
// passes), which fills the elements no input of this pass covers (else 0).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;
#if N + PREV > 1
uniform highp sampler2D u_in1;
uniform int u_in1_w;
#endif
#if N + PREV > 2
uniform highp sampler2D u_in2;
uniform int u_in2_w;
#endif
#if N + PREV > 3
uniform highp sampler2D u_in3;
uniform int u_in3_w;
#endif
#if N + PREV > 4
uniform highp sampler2D u_in4;
uniform int u_in4_w;
#endif
#if N + PREV > 5
uniform highp sampler2D u_in5;
uniform int u_in5_w;
#endif

// Returns input k's element when the axis position a falls in its range.
#define RLX_TRY(k, TEX, W) if (a >= u_i[2 + 2 * k] && a < u_i[2 + 2 * k] + u_i[3 + 2 * k]) return rlx_fetch(TEX, W, (o * u_i[3 + 2 * k] + a - u_i[2 + 2 * k]) * inner + j);

float rlx_value(int i) {
  int inner = u_i[0], axis = u_i[1];
  int o = i / (axis * inner), r = i % (axis * inner);
  int a = r / inner, j = r % inner;
  RLX_TRY(0, u_in0, u_in0_w)
#if N > 1
  RLX_TRY(1, u_in1, u_in1_w)
#endif
#if N > 2
  RLX_TRY(2, u_in2, u_in2_w)
#endif
#if N > 3
  RLX_TRY(3, u_in3, u_in3_w)
#endif
#if N > 4
  RLX_TRY(4, u_in4, u_in4_w)
#endif
#if N > 5
  RLX_TRY(5, u_in5, u_in5_w)
#endif
#if PREV && N == 1
  return rlx_fetch(u_in1, u_in1_w, i);
#elif PREV && N == 2
  return rlx_fetch(u_in2, u_in2_w, i);
#elif PREV && N == 3
  return rlx_fetch(u_in3, u_in3_w, i);
#elif PREV && N == 4
  return rlx_fetch(u_in4, u_in4_w, i);
#elif PREV && N == 5
  return rlx_fetch(u_in5, u_in5_w, i);
#else
  return 0.0;
#endif
}
