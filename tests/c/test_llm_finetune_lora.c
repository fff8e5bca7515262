/* test_llm_finetune_lora.c - fine-tuning objects and the adapters a model
 * was opened with (include/rlx_llm_train.h; make lm-fixtures):
 * rlx_llm_lora_get_pair reads back what the file holds (f32 and f16);
 * rlx_llm_finetune_from_lora's evaluation is the adapted model as
 * generation computes it, token by token through the KV cache (two
 * adapters of other ranks, types, scales and targets, one target shared),
 * and the base model without adapters; rlx_llm_finetune_load_lora gives
 * back the pairs a fine-tuning wrote (rlx_llm_finetune_write_lora, whose
 * bytes rlx_llm_finetune_write_lora_memory gives too), refuses an
 * adapter of another rank, alpha or targets by name and changes nothing
 * then; allocation failures leak nothing. */
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

#include "rlx_models.h"

#include "assert_text.h"
#include "check_alloc.h"
#include "lora_files.h"

#define Q (1u << 0)
#define K (1u << 1)
#define V (1u << 2)
#define O (1u << 3)
#define GATE (1u << 4)
#define UP (1u << 5)
#define DOWN (1u << 6)

static rlx_llm *open_with(const char *path, const rlx_llm_lora *l, int32_t n, rlx_llm_info *in) {
  rlx_llm_options opt = {.n_ctx = 32, .lora = l, .n_lora = n};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  if (in) rlx_llm_get_info(m, in);
  return m;
}

/* The eval of ft over one window of ids against the model's own steps
 * (rlx_llm_eval token by token, adapters applied): every logit, and the
 * loss from those logits. */
static float *eval_is_generation(rlx_llm *m, rlx_llm_finetune *ft, const char *what) {
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  enum { S = 8 };
  int32_t ids[S + 1];
  for (int i = 0; i <= S; i++) ids[i] = (i * 37 + 11) % in.n_vocab;
  const size_t nv = (size_t)in.n_vocab;
  float *logits = malloc(S * nv * sizeof(float)), *step = malloc(nv * sizeof(float)), loss;
  assert_int_equal(rlx_llm_finetune_eval(ft, ids, ids + 1, NULL, 1, &loss, logits), RLX_OK);
  rlx_llm_reset(m);
  double nll = 0, worst = 0;
  for (int s = 0; s < S; s++) {
    assert_int_equal(rlx_llm_eval(m, &ids[s], 1, step), RLX_OK);
    double mx = -INFINITY, sum = 0;
    for (size_t v = 0; v < nv; v++) {
      worst = fmax(worst, fabs((double)logits[s * nv + v] - step[v]) / (1.0 + fabs(step[v])));
      mx = fmax(mx, step[v]);
    }
    for (size_t v = 0; v < nv; v++) sum += exp(step[v] - mx);
    nll += log(sum) + mx - step[ids[s + 1]];
  }
  /* sums in another order (measured: at most 3e-5); the adapters move
   * the logits by more than 1e-2 (below) */
  if (!(worst <= 1e-4)) fail_msg("%s: logits differ from generation's by %g (relative)", what, worst);
  if (!(fabs(loss - nll / S) <= 1e-5 * fabs(nll / S))) fail_msg("%s: loss %g, generation's %g", what, loss, nll / S);
  free(step);
  return logits;
}

/* Largest |a - b| / (1 + |b|) over n values. */
static double rel_diff(const float *a, const float *b, size_t n) {
  double worst = 0;
  for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)a[i] - b[i]) / (1.0 + fabs(b[i])));
  return worst;
}

