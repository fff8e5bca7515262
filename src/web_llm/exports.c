/* exports.c - the wasm export surface of the language-model module
 * (web/pkg/rlx_llm.wasm; the only file of it with export attributes).
 * Thin wrappers over include/rlx_llm.h for web/runtime/llm.js: pointers
 * are byte offsets into the exported `memory` (size_t is 32-bit), JS
 * allocates with rlx_wasm_alloc/rlx_wasm_free, errors are negative
 * rlx_status codes with the message in rlx_last_error().  The one thing
 * added here is the weights' buffer: JS asks for a buffer of the file's size
 * (refused past RLX_GGUF_WASM32_DATA_BUDGET before anything is allocated),
 * streams the file into it, and rlx_llm_open uses it in place.  No other
 * logic lives here: validation and messages come from the library. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include "rlx_gguf.h"
#include "rlx_llm.h"
#include "../core/core.h"
#include "../models/llm.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* ---- memory for JS ------------------------------------------------------ */
EXPORT(rlx_wasm_alloc) void *w_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
EXPORT(rlx_wasm_free) void w_free(void *p) { free(p); }

/* ---- status ------------------------------------------------------------- */
EXPORT(rlx_last_error) const char *w_last_error(void) { return rlx_last_error(); }
EXPORT(rlx_status_name) const char *w_status_name(int32_t s) { return rlx_status_name((rlx_status)s); }
EXPORT(rlx_version) const char *w_version(void) { return rlx_version(); }

/* ---- the file's buffer -------------------------------------------------- */
/* Bytes of tensor data a model may have in this module: the wasm32 budget,
 * or less for a build linked with a smaller --max-memory (the tests' small
 * modules, build/wasm-tests/rlx_llm*_small.wasm). */
#ifndef RLX_LLM_MODULE_BUDGET
#define RLX_LLM_MODULE_BUDGET RLX_GGUF_WASM32_DATA_BUDGET
#endif
/* Bytes of tensor data a model may have here (a double: exact below 2^53). */
EXPORT(rlx_llm_data_budget) double w_data_budget(void) { return (double)RLX_LLM_MODULE_BUDGET; }

/* A buffer for a GGUF file of `bytes` bytes (a double from JS, so a size
 * past 4 GiB arrives intact and is refused), aligned for every tensor type;
 * NULL with the reason in rlx_last_error().  Freed with rlx_wasm_free. */
EXPORT(rlx_llm_buffer_new) void *w_buffer_new(double bytes) {
  const double budget = (double)RLX_LLM_MODULE_BUDGET;
  if (!(bytes >= 1) || bytes != floor(bytes)) {
    rlx_error(RLX_ERR_INVALID_ARG, "GGUF buffer: %.0f bytes is not a file size", bytes);
    return NULL;
  }
  if (bytes > budget) {
    rlx_error(RLX_ERR_NO_MEMORY, "GGUF buffer: the file is %.0f bytes (%.2f GiB), past the %.0f bytes (%.2f GiB) a wasm32 "
              "module can hold for weights (RLX_GGUF_WASM32_DATA_BUDGET)", bytes, bytes / (1 << 30), budget,
              budget / (1 << 30));
    return NULL;
  }
  size_t n = (size_t)bytes;
  void *p = aligned_alloc(64, (n + 63) & ~(size_t)63);
  if (!p) rlx_error(RLX_ERR_NO_MEMORY, "GGUF buffer: cannot allocate %zu bytes (%.2f GiB) of wasm memory", n,
                    bytes / (1 << 30));
  return p;
}

/* ---- models ------------------------------------------------------------- */
/* n_lora LoRA adapters: adapter i's bytes at lora_data[i] (a buffer from
 * rlx_llm_buffer_new, kept until the model is freed), lora_size[i] of them,
 * its scale lora_scale[i]. */
/* The model's n_parts buffers (rlx_llm_buffer_new; one, or each part of a
 * split model in order): part k at data[k], sizes[k] bytes. */
