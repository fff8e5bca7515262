/* llm_lora_write.c - rlx_llm_lora_write (include/rlx_llm.h): a LoRA
 * adapter file as llama.cpp reads it (general.type "adapter",
 * adapter.type "lora", adapter.lora.alpha a float32, tensors
 * "<weight>.lora_a" dims [n_in, r] and "<weight>.lora_b" dims [r, n_out],
 * i.e. PEFT's row-major A [r, n_in] and B [n_out, r] as they are), written
 * under "<path>.tmp" and renamed, so a reader never sees half a file; or
 * the same bytes into memory (rlx_llm_lora_write_memory). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "gguf_common.h"
#include "rlx_llm.h"

#define FN "rlx_llm_lora_write"

/* One half in the file's type: data itself for f32, else a converted copy
 * kept in *copy (rlx_free(*copy, bytes)). */
static rlx_status add_half(rlx_gguf_writer *w, const char *name, const char *suffix, rlx_gguf_type type, int64_t cols,
                           int64_t rows, const float *data, void **copy, uint64_t *copy_bytes) {
  char full[RLX_GGUF_MAX_NAME + 16];
  snprintf(full, sizeof full, "%s%s", name, suffix);
  const int64_t dims[2] = {cols, rows};
  uint64_t bytes;
  rlx_status st = rlx_gguf_row_bytes(type, cols * rows, &bytes);
  if (st != RLX_OK) return st;
  const void *at = data;
  if (type != RLX_GGUF_TYPE_F32) {
    if (!(*copy = rlx_malloc((size_t)bytes))) return rlx_error(RLX_ERR_NO_MEMORY, FN ": out of memory");
    *copy_bytes = bytes;
    if ((st = rlx_gguf_quantize(type, data, cols * rows, *copy, (size_t)bytes)) != RLX_OK) return st;
    at = *copy;
  }
  return rlx_gguf_writer_add_tensor(w, full, type, 2, dims, at, bytes);
}

static rlx_status check_args(const char *path, const char *arch, float alpha, rlx_gguf_type type,
                             const rlx_llm_lora_tensor *t, int32_t n) {
  if (!path || !arch) return rlx_error(RLX_ERR_INVALID_ARG, FN ": %s is NULL", path ? "arch" : "path");
  if (type != RLX_GGUF_TYPE_F32 && type != RLX_GGUF_TYPE_F16)
    return rlx_error(RLX_ERR_UNSUPPORTED, FN ": type %d; LoRA tensors are f32 or f16", (int)type);
  if (!isfinite(alpha)) return rlx_error(RLX_ERR_INVALID_ARG, FN ": alpha %g", alpha);
  if (n < 0 || (n > 0 && !t)) return rlx_error(RLX_ERR_INVALID_ARG, FN ": %d tensors at %p", (int)n, (const void *)t);
  for (int32_t i = 0; i < n; i++)
    if (!t[i].name || !t[i].a || !t[i].b || t[i].rank < 1 || t[i].n_in < 1 || t[i].n_out < 1)
      return rlx_error(RLX_ERR_INVALID_ARG, FN ": tensors[%d] ('%s') needs a name, rank, n_in, n_out >= 1, a and b",
                       (int)i, t[i].name ? t[i].name : "");
  return RLX_OK;
}

/* The file's writer with its tensors (the converted copies it points to in
 * l->copies), or the first error. */
typedef struct {
  rlx_gguf_writer *w;
  void **copies;
  uint64_t *copy_bytes;
  size_t n_copies;
} lora_file;

static void lora_file_free(lora_file *l) {
  for (size_t k = 0; l->copies && k < l->n_copies; k++)
    if (l->copies[k]) rlx_free(l->copies[k], (size_t)l->copy_bytes[k]);
  if (l->copies) rlx_free(l->copies, (l->n_copies ? l->n_copies : 1) * sizeof *l->copies);
  if (l->copy_bytes) rlx_free(l->copy_bytes, (l->n_copies ? l->n_copies : 1) * sizeof *l->copy_bytes);
  rlx_gguf_writer_free(l->w);
}

