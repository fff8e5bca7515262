/* webgpu.c - rlx_llm_train_gpu.wasm's export: a fine-tuning object's
 * training step (or loss, or gradients) compiled for WebGPU (rlx_llm_finetune_compile),
 * which web/runtime/llm_finetune_webgpu.js runs through webgpu.js with the
 * pairs and the optimizer state in GPU buffers. */
#include "rlx_llm_train.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* The session for n_windows windows (train 1: a step, 0: the loss, 2: the loss and the gradients);
 * NULL with rlx_last_error().  Freed with rlx_llm_session_free, before
 * the fine-tuning object. */
EXPORT(rlx_llm_finetune_webgpu) rlx_session *w_ft_webgpu(rlx_llm_finetune *ft, int32_t n_windows, int32_t train) {
  rlx_session *s = NULL;
  return rlx_llm_finetune_compile(ft, n_windows, RLX_DEVICE_WEBGPU, train, &s) == RLX_OK ? s : NULL;
}
