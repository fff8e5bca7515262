/* webgl_llm_absent.c - the training module's stand-ins for the WebGL2
 * lowerings of the language-model ops (src/webgl/lower_llm.c and its
 * glsl/llm_*.frag shaders, which the Makefile leaves out of rlx_web.wasm to
 * keep it within its size budget).  Unreachable: the module's shape rules
 * refuse these ops (llm_ops_absent.c), so no graph holds them. */
#include "../webgl/gl.h"
#include "llm_absent.h"

static rlx_status absent(const rlx_gl_ctx *c) { return rlx_llm_op_absent(c->node->op); }
rlx_status rlx_gl_lower_matmul_q(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return (void)out, absent(c); }
rlx_status rlx_gl_lower_gather_q(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return (void)out, absent(c); }
rlx_status rlx_gl_lower_swiglu_q(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return (void)out, absent(c); }
rlx_status rlx_gl_lower_attention_kv(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return (void)out, absent(c); }