static void folded_adapters_are_the_generation_path(void **state) {
  (void)state;
  const char *paths[] = {"build/lm/qwen2-f32.gguf", "build/lm/llama-q8_0.gguf"};
  for (int p = 0; p < 2; p++) {
    const rlx_llm_info in = lora_model_info(paths[p]);
    size_t s0, s1;
    unsigned char *a0 = lora_adapter(&in, Q | V | DOWN, 4, 8.0f, RLX_GGUF_TYPE_F32, 3, &s0);
    unsigned char *a1 = lora_adapter(&in, Q | K | O | GATE | UP, 2, 0.0f, RLX_GGUF_TYPE_F16, 9, &s1);
    rlx_llm_lora l[2] = {{NULL, a0, s0, 0.5f}, {NULL, a1, s1, 0.75f}};
    rlx_llm_info got;
    rlx_llm *m = open_with(paths[p], l, 2, &got);
    /* read back: pair count, the f16 values as the file holds them */
    assert_int_equal(rlx_llm_lora_pair_count(m, 0), 3 * in.n_layer);
    assert_int_equal(rlx_llm_lora_pair_count(m, 1), 5 * in.n_layer);
    assert_int_equal(rlx_llm_lora_pair_count(m, 2), 0);
    rlx_llm_lora_pair_info pi;
    assert_int_equal(rlx_llm_lora_get_pair(m, 1, 1, &pi, NULL, 0, NULL, 0), RLX_OK);
    assert_string_equal(pi.name, "blk.0.attn_k.weight");
    assert_true(pi.rank == 2 && pi.n_in == in.n_embd && pi.n_out == in.n_head_kv * in.head_dim);
    assert_true(pi.alpha == 0.0f && pi.scale == 0.75f && pi.layer == 0 && pi.target == 1);
    assert_int_equal(rlx_llm_lora_get_pair(m, 0, 2, &pi, NULL, 0, NULL, 0), RLX_OK);
    assert_true(pi.target == 6 && pi.alpha == 8.0f && pi.scale == 0.5f * 8.0f / 4.0f);
    float *a = malloc((size_t)pi.rank * (size_t)pi.n_in * sizeof(float));
    assert_int_equal(rlx_llm_lora_get_pair(m, 0, 2, &pi, a, 1, NULL, 0), RLX_ERR_INVALID_ARG);
    assert_contains(rlx_last_error(), "A of 'blk.0.ffn_down.weight'");
    assert_int_equal(rlx_llm_lora_get_pair(m, 0, 3 * in.n_layer, &pi, NULL, 0, NULL, 0), RLX_ERR_NOT_FOUND);
    assert_int_equal(rlx_llm_lora_get_pair(m, 2, 0, &pi, NULL, 0, NULL, 0), RLX_ERR_NOT_FOUND);
    free(a);
    /* folded: the union of the targets at rank 4 + 2 */
    rlx_llm_finetune *ft;
    assert_int_equal(rlx_llm_finetune_from_lora(m, 8, &ft), RLX_OK);
    assert_int_equal(rlx_llm_finetune_pair_count(ft), 7 * in.n_layer);
    rlx_llm_finetune_pair_info fp;
    assert_int_equal(rlx_llm_finetune_pair(ft, 0, &fp), RLX_OK);
    assert_true(fp.rank == 6 && fp.scale == 1.0f);
    float *adapted = eval_is_generation(m, ft, paths[p]);
    rlx_llm_finetune_free(ft);
    rlx_llm_free(m);
    /* no adapters: the base model */
    m = open_with(paths[p], NULL, 0, NULL);
    assert_int_equal(rlx_llm_finetune_from_lora(m, 8, &ft), RLX_OK);
    assert_int_equal(rlx_llm_finetune_pair_count(ft), in.n_layer);
    float *plain = eval_is_generation(m, ft, paths[p]);
    const double moved = rel_diff(adapted, plain, (size_t)8 * (size_t)in.n_vocab);
    if (!(moved > 1e-2)) fail_msg("%s: the adapters moved the logits by only %g", paths[p], moved);
    free(adapted), free(plain);
    rlx_llm_finetune_free(ft);
    rlx_llm_free(m);
    free(a0), free(a1);
  }
}

/* Ranks past a weight's size are refused, naming the sum. */
static void folded_ranks_must_fit(void **state) {
  (void)state;
  const char *path = "build/lm/llama-f32.gguf";
  const rlx_llm_info in = lora_model_info(path);
  const int64_t r = in.n_head_kv * in.head_dim / 2 + 1;
  size_t s;
  unsigned char *a = lora_adapter(&in, V, r, 0.0f, RLX_GGUF_TYPE_F32, 1, &s);
  rlx_llm_lora l[2] = {{NULL, a, s, 1.0f}, {NULL, a, s, 1.0f}};
  rlx_llm *m = open_with(path, l, 2, NULL);
  rlx_llm_finetune *ft = (rlx_llm_finetune *)1;
  assert_int_equal(rlx_llm_finetune_from_lora(m, 8, &ft), RLX_ERR_INVALID_ARG);
  assert_null(ft);
  char want[96];
  snprintf(want, sizeof want, "2 adapters of ranks adding up to %d", (int)(2 * r));
  assert_contains(rlx_last_error(), want);
  assert_contains(rlx_last_error(), "blk.0.attn_v.weight");
  rlx_llm_free(m);
  free(a);
}

