/* training_ops_absent.c - the language-model module's stand-ins for the
 * CPU kernels of training and vision ops (the backward ops, convolution and
 * pooling: src/cpu/k_*_grad.c, k_grad_*.c, k_conv*.c, k_pool*.c,
 * conv_common.c), which no language-model graph holds.  The kernel table
 * (src/cpu/executor.c) names every op, so rlx_llm.wasm links these instead
 * of those files and stays small; the browser's training module
 * (rlx_web.wasm) has the real kernels. */
#include "../core/core.h"
#include "../cpu/kernels.h"

#define ABSENT(name)                                                                                            \
  rlx_status rlx_cpu_##name(const rlx_kargs *a) {                                                               \
    (void)a;                                                                                                    \
    return rlx_error(RLX_ERR_UNSUPPORTED, "run: %s is a training or vision op, left out of this module "        \
                                          "(rlx_llm.wasm): run it with rlx_web.wasm", #name);                   \
  }

ABSENT(conv2d)
ABSENT(conv2d_grad_input)
ABSENT(conv2d_grad_weight)
ABSENT(max_pool2d)
ABSENT(avg_pool2d)
ABSENT(global_avg_pool)
ABSENT(max_pool2d_grad)
ABSENT(avg_pool2d_grad)
ABSENT(attention_grad)
ABSENT(rms_norm_grad)
ABSENT(rms_norm_grad_weight)
ABSENT(layer_norm_grad)
ABSENT(layer_norm_grad_weight)
ABSENT(narrow_grad)
ABSENT(scatter_add)
ABSENT(softmax_grad)
ABSENT(log_softmax_grad)
ABSENT(softmax_cross_entropy_grad)
ABSENT(gelu_grad)
ABSENT(silu_grad)
