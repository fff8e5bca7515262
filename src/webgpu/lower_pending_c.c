/* lower_pending_c.c - WebGPU lowerings not written yet (reductions, norms and attention family); each
 * refuses with a clear RLX_ERR_UNSUPPORTED.  Emptied as kernels land. */
#include "wgpu.h"

rlx_status rlx_wgpu_lower_attention(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_attention_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_layer_norm(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_layer_norm_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_layer_norm_grad_weight(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_log_softmax(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_log_softmax_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_reduce_max(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_reduce_mean(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_reduce_sum(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_rms_norm(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_rms_norm_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_rms_norm_grad_weight(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_rope(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_softmax(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_softmax_cross_entropy(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_softmax_cross_entropy_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_softmax_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
