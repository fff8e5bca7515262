/* exports.c - the wasm export surface that the training build of the
 * language-model module (web/pkg/rlx_llm_train.wasm: rlx_llm.wasm's exports,
 * src/web_llm/exports.c, plus these) adds for web/runtime/llm_finetune.js:
 * LoRA fine-tuning (include/rlx_llm_train.h) with its data read from bytes,
 * and the adapter written into memory as llama.cpp's LoRA GGUF (f32).
 * Same conventions as src/web_llm/exports.c: pointers are byte offsets
 * into `memory`, 64-bit seeds come as two 32-bit halves, errors are
 * negative rlx_status codes with the message in rlx_last_error(), and no
 * logic lives here: validation and messages come from the library. */
#include <stdint.h>
#include <stdlib.h>
#include "rlx_llm.h"
#include "rlx_llm_train.h"
#include "../core/core.h"

#define EXPORT(name) __attribute__((export_name(#name)))

static uint64_t seed64(uint32_t lo, uint32_t hi) { return ((uint64_t)hi << 32) | lo; }

/* ---- fine-tuning objects ------------------------------------------------- */
/* targets: a NUL-terminated list (NULL: the default's); optimizer: an
 * rlx_optimizer_kind with the defaults' betas, eps and no weight decay. */
EXPORT(rlx_llm_finetune_new)
int32_t w_ft_new(const rlx_llm *m, int32_t rank, float alpha, const char *targets, int32_t seq, int32_t optimizer,
                 float lr, uint32_t seed_lo, uint32_t seed_hi, rlx_llm_finetune **out) {
  rlx_llm_finetune_options o = rlx_llm_finetune_default_options();
  o.rank = rank, o.alpha = alpha, o.seq = seq, o.seed = seed64(seed_lo, seed_hi);
  if (targets) o.targets = targets;
  o.optimizer.kind = (rlx_optimizer_kind)optimizer, o.optimizer.lr = lr;
  return rlx_llm_finetune_new(m, &o, out);
}
EXPORT(rlx_llm_finetune_free) void w_ft_free(rlx_llm_finetune *ft) { rlx_llm_finetune_free(ft); }

EXPORT(rlx_llm_finetune_step)
int32_t w_ft_step(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask, int32_t n,
                  float *loss) {
  return rlx_llm_finetune_step(ft, ids, targets, mask, n, loss);
}
EXPORT(rlx_llm_finetune_eval)
int32_t w_ft_eval(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask, int32_t n,
                  float *loss, float *logits) {
  return rlx_llm_finetune_eval(ft, ids, targets, mask, n, loss, logits);
}
EXPORT(rlx_llm_finetune_grad)
int32_t w_ft_grad(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask, int32_t n,
                  float *loss) {
  return rlx_llm_finetune_grad(ft, ids, targets, mask, n, loss);
}
EXPORT(rlx_llm_finetune_set_lr) int32_t w_ft_set_lr(rlx_llm_finetune *ft, float lr) {
  return rlx_llm_finetune_set_lr(ft, lr);
}
/* Adapter i of the model ft was made with (opened with it) into ft's pairs. */
EXPORT(rlx_llm_finetune_load_lora) int32_t w_ft_load_lora(rlx_llm_finetune *ft, int32_t i) {
  return rlx_llm_finetune_load_lora(ft, i);
}

/* ---- the pairs ------------------------------------------------------------ */
EXPORT(rlx_llm_finetune_pair_count) int32_t w_ft_pair_count(const rlx_llm_finetune *ft) {
  return rlx_llm_finetune_pair_count(ft);
}
/* Pair i: *name, and out[6] = {layer, n_in, n_out, rank, alpha, scale}. */
EXPORT(rlx_llm_finetune_pair)
int32_t w_ft_pair(const rlx_llm_finetune *ft, int32_t i, const char **name, double *out) {
  rlx_llm_finetune_pair_info p;
  rlx_status st = rlx_llm_finetune_pair(ft, i, &p);
  if (st != RLX_OK) return st;
  *name = p.name;
  out[0] = p.layer, out[1] = p.n_in, out[2] = p.n_out, out[3] = p.rank, out[4] = p.alpha, out[5] = p.scale;
  return RLX_OK;
}
EXPORT(rlx_llm_finetune_get_pair)
int32_t w_ft_get_pair(const rlx_llm_finetune *ft, const char *name, float *a, size_t a_len, float *b, size_t b_len) {
  return rlx_llm_finetune_get_pair(ft, name, a, a_len, b, b_len);
}
EXPORT(rlx_llm_finetune_set_pair)
int32_t w_ft_set_pair(rlx_llm_finetune *ft, const char *name, const float *a, size_t a_len, const float *b,
                      size_t b_len) {
  return rlx_llm_finetune_set_pair(ft, name, a, a_len, b, b_len);
}
EXPORT(rlx_llm_finetune_get_grad)
int32_t w_ft_get_grad(const rlx_llm_finetune *ft, const char *name, float *da, size_t a_len, float *db, size_t b_len) {
  return rlx_llm_finetune_get_grad(ft, name, da, a_len, db, b_len);
}

