/* test_llm_lora_files.c - LoRA adapter files (include/rlx_llm.h): each
 * refusal at open names the adapter and what is wrong (not GGUF, not an
 * adapter, another architecture, a half missing, a shape or rank that does
 * not fit, a weight LoRA does not adapt or the model lacks, a tensor type,
 * a bad scale or alpha) and leaks nothing; "*_norm.weight" tensors are
 * skipped; rlx_llm_lora_write round-trips (f32 exactly, f16 as rounded;
 * rlx_llm_lora_write_memory gives the same bytes)
 * and leaves no file behind when it fails. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "assert_text.h"
#include "check_alloc.h"
#include "lora_files.h"

#define MODEL "build/lm/qwen2-f32.gguf"

static rlx_llm_info model_info(void) {
  static char arch[16];
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(MODEL, NULL, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", MODEL, rlx_last_error());
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  snprintf(arch, sizeof arch, "%s", in.arch);
  rlx_llm_free(m);
  in.arch = arch;
  return in;
}

/* Opening MODEL with the adapters fails with code (0: any error) and a
 * message holding each of the phrases, leaving no live allocation. */
static void refused(const rlx_llm_lora *l, int32_t n, rlx_status code, const char *phrase, const char *phrase2) {
  const size_t live = check_alloc_live_bytes();
  rlx_llm_options opt = {.n_ctx = 16, .lora = l, .n_lora = n};
  rlx_llm *m = (rlx_llm *)&opt;
  rlx_status st = rlx_llm_open_file(MODEL, &opt, &m);
  if (st == RLX_OK) fail_msg("an adapter expected to be refused (%s) was accepted", phrase);
  if (code) assert_int_equal(st, code);
  assert_null(m);
  assert_contains(rlx_last_error(), phrase);
  if (phrase2) assert_contains(rlx_last_error(), phrase2);
  assert_int_equal(check_alloc_live_bytes(), live);
}

/* An adapter in memory refused as above (the file built by f, freed). */
static void refused_file(lora_file *f, rlx_status code, const char *phrase, const char *phrase2) {
  size_t size;
  unsigned char *buf = lora_finish(f, &size);
  rlx_llm_lora l = {NULL, buf, size, 1.0f};
  refused(&l, 1, code, phrase, phrase2);
  free(buf);
}

static void begin(lora_file *f, const rlx_llm_info *in) {
  lora_begin(f, in->arch, "adapter", "lora");
  lora_alpha(f, 4.0f);
}

static void not_adapters(void **state) {
  (void)state;
  const rlx_llm_info in = model_info();
  rlx_llm_lora l = {"Makefile", NULL, 0, 1.0f};
  refused(&l, 1, 0, "LoRA adapter 0 (Makefile)", NULL);
  l.path = "build/lm/no-such-adapter.gguf";
  refused(&l, 1, 0, "no-such-adapter.gguf", NULL);
  l.path = MODEL; /* a model, not an adapter */
  refused(&l, 1, RLX_ERR_INVALID_ARG, "general.type", NULL);
  lora_file f;
  lora_begin(&f, in.arch, "adapter", "control_vector");
  refused_file(&f, RLX_ERR_INVALID_ARG, "'adapter.type' is 'control_vector'", NULL);
  lora_begin(&f, "llama", "adapter", "lora");
  refused_file(&f, RLX_ERR_INVALID_ARG, "'general.architecture' is 'llama'", "qwen2");
  lora_begin(&f, NULL, "adapter", "lora");
  refused_file(&f, RLX_ERR_INVALID_ARG, "no 'general.architecture'", NULL);
  lora_begin(&f, in.arch, "adapter", "lora");
  uint32_t alpha = 8;
  assert_int_equal(rlx_gguf_writer_add(f.w, "adapter.lora.alpha", RLX_GGUF_VAL_U32, &alpha), RLX_OK);
  refused_file(&f, RLX_ERR_INVALID_ARG, "adapter.lora.alpha is a u32", NULL);
  /* the caller's arguments */
  refused(NULL, 1, RLX_ERR_INVALID_ARG, "LoRA adapters", NULL);
  rlx_llm_lora none = {NULL, NULL, 0, 1.0f};
  refused(&none, 1, RLX_ERR_INVALID_ARG, "neither a path nor data", NULL);
  lora_begin(&f, in.arch, "adapter", "lora");
  size_t size;
  unsigned char *buf = lora_finish(&f, &size);
  rlx_llm_lora two[2] = {{NULL, buf, size, 1.0f}, {NULL, buf, size, NAN}};
  refused(two, 2, RLX_ERR_INVALID_ARG, "LoRA adapter 1 (in memory): scale nan", NULL);
  two[1].scale = INFINITY;
  refused(two, 2, RLX_ERR_INVALID_ARG, "scale inf", NULL);
  refused(two, -1, RLX_ERR_INVALID_ARG, "-1 LoRA adapters", NULL);
  /* no pairs at all: nothing to apply, accepted (as llama.cpp does) */
  rlx_llm_options opt = {.n_ctx = 16, .lora = two, .n_lora = 1};
  rlx_llm *m = NULL;
  assert_int_equal(rlx_llm_open_file(MODEL, &opt, &m), RLX_OK);
  rlx_llm_info got;
  rlx_llm_get_info(m, &got);
  assert_int_equal(got.n_lora, 1);
  assert_int_equal(got.n_lora_pairs, 0);
  rlx_llm_free(m);
  free(buf);
}

