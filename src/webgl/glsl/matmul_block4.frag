#version 300 es
// matmul_block4.frag - P[m, n] = sum_k A(m, k) * B[k, n], 4 x 4 outputs per
// fragment: fragment (x, y) computes rows 4y..4y+3, columns 4x..4x+3 and
// writes row 4y + j to layer j of the output (a 4-layer array texture,
// each layer [M / 4 lines, N / 4 texels]; glsl/unblock4.frag puts them in
// the product's layout).  8 fetches per 64 multiply-adds.  Operands are
// 4-floats-per-texel op inputs with one matrix row per texture line
// (src/webgl/lower_packed.c rlx_gl_block_gemm): u_in0 = A [M, K] (texel
// (k / 4, m) = A[m, k..k+3]) or, with the define A_KM, A^T given as [K, M]
// (texel (m / 4, k) = A(m..m+3, k)); u_in1 = B [K, N] (texel (n / 4, k) =
// B[k, n..n+3]).  u_i = {M, N, K}; the define KT = K / 4.
#define RLX_CUSTOM_MAIN 1
#include "common.glsl"

layout(location = 1) out vec4 rlx_color1;
layout(location = 2) out vec4 rlx_color2;
layout(location = 3) out vec4 rlx_color3;
uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  // texture() at texel centers (nearest: exact), cursors stepping whole texels
  vec2 ia = 1.0 / vec2(textureSize(u_in0, 0)), ib = 1.0 / vec2(textureSize(u_in1, 0));
  vec2 tb = (vec2(p.x, 0) + 0.5) * ib, db = vec2(0.0, ib.y);
  vec4 c0 = vec4(0.0), c1 = vec4(0.0), c2 = vec4(0.0), c3 = vec4(0.0);
#if defined(A_KM)
  vec2 ta = (vec2(p.y, 0) + 0.5) * ia, da = vec2(0.0, ia.y);
#else
  vec2 ta = (vec2(0, 4 * p.y) + 0.5) * ia, da = vec2(0.0, ia.y);
#endif
  for (int k = 0; k < KT; k++) { // KT, a define: a loop of constant length runs faster
    vec4 a0 = texture(u_in0, ta), a1 = texture(u_in0, ta + da), a2 = texture(u_in0, ta + 2.0 * da),
         a3 = texture(u_in0, ta + 3.0 * da);
    vec4 b0 = texture(u_in1, tb), b1 = texture(u_in1, tb + db), b2 = texture(u_in1, tb + 2.0 * db),
         b3 = texture(u_in1, tb + 3.0 * db);
#if defined(A_KM)
    // a_i = A(m..m+3, k + i): row j takes component j of each
    c0 += a0.x * b0 + a1.x * b1 + a2.x * b2 + a3.x * b3;
    c1 += a0.y * b0 + a1.y * b1 + a2.y * b2 + a3.y * b3;
    c2 += a0.z * b0 + a1.z * b1 + a2.z * b2 + a3.z * b3;
    c3 += a0.w * b0 + a1.w * b1 + a2.w * b2 + a3.w * b3;
    ta += 4.0 * da;
#else
    // a_j = A[m + j, k..k+3]
    c0 += a0.x * b0 + a0.y * b1 + a0.z * b2 + a0.w * b3;
    c1 += a1.x * b0 + a1.y * b1 + a1.z * b2 + a1.w * b3;
    c2 += a2.x * b0 + a2.y * b1 + a2.z * b2 + a2.w * b3;
    c3 += a3.x * b0 + a3.y * b1 + a3.z * b2 + a3.w * b3;
    ta.x += ia.x;
#endif
    tb += 4.0 * db;
  }
  rlx_color = c0;
  rlx_color1 = c1;
  rlx_color2 = c2;
  rlx_color3 = c3;
}
