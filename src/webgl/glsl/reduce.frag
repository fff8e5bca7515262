#version 300 es
// reduce.frag - sum (OP_REDUCE_SUM) or max (OP_REDUCE_MAX) over any set of axes, one output
// element (or one chunk of it) per fragment (src/webgl/lower_reduce.c).
// The input is viewed as kept and reduced groups of merged axes: the
// output index walks the kept groups, the reduced elements are rows of n0
// values s0 apart (the innermost reduced group) repeated over the other
// reduced groups.  Long reductions are split into chunks: fragment i
// writes chunk c = i % chunks of output o = i / chunks, covering reduced
// rows [ro0, ro1) and, within each, elements [j0, j1); a later pass of
// this shader reduces the chunks (one output per row of `chunks` values).
// u_in0 = x; u_i = {nk, kept sizes[4], kept strides[4] (innermost first),
// n0, s0, nro, outer reduced sizes[3], strides[3] (innermost first),
// chunks, rows per chunk, pieces per row, piece length, reduced rows};
// u_f = {divisor (the mean's count on its last pass, else 1)}.
// Sums add in blocks of 64 (a partial, then the total) so long sums stay
// near float precision; max propagates NaN like the CPU kernel.  Reads
// through rlx_fetch (either layout).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

float rlx_value(int i) {
  int chunks = u_i[18];
  int o = i / chunks, c = i - o * chunks;
  int base = 0, rem = o;
  for (int g = 0; g < 4; g++) {
    if (g >= u_i[0]) break;
    int size = u_i[1 + g];
    base += (rem % size) * u_i[5 + g];
    rem /= size;
  }
  int n0 = u_i[9], s0 = u_i[10], per_chunk = u_i[19], pieces = u_i[20], piece = u_i[21];
  int ro0 = (c / pieces) * per_chunk, ro1 = min(ro0 + per_chunk, u_i[22]);
  int j0 = (c % pieces) * piece, j1 = min(j0 + piece, n0);
#if OP == OP_REDUCE_MAX
  float acc = -RLX_INF;
#else
  float acc = 0.0, part = 0.0;
  int count = 0;
#endif
  for (int ro = ro0; ro < ro1; ro++) {
    int off = base, rr = ro;
    for (int g = 0; g < 3; g++) {
      if (g >= u_i[11]) break;
      int size = u_i[12 + g];
      off += (rr % size) * u_i[15 + g];
      rr /= size;
    }
    int e = off + j0 * s0;
    for (int j = j0; j < j1; j++) {
      float x = rlx_fetch(u_in0, u_in0_w, e);
      e += s0;
#if OP == OP_REDUCE_MAX
      acc = (x > acc || isnan(x)) ? x : acc;
#else
      part += x;
      count++;
      if (count == 64) {
        acc += part;
        part = 0.0;
        count = 0;
      }
#endif
    }
  }
#if OP == OP_REDUCE_MAX
  return acc;
#else
  return (acc + part) / u_f[0];
#endif
}
