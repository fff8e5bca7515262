/* webgl.c - rlx_llm_train_webgl.wasm's export: a fine-tuning object's
 * training step (or loss) compiled for WebGL2 with textures at most
 * max_width wide (web/runtime/llm_finetune_webgl.js runs it through
 * webgl.js).  As for generation's steps (src/web_llm_gpu/webgl.c) the
 * module has no C reference executor, so the session's host arena is
 * given back at once: the activations live in textures. */
#include "../compile/session.h"
#include "../webgl/gl_plan.h"
#include "rlx_llm_train.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* The session for n_windows windows (train 1: a step, 0: the loss;
 * max_width 0: WebGL2's guaranteed 2048); NULL with rlx_last_error().
 * Freed with rlx_llm_session_free, before the fine-tuning object. */
EXPORT(rlx_llm_finetune_webgl)
rlx_session *w_ft_webgl(rlx_llm_finetune *ft, int32_t n_windows, int32_t train, int32_t max_width) {
  rlx_session *s = NULL;
  if (max_width < 0) {
    rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_finetune_webgl: max_width must be >= 0, got %d", (int)max_width);
    return NULL;
  }
  if (rlx_llm_finetune_compile(ft, n_windows, RLX_DEVICE_WEBGL, train, &s) != RLX_OK) return NULL;
  if (max_width > 0 && rlx_gl_prepare(s, max_width) != RLX_OK) {
    rlx_session_free(s);
    return NULL;
  }
  rlx_free(s->arena, s->plan.arena_floats * sizeof(float));
  s->arena = NULL;
  return s;
}