static rlx_status lora_file_new(const char *arch, float alpha, rlx_gguf_type type, const rlx_llm_lora_tensor *tensors,
                                int32_t n, lora_file *l) {
  *l = (lora_file){0};
  rlx_status st = rlx_gguf_writer_new(&l->w);
  if (st != RLX_OK) return st;
  l->n_copies = 2 * (size_t)n;
  l->copies = rlx_calloc(l->n_copies ? l->n_copies : 1, sizeof *l->copies);
  l->copy_bytes = rlx_calloc(l->n_copies ? l->n_copies : 1, sizeof *l->copy_bytes);
  if (!l->copies || !l->copy_bytes) st = rlx_error(RLX_ERR_NO_MEMORY, FN ": out of memory");
  rlx_gguf_writer *w = l->w;
  if (st == RLX_OK) st = rlx_gguf_writer_add_string(w, "general.architecture", arch, strlen(arch));
  if (st == RLX_OK) st = rlx_gguf_writer_add_string(w, "general.type", "adapter", 7);
  if (st == RLX_OK) st = rlx_gguf_writer_add_string(w, "adapter.type", "lora", 4);
  if (st == RLX_OK) st = rlx_gguf_writer_add(w, "adapter.lora.alpha", RLX_GGUF_VAL_F32, &alpha);
  for (int32_t i = 0; st == RLX_OK && i < n; i++) {
    const rlx_llm_lora_tensor *t = &tensors[i];
    st = add_half(w, t->name, ".lora_a", type, t->n_in, t->rank, t->a, &l->copies[2 * i], &l->copy_bytes[2 * i]);
    if (st == RLX_OK)
      st = add_half(w, t->name, ".lora_b", type, t->rank, t->n_out, t->b, &l->copies[2 * i + 1],
                    &l->copy_bytes[2 * i + 1]);
  }
  if (st != RLX_OK) lora_file_free(l);
  return st;
}

rlx_status rlx_llm_lora_write(const char *path, const char *arch, float alpha, rlx_gguf_type type,
                              const rlx_llm_lora_tensor *tensors, int32_t n) {
  rlx_status st = check_args(path, arch, alpha, type, tensors, n);
  lora_file l;
  if (st != RLX_OK || (st = lora_file_new(arch, alpha, type, tensors, n, &l)) != RLX_OK) return st;
  st = rlx_gguf_write_file_whole(l.w, path, FN);
  lora_file_free(&l);
  return st;
}

rlx_status rlx_llm_lora_write_memory(const char *arch, float alpha, rlx_gguf_type type,
                                     const rlx_llm_lora_tensor *tensors, int32_t n, void *buf, size_t cap,
                                     size_t *size) {
  if (!size) return rlx_error(RLX_ERR_INVALID_ARG, FN "_memory: size is NULL");
  *size = 0;
  rlx_status st = check_args("", arch, alpha, type, tensors, n);
  lora_file l;
  if (st != RLX_OK || (st = lora_file_new(arch, alpha, type, tensors, n, &l)) != RLX_OK) return st;
  uint64_t bytes = 0;
  st = rlx_gguf_writer_size(l.w, &bytes);
  if (st == RLX_OK && bytes > SIZE_MAX) st = rlx_error(RLX_ERR_NO_MEMORY, FN "_memory: %llu bytes", (unsigned long long)bytes);
  if (st == RLX_OK) *size = (size_t)bytes;
  if (st == RLX_OK && buf) {
    if (cap < bytes) st = rlx_error(RLX_ERR_INVALID_ARG, FN "_memory: the adapter is %zu bytes, the buffer %zu", *size, cap);
    else st = rlx_gguf_writer_write_memory(l.w, buf, cap);
  }
  lora_file_free(&l);
  return st;
}
