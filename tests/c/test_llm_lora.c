/* test_llm_lora.c - LoRA adapters applied while generating (rlx_llm_lora
 * in include/rlx_llm.h) on the build/lm fixtures: an adapter whose B is
 * zero changes no logit, nor does one at scale 0; two adapters at once
 * equal one adapter holding both (ranks stacked, the scales folded into
 * B, which checks s = scale * alpha / r); an adapter in the caller's
 * memory (unaligned too) equals the same file read from a path; the info;
 * allocation failures leak nothing.  Refusals and the writer:
 * test_llm_lora_files.c; the fused (WebGPU) graph: test_llm_fused.c;
 * agreement with llama.cpp: tests/cli/llm_lora_ref.mjs. */
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

#include "../../src/models/llm.h"
#include "check_alloc.h"
#include "lora_files.h"

#define QWEN2 "build/lm/qwen2-f32.gguf"  /* q/k/v biases */
#define LLAMA "build/lm/llama-q8_0.gguf" /* quantized weights */
#define QWEN3 "build/lm/qwen3-q4_k.gguf" /* per-head q/k norms */
#define N_CTX 64
#define PROMPT 20 /* a step of 16, then 4 */
#define DECODED 3

static rlx_llm *open_with(const char *path, const rlx_llm_lora *lora, int32_t n_lora) {
  rlx_llm_options opt = {.n_ctx = N_CTX, .lora = lora, .n_lora = n_lora};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  return m;
}

/* The logits after the prompt and after each of DECODED tokens, one row
 * of n_vocab each (free()). */
static float *trace(rlx_llm *m) {
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  float *out = malloc((size_t)(DECODED + 1) * (size_t)in.n_vocab * sizeof *out);
  assert_non_null(out);
  int32_t ids[PROMPT + DECODED];
  for (int32_t i = 0; i < PROMPT + DECODED; i++) ids[i] = (i * 53 + 7) % in.n_vocab;
  rlx_llm_reset(m);
  assert_int_equal(rlx_llm_eval(m, ids, PROMPT, out), RLX_OK);
  for (int32_t t = 1; t <= DECODED; t++)
    assert_int_equal(rlx_llm_eval(m, ids + PROMPT + t - 1, 1, out + (size_t)t * (size_t)in.n_vocab), RLX_OK);
  return out;
}

/* Largest |a - b| over the traces, relative to 1 + the largest |b|. */
static double trace_diff(const float *a, const float *b, int32_t n_vocab) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < (size_t)(DECODED + 1) * (size_t)n_vocab; i++) {
    worst = fmax(worst, fabs((double)a[i] - b[i]));
    scale = fmax(scale, fabs((double)b[i]));
  }
  return worst / (1.0 + scale);
}

/* The trace of path with one in-memory adapter (pairs on mask). */
static float *trace_adapted(const char *path, unsigned mask, float scale, int zero_b, rlx_gguf_type type) {
  const rlx_llm_info in = lora_model_info(path);
  lora_file f;
  lora_begin(&f, in.arch, "adapter", "lora");
  lora_alpha(&f, 8.0f);
  lora_pairs(&f, &in, mask, 4, type, zero_b, 11);
  size_t size;
  unsigned char *buf = lora_finish(&f, &size);
  rlx_llm_lora l = {NULL, buf, size, scale};
  rlx_llm *m = open_with(path, &l, 1);
  rlx_llm_info got;
  rlx_llm_get_info(m, &got);
  assert_int_equal(got.n_lora, 1);
  assert_true(got.n_lora_pairs >= in.n_layer && got.lora_bytes > 0);
  float *t = trace(m);
  rlx_llm_free(m);
  free(buf);
  return t;
}

static void no_effect(const char *path) {
  const rlx_llm_info in = lora_model_info(path);
  rlx_llm *m = open_with(path, NULL, 0);
  float *base = trace(m);
  rlx_llm_free(m);
  float *zero_b = trace_adapted(path, LORA_ALL_TARGETS, 1.0f, 1, RLX_GGUF_TYPE_F32);
  float *scale0 = trace_adapted(path, LORA_ALL_TARGETS, 0.0f, 0, RLX_GGUF_TYPE_F16);
  float *live = trace_adapted(path, LORA_ALL_TARGETS, 1.0f, 0, RLX_GGUF_TYPE_F16);
  /* gate and up adapted: silu(gate) * up runs as its pieces, not as
   * swiglu_q (equal here to the bit; a kernel may order its sums
   * otherwise) */
  const double tol = 1e-6;
  if (!(trace_diff(zero_b, base, in.n_vocab) <= tol))
    fail_msg("%s: B = 0 moved the logits by %g", path, trace_diff(zero_b, base, in.n_vocab));
  if (!(trace_diff(scale0, base, in.n_vocab) <= tol))
    fail_msg("%s: scale 0 moved the logits by %g", path, trace_diff(scale0, base, in.n_vocab));
  if (!(trace_diff(live, base, in.n_vocab) > 1e-2))
    fail_msg("%s: the adapter moved the logits by only %g", path, trace_diff(live, base, in.n_vocab));
  /* attention and ffn_down only: the same graph as the base plus the
   * adapters' zero terms, so exactly the base's logits */
  float *exact = trace_adapted(path, 0x4fu, 1.0f, 1, RLX_GGUF_TYPE_F32);
  assert_memory_equal(exact, base, (size_t)(DECODED + 1) * (size_t)in.n_vocab * sizeof(float));
  free(exact);
  free(base);
  free(zero_b);
  free(scale0);
  free(live);
}