/* ---- load ------------------------------------------------------------------------- */
static rlx_llm_finetune *new_ft(const rlx_llm *m, int32_t rank, float alpha, const char *targets) {
  rlx_llm_finetune_options o = rlx_llm_finetune_default_options();
  o.rank = rank, o.alpha = alpha, o.targets = targets, o.seq = 6, o.seed = 4;
  o.optimizer = (rlx_optimizer){RLX_OPT_SGD, 0.05f, 0, 0, 0, 0, 0};
  rlx_llm_finetune *ft = NULL;
  if (rlx_llm_finetune_new(m, &o, &ft) != RLX_OK) fail_msg("rlx_llm_finetune_new: %s", rlx_last_error());
  return ft;
}

/* Writes ft's pairs as an f32 adapter file (rlx_llm_finetune_write_lora),
 * whose bytes rlx_llm_finetune_write_lora_memory gives too. */
static void write_adapter(const rlx_llm_finetune *ft, const char *arch, const char *path) {
  assert_int_equal(rlx_llm_finetune_write_lora(ft, arch, path), RLX_OK);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  const size_t bytes = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *want = malloc(bytes), *got = malloc(bytes);
  assert_int_equal(fread(want, 1, bytes, f), bytes);
  fclose(f);
  size_t size = 0;
  assert_int_equal(rlx_llm_finetune_write_lora_memory(ft, arch, NULL, 0, &size), RLX_OK);
  assert_int_equal(size, bytes);
  assert_int_equal(rlx_llm_finetune_write_lora_memory(ft, arch, got, size, &size), RLX_OK);
  assert_memory_equal(got, want, bytes);
  free(want), free(got);
}

static void refuse_load(rlx_llm_finetune *ft, int32_t i, rlx_status want, const char *phrase) {
  rlx_llm_finetune_pair_info fp;
  rlx_llm_finetune_pair(ft, 0, &fp);
  const size_t nb = (size_t)fp.n_out * (size_t)fp.rank;
  float *b = malloc(nb * sizeof(float));
  assert_int_equal(rlx_llm_finetune_load_lora(ft, i), want);
  assert_contains(rlx_last_error(), phrase);
  assert_int_equal(rlx_llm_finetune_get_pair(ft, fp.name, NULL, 0, b, nb), RLX_OK);
  for (size_t j = 0; j < nb; j++) assert_true(b[j] == 0.0f); /* nothing copied */
  free(b);
}

