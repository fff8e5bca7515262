/* lower_pending_b.c - WebGL2 lowerings not written yet (matmul, convolution and
 * pooling family, forward and backward); each refuses with a clear
 * RLX_ERR_UNSUPPORTED.  Remove a line as its lowering lands (with its .frag
 * and C twin), and the file when empty. */
#include "gl.h"

rlx_status rlx_gl_lower_matmul(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_conv2d(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_max_pool2d(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_avg_pool2d(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_global_avg_pool(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_conv2d_grad_input(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_conv2d_grad_weight(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_max_pool2d_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_avg_pool2d_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
