/* llm_finetune_device.c - a fine-tuning object's sessions compiled for a
 * device (include/rlx_llm_train.h: rlx_llm_finetune_compile): the training
 * step, the loss alone or the loss and the pairs' gradients, for the GPU executors (web/runtime/webgpu.js,
 * webgl.js) to run with the pairs and the optimizer state living on the
 * device.  The sessions' params are bound as the CPU sessions' are (the
 * model's weights in place, the pairs and the optimizer state in the
 * object's memory): an executor uploads them when it prepares the plan. */
#include "llm_train.h"

rlx_status rlx_llm_finetune_compile(rlx_llm_finetune *ft, int32_t n_windows, rlx_device device, int32_t train,
                                    rlx_session **out) {
  const char *fn = "rlx_llm_finetune_compile";
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!ft) return rlx_error(RLX_ERR_INVALID_ARG, "%s: the fine-tuning object is NULL", fn);
  const int32_t seq = llm_finetune_seq(ft);
  if (n_windows < 1 || n_windows > INT32_MAX / seq)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: n_windows must lie in 1 .. %d, got %d", fn, (int)(INT32_MAX / seq),
                     (int)n_windows);
  if (device < RLX_DEVICE_CPU || device > RLX_DEVICE_WEBGL)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: unknown device %d", fn, (int)device);
  if (train < RLX_LLM_PLAN_LOSS || train > RLX_LLM_PLAN_GRADS)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: train must be 0, 1 or 2, got %d", fn, (int)train);
  const int kind = train == RLX_LLM_PLAN_GRADS ? FT_GRAD : train == RLX_LLM_PLAN_STEP ? FT_TRAIN : FT_LOSS;
  return llm_finetune_compile(ft, kind, n_windows, device, out);
}
