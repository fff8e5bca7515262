/* gl_plan.h - the WebGL2 side of a compiled session (internal): the
 * textures every value lives in, the passes of every step resolved to
 * textures, the plan document (JSON) web/runtime/webgl.js replays, and the
 * C reference executor that runs the same passes on the CPU.  Also the
 * helpers lowerings and their C twins share (index iteration, defines).
 *
 * Textures.  Inputs, params and constants each own a texture for the life
 * of the session.  Every other value gets a texture when the step that
 * writes it runs; once its last reader has run, the texture goes back to a
 * pool and a later value (or temp) of the same element count may take it.
 * Views (reshape) share their root's texture: the layout is flat, so a
 * reshape changes nothing.  A pass never reads the texture it writes (WebGL
 * forbids feedback loops): outputs and temps come from textures not read by
 * the step.  Training assignments (value -> param after each run) become
 * copy passes at the end.  An op with a side effect (attention_kv) writes
 * an input or param leaf's texture in place (an in_place pass).  i32
 * inputs and params that matmul_q / gather_q read as weights get a words
 * texture (RGBA32I, their bits unchanged). */
#ifndef RLX_GL_PLAN_H
#define RLX_GL_PLAN_H

#include "../compile/session.h"
#include "../core/text.h"
#include "gl.h"

#define RLX_GL_DEFAULT_MAX_WIDTH 2048 /* WebGL2's guaranteed MAX_TEXTURE_SIZE */

typedef enum { RLX_GLK_INPUT = 0, RLX_GLK_PARAM, RLX_GLK_CONST, RLX_GLK_VALUE, RLX_GLK_TEMP } rlx_gl_tex_role;

typedef struct {
  size_t count;          /* floats held (packed: 4 * width * height) */
  int32_t width, height; /* texels; width * height >= count (packed: * 4) */
  int32_t row_texels;    /* 0: R32F, one float per texel, flat layout;
                          * > 0: RGBA32F packed rows (rlx_gl_packed_layout) */
  size_t rows;           /* packed: logical rows */
  int32_t v4;            /* 1: RGBA32F, 4 consecutive floats per texel (flat
                          * layout of ceil(count / 4) texels); only values
                          * that flat-safe shaders alone write and read
                          * (plan_gl.c), so the C twins never see it */
  int32_t layers;        /* > 1: a TEXTURE_2D_ARRAY of RGBA32F layers, width =
                          * row_texels, height = rows, count = 4 * width *
                          * height * layers (matmul_block4.frag's output) */
  int32_t line;          /* v4 only: > 0: width = line texels, one matrix
                          * row per texture line (rlx_gl_choose_lines);
                          * 0: near square */
  int32_t words;         /* 1: RGBA32I, the raw i32 words of an input or param
                          * that matmul_q / gather_q read as GGUF-typed
                          * weights (count words, 4 per texel, flat layout
                          * of ceil(count / 4) texels; lower_llm.c) */
  rlx_gl_tex_role role;
  int32_t node;          /* the input/param/constant node, the first value, or -1 */
} rlx_gl_texture;

/* One pass of the plan: the lowering's pass with its textures resolved. */
typedef struct {
  rlx_gl_pass pass;
  int32_t in_tex[RLX_GL_MAX_INPUTS];
  int32_t out_tex;
  int32_t node;          /* the step's node, or -1 for an assignment copy */
  int32_t in_place;      /* 1: it writes an input or param leaf of its op in
                          * place, keeping the texels it does not draw
                          * (attention_kv's cache append, llm_kv_write.frag) */
  rlx_glref_fn twin;     /* the shader's C twin */
} rlx_gl_planned_pass;

typedef struct rlx_gl_state {
  int32_t max_width;
  rlx_gl_texture *tex;
  int32_t n_tex, cap_tex;
  int32_t *node_tex;     /* per node: its texture (views: the root's), or -1 */
  rlx_gl_planned_pass *passes; /* the steps' passes, in order */
  int32_t n_passes, cap_passes;
  float **data;          /* reference executor: contents per texture (made on first run) */
  rlx_text json;         /* the last plan document */
} rlx_gl_state;

/* The state of a session compiled for RLX_DEVICE_WEBGL (s->state). */
static inline rlx_gl_state *rlx_gl_state_of(const rlx_session *s) { return (rlx_gl_state *)s->state; }

/* (Re)plans the textures and passes of a compiled WEBGL session with
 * textures at most max_width wide (0: the default). */
rlx_status rlx_gl_prepare(rlx_session *s, int32_t max_width);
/* 1 when this build has op's lowering (plan_gl.c; src/core/families.h). */
int rlx_gl_supports(rlx_op op);
void rlx_gl_state_free(rlx_session *s);

