/* lower_leaves.c - leaves and views never become plan steps, so they have
 * no WebGPU lowering; these entries only complete the op table. */
#include "wgpu.h"

rlx_status rlx_wgpu_lower_input(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_param(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
rlx_status rlx_wgpu_lower_constant(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return rlx_wgpu_missing(c); }
