#version 300 es
// pad.frag - narrow_grad: dy[outer, len, inner] placed at [start, start +
// len) of an axis of `full` elements, zeros elsewhere.  u_in0 = dy;
// u_i = {inner, full, start, len}.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_value(int i) {
  int inner = u_i[0], full = u_i[1], start = u_i[2], len = u_i[3];
  int o = i / (full * inner), r = i % (full * inner);
  int a = r / inner - start, j = r % inner;
  if (a < 0 || a >= len) return 0.0;
  return rlx_fetch(u_in0, u_in0_w, (o * len + a) * inner + j);
}