/* Texture layout of count floats: near square, width = min(ceil(sqrt(count)),
 * max_width). */
void rlx_gl_layout(size_t count, int32_t max_width, int32_t *width, int32_t *height);

/* Packed RGBA32F layout (matmul operands, glsl/common.glsl
 * rlx_packed_texel): logical rows of rt texels (4 floats each), `per`
 * rows side by side on a texture line (as many as make the texture near
 * square, at most max_width / rt, at least 1), so a row never wraps:
 * width = min(rows, per) * rt, height = ceil(rows / per).
 * Flat float index of element c of row r: 4 * ((r / per) * width + (r %
 * per) * rt + c / 4) + c % 4. */
void rlx_gl_packed_layout(size_t rows, int32_t rt, int32_t max_width, int32_t *per, int32_t *width, int32_t *height);
static inline size_t rlx_gl_packed_index(int32_t row, int32_t col, int32_t rt, int32_t per, int32_t width) {
  return 4 * ((size_t)(row / per) * (size_t)width + (size_t)(row % per) * (size_t)rt + (size_t)(col / 4)) +
         (size_t)(col % 4);
}

/* Packed matmul (lower_packed.c): the product P[batch..., M, N] with
 * P[.., m, n] = sum_k A(m, k) * B(n, k).  Rows of A: the elements of
 * shape a_rows (numel = A's batches * M, walked in flat order), row offset
 * by a_row_strides; along k: k = (k2 * kd[1] + k1) * kd[0] + k0 sits at
 * k0 * k_strides[0] + k1 * k_strides[1] + k2 * k_strides[2] (a matrix uses
 * k0 only, im2col all three).  B likewise with N rows per batch.  The
 * batch axes of P (`batch`, rank 0 for none) map to A's and B's first rows
 * by a_batch_rows / b_batch_rows (row strides, 0 = broadcast).  P goes to
 * the op's output through `place`: the output's shape walked in flat
 * order, operand 0 = P's row (batch * M + m), operand 1 = its column n.
 * Adds pack, pack, matmul_packed, unpack passes reading a.src and b.src
 * and writing the op output (or a temp); returns 0 without adding
 * anything when a row would be wider than max_width (use a flat shader). */
typedef struct {
  rlx_gl_tex src;                         /* an op input or a temp */
  int32_t base;                           /* element offset of row 0 */
  const rlx_shape *rows;
  int32_t row_strides[RLX_MAX_RANK];
  int32_t kd[2], k_strides[3];
  int32_t batch_rows[RLX_MAX_RANK];       /* per axis of gemm.batch */
} rlx_gl_gemm_operand;
typedef struct {
  int32_t M, N, K;
  rlx_shape batch;
  rlx_gl_gemm_operand a, b;
  const rlx_shape *place;
  int32_t place_row[RLX_MAX_RANK], place_col[RLX_MAX_RANK];
  int32_t place_temp; /* > 0: unpack into temp place_temp - 1 instead of the op output */
  int32_t *packed_out; /* non-NULL: no unpack pass; receives the temp holding P packed
                        * (rows of ceil(N / 4) texels, rlx_gl_packed_layout) */
} rlx_gl_gemm;
int rlx_gl_add_packed_gemm(rlx_gl_lowering *l, const rlx_gl_gemm *g, int32_t max_width);
/* Drops the final unpack pass of a packed gemm whose output is a 4-floats-
 * per-texel [rows, 4 * ort] value, the matmul writing it directly; 1 when
 * done (plan_gl.c calls it for outputs it gave that layout). */
int rlx_gl_packed_direct(rlx_gl_lowering *l);
/* Drops the pack4 passes of a packed matmul whose operand already is a
 * 4-floats-per-texel op input laid out one row per line (in_line[k]: the
 * line width of input k's texture, 0 if not v4 with lines): A or a
 * transposed B whose rows run along k (line = K / 4), or an unbatched B
 * [K, N] read along its lines (line = N / 4, matmul_packed.frag's B_KN).
 * Returns how many it dropped. */
int rlx_gl_direct_operands(rlx_gl_lowering *l, const int32_t *in_line);
/* Replaces the packed matmul of an unbatched product whose A ([M, K] along
 * lines of K / 4, or a transposed A [K, M] along lines of M / 4) and B
 * ([K, N] along lines of N / 4) are such inputs, M, N, K multiples of 4,
 * by matmul_block4 (4 x 4 outputs per fragment into 4 layers of a temp)
 * and unblock4 (the layers into the packed matmul's output).  1 when done. */
int rlx_gl_block_gemm(rlx_gl_lowering *l, const int32_t *in_line);

/* add (op 0) or sub (op 1) of a and the product b * c in one binary.frag
 * pass (lower_elementwise.c); c->in_node = {a, b, c}. */
