/* lower_leaves.c - leaves (inputs, params, constants) never become plan
 * steps: they own textures the executor uploads.  These entries only
 * complete the op table. */
#include "gl.h"

rlx_status rlx_gl_lower_input(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_param(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_constant(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
