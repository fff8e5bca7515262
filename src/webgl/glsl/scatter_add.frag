#version 300 es
// scatter_add.frag - the gradient of gather: ids[R], dy[R, D] -> out[V, D],
// out[v, j] = sum of dy[r, j] over the rows r with ids[r] == v, summed in
// row order (deterministic, as the CPU kernel); ids outside [0, V) add
// nothing.  One fragment per output element walks all R ids (no atomics in
// WebGL2).  u_in0 = ids (integers stored as floats), u_in1 = dy;
// u_i = {D, R, V}.
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

float rlx_value(int i) {
  int d = u_i[0], rows = u_i[1], v = i / d, j = i % d;
  float acc = 0.0;
  for (int r = 0; r < rows; r++)
    if (rlx_index(rlx_fetch(u_in0, u_in0_w, r), u_i[2]) == v) acc += rlx_fetch(u_in1, u_in1_w, r * d + j);
  return acc;
}