static void load_gives_back_what_was_written(void **state) {
  (void)state;
  const char *path = "build/lm/qwen3-q8_0.gguf";
  char dir[] = "/tmp/rlx-ftlora-XXXXXX", file[64];
  assert_non_null(mkdtemp(dir));
  snprintf(file, sizeof file, "%s/adapter.gguf", dir);
  rlx_llm_info in;
  rlx_llm *base = open_with(path, NULL, 0, &in);
  rlx_llm_finetune *ft = new_ft(base, 4, 8.0f, "attn_q,ffn_up");
  int32_t ids[7] = {5, 9, 14, 3, 22, 8, 17};
  float before, after;
  for (int k = 0; k < 3; k++) assert_int_equal(rlx_llm_finetune_step(ft, ids, ids + 1, NULL, 1, &before), RLX_OK);
  assert_int_equal(rlx_llm_finetune_eval(ft, ids, ids + 1, NULL, 1, &before, NULL), RLX_OK);
  write_adapter(ft, in.arch, file);
  rlx_llm_lora l = {file, NULL, 0, 1.0f};
  rlx_llm *m = open_with(path, &l, 1, NULL);
  rlx_llm_finetune *back = new_ft(m, 4, 8.0f, "ffn_up,attn_q");
  assert_int_equal(rlx_llm_finetune_load_lora(back, 0), RLX_OK);
  for (int32_t p = 0; p < rlx_llm_finetune_pair_count(ft); p++) {
    rlx_llm_finetune_pair_info fp;
    rlx_llm_finetune_pair(ft, p, &fp);
    const size_t na = (size_t)fp.rank * (size_t)fp.n_in, nb = (size_t)fp.n_out * (size_t)fp.rank;
    float *a = malloc((na + nb) * sizeof(float)), *a2 = malloc((na + nb) * sizeof(float));
    assert_int_equal(rlx_llm_finetune_get_pair(ft, fp.name, a, na, a + na, nb), RLX_OK);
    assert_int_equal(rlx_llm_finetune_get_pair(back, fp.name, a2, na, a2 + na, nb), RLX_OK);
    assert_memory_equal(a, a2, (na + nb) * sizeof(float));
    free(a), free(a2);
  }
  assert_int_equal(rlx_llm_finetune_eval(back, ids, ids + 1, NULL, 1, &after, NULL), RLX_OK);
  assert_true(after == before);
  /* refusals: rank, alpha, targets either way, the adapter's index */
  rlx_llm_finetune *other = new_ft(m, 2, 8.0f, "attn_q,ffn_up");
  refuse_load(other, 0, RLX_ERR_INVALID_ARG, "adapter 0 has rank 4 on 'blk.0.attn_q.weight'; this fine-tuning has rank 2");
  rlx_llm_finetune_free(other);
  other = new_ft(m, 4, 16.0f, "attn_q,ffn_up");
  refuse_load(other, 0, RLX_ERR_INVALID_ARG, "adapter 0 has alpha 8; this fine-tuning has alpha 16");
  rlx_llm_finetune_free(other);
  other = new_ft(m, 4, 8.0f, "attn_q");
  refuse_load(other, 0, RLX_ERR_INVALID_ARG, "adapts 'blk.0.ffn_up.weight', which this fine-tuning does not target");
  rlx_llm_finetune_free(other);
  other = new_ft(m, 4, 8.0f, "attn_q,ffn_up,attn_v");
  refuse_load(other, 0, RLX_ERR_INVALID_ARG, "has no pair on 'blk.0.attn_v.weight', which this fine-tuning targets");
  refuse_load(other, 1, RLX_ERR_NOT_FOUND, "the model has no adapter 1 (it was opened with 1)");
  rlx_llm_finetune_free(other);
  assert_int_equal(rlx_llm_finetune_load_lora(NULL, 0), RLX_ERR_INVALID_ARG);
  rlx_llm_finetune_free(back);
  rlx_llm_finetune_free(ft);
  rlx_llm_free(m);
  rlx_llm_free(base);
  remove(file), rmdir(dir);
}

/* ---- allocation failures ------------------------------------------------------------- */
static int life(void *model) {
  const rlx_llm *m = model;
  rlx_llm_finetune *ft = NULL, *back = NULL;
  rlx_llm_finetune_options o = rlx_llm_finetune_default_options();
  o.rank = 4, o.alpha = 8.0f, o.targets = "attn_q,attn_v,ffn_down", o.seq = 4;
  rlx_status st = rlx_llm_finetune_from_lora(m, 4, &ft);
  if (st == RLX_OK) st = rlx_llm_finetune_new(m, &o, &back);
  if (st == RLX_OK) st = rlx_llm_finetune_load_lora(back, 0);
  size_t size = 0;
  if (st == RLX_OK) st = rlx_llm_finetune_write_lora_memory(back, "llama", NULL, 0, &size);
  void *buf = st == RLX_OK ? malloc(size) : NULL;
  if (st == RLX_OK) st = rlx_llm_finetune_write_lora_memory(back, "llama", buf, size, &size);
  free(buf);
  rlx_llm_finetune_free(ft);
  rlx_llm_finetune_free(back);
  return st;
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
  rlx_llm *m = open_with(path, l, 2, NULL);
  const char *why = check_alloc_sweep(life, m, 0);
  if (why) fail_msg("%s", why);
  rlx_llm_free(m);
  free(a0), free(a1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(folded_adapters_are_the_generation_path),
      cmocka_unit_test(folded_ranks_must_fit),
      cmocka_unit_test(load_gives_back_what_was_written),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
