/* lower_llm.c - the quantized language-model ops (matmul_q, gather_q,
 * attention_kv) are CPU-only for now: no WebGL2 lowering, so WebGL plans
 * (and the C reference executor that runs them) refuse them with
 * RLX_ERR_UNSUPPORTED (the op tests count that as a refusal by design). */
#include "gl.h"

static rlx_status cpu_only(const rlx_gl_ctx *c) {
  return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: op %s has no WebGL2 lowering (a CPU-only op for now: run it on the CPU "
                   "backend)", rlx_op_name(c->node->op));
}

rlx_status rlx_gl_lower_matmul_q(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return cpu_only(c); }
rlx_status rlx_gl_lower_gather_q(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return cpu_only(c); }
rlx_status rlx_gl_lower_attention_kv(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return cpu_only(c); }
