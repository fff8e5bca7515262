/* llm_ops_absent.c - the training module's stand-ins for the quantized
 * language-model ops (matmul_q, gather_q, attention_kv): their shape rules
 * (src/ir/shape_rules_llm.c), CPU kernels (src/cpu/k_matmul_q.c,
 * k_attention_kv.c) and WebGPU lowerings (src/webgpu/lower_llm.c, whose
 * llm_*.wgsl kernels this module does not embed either).  The browser's
 * default module (rlx_web.wasm) keeps within its size budget by leaving
 * them out; adding one of these ops to a graph there fails with a message
 * naming the module that has them. */
#include <stdio.h>

#include "../cpu/kernels.h"
#include "../ir/graph.h"
#include "../webgpu/wgpu.h"

#define ABSENT_MSG "%s is a language-model op, left out of this module (rlx_web.wasm): run language models with rlx_llm.wasm"

static rlx_status absent_rule(const char *op, char *msg, size_t cap) {
  snprintf(msg, cap, ABSENT_MSG, op);
  return RLX_ERR_UNSUPPORTED;
}
rlx_status rlx_shape_matmul_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_gather_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_attention_kv(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);
rlx_status rlx_shape_matmul_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {
  return (void)g, (void)n, absent_rule("matmul_q", msg, cap);
}
rlx_status rlx_shape_gather_q(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {
  return (void)g, (void)n, absent_rule("gather_q", msg, cap);
}
rlx_status rlx_shape_attention_kv(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {
  return (void)g, (void)n, absent_rule("attention_kv", msg, cap);
}

/* Never reached (no graph here holds these ops), but the kernel table
 * names them. */
static rlx_status absent_kernel(const char *op) { return rlx_error(RLX_ERR_UNSUPPORTED, "run: " ABSENT_MSG, op); }
rlx_status rlx_cpu_matmul_q(const rlx_kargs *a) { return (void)a, absent_kernel("matmul_q"); }
rlx_status rlx_cpu_gather_q(const rlx_kargs *a) { return (void)a, absent_kernel("gather_q"); }
rlx_status rlx_cpu_attention_kv(const rlx_kargs *a) { return (void)a, absent_kernel("attention_kv"); }
rlx_status rlx_wgpu_lower_matmul_q(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return (void)c, (void)out, absent_kernel("matmul_q");
}
rlx_status rlx_wgpu_lower_gather_q(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return (void)c, (void)out, absent_kernel("gather_q");
}
rlx_status rlx_wgpu_lower_attention_kv(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return (void)c, (void)out, absent_kernel("attention_kv");
}
