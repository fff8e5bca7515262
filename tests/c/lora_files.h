/* lora_files.h - LoRA adapter files for the tests (test_llm_lora*.c),
 * built in memory with the GGUF writer so that any key or tensor can be
 * wrong: the metadata an adapter has, then pairs of seeded values (A
 * uniform in +-1/sqrt(n_in), B in +-1/sqrt(r), or zero) for the weights a
 * model has.  Header-only (static functions): include after <cmocka.h>. */
#ifndef RLX_TEST_LORA_FILES_H
#define RLX_TEST_LORA_FILES_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_models.h"

#define LORA_ALL_TARGETS 0x7fu /* every bit of rlx_llm_lora_target */

typedef struct {
  rlx_gguf_writer *w;
  void *bufs[256];
  int n;
} lora_file;

/* The keys of an adapter; a NULL string leaves its key out. */
static inline void lora_begin(lora_file *f, const char *arch, const char *general_type, const char *adapter_type) {
  memset(f, 0, sizeof *f);
  assert_int_equal(rlx_gguf_writer_new(&f->w), RLX_OK);
  if (arch) assert_int_equal(rlx_gguf_writer_add_string(f->w, "general.architecture", arch, strlen(arch)), RLX_OK);
  if (general_type)
    assert_int_equal(rlx_gguf_writer_add_string(f->w, "general.type", general_type, strlen(general_type)), RLX_OK);
  if (adapter_type)
    assert_int_equal(rlx_gguf_writer_add_string(f->w, "adapter.type", adapter_type, strlen(adapter_type)), RLX_OK);
}

static inline void lora_alpha(lora_file *f, float alpha) {
  assert_int_equal(rlx_gguf_writer_add(f->w, "adapter.lora.alpha", RLX_GGUF_VAL_F32, &alpha), RLX_OK);
}

/* Uniform in (-bound, bound) from a splitmix64 stream. */
static inline float lora_uniform(uint64_t *s, float bound) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return ((float)(z >> 40) / 16777216.0f * 2.0f - 1.0f) * bound;
}

/* A tensor of dims [cols, rows] (rows 0: 1-D) in type, its values
 * uniform in +-bound (0: zeros). */
static inline void lora_tensor(lora_file *f, const char *name, rlx_gguf_type type, int64_t cols, int64_t rows,
                               float bound, uint64_t seed) {
  const int64_t n = cols * (rows ? rows : 1);
  float *x = malloc((size_t)n * sizeof *x);
  assert_non_null(x);
  for (int64_t i = 0; i < n; i++) x[i] = bound ? lora_uniform(&seed, bound) : 0.0f;
  uint64_t bytes;
  assert_int_equal(rlx_gguf_row_bytes(type, n, &bytes), RLX_OK);
  void *data = x;
  if (type != RLX_GGUF_TYPE_F32) {
    assert_non_null(data = malloc((size_t)bytes));
    assert_int_equal(rlx_gguf_quantize(type, x, n, data, (size_t)bytes), RLX_OK);
    free(x);
  }
  assert_true(f->n < 256);
  f->bufs[f->n++] = data;
  const int64_t dims[2] = {cols, rows};
  assert_int_equal(rlx_gguf_writer_add_tensor(f->w, name, type, rows ? 2 : 1, dims, data, bytes), RLX_OK);
}

/* n_in and n_out of target t (rlx_llm_lora_target order) in model m. */
static inline void lora_shape(const rlx_llm_info *in, int t, int64_t *n_in, int64_t *n_out) {
  const int64_t e = in->n_embd, q = (int64_t)in->n_head * in->head_dim, kv = (int64_t)in->n_head_kv * in->head_dim;
  const int64_t ins[7] = {e, e, e, q, e, e, in->n_ff}, outs[7] = {q, kv, kv, e, in->n_ff, in->n_ff, e};
  *n_in = ins[t];
  *n_out = outs[t];
}

/* The pair of rank r for every layer's targets in mask, B zero when
 * zero_b; seeds from seed. */
static inline void lora_pairs(lora_file *f, const rlx_llm_info *in, unsigned mask, int64_t r, rlx_gguf_type type,
                              int zero_b, uint64_t seed) {
  char name[96];
  for (int32_t l = 0; l < in->n_layer; l++)
    for (int t = 0; rlx_llm_lora_target(t); t++) {
      if (!(mask & (1u << t))) continue;
      int64_t n_in, n_out;
      lora_shape(in, t, &n_in, &n_out);
      snprintf(name, sizeof name, "blk.%d.%s.weight.lora_a", (int)l, rlx_llm_lora_target(t));
      lora_tensor(f, name, type, n_in, r, 1.0f / sqrtf((float)n_in), seed++);
      snprintf(name, sizeof name, "blk.%d.%s.weight.lora_b", (int)l, rlx_llm_lora_target(t));
      lora_tensor(f, name, type, r, n_out, zero_b ? 0.0f : 1.0f / sqrtf((float)r), seed++);
    }
}

/* The info of the model at path, opened without adapters; its arch kept
 * (four at a time), its other strings gone with the model. */
static inline rlx_llm_info lora_model_info(const char *path) {
  static char arch[4][16];
  static int next;
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, NULL, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  char *a = arch[next++ % 4];
  snprintf(a, sizeof arch[0], "%s", in.arch);
  rlx_llm_free(m);
  in.arch = a;
  in.name = in.tokenizer = in.weight_types = NULL;
  return in;
}

static inline unsigned char *lora_finish(lora_file *f, size_t *size);

/* An adapter of rank r on mask's targets of every layer for the model of
 * in, alpha (0: no key) and seeded values in type, as a file's bytes
 * (free()). */
static inline unsigned char *lora_adapter(const rlx_llm_info *in, unsigned mask, int64_t r, float alpha,
                                          rlx_gguf_type type, uint64_t seed, size_t *size) {
  lora_file f;
  lora_begin(&f, in->arch, "adapter", "lora");
  if (alpha) lora_alpha(&f, alpha);
  lora_pairs(&f, in, mask, r, type, 0, seed);
  return lora_finish(&f, size);
}

/* The file's bytes (free()), the writer and the values freed. */
static inline unsigned char *lora_finish(lora_file *f, size_t *size) {
  uint64_t bytes;
  assert_int_equal(rlx_gguf_writer_size(f->w, &bytes), RLX_OK);
  unsigned char *buf = malloc((size_t)bytes);
  assert_non_null(buf);
  assert_int_equal(rlx_gguf_writer_write_memory(f->w, buf, (size_t)bytes), RLX_OK);
  rlx_gguf_writer_free(f->w);
  for (int i = 0; i < f->n; i++) free(f->bufs[i]);
  *size = (size_t)bytes;
  return buf;
}

#endif
