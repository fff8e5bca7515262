#version 300 es
// matmul_packed.frag - out[r, n..n+3] = sum_k A[ra, k] * B[rb + n + j, k]
// (j = 0..3) over packed operands (pack4.frag: rows of kt texels, 4 values
// of k per texel), into a packed output (rows of ort texels, 4 values of n
// per texel): one fragment = 4 outputs sharing each texel of A, 5 fetches
// per 16 multiply-adds.  Output row r = batch * M + m; the batch's first
// rows of A and B come from the iteration block over the batch dims
// (operands 0 and 1, broadcasts = stride 0); ra = A's + m.  u_in0 = packed
// A, u_in1 = packed B; u_i = the iteration block, then {M, N, kt, A's per,
// B's per, ort, out per, out rows, A's width, B's width, out width}
// (src/webgl/lower_packed.c); the define KT = kt.  Lanes past N are 0.
// An operand may also be an op input read as it lies (rows per line 1,
// B_KN below: lower_packed.c rlx_gl_direct_operands).
// The output texel t (= y * width + x) holds row t / ort, its texels
// (t % ort): the packed layout, or, when N = 4 * ort, the flat 4-floats-
// per-texel layout of [rows, N] (plan_gl.c then drops the unpack pass).
#define RLX_CUSTOM_MAIN 1
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int ort = u_i[41];
  ivec2 rn = rlx_divmod(p.y * u_out_w + p.x, ort);
  int r = rn.x, n = rn.y * 4;
  if (r >= u_i[43]) {
    rlx_color = vec4(0.0);
    return;
  }
  int M = u_i[36], N = u_i[37], kt = u_i[38], pa = u_i[39], pb = u_i[40];
  ivec2 bm = rlx_divmod(r, M);
  ivec3 base = rlx_iter(bm.x);
  // Reads through texture() at texel centers (nearest filtering: exact),
  // which SwiftShader runs faster than texelFetch; a row never wraps, so
  // the cursors only move along x, in whole texels (exact in float).
  vec2 ia = 1.0 / vec2(textureSize(u_in0, 0)), ib = 1.0 / vec2(textureSize(u_in1, 0));
  vec2 ta = vec2(rlx_packed_texel(base.x + bm.y, 0, kt, pa)) + 0.5;
  vec4 acc = vec4(0.0);
#if defined(B_KN)
  // the define (src/webgl/lower_packed.c rlx_gl_direct_operands): B is a
  // [K, N] 4-floats-per-texel input with one row per texture line (N % 4
  // == 0, shared by every batch): texel (n / 4, k) holds B[k, n..n+3]
  vec2 tb = vec2(float(rn.y) + 0.5, 0.5);
  for (int k = 0; k < KT; k++) {
    vec4 a = texture(u_in0, ta * ia);
    acc += a.x * texture(u_in1, tb * ib) + a.y * texture(u_in1, (tb + vec2(0.0, 1.0)) * ib) +
           a.z * texture(u_in1, (tb + vec2(0.0, 2.0)) * ib) + a.w * texture(u_in1, (tb + vec2(0.0, 3.0)) * ib);
    ta.x += 1.0;
    tb.y += 4.0;
  }
#else
  vec2 t0 = vec2(rlx_packed_texel(base.y + n, 0, kt, pb)) + 0.5;
  vec2 t1 = vec2(rlx_packed_texel(base.y + min(n + 1, N - 1), 0, kt, pb)) + 0.5;
  vec2 t2 = vec2(rlx_packed_texel(base.y + min(n + 2, N - 1), 0, kt, pb)) + 0.5;
  vec2 t3 = vec2(rlx_packed_texel(base.y + min(n + 3, N - 1), 0, kt, pb)) + 0.5;
  for (int k = 0; k < KT; k++) { // KT = kt, a define: a loop of constant length runs faster
    vec4 a = texture(u_in0, ta * ia);
    acc += vec4(dot(a, texture(u_in1, t0 * ib)), dot(a, texture(u_in1, t1 * ib)),
                dot(a, texture(u_in1, t2 * ib)), dot(a, texture(u_in1, t3 * ib)));
    ta.x += 1.0;
    t0.x += 1.0;
    t1.x += 1.0;
    t2.x += 1.0;
    t3.x += 1.0;
  }
#endif
  rlx_color = vec4(acc.x, n + 1 < N ? acc.y : 0.0, n + 2 < N ? acc.z : 0.0, n + 3 < N ? acc.w : 0.0);
}
