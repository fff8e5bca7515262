// common.glsl - included by every fragment shader (src/webgl/gl.h): the
// precision, the pass uniforms, the output, index helpers and main().
// Each shader defines `float rlx_value(int i)`: the output element at flat
// index i (always < u_out_n).
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

// Element `index` of a texture `width` texels wide (row-major flat layout).
float rlx_fetch(highp sampler2D tex, int width, int index) {
  return texelFetch(tex, ivec2(index % width, index / width), 0).r;
}

// The iteration block (rlx_gl_iter in src/webgl/lower_common.c), 36 ints
// from u_i[0]: rank, dims (innermost first, 8), the strides of operands 0,
// 1, 2 (8 each, innermost first), their base offsets (3).  Returns the
// element offsets of the 3 operands for flat output index i.
ivec3 rlx_iter(int i) {
  ivec3 off = ivec3(u_i[33], u_i[34], u_i[35]);
  int rem = i;
  for (int d = 0; d < 8; d++) {
    if (d >= u_i[0]) break;
    int dim = u_i[1 + d];
    int c = rem % dim;
    rem /= dim;
    off += c * ivec3(u_i[9 + d], u_i[17 + d], u_i[25 + d]);
  }
  return off;
}

// An index value (gather/scatter ids, stored as floats): its integer when
// -1 < v < count, else -1 (NaN too).
int rlx_index(float v, int count) {
  return (v > -1.0 && v < float(count)) ? int(v) : -1;
}

float rlx_value(int i);

void main() {
  ivec2 p = ivec2(gl_FragCoord.xy);
  int i = p.y * u_out_w + p.x;
  float v = 0.0;
  if (i < u_out_n) v = rlx_value(i);
  rlx_color = vec4(v, 0.0, 0.0, 1.0);
}
