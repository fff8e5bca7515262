/* test_llm_lora_merge.c - LoRA adapters merged into a base model
 * (rlx_llm_lora_merge*, include/rlx_llm.h): an f32 base merged with
 * adapters (several, f32 and f16, any scales, alpha or none) gives the
 * logits of the base opened with them, within 1e-5 of the logits' range,
 * on every architecture; a q8_0 base merged as f32 gives them too, merged
 * by llama-export-lora's rule holds f16 weights, and merged as "same"
 * keeps q8_0 and stays close; scale 0 writes the base back byte for byte;
 * the file variant writes what the memory one does, and leaves nothing on
 * a failure; refusals name what is wrong (the loader's checks), and no
 * allocation failure leaks or passes unnoticed. */
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

enum { Q = 1, K = 2, V = 4, O = 8, GATE = 16, UP = 32, DOWN = 64 };
static const int32_t IDS[] = {1, 40, 77, 123, 9, 300, 5, 61};
#define N_IDS ((size_t)(sizeof IDS / sizeof *IDS))

static unsigned char *read_all(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("%s is missing (run make lm-fixtures)", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc((size_t)n);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  *size = (size_t)n;
  return buf;
}

/* The logits after IDS of a model (a file's bytes or a path) with adapters. */
static float *logits_of(const void *data, size_t size, const char *path, const rlx_llm_lora *l, int32_t n) {
  rlx_llm_options opt = {.n_ctx = 16, .lora = l, .n_lora = n};
  rlx_llm *m = NULL;
  rlx_status st = path ? rlx_llm_open_file(path, &opt, &m) : rlx_llm_open_memory(data, size, &opt, &m);
  if (st != RLX_OK) fail_msg("open: %s", rlx_last_error());
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  float *z = malloc((size_t)in.n_vocab * sizeof *z);
  assert_non_null(z);
  assert_int_equal(rlx_llm_eval(m, IDS, N_IDS, z), RLX_OK);
  rlx_llm_free(m);
  return z;
}

/* max |a - b| / max |b|. */
static double rel_diff(const float *a, const float *b, int32_t n) {
  double d = 0, range = 0;
  for (int32_t i = 0; i < n; i++) {
    d = fmax(d, fabs((double)a[i] - b[i]));
    range = fmax(range, fabs((double)b[i]));
  }
  return d / range;
}

/* base merged with l in memory (free()). */
static unsigned char *merged(const unsigned char *base, size_t base_size, const rlx_llm_lora *l, int32_t n,
                             rlx_llm_merge_type type, size_t *size) {
  size_t need;
  assert_int_equal(rlx_llm_lora_merge_memory(base, base_size, l, n, type, NULL, 0, &need), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "out has 0");
  unsigned char *out = malloc(need);
  assert_non_null(out);
  if (rlx_llm_lora_merge_memory(base, base_size, l, n, type, out, need, size) != RLX_OK)
    fail_msg("merge: %s", rlx_last_error());
  assert_int_equal(*size, need);
  return out;
}

/* The type of tensor name in a file's bytes. */
static rlx_gguf_type type_in(const unsigned char *buf, size_t size, const char *name) {
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_memory(buf, size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  rlx_gguf_tensor_info ti;
  assert_int_equal(rlx_gguf_tensor(g, rlx_gguf_find_tensor(g, name), &ti), RLX_OK);
  rlx_gguf_free(g);
  return ti.type;
}

static int64_t file_type_in(const unsigned char *buf, size_t size) {
  rlx_gguf *g;
  int64_t v = -1;
  assert_int_equal(rlx_gguf_open_memory(buf, size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  rlx_gguf_get_int(g, "general.file_type", &v);
  rlx_gguf_free(g);
  return v;
}

/* Merged with l, path's model gives the logits path gives with l applied
 * (within tol of their range), and the adapters move them by > moved. */
static void merged_is_adapted(const char *path, const rlx_llm_lora *l, int32_t n, rlx_llm_merge_type type, double tol) {
  const rlx_llm_info in = lora_model_info(path);
  size_t base_size, size;
  unsigned char *base = read_all(path, &base_size);
  unsigned char *out = merged(base, base_size, l, n, type, &size);
  float *want = logits_of(NULL, 0, path, l, n), *plain = logits_of(NULL, 0, path, NULL, 0);
  float *got = logits_of(out, size, NULL, NULL, 0);
  const double d = rel_diff(got, want, in.n_vocab), moved = rel_diff(plain, want, in.n_vocab);
  if (d > tol) fail_msg("%s merged (type %d): logits differ from the adapted model's by %g of their range", path,
                        (int)type, d);
  if (moved < 0.02) fail_msg("%s: the adapters move the logits by only %g of their range", path, moved);
  free(want), free(plain), free(got), free(out), free(base);
}

static void f32_base_equals_adapted(void **state) {
  (void)state;
  const char *paths[] = {"build/lm/llama-f32.gguf", "build/lm/qwen2-f32.gguf", "build/lm/qwen3-f32.gguf"};
  for (int k = 0; k < 3; k++) {
    const rlx_llm_info in = lora_model_info(paths[k]);
    size_t s;
    unsigned char *a = lora_adapter(&in, Q | K | V | O | GATE | UP | DOWN, 4, 8.0f, RLX_GGUF_TYPE_F32, 11 + k, &s);
    rlx_llm_lora l = {NULL, a, s, 0.75f};
    merged_is_adapted(paths[k], &l, 1, RLX_LLM_MERGE_AUTO, 1e-5);
    free(a);
  }
}

static void several_adapters_and_scales(void **state) {
  (void)state;
  const char *path = "build/lm/qwen2-f32.gguf";
  const rlx_llm_info in = lora_model_info(path);
  size_t s0, s1, s2;
  unsigned char *a0 = lora_adapter(&in, Q | V | DOWN, 4, 8.0f, RLX_GGUF_TYPE_F16, 3, &s0);
  unsigned char *a1 = lora_adapter(&in, Q | K | UP | O, 2, 0.0f, RLX_GGUF_TYPE_F32, 9, &s1); /* no alpha: the scale */
  unsigned char *a2 = lora_adapter(&in, GATE | V, 8, 4.0f, RLX_GGUF_TYPE_F32, 21, &s2);
  rlx_llm_lora l[3] = {{NULL, a0, s0, 0.5f}, {NULL, a1, s1, -1.25f}, {NULL, a2, s2, 2.0f}};
  merged_is_adapted(path, l, 3, RLX_LLM_MERGE_AUTO, 1e-5);
  merged_is_adapted(path, l, 3, RLX_LLM_MERGE_F32, 1e-5);
  /* one of them at scale 0 is that adapter left out */
  size_t base_size, s_zero, s_two;
  unsigned char *base = read_all(path, &base_size);
  l[1].scale = 0.0f;
  unsigned char *with_zero = merged(base, base_size, l, 3, RLX_LLM_MERGE_AUTO, &s_zero);
  const rlx_llm_lora two[2] = {l[0], l[2]};
  unsigned char *without = merged(base, base_size, two, 2, RLX_LLM_MERGE_AUTO, &s_two);
  assert_int_equal(s_zero, s_two);
  assert_memory_equal(with_zero, without, s_two);
  free(with_zero), free(without), free(base), free(a0), free(a1), free(a2);
}

static void scale_zero_is_the_base(void **state) {
  (void)state;
  const char *paths[] = {"build/lm/llama-f32.gguf", "build/lm/qwen3-f32.gguf"};
  for (int k = 0; k < 2; k++) {
    const rlx_llm_info in = lora_model_info(paths[k]);
    size_t s, base_size, size;
    unsigned char *a = lora_adapter(&in, Q | K | V | O | GATE | UP | DOWN, 4, 8.0f, RLX_GGUF_TYPE_F32, 5, &s);
    rlx_llm_lora l = {NULL, a, s, 0.0f};
    unsigned char *base = read_all(paths[k], &base_size);
    unsigned char *out = merged(base, base_size, &l, 1, RLX_LLM_MERGE_AUTO, &size);
    assert_int_equal(size, base_size);
    assert_memory_equal(out, base, size);
    free(out), free(base), free(a);
  }
}

static void q8_0_base(void **state) {
  (void)state;
  const char *path = "build/lm/llama-q8_0.gguf";
  const rlx_llm_info in = lora_model_info(path);
  size_t s0, s1, base_size, size;
  unsigned char *a0 = lora_adapter(&in, Q | V | DOWN, 4, 8.0f, RLX_GGUF_TYPE_F16, 3, &s0);
  unsigned char *a1 = lora_adapter(&in, K | UP, 2, 4.0f, RLX_GGUF_TYPE_F32, 9, &s1);
  rlx_llm_lora l[2] = {{NULL, a0, s0, 0.5f}, {NULL, a1, s1, 0.75f}};
  /* f32: the dequantized weights plus the products, as the adapted model computes */
  merged_is_adapted(path, l, 2, RLX_LLM_MERGE_F32, 1e-5);
  /* llama-export-lora's rule and "same": the weights rounded once more */
  merged_is_adapted(path, l, 2, RLX_LLM_MERGE_AUTO, 2e-3);
  merged_is_adapted(path, l, 2, RLX_LLM_MERGE_SAME, 3e-2);
  unsigned char *base = read_all(path, &base_size);
  const rlx_gguf_type q8 = RLX_GGUF_TYPE_Q8_0, f16 = RLX_GGUF_TYPE_F16;
  const int64_t base_ftype = file_type_in(base, base_size);
  const struct { rlx_llm_merge_type type; rlx_gguf_type adapted; int64_t ftype; } cases[] = {
      {RLX_LLM_MERGE_AUTO, f16, 1}, {RLX_LLM_MERGE_F16, f16, 1}, {RLX_LLM_MERGE_F32, RLX_GGUF_TYPE_F32, base_ftype},
      {RLX_LLM_MERGE_SAME, q8, base_ftype}};
  for (int c = 0; c < 4; c++) {
    unsigned char *out = merged(base, base_size, l, 2, cases[c].type, &size);
    assert_int_equal(type_in(out, size, "blk.1.attn_q.weight"), cases[c].adapted);
    assert_int_equal(type_in(out, size, "blk.0.ffn_up.weight"), cases[c].adapted);
    assert_int_equal(type_in(out, size, "blk.0.ffn_gate.weight"), q8); /* not adapted: as it was */
    assert_int_equal(type_in(out, size, "token_embd.weight"), type_in(base, base_size, "token_embd.weight"));
    assert_int_equal(file_type_in(out, size), cases[c].ftype);
    free(out);
  }
  free(base), free(a0), free(a1);
}

/* The file variant writes the memory variant's bytes, under a temporary
 * name that is gone after. */
static void to_a_file(void **state) {
  (void)state;
  const char *path = "build/lm/qwen3-q8_0.gguf";
  const rlx_llm_info in = lora_model_info(path);
  size_t s, base_size, size, file_size;
  unsigned char *a = lora_adapter(&in, Q | DOWN, 4, 8.0f, RLX_GGUF_TYPE_F32, 7, &s);
  char tmpl[] = "/tmp/rlx-merge-XXXXXX";
  assert_non_null(mkdtemp(tmpl));
  char lora_path[64], out_path[64], tmp_path[80];
  snprintf(lora_path, sizeof lora_path, "%s/a.gguf", tmpl);
  snprintf(out_path, sizeof out_path, "%s/m.gguf", tmpl);
  snprintf(tmp_path, sizeof tmp_path, "%s.tmp", out_path);
  FILE *f = fopen(lora_path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(a, 1, s, f), s);
  fclose(f);
  const rlx_llm_lora by_path = {lora_path, NULL, 0, 1.5f}, by_data = {NULL, a, s, 1.5f};
  if (rlx_llm_lora_merge(path, &by_path, 1, out_path, RLX_LLM_MERGE_SAME) != RLX_OK)
    fail_msg("merge: %s", rlx_last_error());
  assert_int_not_equal(access(out_path, F_OK), -1);
  assert_int_equal(access(tmp_path, F_OK), -1);
  unsigned char *base = read_all(path, &base_size), *file = read_all(out_path, &file_size);
  unsigned char *mem = merged(base, base_size, &by_data, 1, RLX_LLM_MERGE_SAME, &size);
  assert_int_equal(file_size, size);
  assert_memory_equal(file, mem, size);
  remove(out_path);
  /* a refused merge leaves no file */
  const rlx_llm_lora bad = {lora_path, NULL, 0, NAN};
  assert_int_equal(rlx_llm_lora_merge(path, &bad, 1, out_path, RLX_LLM_MERGE_AUTO), RLX_ERR_INVALID_ARG);
  assert_int_equal(access(out_path, F_OK), -1);
  assert_int_equal(access(tmp_path, F_OK), -1);
  char no_dir[96];
  snprintf(no_dir, sizeof no_dir, "%s/none/m.gguf", tmpl);
  assert_int_not_equal(rlx_llm_lora_merge(path, &by_path, 1, no_dir, RLX_LLM_MERGE_AUTO), RLX_OK);
  assert_contains(rlx_last_error(), "none/m.gguf.tmp");
  remove(lora_path);
  assert_int_equal(rmdir(tmpl), 0); /* empty: nothing was left behind */
  free(base), free(file), free(mem), free(a);
}

/* Merging base with l fails with code and a message holding phrase,
 * leaving nothing live. */
static void refused(const char *path, const rlx_llm_lora *l, int32_t n, rlx_llm_merge_type type, rlx_status code,
                    const char *phrase) {
  const size_t live = check_alloc_live_bytes();
  size_t base_size, size = 1;
  unsigned char *base = read_all(path, &base_size);
  const size_t cap = 4 * base_size + 4096;
  unsigned char *out = malloc(cap);
  assert_non_null(out);
  rlx_status st = rlx_llm_lora_merge_memory(base, base_size, l, n, type, out, cap, &size);
  free(out);
  if (st == RLX_OK || (st == RLX_ERR_INVALID_ARG && strstr(rlx_last_error(), "out has")))
    fail_msg("a merge expected to be refused (%s) was accepted", phrase);
  assert_int_equal(st, code);
  assert_contains(rlx_last_error(), "rlx_llm_lora_merge");
  assert_contains(rlx_last_error(), phrase);
  assert_int_equal(size, 0);
  free(base);
  assert_int_equal(check_alloc_live_bytes(), live);
}

static void refusals(void **state) {
  (void)state;
  const char *path = "build/lm/llama-f32.gguf";
  const rlx_llm_info other = lora_model_info("build/lm/qwen2-f32.gguf");
  size_t s;
  unsigned char *a = lora_adapter(&other, Q, 4, 8.0f, RLX_GGUF_TYPE_F32, 1, &s);
  const rlx_llm_info in = lora_model_info(path);
  rlx_llm_lora l = {NULL, a, s, 1.0f};
  refused(path, &l, 1, RLX_LLM_MERGE_AUTO, RLX_ERR_INVALID_ARG, "'general.architecture' is 'qwen2'");
  free(a);
  const rlx_gguf_type f32 = RLX_GGUF_TYPE_F32;
  lora_file f;
  lora_begin(&f, in.arch, "adapter", "lora");
  lora_tensor(&f, "blk.0.attn_q.weight.lora_a", f32, in.n_embd, 4, 0.1f, 1);
  a = lora_finish(&f, &l.size), l.data = a;
  refused(path, &l, 1, RLX_LLM_MERGE_AUTO, RLX_ERR_INVALID_ARG, "'blk.0.attn_q.weight.lora_b' is missing");
  free(a);
  lora_begin(&f, in.arch, "adapter", "lora");
  lora_tensor(&f, "blk.1.ffn_down.weight.lora_a", f32, in.n_ff - 32, 4, 0.1f, 1);
  lora_tensor(&f, "blk.1.ffn_down.weight.lora_b", f32, 4, in.n_embd, 0.1f, 2);
  a = lora_finish(&f, &l.size), l.data = a;
  refused(path, &l, 1, RLX_LLM_MERGE_AUTO, RLX_ERR_SHAPE, "'blk.1.ffn_down.weight' has lora_a dims");
  free(a);
  /* merged values out of range: not finite, or past f16 */
  lora_begin(&f, in.arch, "adapter", "lora");
  lora_tensor(&f, "blk.0.attn_v.weight.lora_a", f32, in.n_embd, 2, 1e20f, 1);
  lora_tensor(&f, "blk.0.attn_v.weight.lora_b", f32, 2, (int64_t)in.n_head_kv * in.head_dim, 1e20f, 2);
  a = lora_finish(&f, &l.size), l.data = a;
  refused(path, &l, 1, RLX_LLM_MERGE_AUTO, RLX_ERR_NUMERIC, "'blk.0.attn_v.weight' merged holds");
  free(a);
  lora_begin(&f, in.arch, "adapter", "lora");
  lora_tensor(&f, "blk.0.attn_v.weight.lora_a", f32, in.n_embd, 2, 1e4f, 1);
  lora_tensor(&f, "blk.0.attn_v.weight.lora_b", f32, 2, (int64_t)in.n_head_kv * in.head_dim, 1e3f, 2);
  a = lora_finish(&f, &l.size), l.data = a;
  refused(path, &l, 1, RLX_LLM_MERGE_F16, RLX_ERR_NUMERIC, "past f16's range");
  refused("build/lm/llama-q8_0.gguf", &l, 1, RLX_LLM_MERGE_SAME, RLX_ERR_NUMERIC, "merged as q8_0");
  /* the caller's arguments */
  refused(path, &l, 0, RLX_LLM_MERGE_AUTO, RLX_ERR_INVALID_ARG, "0 adapters");
  refused(path, NULL, 1, RLX_LLM_MERGE_AUTO, RLX_ERR_INVALID_ARG, "at least one");
  refused(path, &l, 1, (rlx_llm_merge_type)7, RLX_ERR_INVALID_ARG, "type 7");
  assert_int_equal(rlx_llm_lora_merge(NULL, &l, 1, "x.gguf", RLX_LLM_MERGE_AUTO), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "base_path is NULL");
  assert_int_equal(rlx_llm_lora_merge(path, &l, 1, NULL, RLX_LLM_MERGE_AUTO), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "out_path is NULL");
  assert_int_not_equal(rlx_llm_lora_merge("build/lm/none.gguf", &l, 1, "/tmp/rlx-never.gguf", RLX_LLM_MERGE_AUTO),
                       RLX_OK);
  assert_contains(rlx_last_error(), "none.gguf");
  assert_int_equal(access("/tmp/rlx-never.gguf", F_OK), -1);
  free(a);
}

/* ---- allocation failures --------------------------------------------------- */
typedef struct {
  const unsigned char *base;
  size_t base_size;
  const rlx_llm_lora *l;
  unsigned char *out;
  size_t cap;
} merge_args;

static int life(void *user) {
  merge_args *a = user;
  size_t size;
  return rlx_llm_lora_merge_memory(a->base, a->base_size, a->l, 2, RLX_LLM_MERGE_AUTO, a->out, a->cap, &size);
}

static void allocation_failures(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  const char *path = "build/lm/llama-q8_0.gguf";
  const rlx_llm_info in = lora_model_info(path);
  size_t s0, s1;
  unsigned char *a0 = lora_adapter(&in, Q | V | DOWN, 4, 8.0f, RLX_GGUF_TYPE_F16, 3, &s0);
  unsigned char *a1 = lora_adapter(&in, K | UP, 2, 0.0f, RLX_GGUF_TYPE_F32, 9, &s1);
  rlx_llm_lora l[2] = {{NULL, a0, s0, 0.5f}, {NULL, a1, s1, 0.75f}};
  merge_args args = {.l = l};
  args.base = read_all(path, &args.base_size);
  args.out = merged(args.base, args.base_size, l, 2, RLX_LLM_MERGE_AUTO, &args.cap);
  const char *why = check_alloc_sweep(life, &args, 0); /* every allocation, opening the model included */
  if (why) fail_msg("%s", why);
  free(args.out), free((void *)args.base), free(a0), free(a1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(f32_base_equals_adapted), cmocka_unit_test(several_adapters_and_scales),
      cmocka_unit_test(scale_zero_is_the_base),  cmocka_unit_test(q8_0_base),
      cmocka_unit_test(to_a_file),               cmocka_unit_test(refusals),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