static void bad_tensors(void **state) {
  (void)state;
  const rlx_llm_info in = model_info();
  const rlx_gguf_type f32 = RLX_GGUF_TYPE_F32;
  const int64_t e = in.n_embd, q = (int64_t)in.n_head * in.head_dim;
  lora_file f;
  begin(&f, &in);
  lora_tensor(&f, "blk.0.attn_q.weight.lora_a", f32, e, 4, 0.1f, 1);
  refused_file(&f, RLX_ERR_INVALID_ARG, "'blk.0.attn_q.weight.lora_b' is missing", NULL);
  begin(&f, &in);
  lora_tensor(&f, "blk.1.ffn_up.weight.lora_b", f32, 4, in.n_ff, 0.1f, 1);
  refused_file(&f, RLX_ERR_INVALID_ARG, "'blk.1.ffn_up.weight.lora_a' is missing", NULL);
  begin(&f, &in); /* n_in one short */
  lora_tensor(&f, "blk.0.attn_q.weight.lora_a", f32, e - 1, 4, 0.1f, 1);
  lora_tensor(&f, "blk.0.attn_q.weight.lora_b", f32, 4, q, 0.1f, 2);
  refused_file(&f, RLX_ERR_SHAPE, "'blk.0.attn_q.weight' has lora_a dims [255, 4]", "needs [256, r]");
  begin(&f, &in); /* n_out of another weight */
  lora_tensor(&f, "blk.0.attn_k.weight.lora_a", f32, e, 4, 0.1f, 1);
  lora_tensor(&f, "blk.0.attn_k.weight.lora_b", f32, 4, q, 0.1f, 2);
  refused_file(&f, RLX_ERR_SHAPE, "'blk.0.attn_k.weight' has lora_a dims", NULL);
  begin(&f, &in); /* ranks differ */
  lora_tensor(&f, "blk.0.attn_v.weight.lora_a", f32, e, 4, 0.1f, 1);
  lora_tensor(&f, "blk.0.attn_v.weight.lora_b", f32, 3, (int64_t)in.n_head_kv * in.head_dim, 0.1f, 2);
  refused_file(&f, RLX_ERR_SHAPE, "lora_b dims [3, 128]", "[r, 128]");
  begin(&f, &in); /* a weight the model has, not a target */
  lora_tensor(&f, "token_embd.weight.lora_a", f32, e, 4, 0.1f, 1);
  lora_tensor(&f, "token_embd.weight.lora_b", f32, 4, in.n_vocab, 0.1f, 2);
  refused_file(&f, RLX_ERR_UNSUPPORTED, "adapts 'token_embd.weight'", "attn_q, attn_k");
  begin(&f, &in); /* a layer the model lacks */
  lora_tensor(&f, "blk.7.attn_q.weight.lora_a", f32, e, 4, 0.1f, 1);
  lora_tensor(&f, "blk.7.attn_q.weight.lora_b", f32, 4, q, 0.1f, 2);
  refused_file(&f, RLX_ERR_INVALID_ARG, "adapts 'blk.7.attn_q.weight', which the model does not have", NULL);
  begin(&f, &in);
  lora_tensor(&f, "blk.0.attn_q.weight.lora_a", RLX_GGUF_TYPE_Q8_0, e, 4, 0.1f, 1);
  lora_tensor(&f, "blk.0.attn_q.weight.lora_b", f32, 4, q, 0.1f, 2);
  refused_file(&f, RLX_ERR_UNSUPPORTED, "'blk.0.attn_q.weight.lora_a' is q8_0", "f32 or f16");
  begin(&f, &in);
  lora_tensor(&f, "blk.0.attn_q.weight.lora_c", f32, e, 4, 0.1f, 1);
  refused_file(&f, RLX_ERR_INVALID_ARG, "'blk.0.attn_q.weight.lora_c' is neither", NULL);
  begin(&f, &in);
  lora_tensor(&f, "blk.0.attn_q.weight.lora_a", f32, e, 0, 0.1f, 1);
  refused_file(&f, RLX_ERR_SHAPE, "'blk.0.attn_q.weight.lora_a' is not a matrix", NULL);

  /* a norm tensor is skipped, as llama.cpp skips it */
  begin(&f, &in);
  lora_tensor(&f, "blk.0.attn_norm.weight", f32, e, 0, 0.1f, 1);
  lora_tensor(&f, "blk.0.attn_q.weight.lora_a", f32, e, 4, 0.1f, 1);
  lora_tensor(&f, "blk.0.attn_q.weight.lora_b", f32, 4, q, 0.1f, 2);
  size_t size;
  unsigned char *buf = lora_finish(&f, &size);
  rlx_llm_lora l = {NULL, buf, size, 1.0f};
  rlx_llm_options opt = {.n_ctx = 16, .lora = &l, .n_lora = 1};
  rlx_llm *m = NULL;
  assert_int_equal(rlx_llm_open_file(MODEL, &opt, &m), RLX_OK);
  rlx_llm_info got;
  rlx_llm_get_info(m, &got);
  assert_int_equal(got.n_lora_pairs, 1);
  assert_int_equal(got.lora_bytes, (uint64_t)(4 * e + q * 4) * 4);
  rlx_llm_free(m);
  free(buf);
}