static void zero_b_and_scale_0_change_nothing(void **state) {
  (void)state;
  assert_string_equal(rlx_llm_lora_target(3), "attn_output"); /* lora_shape's order */
  assert_string_equal(rlx_llm_lora_target(6), "ffn_down");
  assert_null(rlx_llm_lora_target(7));
  no_effect(QWEN2);
  no_effect(LLAMA);
}

/* ---- two adapters = one with both --------------------------------------- */
typedef struct {
  rlx_llm_lora_tensor t[64];
  float *vals[128];
  char names[64][48];
  int32_t n, n_vals;
} tensors;

static float *vals(tensors *ts, size_t n, float bound, uint64_t seed) {
  float *x = malloc(n * sizeof *x);
  assert_non_null(x);
  for (size_t i = 0; i < n; i++) x[i] = lora_uniform(&seed, bound);
  ts->vals[ts->n_vals++] = x;
  return x;
}

/* X: q, v, down at rank 4 (alpha 8); Y: q, k, o, gate, up at rank 2
 * (alpha 0); Z: per target the rows of X's A then Y's, B's columns
 * likewise, times their effective scales (X: sx * 8 / 4, Y: sy). */
static void build(const rlx_llm_info *in, float sx, float sy, tensors *x, tensors *y, tensors *z) {
  const unsigned mx = 0x45u, my = 0x3bu;
  for (int32_t l = 0; l < in->n_layer; l++)
    for (int t = 0; t < 7; t++) {
      int64_t n_in, n_out;
      lora_shape(in, t, &n_in, &n_out);
      const uint64_t seed = (uint64_t)(l * 16 + t) * 4;
      float *ax = vals(x, 4 * (size_t)n_in, 0.1f, seed), *bx = vals(x, (size_t)n_out * 4, 0.5f, seed + 1);
      float *ay = vals(y, 2 * (size_t)n_in, 0.1f, seed + 2), *by = vals(y, (size_t)n_out * 2, 0.5f, seed + 3);
      const int in_x = (mx >> t) & 1, in_y = (my >> t) & 1;
      const int32_t rz = 4 * in_x + 2 * in_y;
      float *az = vals(z, (size_t)rz * (size_t)n_in, 0, 0), *bz = vals(z, (size_t)n_out * (size_t)rz, 0, 0);
      if (in_x) memcpy(az, ax, 4 * (size_t)n_in * sizeof *az);
      if (in_y) memcpy(az + 4 * in_x * n_in, ay, 2 * (size_t)n_in * sizeof *az);
      for (int64_t o = 0; o < n_out; o++)
        for (int32_t k = 0; k < rz; k++)
          bz[o * rz + k] = in_x && k < 4 ? bx[o * 4 + k] * sx * 8.0f / 4.0f : by[o * 2 + k - 4 * in_x] * sy;
      tensors *sets[3] = {x, y, z};
      const int32_t ranks[3] = {4, 2, rz};
      const float *as[3] = {ax, ay, az}, *bs[3] = {bx, by, bz};
      for (int s = 0; s < 3; s++) {
        if ((s == 0 && !in_x) || (s == 1 && !in_y)) continue;
        tensors *ts = sets[s];
        snprintf(ts->names[ts->n], sizeof ts->names[0], "blk.%d.%s.weight", (int)l, rlx_llm_lora_target(t));
        ts->t[ts->n] = (rlx_llm_lora_tensor){ts->names[ts->n], ranks[s], (int32_t)n_in, (int32_t)n_out, as[s], bs[s]};
        ts->n++;
      }
    }
}

static void free_tensors(tensors *ts) {
  for (int32_t i = 0; i < ts->n_vals; i++) free(ts->vals[i]);
}

