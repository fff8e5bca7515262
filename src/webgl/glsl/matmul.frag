#version 300 es
// matmul.frag - a[..., M, K] . b[..., K, N] -> out[..., M, N] (either
// operand possibly stored transposed, batch dims broadcast): one output
// element per fragment, a loop over K unrolled by 4.  u_in0 = a, u_in1 = b;
// u_i = the iteration block over the output (operand 0: a's offset of
// element (batch, m, 0), operand 1: b's offset of (batch, 0, n); the
// transposes and broadcasts are in its strides), then {K, a's step along
// k, b's step along k} (src/webgl/lower_matmul.c).
// The inner loop never divides: each operand is a read cursor, the texel
// center (x + 0.5, y + 0.5) of its element, moved by its step as (step %
// width, step / width) with a carry into the next row; reads go through
// texture() at texel centers (nearest filtering, one level: exact), which
// SwiftShader runs faster than texelFetch (matmul 64x784x128: 46 vs 71 ms).
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

#define MM_POS(idx, w) (vec2((idx) % (w), (idx) / (w)) + 0.5)
#define MM_STEP(p, st, w) p += st; if (p.x > w) p += vec2(-w, 1.0)

float rlx_value(int i) {
  ivec3 off = rlx_iter(i);
  int k_len = u_i[36], wa = u_in0_w, wb = u_in1_w;
  float fa = float(wa), fb = float(wb);
  vec2 ia = 1.0 / vec2(textureSize(u_in0, 0)), ib = 1.0 / vec2(textureSize(u_in1, 0));
  vec2 pa = MM_POS(off.x, wa), pb = MM_POS(off.y, wb);
  vec2 sa = vec2(u_i[37] % wa, u_i[37] / wa), sb = vec2(u_i[38] % wb, u_i[38] / wb);
  float acc = 0.0;
  int k = 0;
  for (; k + 4 <= k_len; k += 4) {
    float a0 = texture(u_in0, pa * ia).r, b0 = texture(u_in1, pb * ib).r;
    MM_STEP(pa, sa, fa);
    MM_STEP(pb, sb, fb);
    float a1 = texture(u_in0, pa * ia).r, b1 = texture(u_in1, pb * ib).r;
    MM_STEP(pa, sa, fa);
    MM_STEP(pb, sb, fb);
    float a2 = texture(u_in0, pa * ia).r, b2 = texture(u_in1, pb * ib).r;
    MM_STEP(pa, sa, fa);
    MM_STEP(pb, sb, fb);
    float a3 = texture(u_in0, pa * ia).r, b3 = texture(u_in1, pb * ib).r;
    MM_STEP(pa, sa, fa);
    MM_STEP(pb, sb, fb);
    acc += a0 * b0;
    acc += a1 * b1;
    acc += a2 * b2;
    acc += a3 * b3;
  }
  for (; k < k_len; k++) {
    acc += texture(u_in0, pa * ia).r * texture(u_in1, pb * ib).r;
    MM_STEP(pa, sa, fa);
    MM_STEP(pb, sb, fb);
  }
  return acc;
}
