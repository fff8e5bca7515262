// common.glsl - included by every fragment shader (src/webgl/gl.h): the
// precision, the pass uniforms, the output, index helpers and main().
// Each shader defines `float rlx_value(int i)`: the output element at flat
// index i (always < u_out_n).  One that defines RLX_CUSTOM_MAIN writes its
// own main(); one that defines RLX_VALUE4 also has `vec4 rlx_value4(int
// i)`, which the 4-floats-per-texel main() calls (elements i..i+3).  Four floats per texel (RGBA32F, elements 4t..4t+3 in texel
// t): outputs of passes with the define RLX_V4 (main() computes the 4
// elements of its texel), inputs whose width uniform is negative
// (rlx_fetch); the planner picks this layout for the values only these
// helpers touch (src/webgl/plan_gl.c).
precision highp float;
precision highp int;
precision highp sampler2D;

uniform int u_i[48];   // RLX_GL_MAX_INTS
uniform float u_f[8];  // RLX_GL_MAX_FLOATS
uniform int u_out_w;
uniform int u_out_n;

layout(location = 0) out vec4 rlx_color;

#define RLX_NAN uintBitsToFloat(0x7fc00000u)
#define RLX_INF uintBitsToFloat(0x7f800000u)

// (a / b, a % b) for 0 <= a, 0 < b, without integer division (slow in
// software rasterizers) and without branches: a float estimate of the
// quotient, then one exact correction from the integer remainder (r + 0.5
// keeps the second division away from integers, so its rounding cannot
// move the floor).
ivec2 rlx_divmod(int a, int b) {
  float fb = float(b);
  int q = int(float(a) / fb);
  q += int(floor((float(a - q * b) + 0.5) / fb));
  return ivec2(q, a - q * b);
}

// Element `index` of a texture `width` texels wide (row-major flat layout;
// width < 0: 4 floats per texel, -width texels wide).  No branches: a
// software rasterizer shading 4 fragments at once may run both sides.
float rlx_fetch(highp sampler2D tex, int width, int index) {
  bool v4 = width < 0;
  ivec2 qr = rlx_divmod(v4 ? index >> 2 : index, abs(width));
  vec4 v = texelFetch(tex, ivec2(qr.y, qr.x), 0);
  return v4 ? v[index & 3] : v.r;
}

// The iteration block (rlx_gl_iter in src/webgl/lower_common.c), 36 ints
// from u_i[0]: rank, dims (innermost first, 8), the strides of operands 0,
// 1, 2 (8 each, innermost first), their base offsets (3).  Returns the
// element offsets of the 3 operands for flat output index i.
ivec3 rlx_iter(int i) {
  ivec3 off = ivec3(u_i[33], u_i[34], u_i[35]);
  if (u_i[0] == 1) return off + i * ivec3(u_i[9], u_i[17], u_i[25]); // i < dims[0]
  int rem = i;
  for (int d = 0; d < 8; d++) {
    if (d >= u_i[0]) break;
    ivec2 qr = rlx_divmod(rem, u_i[1 + d]);
    rem = qr.x;
    off += qr.y * ivec3(u_i[9 + d], u_i[17 + d], u_i[25 + d]);
  }
  return off;
}

// Four elements of a texture for a 4-floats-per-texel output (the
// defines RLX_RUN4 and F4_k of plan_gl.c, fixed per pass because a
// software rasterizer runs both sides of a branch): rlx_texel4 = elements
// o..o+3 of a 4-floats-per-texel texture (o % 4 == 0, one fetch);
// rlx_fetch_run4 = elements o, o + s, o + 2s, o + 3s of either layout.
vec4 rlx_texel4(highp sampler2D tex, int width, int o) {
  ivec2 qr = rlx_divmod(o >> 2, -width);
  return texelFetch(tex, ivec2(qr.y, qr.x), 0);
}

vec4 rlx_fetch_run4(highp sampler2D tex, int width, int o, int s) {
  return vec4(rlx_fetch(tex, width, o), rlx_fetch(tex, width, o + s), rlx_fetch(tex, width, o + 2 * s),
              rlx_fetch(tex, width, o + 3 * s));
}

// An index value (gather/scatter ids, stored as floats): its integer when
// -1 < v < count, else -1 (NaN too).
int rlx_index(float v, int count) {
  return (v > -1.0 && v < float(count)) ? int(v) : -1;
}

// Packed RGBA32F textures (src/webgl/gl_plan.h rlx_gl_packed_layout):
// logical rows of `rt` texels (4 floats each), `per` rows side by side on
// a texture line.  The texel of element 4 * k4 of row `row`:
ivec2 rlx_packed_texel(int row, int k4, int rt, int per) {
  ivec2 qr = rlx_divmod(row, per);
  return ivec2(qr.y * rt + k4, qr.x);
}

#if defined(RLX_CUSTOM_MAIN)
#elif defined(RLX_V4) && defined(RLX_VALUE4)
// The shader's vec4 rlx_value4(int i): elements i..i+3 (i % 4 == 0, i <
// u_out_n), the lanes past u_out_n being ignored.
vec4 rlx_value4(int i);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int i = 4 * (p.y * u_out_w + p.x);
  vec4 v = vec4(0.0);
  if (i < u_out_n) {
    v = rlx_value4(i);
    if (i + 3 >= u_out_n) v = vec4(v.x, i + 1 < u_out_n ? v.y : 0.0, i + 2 < u_out_n ? v.z : 0.0, 0.0);
  }
  rlx_color = v;
}
#elif defined(RLX_V4)
float rlx_value(int i);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int t = p.y * u_out_w + p.x, i = 4 * t;
  vec4 v = vec4(0.0);
  if (i < u_out_n) v.x = rlx_value(i);
  if (i + 1 < u_out_n) v.y = rlx_value(i + 1);
  if (i + 2 < u_out_n) v.z = rlx_value(i + 2);
  if (i + 3 < u_out_n) v.w = rlx_value(i + 3);
  rlx_color = v;
}
#else
float rlx_value(int i);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int i = p.y * u_out_w + p.x;
  float v = 0.0;
  if (i < u_out_n) v = rlx_value(i);
  rlx_color = vec4(v, 0.0, 0.0, 1.0);
}
#endif
