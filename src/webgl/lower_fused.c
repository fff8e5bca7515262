/* lower_fused.c - fused ops have no WebGL2 lowering: WebGL plans are built
 * without fusion (backend.c: .fuses = 0), so these only complete the op table and
 * refuse a fused node built by hand with rlx_op_node. */
#include "gl.h"

rlx_status rlx_gl_lower_fused_matmul(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_fused_attention(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