/* ---- the writer ----------------------------------------------------------- */
static void check_tensor(rlx_gguf *g, const char *name, rlx_gguf_type type, int64_t cols, int64_t rows,
                         const float *want) {
  const int64_t i = rlx_gguf_find_tensor(g, name);
  assert_true(i >= 0);
  rlx_gguf_tensor_info t;
  assert_int_equal(rlx_gguf_tensor(g, i, &t), RLX_OK);
  assert_int_equal(t.type, type);
  assert_int_equal(t.n_dims, 2);
  assert_int_equal(t.dims[0], cols);
  assert_int_equal(t.dims[1], rows);
  const size_t n = (size_t)(cols * rows);
  float *got = malloc(n * sizeof *got), *rounded = malloc(n * sizeof *rounded);
  uint16_t *half = malloc(n * 2);
  assert_true(got && rounded && half);
  assert_int_equal(rlx_gguf_read_tensor_f32(g, i, got, n), RLX_OK);
  memcpy(rounded, want, n * sizeof *rounded);
  if (type == RLX_GGUF_TYPE_F16) {
    assert_int_equal(rlx_gguf_quantize(type, want, (int64_t)n, half, n * 2), RLX_OK);
    assert_int_equal(rlx_gguf_dequantize(type, half, n * 2, rounded, (int64_t)n), RLX_OK);
  }
  assert_memory_equal(got, rounded, n * sizeof *got);
  free(got), free(rounded), free(half);
}

/* rlx_llm_lora_write_memory gives the file's bytes: the size alone, then
 * into a buffer of exactly that size; a smaller buffer is refused. */
static void check_memory_equals_file(const char *path, rlx_gguf_type type, const rlx_llm_lora_tensor *t) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  const long file_size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *want = malloc((size_t)file_size), *got = malloc((size_t)file_size);
  assert_true(want && got);
  assert_int_equal(fread(want, 1, (size_t)file_size, f), (size_t)file_size);
  fclose(f);
  size_t size = 0;
  assert_int_equal(rlx_llm_lora_write_memory("qwen3", 16.0f, type, t, 2, NULL, 0, &size), RLX_OK);
  assert_int_equal(size, (size_t)file_size);
  memset(got, 0xA5, size);
  assert_int_equal(rlx_llm_lora_write_memory("qwen3", 16.0f, type, t, 2, got, size, &size), RLX_OK);
  assert_memory_equal(got, want, size);
  assert_int_equal(rlx_llm_lora_write_memory("qwen3", 16.0f, type, t, 2, got, size - 1, &size), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "the buffer");
  assert_int_equal(rlx_llm_lora_write_memory("qwen3", NAN, type, t, 2, got, (size_t)file_size, &size),
                   RLX_ERR_INVALID_ARG);
  free(want), free(got);
}

