#version 300 es
// pack4.frag - one operand of a packed matmul (src/webgl/lower_packed.c):
// out = a packed RGBA32F texture of `rows` rows of `rt` texels; element k
// of row r = src[row_off(r) + k_off(k)] for k < K, 0 past K (and in the
// unused texels of the last texture line).  u_in0 = src; u_i = the
// iteration block over the rows (operand 0: the offset of the row's k = 0),
// then {K, rt, per, rows, d0, d1, s0, s1, s2, out width}: k = (k2 * d1 +
// k1) * d0 + k0 sits at offset k0 * s0 + k1 * s1 + k2 * s2 (im2col uses all
// three, a matrix only k0).  One fragment = one texel: the offset of its
// first element is found once, the next three step from it.
#define RLX_CUSTOM_MAIN 1
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform int u_in0_w;

// One element: fetched when k < K, then the cursor (offset and k's
// digits k0 < d0, k1 < d1) moves to k + 1.
#define PACK_NEXT(c) \
  if (k + c < K) v[c] = pack_fetch(off); \
  off += s0; \
  if (++k0 == d0) { k0 = 0; off += s1 - d0 * s0; if (++k1 == d1) { k1 = 0; off += s2 - d1 * s1; } }

float pack_fetch(int index) { return rlx_fetch(u_in0, u_in0_w, index); }

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  ivec2 xr = rlx_divmod(p.x, u_i[37]);
  int r = p.y * u_i[38] + xr.x, k = xr.y * 4;
  vec4 v = vec4(0.0);
#if defined(PACK_TEXEL)
  // the define (src/webgl/plan_gl.c): a 4-floats-per-texel source whose
  // rows run along k (s0 = 1, d0 >= K, K % 4 == 0) from 4-aligned offsets:
  // a texel is one texel of the source
  if (r < u_i[39]) v = rlx_texel4(u_in0, u_in0_w, rlx_iter(r).x + k);
#elif defined(PACK_COLS)
  // the define (plan_gl.c): a 4-floats-per-texel source whose rows run
  // along k with s0 a multiple of 4 (d0 >= K): the 4 elements are the same
  // component of texels s0 / 4 apart, found by one division and steps
  if (r < u_i[39]) {
    int K = u_i[36], s0 = u_i[42], w = -u_in0_w;
    int off = rlx_iter(r).x + k * s0, c = off & 3;
    ivec2 q = rlx_divmod(off >> 2, w), d = rlx_divmod(s0 >> 2, w);
    ivec2 xy = ivec2(q.y, q.x), step = ivec2(d.y, d.x);
    for (int j = 0; j < 4; j++) {
      float e = texelFetch(u_in0, xy, 0)[c];
      v[j] = k + j < K ? e : 0.0;
      xy += step;
      xy += xy.x >= w ? ivec2(-w, 1) : ivec2(0);
    }
  }
#else
  if (r < u_i[39]) {
    int K = u_i[36], d0 = u_i[40], d1 = u_i[41], s0 = u_i[42], s1 = u_i[43], s2 = u_i[44];
    ivec2 a = rlx_divmod(k, d0), b = rlx_divmod(a.x, d1);
    int k0 = a.y, k1 = b.y;
    int off = rlx_iter(r).x + k0 * s0 + k1 * s1 + b.x * s2;
    PACK_NEXT(0)
    PACK_NEXT(1)
    PACK_NEXT(2)
    PACK_NEXT(3)
  }
#endif
  rlx_color = v;
}
