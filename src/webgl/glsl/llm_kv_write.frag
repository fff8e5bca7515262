#version 300 es
// llm_kv_write.frag - attention_kv's cache append (src/webgl/lower_llm.c): the
// pass draws over the whole cache texture cache[Hkv, C, D] (an input or
// param of the op, written in place) and keeps every texel but those of
// the new rows: texel (h, p, e) with s = p - pos in [0, S) becomes
// src[h, s, e]; the others are discarded, so they keep their values (the
// pass never reads the texture it writes).  A negative pos writes nothing.
// u_in0 = src[Hkv, S, D] (the op's k or v), u_in1 = pos (an integer stored
// as a float); u_i = {Hkv, S, C, D}.  The output is flat (one float per
// texel): the planner never gives a texture written in place 4 per texel.
#define RLX_CUSTOM_MAIN 1
#include "common.glsl"

uniform highp sampler2D u_in0;
uniform highp sampler2D u_in1;
uniform int u_in0_w;
uniform int u_in1_w;

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int i = p.y * u_out_w + p.x, S = u_i[1], C = u_i[2], D = u_i[3];
  int pos = int(floor(rlx_fetch(u_in1, u_in1_w, 0)));
  ivec2 re = rlx_divmod(i, D), hp = rlx_divmod(re.x, C);
  int s = hp.y - pos;
  if (i >= u_out_n || pos < 0 || s < 0 || s >= S) discard;
  rlx_color = vec4(rlx_fetch(u_in0, u_in0_w, (hp.x * S + s) * D + re.y), 0.0, 0.0, 1.0);
}