static void two_adapters_add(void **state) {
  (void)state;
  const rlx_llm_info in = lora_model_info(QWEN3);
  static tensors x, y, z;
  memset(&x, 0, sizeof x), memset(&y, 0, sizeof y), memset(&z, 0, sizeof z);
  const float sx = 0.5f, sy = 0.75f;
  build(&in, sx, sy, &x, &y, &z);
  char px[] = "build/tests/lora_x.gguf", py[] = "build/tests/lora_y.gguf", pz[] = "build/tests/lora_z.gguf";
  assert_int_equal(rlx_llm_lora_write(px, in.arch, 8.0f, RLX_GGUF_TYPE_F32, x.t, x.n), RLX_OK);
  assert_int_equal(rlx_llm_lora_write(py, in.arch, 0.0f, RLX_GGUF_TYPE_F32, y.t, y.n), RLX_OK);
  assert_int_equal(rlx_llm_lora_write(pz, in.arch, 0.0f, RLX_GGUF_TYPE_F32, z.t, z.n), RLX_OK);
  rlx_llm_lora both[2] = {{px, NULL, 0, sx}, {py, NULL, 0, sy}}, one = {pz, NULL, 0, 1.0f};
  rlx_llm *m = open_with(QWEN3, both, 2);
  rlx_llm_info got;
  rlx_llm_get_info(m, &got);
  assert_int_equal(got.n_lora, 2);
  assert_int_equal(got.n_lora_pairs, 8 * in.n_layer);
  float *t_both = trace(m);
  rlx_llm_free(m);
  m = open_with(QWEN3, &one, 1);
  float *t_one = trace(m);
  rlx_llm_free(m);
  m = open_with(QWEN3, both, 1);
  float *t_x = trace(m);
  rlx_llm_free(m);
  const double d = trace_diff(t_both, t_one, in.n_vocab), dx = trace_diff(t_both, t_x, in.n_vocab);
  if (!(d <= 1e-5)) fail_msg("two adapters differ from their sum by %g", d);
  if (!(dx > 1e-2)) fail_msg("the second adapter moved the logits by only %g", dx);
  free(t_both), free(t_one), free(t_x);
  free_tensors(&x), free_tensors(&y), free_tensors(&z);
  unlink(px), unlink(py), unlink(pz);
}

/* ---- in memory, a path, unaligned ---------------------------------------- */
static void memory_equals_path(void **state) {
  (void)state;
  const rlx_llm_info in = lora_model_info(LLAMA);
  lora_file f;
  lora_begin(&f, in.arch, "adapter", "lora");
  lora_pairs(&f, &in, 0x15u, 3, RLX_GGUF_TYPE_F16, 0, 5); /* no alpha: the scale as given; f16 rows of 3 values */
  size_t size;
  unsigned char *buf = lora_finish(&f, &size);
  const char *path = "build/tests/lora_mem.gguf";
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(buf, 1, size, fp), size);
  assert_int_equal(fclose(fp), 0);
  unsigned char *odd = malloc(size + 1);
  assert_non_null(odd);
  memcpy(odd + 1, buf, size);
  rlx_llm_lora by_path = {path, NULL, 0, 0.7f}, in_mem = {NULL, buf, size, 0.7f};
  rlx_llm_lora unaligned = {NULL, odd + 1, size, 0.7f};
  rlx_llm *m = open_with(LLAMA, &by_path, 1);
  float *a = trace(m);
  rlx_llm_free(m);
  m = open_with(LLAMA, &in_mem, 1);
  float *b = trace(m);
  rlx_llm_free(m);
  m = open_with(LLAMA, &unaligned, 1); /* every tensor copied to an aligned buffer */
  float *c = trace(m);
  rlx_llm_free(m);
  const size_t bytes = (size_t)(DECODED + 1) * (size_t)in.n_vocab * sizeof(float);
  assert_memory_equal(a, b, bytes);
  assert_memory_equal(a, c, bytes);
  free(a), free(b), free(c), free(odd), free(buf);
  unlink(path);
}

/* ---- allocation failures ------------------------------------------------- */
static void allocation_failures(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  const rlx_llm_info in = lora_model_info(QWEN2);
  lora_file f;
  lora_begin(&f, in.arch, "adapter", "lora");
  lora_pairs(&f, &in, 0x51u, 2, RLX_GGUF_TYPE_F16, 0, 3);
  size_t size;
  unsigned char *buf = lora_finish(&f, &size);
  rlx_llm_lora l[2] = {{NULL, buf, size, 1.0f}, {NULL, buf, size, 0.5f}}; /* the same bytes twice */
  const size_t live = check_alloc_live_bytes();
  check_alloc_fail_at(-1, 0);
  rlx_llm_free(open_with(QWEN2, l, 2));
  const long total = check_alloc_count(), stride = total / 100 + 1;
  for (long k = 0; k < total; k += stride) {
    rlx_llm_options opt = {.n_ctx = 16, .lora = l, .n_lora = 2};
    rlx_llm *m = NULL;
    check_alloc_fail_at(k, 0);
    rlx_status st = rlx_llm_open_file(QWEN2, &opt, &m);
    check_alloc_fail_at(-1, 0);
    if (st == RLX_OK) rlx_llm_free(m);
    else assert_null(m);
    assert_int_equal(check_alloc_live_bytes(), live);
  }
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(zero_b_and_scale_0_change_nothing),
      cmocka_unit_test(two_adapters_add),
      cmocka_unit_test(memory_equals_path),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