EXPORT(rlx_llm_open)
int32_t w_open(const uint32_t *data, const uint32_t *sizes, int32_t n_parts, int32_t n_ctx, int32_t xq8,
               const uint32_t *lora_data, const uint32_t *lora_size, const double *lora_scale, int32_t n_lora,
               rlx_llm **out) {
  rlx_llm_options opt = {.n_ctx = n_ctx, .budget = RLX_LLM_MODULE_BUDGET, .xq8 = xq8};
  rlx_llm_lora *lora = n_lora > 0 ? calloc((size_t)n_lora, sizeof *lora) : NULL;
  if (n_lora > 0 && !lora) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_open: out of memory");
  for (int32_t i = 0; i < n_lora; i++)
    lora[i] = (rlx_llm_lora){NULL, (const void *)(uintptr_t)lora_data[i], lora_size[i], (float)lora_scale[i]};
  opt.lora = lora;
  opt.n_lora = n_lora;
  const void **parts = n_parts > 0 ? calloc((size_t)n_parts, sizeof *parts) : NULL;
  size_t *part_sizes = n_parts > 0 ? calloc((size_t)n_parts, sizeof *part_sizes) : NULL;
  rlx_status st = RLX_OK;
  if (n_parts > 0 && (!parts || !part_sizes)) st = rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_open: out of memory");
  for (int32_t k = 0; st == RLX_OK && k < n_parts; k++) {
    parts[k] = (const void *)(uintptr_t)data[k];
    part_sizes[k] = sizes[k];
  }
  if (st == RLX_OK) st = rlx_llm_open_parts(parts, part_sizes, n_parts, &opt, out);
  free(parts);
  free(part_sizes);
  free(lora);
  return st;
}
EXPORT(rlx_llm_free) void w_llm_free(rlx_llm *m) { rlx_llm_free(m); }

/* rlx_llm_info as a table JS reads by name: field i is info_field(i)
 * ("n_vocab", ...); info_read writes numbers to nums[i] and strings to
 * strs[i] (nums[i] NaN for a string, strs[i] NULL for a number). */
#define INFO_FIELDS(N, S)                                                                                            \
  S(arch) S(name) S(tokenizer) N(n_vocab) N(n_embd) N(n_layer) N(n_head) N(n_head_kv) N(head_dim) N(n_ff)           \
  N(n_ctx_train) N(n_ctx) N(rope_theta) N(rms_eps) N(rope_neox) N(tied_output) N(bos) N(eos) N(add_bos) N(n_params) \
  N(weight_bytes) N(kv_bytes) S(weight_types) N(xq8) N(n_lora) N(n_lora_pairs) N(lora_bytes)
#define FIELD_NAME(f) #f,
static const char *const info_names[] = {INFO_FIELDS(FIELD_NAME, FIELD_NAME)};
#define N_INFO ((int32_t)(sizeof info_names / sizeof info_names[0]))

EXPORT(rlx_llm_info_count) int32_t w_info_count(void) { return N_INFO; }
EXPORT(rlx_llm_info_field) const char *w_info_field(int32_t i) { return i >= 0 && i < N_INFO ? info_names[i] : NULL; }
EXPORT(rlx_llm_info_read) int32_t w_info_read(const rlx_llm *m, double *nums, const char **strs) {
  rlx_llm_info info;
  rlx_status st = rlx_llm_get_info(m, &info);
  if (st != RLX_OK) return st;
  int32_t i = 0;
#define PUT_NUM(f) nums[i] = (double)info.f, strs[i++] = NULL;
#define PUT_STR(f) nums[i] = NAN, strs[i++] = info.f ? info.f : "";
  INFO_FIELDS(PUT_NUM, PUT_STR)
  return RLX_OK;
}

EXPORT(rlx_llm_tokenize)
int32_t w_tokenize(const rlx_llm *m, const char *text, size_t len, int32_t add_bos, int32_t special, int32_t *ids,
                   size_t cap, size_t *n) {
  return rlx_llm_tokenize(m, text, len, add_bos, special, ids, cap, n);
}
EXPORT(rlx_llm_detokenize)
int32_t w_detokenize(const rlx_llm *m, const int32_t *ids, size_t n_ids, char *text, size_t cap, size_t *len) {
  return rlx_llm_detokenize(m, ids, n_ids, text, cap, len);
}
EXPORT(rlx_llm_position) int32_t w_position(const rlx_llm *m) { return rlx_llm_position(m); }
EXPORT(rlx_llm_reset) void w_reset(rlx_llm *m) { rlx_llm_reset(m); }
EXPORT(rlx_llm_eval) int32_t w_eval(rlx_llm *m, const int32_t *ids, size_t n, float *logits) {
  return rlx_llm_eval(m, ids, n, logits);
}

