/* lower_pending_b.c - WebGPU lowerings not written yet (matmul, conv and pool family); each
 * refuses with a clear RLX_ERR_UNSUPPORTED.  Emptied as kernels land. */
#include "wgpu.h"

rlx_status rlx_wgpu_lower_avg_pool2d(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_avg_pool2d_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_conv2d(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_conv2d_grad_input(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_conv2d_grad_weight(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_global_avg_pool(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_matmul(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_max_pool2d(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_max_pool2d_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
