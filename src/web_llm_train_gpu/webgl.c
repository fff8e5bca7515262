/* webgl.c - rlx_llm_train_webgl.wasm's export: a fine-tuning object's
 * training step (or loss, or gradients) compiled for WebGL2 with textures at most
 * max_width wide (web/runtime/llm_finetune_webgl.js runs it through
 * webgl.js), made ready as generation's steps are
 * (src/web_llm_gpu/webgl.h). */
#include "rlx_llm_train.h"
#include "../web_llm_gpu/webgl.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* The session for n_windows windows (train 1: a step, 0: the loss, 2: the loss and the gradients;
 * max_width 0: WebGL2's guaranteed 2048); NULL with rlx_last_error().
 * Freed with rlx_llm_session_free, before the fine-tuning object. */
EXPORT(rlx_llm_finetune_webgl)
rlx_session *w_ft_webgl(rlx_llm_finetune *ft, int32_t n_windows, int32_t train, int32_t max_width) {
  rlx_session *s = NULL;
  if (!llm_webgl_width_ok("rlx_llm_finetune_webgl", max_width)) return NULL;
  return rlx_llm_finetune_compile(ft, n_windows, RLX_DEVICE_WEBGL, train, &s) == RLX_OK ? llm_webgl_finish(s, max_width)
                                                                                         : NULL;
}