/* ---- generation --------------------------------------------------------- */
/* rlx_llm_sampling_default() as out[7] = {temperature, top_k, top_p, min_p,
 * repeat_penalty, repeat_last_n, max_tokens}. */
EXPORT(rlx_llm_sampling_default) void w_sampling_default(double *out) {
  rlx_llm_sampling s = rlx_llm_sampling_default();
  out[0] = s.temperature, out[1] = s.top_k, out[2] = s.top_p, out[3] = s.min_p;
  out[4] = s.repeat_penalty, out[5] = s.repeat_last_n, out[6] = s.max_tokens;
}

/* The sampling settings as plain values (the 64-bit seed as two 32-bit
 * halves); stop[n_stop] are NUL-terminated strings and grammar NULL or a
 * parsed grammar (grammar.c), which JS keeps alive until
 * rlx_llm_generator_free. */
/* external 1: the caller evaluates the model (the WebGPU build's executor
 * in JS, src/web_llm_gpu/exports.c): the generator of
 * rlx_llm_generator_new_external (src/models/llm.h).  keep: the prompt's
 * first tokens already in the KV cache (a kept conversation,
 * web/runtime/llm_chat.js), not evaluated again. */
EXPORT(rlx_llm_generator_new)
int32_t w_generator_new(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, float temperature, int32_t top_k,
                        float top_p, float min_p, float repeat_penalty, int32_t repeat_last_n, uint32_t seed_lo,
                        uint32_t seed_hi, int32_t max_tokens, const char *const *stop, int32_t n_stop,
                        int32_t external, size_t keep, const rlx_llm_grammar *grammar, rlx_llm_generator **out) {
  rlx_llm_sampling s = rlx_llm_sampling_default();
  s.temperature = temperature, s.top_k = top_k, s.top_p = top_p, s.min_p = min_p;
  s.repeat_penalty = repeat_penalty, s.repeat_last_n = repeat_last_n;
  s.seed = ((uint64_t)seed_hi << 32) | seed_lo;
  s.max_tokens = max_tokens, s.stop = stop, s.n_stop = n_stop, s.grammar = grammar;
  return rlx_llm_generator_new_kept(m, prompt_ids, n_prompt, keep, &s, external, out);
}

EXPORT(rlx_llm_generator_next)
int32_t w_generator_next(rlx_llm_generator *gen, int32_t *id, const char **text, size_t *len, int32_t *done) {
  int d = 0;
  rlx_status st = rlx_llm_generator_next(gen, id, text, len, &d);
  *done = d;
  return st;
}
EXPORT(rlx_llm_generator_greedy) int32_t w_generator_greedy(const rlx_llm_generator *gen) {
  return rlx_llm_generator_greedy(gen);
}

EXPORT(rlx_llm_generator_next_chosen)
int32_t w_generator_next_chosen(rlx_llm_generator *gen, int32_t tok, int32_t *id, const char **text, size_t *len,
                                int32_t *done) {
  int d = 0;
  rlx_status st = rlx_llm_generator_next_chosen(gen, tok, id, text, len, &d);
  *done = d;
  return st;
}

/* out[5] = {prompt_tokens, generated_tokens, prompt_seconds,
 * generate_seconds, stopped_by}. */
EXPORT(rlx_llm_generator_stats) void w_generator_stats(const rlx_llm_generator *gen, double *out) {
  rlx_llm_stats s = {0};
  rlx_llm_generator_stats(gen, &s);
  out[0] = s.prompt_tokens, out[1] = s.generated_tokens, out[2] = s.prompt_seconds, out[3] = s.generate_seconds;
  out[4] = s.stopped_by;
}
EXPORT(rlx_llm_generator_free) void w_generator_free(rlx_llm_generator *gen) { rlx_llm_generator_free(gen); }
