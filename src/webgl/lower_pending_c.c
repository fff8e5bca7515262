/* lower_pending_c.c - WebGL2 lowerings not written yet (reductions, softmax,
 * cross-entropy, norms, RoPE and attention family, forward and backward);
 * each refuses with a clear RLX_ERR_UNSUPPORTED.  Remove a line as its
 * lowering lands (with its .frag and C twin), and the file when empty. */
#include "gl.h"

rlx_status rlx_gl_lower_reduce_sum(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_reduce_mean(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_reduce_max(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_softmax(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_log_softmax(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_softmax_cross_entropy(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_rms_norm(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_layer_norm(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_rope(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_attention(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_softmax_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_log_softmax_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_softmax_cross_entropy_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_rms_norm_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_rms_norm_grad_weight(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_layer_norm_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_layer_norm_grad_weight(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
rlx_status rlx_gl_lower_attention_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { (void)out; return rlx_gl_missing(c); }
