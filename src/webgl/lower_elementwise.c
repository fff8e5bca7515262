/* lower_elementwise.c - WebGL2 lowerings of the elementwise ops: the
 * broadcasting binary ops and comparisons (glsl/binary.frag, also a op
 * (b * c) for the planner's fused add/sub of a product), where
 * (where.frag), the unary ops (unary.frag) and the gradients of gelu and
 * silu (pointwise_grad.frag), the last three from the op rows of
 * include/rlx_ops.def with those shape rules.  One pass each; the op is a
 * define, so each op kind is one program. */
#include "../core/subops.h"
#include "gl_plan.h"

/* plan_gl.c passes op == RLX_OP_SUB as rlx_gl_lower_mul_into's op: ADD and
 * SUB must stay the first two binary rows of include/rlx_ops.def. */
_Static_assert(RLX_SUBOP_ADD == 0 && RLX_SUBOP_SUB == 1, "mul_into takes 0 add, 1 sub");

/* Operand k's strides broadcast over the output. */
static void operand_strides(const rlx_gl_ctx *c, int32_t n, int32_t (*strides)[RLX_MAX_RANK]) {
  for (int32_t k = 0; k < n; k++) rlx_gl_broadcast_strides(&c->in_node[k]->shape, &c->node->shape, strides[k]);
}

/* a[...], b[...] broadcast -> out: one pass of binary.frag with OP = op
 * (RLX_SUBOP_ADD .. RLX_SUBOP_GE). */
static rlx_status lower_binary(const rlx_gl_ctx *c, rlx_gl_lowering *out, int32_t op) {
  int32_t strides[2][RLX_MAX_RANK];
  rlx_gl_pass *p = rlx_gl_add(out, "binary");
  rlx_gl_define(p, "OP", op);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  operand_strides(c, 2, strides);
  rlx_gl_iter(p, &c->node->shape, 2, (const int32_t(*)[RLX_MAX_RANK])strides, NULL);
  return RLX_OK;
}

/* a op (b * c), broadcast (plan_gl.c fuses add/sub(a, mul(b, c)) when the
 * mul has no other reader): binary.frag with MUL3; c->in_node = {a, b, c},
 * c->node the add or sub. */
rlx_status rlx_gl_lower_mul_into(const rlx_gl_ctx *c, rlx_gl_lowering *out, int32_t op) {
  int32_t strides[3][RLX_MAX_RANK];
  rlx_gl_pass *p = rlx_gl_add(out, "binary");
  rlx_gl_define(p, "OP", op);
  rlx_gl_define(p, "MUL3", 1);
  for (int32_t k = 0; k < 3; k++) rlx_gl_in(p, RLX_GLT_INPUT, k);
  operand_strides(c, 3, strides);
  rlx_gl_iter(p, &c->node->shape, 3, (const int32_t(*)[RLX_MAX_RANK])strides, NULL);
  return RLX_OK;
}

/* cond[...], a[...], b[...] broadcast -> out */
rlx_status rlx_gl_lower_where(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  int32_t strides[3][RLX_MAX_RANK];
  rlx_gl_pass *p = rlx_gl_add(out, "where");
  for (int32_t k = 0; k < 3; k++) rlx_gl_in(p, RLX_GLT_INPUT, k);
  operand_strides(c, 3, strides);
  rlx_gl_iter(p, &c->node->shape, 3, (const int32_t(*)[RLX_MAX_RANK])strides, NULL);
  return RLX_OK;
}

/* x[...] -> y[...] (same shape) with unary.frag's OP = op */
static rlx_status lower_unary(rlx_gl_lowering *out, const char *shader, int32_t op, int32_t n_inputs) {
  rlx_gl_pass *p = rlx_gl_add(out, shader);
  rlx_gl_define(p, "OP", op);
  for (int32_t k = 0; k < n_inputs; k++) rlx_gl_in(p, RLX_GLT_INPUT, k);
  return RLX_OK;
}

/* The lowerings of the ops of include/rlx_ops.def with shape rule binary
 * (binary.frag), unary (unary.frag, x -> y) or grad_pointwise
 * (pointwise_grad.frag, (x, dy) -> dx = dy * f'(x)), OP = RLX_SUBOP_<ID>
 * (src/core/subops.h). */
#define LOWER_BINARY(ID, name) \
  rlx_status rlx_gl_lower_##name(const rlx_gl_ctx *c, rlx_gl_lowering *out) { \
    return lower_binary(c, out, RLX_SUBOP_##ID); \
  }
#define LOWER_UNARY(ID, name) \
  rlx_status rlx_gl_lower_##name(const rlx_gl_ctx *c, rlx_gl_lowering *out) { \
    (void)c; \
    return lower_unary(out, "unary", RLX_SUBOP_##ID, 1); \
  }
#define LOWER_POINTWISE_GRAD(ID, name) \
  rlx_status rlx_gl_lower_##name(const rlx_gl_ctx *c, rlx_gl_lowering *out) { \
    (void)c; \
    return lower_unary(out, "pointwise_grad", RLX_SUBOP_##ID, 2); \
  }
#define LOWER_NONE(ID, name)
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) RLX_SUBOP_ROW(rule, LOWER, ID, name)
#include "rlx_ops.def"
#undef RLX_OP
