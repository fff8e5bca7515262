/* lower_elementwise.c - WebGL2 lowerings of the elementwise ops: the
 * broadcasting binary ops and comparisons (glsl/binary.frag, also a op
 * (b * c) for the planner's fused add/sub of a product), where
 * (where.frag), the unary ops (unary.frag) and the gradients of gelu and
 * silu (pointwise_grad.frag).  One pass each; the op is a define, so each
 * op kind is one program. */
#include "gl_plan.h"

/* Operand k's strides broadcast over the output. */
static void operand_strides(const rlx_gl_ctx *c, int32_t n, int32_t (*strides)[RLX_MAX_RANK]) {
  for (int32_t k = 0; k < n; k++) rlx_gl_broadcast_strides(&c->in_node[k]->shape, &c->node->shape, strides[k]);
}

/* a[...], b[...] broadcast -> out: one pass of binary.frag with OP = op. */
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

#define BINARY(name, op) \
  rlx_status rlx_gl_lower_##name(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_binary(c, out, op); }
BINARY(add, 0)
BINARY(sub, 1)
BINARY(mul, 2)
BINARY(div, 3)
BINARY(max, 4)
BINARY(min, 5)
BINARY(pow, 6)
BINARY(eq, 7)
BINARY(ne, 8)
BINARY(lt, 9)
BINARY(le, 10)
BINARY(gt, 11)
BINARY(ge, 12)
#undef BINARY

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

#define UNARY(name, op)                                                        \
  rlx_status rlx_gl_lower_##name(const rlx_gl_ctx *c, rlx_gl_lowering *out) { \
    (void)c;                                                                   \
    return lower_unary(out, "unary", op, 1);                                   \
  }
UNARY(neg, 0)
UNARY(abs, 1)
UNARY(exp, 2)
UNARY(log, 3)
UNARY(sqrt, 4)
UNARY(rsqrt, 5)
UNARY(tanh, 6)
UNARY(sigmoid, 7)
UNARY(relu, 8)
UNARY(gelu, 9)
UNARY(silu, 10)
#undef UNARY

/* x[...], dy[...] -> dx[...] = dy * gelu'(x) */
rlx_status rlx_gl_lower_gelu_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  (void)c;
  return lower_unary(out, "pointwise_grad", 0, 2);
}

/* x[...], dy[...] -> dx[...] = dy * silu'(x) */
rlx_status rlx_gl_lower_silu_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  (void)c;
  return lower_unary(out, "pointwise_grad", 1, 2);
}
