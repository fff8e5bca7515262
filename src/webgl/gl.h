/* gl.h - lowering a compiled plan to WebGL2 render passes.  As for WebGPU,
 * C decides everything and emits one JSON document
 * (rlx_session_webgl_plan); the generic executor web/runtime/webgl.js
 * creates programs and textures once per session and draws the passes; the
 * C reference executor (reference.c) runs the same passes on the CPU with
 * the same formulas, so the planner and the numerics are tested natively.
 *
 * Texture layout: every value lives in its own R32F texture (one float per
 * texel, row-major over the flat tensor): width = min(numel, max_width),
 * height = ceil(numel / width), where max_width <= MAX_TEXTURE_SIZE (2048 is
 * the guaranteed minimum and the default).  Texel (x, y) holds element
 * y * width + x; texels past numel are padding.  A fragment shader computes
 * one output element per fragment: its flat index from gl_FragCoord, then
 * reads inputs with texelFetch at the flat indices it needs
 * (rlx_fetch(tex, width, index) in glsl/common.glsl).
 *
 * Shaders (src/webgl/glsl/<name>.frag, GLSL ES 3.00) start with the
 * defines of the pass (#define NAME value lines inserted after #version),
 * include common.glsl, read inputs from `uniform highp sampler2D u_in<k>`
 * with widths `uniform int u_in<k>_w`, and get their parameters from
 * `uniform int u_i[N]` / `uniform float u_f[M]`; the output's width and
 * count are `u_out_w` and `u_out_n`.  i32 inputs are stored as float values
 * of the integers (exact below 2^24). */
#ifndef RLX_GL_H
#define RLX_GL_H

#include "../compile/plan.h"

#define RLX_GL_MAX_INPUTS 6
#define RLX_GL_MAX_INTS 48
#define RLX_GL_MAX_FLOATS 8
#define RLX_GL_MAX_DEFINES 8
#define RLX_GL_MAX_PASSES 6

/* A pass input or output: an op input, the op output, or a temporary
 * texture of `count` floats local to the op (index = temp number). */
typedef enum { RLX_GLT_INPUT = 0, RLX_GLT_OUTPUT = 1, RLX_GLT_TEMP = 2 } rlx_gl_tex_kind;

typedef struct {
  rlx_gl_tex_kind kind;
  int32_t index;
} rlx_gl_tex;

typedef struct {
  const char *shader; /* .frag name without extension */
  const char *define_names[RLX_GL_MAX_DEFINES];
  int32_t define_values[RLX_GL_MAX_DEFINES];
  int32_t n_defines;
  rlx_gl_tex inputs[RLX_GL_MAX_INPUTS];
  int32_t n_inputs;
  rlx_gl_tex output;
  int32_t ints[RLX_GL_MAX_INTS];
  int32_t n_ints;
  float floats[RLX_GL_MAX_FLOATS];
  int32_t n_floats;
} rlx_gl_pass;

typedef struct {
  rlx_gl_pass p[RLX_GL_MAX_PASSES];
  int32_t n;
  size_t temp_count[RLX_GL_MAX_PASSES]; /* floats of each temp texture (packed: rows) */
  int32_t temp_row_texels[RLX_GL_MAX_PASSES]; /* 0, or a packed RGBA32F temp: texels per row */
  int32_t temp_layers[RLX_GL_MAX_PASSES]; /* > 1: a packed temp of that many layers (a 2D
                                           * array texture, width row_texels, height count) */
  int32_t n_temps;
} rlx_gl_lowering;

typedef struct {
  const rlx_node_t *node;
  const rlx_node_t *in_node[RLX_MAX_INPUTS];
  int32_t max_width; /* texture width limit of the layout */
} rlx_gl_ctx;

/* One lowering per op: rlx_gl_lower_<name> (src/webgl/lower_*.c). */
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) rlx_status rlx_gl_lower_##name(const rlx_gl_ctx *c, rlx_gl_lowering *out);
#include "rlx_ops.def"
#undef RLX_OP

/* The reference executor runs one pass: for every output element i <
 * out_n, out[i] = the shader's value (reference.c dispatches by shader name
 * to rlx_glref_<shader>, one C function per .frag with the same formulas). */
typedef struct {
  const rlx_gl_pass *pass;
  const float *in[RLX_GL_MAX_INPUTS];
  size_t in_n[RLX_GL_MAX_INPUTS];
  float *out;
  size_t out_n;
} rlx_glref_args;
typedef void (*rlx_glref_fn)(const rlx_glref_args *a);

/* Helpers (lower_common.c in this directory). */
rlx_gl_pass *rlx_gl_add(rlx_gl_lowering *l, const char *shader);
void rlx_gl_define(rlx_gl_pass *p, const char *name, int32_t value);
void rlx_gl_in(rlx_gl_pass *p, rlx_gl_tex_kind kind, int32_t index);
void rlx_gl_out(rlx_gl_pass *p, rlx_gl_tex_kind kind, int32_t index);
void rlx_gl_int(rlx_gl_pass *p, int32_t v);
void rlx_gl_float(rlx_gl_pass *p, float v);
int32_t rlx_gl_temp(rlx_gl_lowering *l, size_t count); /* a new temp texture, returns its index */
/* A new packed RGBA32F temp (gl_plan.h rlx_gl_packed_layout): `rows` rows
 * of `row_texels` texels; returns its index. */
int32_t rlx_gl_temp_packed(rlx_gl_lowering *l, size_t rows, int32_t row_texels);
rlx_status rlx_gl_missing(const rlx_gl_ctx *c);

/* The embedded GLSL sources (generated at build time from glsl/\*). */
const char *rlx_glsl_source(const char *name);

#endif
