/* lower_llm.c - the quantized language-model ops (matmul_q, gather_q,
 * attention_kv) are CPU-only for now: their WebGPU lowerings refuse with
 * RLX_ERR_UNSUPPORTED (the op tests count that as a refusal by design). */
#include "wgpu.h"

static rlx_status cpu_only(const rlx_wgpu_ctx *c) {
  return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: %s has no WebGPU kernel (a CPU-only op for now: run it on the CPU backend)",
                   rlx_op_name(c->node->op));
}

rlx_status rlx_wgpu_lower_matmul_q(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return cpu_only(c); }
rlx_status rlx_wgpu_lower_gather_q(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return cpu_only(c); }
rlx_status rlx_wgpu_lower_attention_kv(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { (void)out; return cpu_only(c); }