rlx_status rlx_gl_lower_mul_into(const rlx_gl_ctx *c, rlx_gl_lowering *out, int32_t op);

/* Layout decisions of the planner (plan_layout.c).  Whether a shader reads
 * its inputs in either layout (flat R32F or 4 floats per texel) / writes
 * through common.glsl's main() (either layout); whether flat temp t of a
 * lowering may hold 4 floats per texel; the defines a planned pass gets
 * from its textures' layouts (4 elements per fragment, one-texel fetches);
 * the add/sub(a, mul(b, c)) pairs computed by one pass (per node: the
 * partner, or -1). */
int rlx_gl_reads_flat_safe(const char *shader);
int rlx_gl_writes_flat_safe(const char *shader);
int rlx_gl_temp_v4(const rlx_gl_lowering *l, int32_t t);
void rlx_gl_add_v4_defines(rlx_gl_planned_pass *pp, const rlx_gl_state *w);
rlx_status rlx_gl_find_fusions(const rlx_plan *p, int32_t *fused);
/* Per node: the line width (texels) its v4 texture takes so matmuls read
 * it without a pack pass (rlx_gl_direct_operands), or 0. */
void rlx_gl_choose_lines(const rlx_plan *p, const uint8_t *v4, const int32_t *fused, int32_t max_width,
                         int32_t *line);

/* The copy passes of the training assignments (after the steps' passes),
 * written into out (room for plan.n_outputs); returns their number. */
int32_t rlx_gl_assignment_passes(const rlx_session *s, rlx_gl_planned_pass *out);

/* The reference executor: every pass on the CPU, then outputs into the
 * session's buffers and assigned params back into its params. */
rlx_status rlx_gl_execute(rlx_session *s);

/* A program's full GLSL source: "#version 300 es", the pass's defines,
 * then the shader with its #include "x.glsl" lines replaced by x.glsl.
 * Appends to t; returns 0 when the shader is unknown. */
int rlx_gl_program_source(rlx_text *t, const rlx_gl_pass *p);
/* The plan document (plan_json.c), rebuilt on each call and owned by the
 * session; NULL with rlx_last_error. */
const char *rlx_gl_plan_json(rlx_session *s, size_t *len);
/* For src/web/exports_webgl.c (backend.c): the plan document of a WebGL2
 * session (textures, shader programs, passes, inputs, params, outputs,
 * training assignments; format in plan_json.c); NULL (with rlx_last_error)
 * for other sessions.  len (optional) receives its length. */
const char *rlx_session_webgl_plan(const rlx_session *s, size_t *len);

/* The C twin of each .frag (rlx_glref_<shader>), looked up by shader name
 * (table generated at build time from src/webgl/glsl/\*.frag). */
rlx_glref_fn rlx_glref_find(const char *shader);

/* ---- helpers for lowerings and twins ----------------------------------- */

/* Value of define `name` in the pass, or dflt. */
int32_t rlx_gl_define_value(const rlx_gl_pass *p, const char *name, int32_t dflt);

/* The iteration block (RLX_GL_ITER_INTS ints, see glsl/common.glsl
 * rlx_iter): an output of shape `out` walked in flat order, with up to 3
 * operands whose element offsets are base[k] + sum(coord[d] * strides[k][d])
 * (strides per output axis, 0 on broadcast axes).  Size-1 axes are dropped
 * and axes every operand walks contiguously merged first. */
#define RLX_GL_ITER_INTS 36
void rlx_gl_iter(rlx_gl_pass *p, const rlx_shape *out, int32_t n_ops, const int32_t (*strides)[RLX_MAX_RANK],
                 const int32_t *base);
/* Row-major strides of s; strides of `in` broadcast to `out` (over out's axes). */
void rlx_gl_contiguous_strides(const rlx_shape *s, int32_t *strides);
void rlx_gl_broadcast_strides(const rlx_shape *in, const rlx_shape *out, int32_t *strides);
/* Twin side: offsets of the 3 operands for flat output index i. */
void rlx_glref_iter(const int32_t *ints, int32_t i, int32_t *off);

/* Sums the rows of `in` ([out_n][chunks], a temp of partial sums) into
 * `out`: one pass unless the rows are long (lower_reduce.c; the norm weight
 * gradients use it too). */
rlx_status rlx_gl_add_row_sums(rlx_gl_lowering *l, size_t out_n, int32_t chunks, rlx_gl_tex in, rlx_gl_tex out);

/* Index values (gather ids, scatter_add ids) as the shaders read them: a
 * float holding an integer; valid when -1 < v < count (NaN is invalid),
 * the index is then v truncated toward zero. */
static inline int32_t rlx_gl_index(float v, int32_t count) {
  return (v > -1.0f && v < (float)count) ? (int32_t)v : -1;
}

#endif
