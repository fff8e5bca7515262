/* lower_pending_a.c - WebGPU lowerings not written yet (elementwise and layout family); each
 * refuses with a clear RLX_ERR_UNSUPPORTED.  Emptied as kernels land. */
#include "wgpu.h"

rlx_status rlx_wgpu_lower_reshape(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_permute(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_narrow(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_concat(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_expand(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_gather(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_narrow_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_scatter_add(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_fused_matmul(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_fused_attention(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
