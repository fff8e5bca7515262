/* llm_ops_absent.c - the training module's stand-ins for the quantized
 * language-model ops (matmul_q, gather_q, swiglu_q, attention_kv): their
 * shape rules (src/ir/shape_rules_llm.c), CPU kernels (src/cpu/k_matmul_q.c,
 * k_swiglu_q.c, k_attention_kv.c), gradient rules
 * (src/autodiff/rules_llm.c) and WebGPU lowerings (src/webgpu/lower_llm.c,
 * lower_swiglu_q.c, whose llm_*.wgsl kernels this module does not embed
 * either).  The browser's default module (rlx_web.wasm) keeps within its
 * size budget by leaving them out; adding one of these ops to a graph
 * there fails with a message naming the module that has them.  Each stand-in
 * takes the op's name from its node, so those of one kind are one function
 * after wasm-opt. */
#include <stdio.h>

#include "../autodiff/grad.h"
#include "../cpu/kernels.h"
#include "../ir/graph.h"
#include "../webgpu/wgpu.h"

#include "llm_absent.h"

#define ABSENT_MSG "%s is a language-model op, left out of this module (rlx_web.wasm): run language models with rlx_llm.wasm"

static rlx_status absent_rule(const rlx_node_t *n, char *msg, size_t cap) {
  snprintf(msg, cap, ABSENT_MSG, rlx_op_name(n->op));
  return RLX_ERR_UNSUPPORTED;
}

/* Never reached (no graph here holds these ops), but the kernel, gradient
 * and lowering tables name them. */
rlx_status rlx_llm_op_absent(rlx_op op) { return rlx_error(RLX_ERR_UNSUPPORTED, ABSENT_MSG, rlx_op_name(op)); }
#define absent rlx_llm_op_absent

#define ABSENT(name)                                                                                             \
  rlx_status rlx_shape_##name(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap);                         \
  rlx_status rlx_shape_##name(const rlx_graph *g, rlx_node_t *n, char *msg, size_t cap) {                        \
    return (void)g, absent_rule(n, msg, cap);                                                                    \
  }                                                                                                              \
  rlx_status rlx_cpu_##name(const rlx_kargs *a) { return absent(a->node->op); }                                  \
  rlx_status rlx_grad_##name(rlx_grad_ctx *c, rlx_node id, rlx_node dy) {                                        \
    return (void)dy, absent(rlx_grad_node(c, id)->op);                                                           \
  }                                                                                                              \
  rlx_status rlx_wgpu_lower_##name(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {                              \
    return (void)out, absent(c->node->op);                                                                       \
  }

ABSENT(matmul_q)
ABSENT(gather_q)
ABSENT(swiglu_q)
ABSENT(attention_kv)
