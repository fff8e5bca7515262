/* exports.c - the exports both GPU builds of the language-model module
 * (web/pkg/rlx_llm_gpu.wasm for WebGPU, rlx_llm_webgl.wasm for WebGL2) add
 * to src/web_llm/exports.c: the step sizes, freeing a step session, and the
 * logits handed back for the generator to sample (a generator_new with
 * external = 1).  Each build adds the export that compiles a step for its
 * device (webgpu.c, webgl.c), whose plans web/runtime/llm_webgpu.js and
 * llm_webgl.js run. */
#include "../models/llm.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* Tokens of step k (64, 16, 4, 1), or 0 past the last. */
EXPORT(rlx_llm_step_tokens) int32_t w_step_tokens(int32_t k) {
  return k >= 0 && k < LLM_N_STEP_SIZES ? rlx_llm_step_sizes[k] : 0;
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
