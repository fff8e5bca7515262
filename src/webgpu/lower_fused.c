/* lower_fused.c - the fused ops have no WebGPU kernels on purpose: GPU
 * plans are compiled without the fusion passes (src/compile/session.c,
 * compile_webgpu), so fused_matmul and fused_attention only reach a GPU
 * plan when a graph builds them directly (rlx_op_node); they refuse with a
 * clear RLX_ERR_UNSUPPORTED.  The unfused matmul, activation and attention
 * kernels cover the same work. */
#include "wgpu.h"

rlx_status rlx_wgpu_lower_fused_matmul(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  (void)out;
  return rlx_error(RLX_ERR_UNSUPPORTED,
                   "webgpu: %s has no WebGPU kernel (GPU plans are compiled without fusion; build the unfused ops)",
                   rlx_op_name(c->node->op));
}

rlx_status rlx_wgpu_lower_fused_attention(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  (void)out;
  return rlx_error(RLX_ERR_UNSUPPORTED,
                   "webgpu: %s has no WebGPU kernel (GPU plans are compiled without fusion; build the unfused ops)",
                   rlx_op_name(c->node->op));
}
