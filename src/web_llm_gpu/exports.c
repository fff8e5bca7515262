/* exports.c - the exports the WebGPU build of the language-model module
 * (web/pkg/rlx_llm_gpu.wasm) adds to src/web_llm/exports.c: a model's step
 * sessions compiled for WebGPU, whose plans web/runtime/llm_webgpu.js runs
 * through web/runtime/webgpu.js (with src/web/exports_webgpu.c, linked into
 * this module too), and the logits handed back for the generator to sample
 * (a generator_new with external = 1). */
#include "../models/llm.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* Tokens of step k (64, 16, 4, 1), or 0 past the last. */
EXPORT(rlx_llm_step_tokens) int32_t w_step_tokens(int32_t k) {
  return k >= 0 && k < LLM_N_STEP_SIZES ? rlx_llm_step_sizes[k] : 0;
}
/* Step k compiled for WebGPU, its params bound to the model's weights and
 * caches; NULL with rlx_last_error().  Freed with rlx_llm_session_free,
 * before the model. */
EXPORT(rlx_llm_webgpu_step) rlx_session *w_webgpu_step(const rlx_llm *m, int32_t k) {
  rlx_session *s = NULL;
  return rlx_llm_compile_step(m, k, RLX_DEVICE_WEBGPU, &s) == RLX_OK ? s : NULL;
}
EXPORT(rlx_llm_session_free) void w_session_free(rlx_session *s) { rlx_session_free(s); }
/* The logits after n_tokens more evaluated at the position (which they
 * advance), and the token a generator made with external = 1 wants
 * evaluated before its next call of rlx_llm_generator_next (-1: none). */
EXPORT(rlx_llm_set_logits) int32_t w_set_logits(rlx_llm *m, const float *logits, int32_t n_tokens) {
  return rlx_llm_set_logits(m, logits, n_tokens);
}
EXPORT(rlx_llm_generator_pending) int32_t w_generator_pending(const rlx_llm_generator *gen) {
  return rlx_llm_generator_pending(gen);
}
