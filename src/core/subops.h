/* subops.h - the sub-op codes as C enums, RLX_SUBOP_<NAME>: the OP override
 * / define of a shared kernel (e.g. RLX_SUBOP_RELU for unary.wgsl,
 * unary.frag and their C twin).  The shaders get the same codes as OP_<NAME>
 * constants from tools/embed_sources.sh, which computes them the same way.
 *
 * The elementwise families come from include/rlx_ops.def: an op whose shape
 * rule is binary, unary or grad_pointwise gets RLX_SUBOP_<ID> = its index
 * among the rows with that rule, in file order (RLX_SUBOP_ADD = 0,
 * RLX_SUBOP_SUB = 1, ..; RLX_SUBOP_NEG = 0, ..; RLX_SUBOP_GELU_GRAD = 0, ..).
 * The other families are the rows of include/rlx_subops.def. */
#ifndef RLX_SUBOPS_H
#define RLX_SUBOPS_H

#include <stdint.h>

/* RLX_SUBOP_ROW(rule, M, ID, name) is M_BINARY(ID, name) for an op row of
 * shape rule binary, M_UNARY(ID, name) for unary, M_POINTWISE_GRAD(ID, name)
 * for grad_pointwise and M_NONE(ID, name) for any other rule, so that
 *   #define RLX_OP(ID, name, lo, hi, rule, set) RLX_SUBOP_ROW(rule, M, ID, name)
 * over include/rlx_ops.def picks out the families' rows (as in the enums
 * below and the lowerings of src/webgpu/lower_elementwise.c and
 * src/webgl/lower_elementwise.c).  How: RLX_SUBOP_RULE_<rule> is defined
 * (as `~, FAMILY`) only for the three rules, so the second item of
 * (RLX_SUBOP_RULE_<rule>, NONE, ~) is FAMILY for them and NONE otherwise;
 * no other shape rule needs naming here. */
#define RLX_SUBOP_RULE_binary ~, BINARY
#define RLX_SUBOP_RULE_unary ~, UNARY
#define RLX_SUBOP_RULE_grad_pointwise ~, POINTWISE_GRAD
#define RLX_SUBOP_SECOND_(a, b, ...) b
#define RLX_SUBOP_SECOND(...) RLX_SUBOP_SECOND_(__VA_ARGS__)
#define RLX_SUBOP_CALL_(M, family, ID, name) M##_##family(ID, name)
#define RLX_SUBOP_CALL(M, family, ID, name) RLX_SUBOP_CALL_(M, family, ID, name)
#define RLX_SUBOP_ROW(rule, M, ID, name) \
  RLX_SUBOP_CALL(M, RLX_SUBOP_SECOND(RLX_SUBOP_RULE_##rule, NONE, ~), ID, name)

#define RLX_OP(ID, name, lo, hi, rule, set) RLX_SUBOP_ROW(rule, RLX_SUBOP_ENUM, ID, name)
#define RLX_SUBOP_ENUM_NONE(ID, name)

/* binary.wgsl, binary.frag, rlx_glref_binary: arithmetic, then comparisons
 * (1.0 / 0.0).  src/webgl/plan_gl.c passes (op == RLX_OP_SUB) to
 * rlx_gl_lower_mul_into as the code: ADD and SUB are the first two binary
 * rows (asserted in src/webgl/lower_elementwise.c). */
#define RLX_SUBOP_ENUM_BINARY(ID, name) RLX_SUBOP_##ID,
#define RLX_SUBOP_ENUM_UNARY(ID, name)
#define RLX_SUBOP_ENUM_POINTWISE_GRAD(ID, name)
typedef enum {
#include "rlx_ops.def"
} rlx_subop_binary;
#undef RLX_SUBOP_ENUM_BINARY
#undef RLX_SUBOP_ENUM_UNARY
#undef RLX_SUBOP_ENUM_POINTWISE_GRAD

/* unary.wgsl, unary.frag, rlx_glref_unary: x -> f(x) */
#define RLX_SUBOP_ENUM_BINARY(ID, name)
#define RLX_SUBOP_ENUM_UNARY(ID, name) RLX_SUBOP_##ID,
#define RLX_SUBOP_ENUM_POINTWISE_GRAD(ID, name)
typedef enum {
#include "rlx_ops.def"
} rlx_subop_unary;
#undef RLX_SUBOP_ENUM_BINARY
#undef RLX_SUBOP_ENUM_UNARY
#undef RLX_SUBOP_ENUM_POINTWISE_GRAD

/* grad_pointwise.wgsl, pointwise_grad.frag, rlx_glref_pointwise_grad:
 * (x, dy) -> dy * f'(x) */
#define RLX_SUBOP_ENUM_BINARY(ID, name)
#define RLX_SUBOP_ENUM_UNARY(ID, name)
#define RLX_SUBOP_ENUM_POINTWISE_GRAD(ID, name) RLX_SUBOP_##ID,
typedef enum {
#include "rlx_ops.def"
} rlx_subop_pointwise_grad;
#undef RLX_SUBOP_ENUM_BINARY
#undef RLX_SUBOP_ENUM_UNARY
#undef RLX_SUBOP_ENUM_POINTWISE_GRAD

#undef RLX_SUBOP_ENUM_NONE
#undef RLX_OP

/* The families of include/rlx_subops.def. */
typedef enum {
#define RLX_SUBOP(family, NAME, name, code) RLX_SUBOP_##NAME = code,
#include "rlx_subops.def"
#undef RLX_SUBOP
} rlx_subop;

/* The GPU kernels' code of a GGUF weight type (its WT row of
 * include/rlx_subops.def) and its block (values, bytes), from
 * include/rlx_gguf_types.def with no link to the quantization kernels (the
 * browser's training module leaves them out); -1 for a type no GPU kernel
 * reads.  rlx_wt_block gives the block of a WT code (0, 0 when unknown). */
static inline int32_t rlx_wt_of_gguf_type(int32_t gguf_type, int32_t *block_elems, int32_t *block_bytes) {
  switch (gguf_type) {
#define RLX_GGUF_TYPE(ID, name, code, elems, bytes) \
  case code: *block_elems = elems, *block_bytes = bytes; return RLX_SUBOP_WT_##ID;
#include "rlx_gguf_types.def"
#undef RLX_GGUF_TYPE
    default: return -1;
  }
}

static inline void rlx_wt_block(int32_t wt, int32_t *block_elems, int32_t *block_bytes) {
  switch (wt) {
#define RLX_GGUF_TYPE(ID, name, code, elems, bytes) \
  case RLX_SUBOP_WT_##ID: *block_elems = elems, *block_bytes = bytes; return;
#include "rlx_gguf_types.def"
#undef RLX_GGUF_TYPE
    default: *block_elems = 0, *block_bytes = 0; return;
  }
}

#endif
