/* webgl.c - rlx_llm_webgl.wasm's step export: a model's step compiled for
 * WebGL2 with textures at most the context's MAX_TEXTURE_SIZE wide
 * (web/runtime/llm_webgl.js runs its plan through webgl.js, with
 * src/web/exports_webgl.c linked into the module too).  This module has no
 * C reference executor (src/web/webgl_no_reference.c), so a step's host
 * arena, which only that executor uses, is given back at once: the
 * activations live in textures. */
#include "../compile/session.h"
#include "../models/llm.h"
#include "../webgl/gl_plan.h"
#include "webgl.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* Step k compiled for WebGL2 (max_width: the widest texture, 0: WebGL2's
 * guaranteed 2048), its params bound to the model's weights and caches;
 * NULL with rlx_last_error().  Freed with rlx_llm_session_free, before the
 * model. */
EXPORT(rlx_llm_webgl_step) rlx_session *w_webgl_step(const rlx_llm *m, int32_t k, int32_t max_width) {
  rlx_session *s = NULL;
  if (!llm_webgl_width_ok("rlx_llm_webgl_step", max_width)) return NULL;
  return rlx_llm_compile_step(m, k, RLX_DEVICE_WEBGL, 0, &s) == RLX_OK ? llm_webgl_finish(s, max_width) : NULL;
}

int llm_webgl_width_ok(const char *fn, int32_t max_width) {
  if (max_width >= 0) return 1;
  rlx_error(RLX_ERR_INVALID_ARG, "%s: max_width must be >= 0, got %d", fn, (int)max_width);
  return 0;
}

rlx_session *llm_webgl_finish(rlx_session *s, int32_t max_width) {
  if (max_width > 0 && rlx_gl_prepare(s, max_width) != RLX_OK) {
    rlx_session_free(s);
    return NULL;
  }
  rlx_free(s->arena, s->plan.arena_floats * sizeof(float));
  s->arena = NULL;
  return s;
}
