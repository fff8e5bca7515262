/* wgpu.h - lowering a compiled plan to WebGPU.  C decides everything: the
 * buffers, the pipelines (a WGSL file plus override constants), the bind
 * groups, the uniforms and the dispatch sizes.  It emits them as one JSON
 * document (rlx_session_webgpu_plan); the generic executor in
 * web/runtime/webgpu.js creates the GPU objects once and replays the
 * dispatches.  No op-specific JavaScript.
 *
 * Conventions every WGSL kernel follows (src/webgpu/wgsl/<shader>.wgsl):
 *  - @group(0) @binding(i): the dispatch's bindings in order, as listed by
 *    its lowering (usually the op's inputs, then the output, then scratch),
 *    each `var<storage, read>` array<f32> (inputs) or `var<storage,
 *    read_write>` array<f32> (outputs and scratch; i32 data is read with
 *    bitcast<i32>), then one `var<uniform>` at binding n_bindings holding
 *    the dispatch's u32 words (floats stored as bit patterns: use
 *    bitcast<f32>), declared as array<vec4<u32>, N> (uniform arrays need
 *    16-byte strides; word i = u[i / 4][i % 4]).
 *  - Variants are chosen by `override` constants (u32), listed in the
 *    dispatch; the pipeline key is the shader name plus those constants.
 *  - The workgroup size is fixed in the shader; the lowering computes the
 *    workgroup counts.  Counts above 65535 per dimension spill into y
 *    (rlx_wgpu_grid1d); kernels then compute the linear workgroup index as
 *    wid.x + wid.y * num_workgroups.x and return when past the end.
 *  - Storage offsets are multiples of 256 bytes: the GPU arena aligns every
 *    value to 64 floats.  Bindings never alias within a dispatch. */
#ifndef RLX_WGPU_H
#define RLX_WGPU_H

#include "../compile/plan.h"

#define RLX_WGPU_MAX_BINDINGS 8
/* u32 words: 12 header words + 3 per frequency of a 128-wide rope head
 * (llm_attention_kv.wgsl with rope; rope_fused.wgsl has 8 header words).
 * A dispatch's uniform slot is sized by the words it uses (plan_json.c),
 * so only such dispatches take the larger slots. */
#define RLX_WGPU_MAX_UNIFORM 204
/* Rope frequencies whose exact constants one uniform holds: heads of up
 * to 128 values (rope_fused.wgsl, llm_attention_kv.wgsl). */
#define RLX_WGPU_ROPE_FREQS 64u
#define RLX_WGPU_MAX_OVERRIDES 8
#define RLX_WGPU_MAX_DISPATCH 8 /* per op */

/* What a binding refers to: an input of the op (its value's storage), the
 * op's output, or a region of the per-step scratch buffer. */
typedef enum { RLX_WB_INPUT = 0, RLX_WB_OUTPUT = 1, RLX_WB_SCRATCH = 2 } rlx_wgpu_binding_kind;

typedef struct {
  rlx_wgpu_binding_kind kind;
  int32_t index;  /* input index, or 0 */
  size_t offset;  /* bytes into the scratch (multiple of 256); 0 otherwise */
  size_t bytes;   /* scratch region size; 0 = the whole value */
  int writable;   /* declared read_write in the shader */
} rlx_wgpu_binding;

typedef struct {
  const char *shader;                 /* wgsl file name without extension */
  const char *override_names[RLX_WGPU_MAX_OVERRIDES];
  uint32_t override_values[RLX_WGPU_MAX_OVERRIDES];
  int32_t n_overrides;
  rlx_wgpu_binding bindings[RLX_WGPU_MAX_BINDINGS];
  int32_t n_bindings;
  uint32_t uniform[RLX_WGPU_MAX_UNIFORM];
  int32_t n_uniform;
  uint32_t groups[3];
} rlx_wgpu_dispatch;

/* What a lowering returns for one op: dispatches in order and the scratch
 * bytes they need (shared by all steps; the executor sizes it to the max). */
typedef struct {
  rlx_wgpu_dispatch d[RLX_WGPU_MAX_DISPATCH];
  int32_t n;
  size_t scratch_bytes;
} rlx_wgpu_lowering;

/* Context handed to lowerings: the node, its inputs' nodes, device limits. */
typedef struct {
  const rlx_node_t *node;
  const rlx_node_t *in_node[RLX_MAX_INPUTS];
  uint32_t max_workgroup_storage; /* bytes of workgroup memory guaranteed (16384) */
} rlx_wgpu_ctx;

typedef rlx_status (*rlx_wgpu_lower_fn)(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out);

/* One lowering per op, rlx_wgpu_lower_<name> (src/webgpu/lower_*.c); leaves and
 * views are never lowered (they never become steps). */
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) rlx_status rlx_wgpu_lower_##name(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out);
#include "rlx_ops.def"
#undef RLX_OP

/* Helpers for lowerings (lower_common.c). */
rlx_wgpu_dispatch *rlx_wgpu_add(rlx_wgpu_lowering *l, const char *shader);
void rlx_wgpu_override(rlx_wgpu_dispatch *d, const char *name, uint32_t value);
void rlx_wgpu_bind_inputs(rlx_wgpu_dispatch *d, int32_t n_inputs); /* inputs 0..n-1, then the output */
void rlx_wgpu_bind(rlx_wgpu_dispatch *d, rlx_wgpu_binding_kind kind, int32_t index, size_t offset, size_t bytes,
                   int writable);
void rlx_wgpu_u32(rlx_wgpu_dispatch *d, uint32_t v);
void rlx_wgpu_f32(rlx_wgpu_dispatch *d, float v);
void rlx_wgpu_shape(rlx_wgpu_dispatch *d, const rlx_shape *s);               /* rank, then 8 dims */
void rlx_wgpu_bcast_strides(rlx_wgpu_dispatch *d, const rlx_shape *in, const rlx_shape *out); /* 8 strides */
/* groups for n items at `per_group` items per workgroup, spilling into y. */
void rlx_wgpu_grid1d(rlx_wgpu_dispatch *d, size_t n, uint32_t per_group);
/* Per rope frequency i in [i0, i0 + n_i) of a D-wide head, g_i = theta^(-2i/D)
 * / (2 pi) (turns per position, in double) as three f32 words a, b, c with
 * a and b of 12 significant bits, so that the shaders' products are exact
 * (_rope_turns.wgsl). */
void rlx_wgpu_rope_freqs(rlx_wgpu_dispatch *d, double theta, uint32_t D, uint32_t i0, uint32_t n_i);
/* An op with no WebGPU kernel yet: a clear RLX_ERR_UNSUPPORTED. */
rlx_status rlx_wgpu_missing(const rlx_wgpu_ctx *c);

/* The embedded WGSL sources (generated at build time from wgsl/\*.wgsl). */
const char *rlx_wgsl_source(const char *shader);

#endif
