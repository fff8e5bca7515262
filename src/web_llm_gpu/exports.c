/* exports.c - the exports both GPU builds of the language-model module
 * (web/pkg/rlx_llm_gpu.wasm for WebGPU, rlx_llm_webgl.wasm for WebGL2) add
 * to src/web_llm/exports.c: the step sizes, freeing a step session, and the
 * logits handed back for the generator to sample (a generator_new with
 * external = 1).  Each build adds the export that compiles a step for its
 * device (webgpu.c, webgl.c), whose plans web/runtime/llm_webgpu.js and
 * llm_webgl.js run; and a model opened from its file's header alone, its
 * weights streamed to GPU buffers (web/runtime/llm_gpu_stream.js,
 * src/models/llm_external.c). */
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

/* A model from the first head_len bytes of a GGUF file of file_size bytes
 * (a double: exact below 2^53), its weights external; the header needing
 * more bytes than head_len fails with *need (a double) set to how many. */
EXPORT(rlx_llm_open_head)
int32_t w_open_head(const void *head, size_t head_len, double file_size, int32_t n_ctx, double *need, rlx_llm **out) {
  rlx_llm_options opt = {.n_ctx = n_ctx};
  uint64_t n = 0;
  if (!(file_size >= 1 && file_size <= 9007199254740992.0) || file_size != (double)(uint64_t)file_size)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_open_head: %.0f bytes is not a file size", file_size);
  const rlx_status st = rlx_llm_open_head(head, head_len, (uint64_t)file_size, &opt, &n, out);
  *need = (double)n;
  return st;
}
/* The params an external model's GPU steps need (llm_external.c): count,
 * then param i's name (NULL past the end, with rlx_last_error) with
 * out[0] its buffer's bytes, out[1] its file offset, out[2] its bytes in
 * the file (0: zeros). */
EXPORT(rlx_llm_external_count) int32_t w_external_count(const rlx_llm *m) { return rlx_llm_external_count(m); }
EXPORT(rlx_llm_external) const char *w_external(const rlx_llm *m, int32_t i, double *out) {
  const char *name = NULL;
  uint64_t v[3];
  if (rlx_llm_external(m, i, &name, &v[0], &v[1], &v[2]) != RLX_OK) return NULL;
  for (int j = 0; j < 3; j++) out[j] = (double)v[j];
  return name;
}
