/* lower_optim.c - WebGPU lowering of the optimizer update adam_update
 * (include/rlx_ops.def): one dispatch of adam_update.wgsl per param, which
 * writes the moments (inputs 2 and 3, param or input buffers) in place and p' to
 * the output; the plan's assignment copies p' over p after the run. */
#include "../cpu/kernels.h"
#include "wgpu.h"

/* (p[n], g[n], m[n], v[n], lr[1], bias1[1], bias2[1]) -> p'[n] */
rlx_status rlx_wgpu_lower_adam_update(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_node_t *nd = c->node;
  const size_t n = rlx_shape_numel(&nd->shape);
  const float b1 = ATTR_F(nd, ADAM, BETA1), b2 = ATTR_F(nd, ADAM, BETA2);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "adam_update");
  for (int32_t k = 0; k < 7; k++) rlx_wgpu_bind(d, RLX_WB_INPUT, k, 0, 0, k == 2 || k == 3);
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  rlx_wgpu_u32(d, (uint32_t)n);
  const float words[6] = {b1, 1 - b1, b2, 1 - b2, ATTR_F(nd, ADAM, EPS), ATTR_F(nd, ADAM, WEIGHT_DECAY)};
  for (int k = 0; k < 6; k++) rlx_wgpu_f32(d, words[k]);
  rlx_wgpu_grid1d(d, n, 256);
  return RLX_OK;
}