/* ft's pairs as llama.cpp's LoRA GGUF (f32, alpha the pairs', arch the
 * model's) in a buffer *out of *size bytes that JS frees with
 * rlx_wasm_free (rlx_llm_finetune_write_lora_memory). */
EXPORT(rlx_llm_finetune_adapter)
int32_t w_ft_adapter(const rlx_llm_finetune *ft, const rlx_llm *m, void **out, size_t *size) {
  *out = NULL, *size = 0;
  rlx_llm_info info;
  size_t bytes = 0;
  rlx_status st = rlx_llm_get_info(m, &info);
  if (st == RLX_OK) st = rlx_llm_finetune_write_lora_memory(ft, info.arch, NULL, 0, &bytes);
  void *buf = st == RLX_OK ? malloc(bytes) : NULL;
  if (st == RLX_OK && !buf) st = rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_finetune_adapter: out of memory (%zu bytes)", bytes);
  if (st == RLX_OK) st = rlx_llm_finetune_write_lora_memory(ft, info.arch, buf, bytes, &bytes);
  if (st != RLX_OK) free(buf);
  else *out = buf, *size = bytes;
  return st;
}

/* ---- training data --------------------------------------------------------- */
/* Sources as bytes: format an rlx_llm_data_format (AUTO reads a text, as
 * there is no file name); valid NULL: held out of train. */
EXPORT(rlx_llm_data_new)
int32_t w_data_new(const rlx_llm *m, const char *train, size_t train_len, int32_t train_format, const char *valid,
                   size_t valid_len, int32_t valid_format, int32_t seq, int32_t shuffle, uint32_t seed_lo,
                   uint32_t seed_hi, float valid_fraction, rlx_llm_data **out) {
  const rlx_llm_data_source t = {NULL, train, train_len, (rlx_llm_data_format)train_format};
  const rlx_llm_data_source v = {NULL, valid, valid_len, (rlx_llm_data_format)valid_format};
  const rlx_llm_data_options o = {seq, shuffle, seed64(seed_lo, seed_hi), valid_fraction};
  return rlx_llm_data_new(m, &t, valid ? &v : NULL, &o, out);
}
EXPORT(rlx_llm_data_free) void w_data_free(rlx_llm_data *d) { rlx_llm_data_free(d); }

/* out[11] = {seq, n_windows[2], n_scored[2], n_tokens[2], n_dropped[2],
 * n_examples[2]} ([TRAIN] then [VALID] of each). */
EXPORT(rlx_llm_data_info)
int32_t w_data_info(const rlx_llm_data *d, double *out) {
  rlx_llm_data_info in;
  rlx_status st = rlx_llm_data_get_info(d, &in);
  if (st != RLX_OK) return st;
  out[0] = in.seq;
  for (int k = 0; k < 2; k++) {
    out[1 + k] = in.n_windows[k], out[3 + k] = (double)in.n_scored[k], out[5 + k] = (double)in.n_tokens[k];
    out[7 + k] = (double)in.n_dropped[k], out[9 + k] = in.n_examples[k];
  }
  return RLX_OK;
}
/* first as a double (exact below 2^53). */
EXPORT(rlx_llm_data_windows)
int32_t w_data_windows(const rlx_llm_data *d, int32_t split, double first, int32_t n, int32_t *ids, int32_t *targets,
                       float *mask) {
  return rlx_llm_data_windows(d, split, (int64_t)first, n, ids, targets, mask);
}

/* ---- defaults ------------------------------------------------------------ */
/* A run's defaults as `rlx finetune` has them: out[8] = {rank, alpha, seq,
 * batch, lr, seed, shuffle, valid_fraction}, *targets the default targets. */
EXPORT(rlx_llm_finetune_defaults) void w_ft_defaults(double *out, const char **targets) {
  const rlx_llm_finetune_options f = rlx_llm_finetune_default_options();
  const rlx_llm_data_options d = rlx_llm_data_default_options();
  out[0] = f.rank, out[1] = f.alpha, out[2] = d.seq, out[3] = RLX_LLM_FINETUNE_RUN_BATCH;
  out[4] = RLX_LLM_FINETUNE_RUN_LR, out[5] = RLX_LLM_FINETUNE_RUN_SEED, out[6] = d.shuffle, out[7] = d.valid_fraction;
  *targets = f.targets;
}