static void writer_round_trip(void **state) {
  (void)state;
  const char *path = "build/tests/lora_written.gguf", *tmp = "build/tests/lora_written.gguf.tmp";
  float a0[3 * 5], b0[4 * 3], a1[2 * 4], b1[5 * 2];
  uint64_t seed = 7;
  for (size_t i = 0; i < 15; i++) a0[i] = lora_uniform(&seed, 1.0f);
  for (size_t i = 0; i < 12; i++) b0[i] = lora_uniform(&seed, 1.0f);
  for (size_t i = 0; i < 8; i++) a1[i] = lora_uniform(&seed, 1.0f);
  for (size_t i = 0; i < 10; i++) b1[i] = lora_uniform(&seed, 1.0f);
  const rlx_llm_lora_tensor t[2] = {{"blk.0.attn_q.weight", 3, 5, 4, a0, b0},
                                    {"blk.3.ffn_down.weight", 2, 4, 5, a1, b1}};
  const size_t live = check_alloc_live_bytes();
  for (int k = 0; k < 2; k++) {
    const rlx_gguf_type type = k ? RLX_GGUF_TYPE_F16 : RLX_GGUF_TYPE_F32;
    assert_int_equal(rlx_llm_lora_write(path, "qwen3", 16.0f, type, t, 2), RLX_OK);
    assert_int_not_equal(access(tmp, F_OK), 0);
    rlx_gguf *g;
    assert_int_equal(rlx_gguf_open_file(path, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
    const char *s;
    uint64_t len;
    assert_int_equal(rlx_gguf_get_string(g, "general.architecture", &s, &len), RLX_OK);
    assert_string_equal(s, "qwen3");
    assert_int_equal(rlx_gguf_get_string(g, "general.type", &s, &len), RLX_OK);
    assert_string_equal(s, "adapter");
    assert_int_equal(rlx_gguf_get_string(g, "adapter.type", &s, &len), RLX_OK);
    assert_string_equal(s, "lora");
    rlx_gguf_value v;
    assert_int_equal(rlx_gguf_get(g, "adapter.lora.alpha", &v), RLX_OK);
    assert_int_equal(v.type, RLX_GGUF_VAL_F32);
    assert_true(v.f64 == 16.0);
    assert_int_equal(rlx_gguf_tensor_count(g), 4);
    check_tensor(g, "blk.0.attn_q.weight.lora_a", type, 5, 3, a0);
    check_tensor(g, "blk.0.attn_q.weight.lora_b", type, 3, 4, b0);
    check_tensor(g, "blk.3.ffn_down.weight.lora_a", type, 4, 2, a1);
    check_tensor(g, "blk.3.ffn_down.weight.lora_b", type, 2, 5, b1);
    rlx_gguf_free(g);
    check_memory_equals_file(path, type, t);
  }
  assert_int_equal(check_alloc_live_bytes(), live);
  /* refusals: nothing written, nothing leaked, the old file kept whole */
  assert_int_equal(rlx_llm_lora_write(path, "qwen3", 1.0f, RLX_GGUF_TYPE_Q8_0, t, 2), RLX_ERR_UNSUPPORTED);
  assert_contains(rlx_last_error(), "f32 or f16");
  assert_int_equal(rlx_llm_lora_write(path, "qwen3", NAN, RLX_GGUF_TYPE_F32, t, 2), RLX_ERR_INVALID_ARG);
  const rlx_llm_lora_tensor bad = {"blk.0.attn_q.weight", 0, 5, 4, a0, b0};
  assert_int_equal(rlx_llm_lora_write(path, "qwen3", 1.0f, RLX_GGUF_TYPE_F32, &bad, 1), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "tensors[0] ('blk.0.attn_q.weight')");
  const rlx_llm_lora_tensor twice[2] = {t[0], t[0]};
  assert_int_not_equal(rlx_llm_lora_write(path, "qwen3", 1.0f, RLX_GGUF_TYPE_F16, twice, 2), RLX_OK);
  assert_int_not_equal(rlx_llm_lora_write("build/no-such-dir/x.gguf", "qwen3", 1.0f, RLX_GGUF_TYPE_F32, t, 2), RLX_OK);
  assert_contains(rlx_last_error(), "no-such-dir");
  assert_int_not_equal(access("build/no-such-dir/x.gguf.tmp", F_OK), 0);
  assert_int_equal(check_alloc_live_bytes(), live);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_file(path, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  assert_int_equal(rlx_gguf_tensor_count(g), 4);
  rlx_gguf_free(g);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(not_adapters),
      cmocka_unit_test(bad_tensors),
      cmocka_unit_test(writer_round_trip),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
