/* exports.c - what both GPU builds of the training module
 * (web/pkg/rlx_llm_train_gpu.wasm for WebGPU, rlx_llm_train_webgl.wasm for
 * WebGL2) add to rlx_llm_train.wasm's exports (src/web_llm_train/): the
 * windows of a step checked and written as the device sessions take them.
 * Each build adds the export that compiles a fine-tuning session for its
 * device (webgpu.c, webgl.c), whose plans web/runtime/llm_finetune_webgpu.js
 * and llm_finetune_webgl.js run. */
#include "../models/llm_train.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* Checks n_windows windows as rlx_llm_finetune_step does (the same
 * refusals) and writes the inputs "targets" (0 under a zero weight) and
 * "mask" (1 for every token when mask is NULL) of a device session into
 * fed_targets and fed_mask (n_windows * seq values each). */
EXPORT(rlx_llm_finetune_windows)
int32_t w_ft_windows(const rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask,
                     int32_t n_windows, int32_t *fed_targets, float *fed_mask) {
  return llm_finetune_check_windows(ft, "rlx_llm_finetune_windows", ids, targets, mask, n_windows, fed_targets,
                                    fed_mask);
}
