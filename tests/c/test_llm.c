/* test_llm.c - the language-model API (include/rlx_llm.h) on the build/lm
 * fixtures (make lm-fixtures): opening and its refusals, the info, the
 * tokenizer round trip, evaluation in any split equal to token-by-token
 * evaluation (the step sizes and the KV cache), the context limit, the
 * generator (streamed text equals the detokenized ids, stop strings,
 * max_tokens, a full context, the callback, seeded sampling) and allocation
 * failures.  Agreement with llama.cpp is tests/cli/llm_ref.mjs's. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/core/pool.h"
#include "../../src/cpu/matmul_q.h"
#include "rlx_models.h"

#include "../../src/models/llm.h"
#include "assert_text.h"
#include "check_alloc.h"

#define SPM_MODEL "build/lm/llama-q4_k.gguf"  /* SentencePiece, BOS, separate output */
#define BPE_MODEL "build/lm/qwen3-q8_0.gguf"  /* byte-level BPE, per-head norms */
#define TIED_MODEL "build/lm/llama-tied-q8_0.gguf"

static rlx_llm *open_or_fail(const char *path, int32_t n_ctx) {
  rlx_llm_options opt = {.n_ctx = n_ctx};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK)
    fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  return m;
}

static size_t tokenize(rlx_llm *m, const char *text, int32_t *ids, size_t cap) {
  size_t n = 0;
  assert_int_equal(rlx_llm_tokenize(m, text, strlen(text), -1, 1, ids, cap, &n), RLX_OK);
  return n;
}

static void open_refusals(void **state) {
  (void)state;
  rlx_llm *m = (rlx_llm *)1;
  assert_int_equal(rlx_llm_open_file(NULL, NULL, &m), RLX_ERR_INVALID_ARG);
  assert_null(m);
  assert_int_equal(rlx_llm_open_file(SPM_MODEL, NULL, NULL), RLX_ERR_INVALID_ARG);
  assert_int_not_equal(rlx_llm_open_file("build/lm/no-such-file.gguf", NULL, &m), RLX_OK);
  assert_contains(rlx_last_error(), "no-such-file.gguf");
  /* Not GGUF at all. */
  assert_int_not_equal(rlx_llm_open_file("Makefile", NULL, &m), RLX_OK);
  assert_null(m);
  /* Past the budget: refused before the data is read. */
  rlx_llm_options small = {.budget = 1000};
  assert_int_not_equal(rlx_llm_open_file(SPM_MODEL, &small, &m), RLX_OK);
  assert_contains(rlx_last_error(), "budget");
  /* A context longer than the model's. */
  rlx_llm_options long_ctx = {.n_ctx = 1 << 20};
  assert_int_equal(rlx_llm_open_file(SPM_MODEL, &long_ctx, &m), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "n_ctx");
  /* From memory: a truncated file. */
  FILE *f = fopen(SPM_MODEL, "rb");
  assert_non_null(f);
  unsigned char buf[4096];
  size_t got = fread(buf, 1, sizeof buf, f);
  fclose(f);
  assert_int_not_equal(rlx_llm_open_memory(buf, got, NULL, &m), RLX_OK);
  assert_null(m);
  assert_int_equal(rlx_llm_open_memory(NULL, 10, NULL, &m), RLX_ERR_INVALID_ARG);
}

static void info_and_tokens(void **state) {
  (void)state;
  rlx_llm *m = open_or_fail(SPM_MODEL, 0);
  rlx_llm_info in;
  assert_int_equal(rlx_llm_get_info(m, &in), RLX_OK);
  assert_string_equal(in.arch, "llama");
  assert_string_equal(in.tokenizer, "llama");
  assert_int_equal(in.rope_neox, 0);
  assert_int_equal(in.tied_output, 0);
  assert_int_equal(in.n_ctx, in.n_ctx_train < RLX_LLM_DEFAULT_CTX ? in.n_ctx_train : RLX_LLM_DEFAULT_CTX);
  assert_true(in.add_bos && in.bos >= 0);
  assert_true(in.n_head % in.n_head_kv == 0 && in.n_params > 0 && in.kv_bytes > 0);
  assert_contains(in.weight_types, "q4_K");
  assert_int_equal(rlx_llm_get_info(m, NULL), RLX_ERR_INVALID_ARG);

  const char *text = "The small river ran past the old mill.";
  int32_t ids[64];
  size_t n = tokenize(m, text, ids, 64);
  assert_int_equal(ids[0], in.bos);
  char out[128];
  size_t len = 0;
  assert_int_equal(rlx_llm_detokenize(m, ids + 1, n - 1, out, sizeof out, &len), RLX_OK);
  assert_string_equal(out, text);
  /* After a BOS the first piece keeps its space, as llama.cpp's detokenize does. */
  assert_int_equal(rlx_llm_detokenize(m, ids, n, out, sizeof out, &len), RLX_OK);
  assert_true(out[0] == ' ' && strcmp(out + 1, text) == 0);
  /* Sizing: too small a buffer says the size needed. */
  size_t need = 0;
  assert_int_equal(rlx_llm_tokenize(m, text, strlen(text), -1, 1, ids, 2, &need), RLX_ERR_INVALID_ARG);
  assert_int_equal(need, n);
  assert_int_equal(rlx_llm_tokenize(m, text, strlen(text), 0, 1, ids, 64, &need), RLX_OK);
  assert_int_equal(need, n - 1);
  assert_int_equal(rlx_llm_tokenize(m, text, strlen(text), 2, 1, ids, 64, &need), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_detokenize(m, ids, 3, out, 1, &len), RLX_ERR_INVALID_ARG);
  rlx_llm_free(m);
  rlx_llm_free(NULL);

  m = open_or_fail(TIED_MODEL, 0);
  assert_int_equal(rlx_llm_get_info(m, &in), RLX_OK);
  assert_int_equal(in.tied_output, 1);
  rlx_llm_free(m);
}

/* Logits after evaluating ids[0, n) in the given pieces. */
static void eval_split(rlx_llm *m, const int32_t *ids, const size_t *pieces, size_t n_pieces, float *logits) {
  rlx_llm_reset(m);
  size_t at = 0;
  for (size_t p = 0; p < n_pieces; p++) {
    assert_int_equal(rlx_llm_eval(m, ids + at, pieces[p], logits), RLX_OK);
    at += pieces[p];
    assert_int_equal(rlx_llm_position(m), (int32_t)at);
  }
}

static void eval_splits_agree(void **state) {
  (void)state;
  const char *models[] = {SPM_MODEL, BPE_MODEL};
  for (int k = 0; k < 2; k++) {
    rlx_llm *m = open_or_fail(models[k], 0);
    rlx_llm_info in;
    rlx_llm_get_info(m, &in);
    int32_t ids[90];
    for (int i = 0; i < 90; i++) ids[i] = (i * 37 + 11) % in.n_vocab;
    float *whole = malloc((size_t)in.n_vocab * sizeof(float)), *split = malloc((size_t)in.n_vocab * sizeof(float));
    const size_t all[] = {90}, odd[] = {5, 17, 1, 3, 64}, ones[90] = {[0 ... 89] = 1};
    eval_split(m, ids, all, 1, whole); /* 64 + 16 + 4 + 4 + 1 + 1 */
    eval_split(m, ids, odd, 5, split);
    for (int32_t v = 0; v < in.n_vocab; v++) assert_float_equal(split[v], whole[v], 1e-3f * (1.0f + fabsf(whole[v])));
    eval_split(m, ids, ones, 90, split);
    for (int32_t v = 0; v < in.n_vocab; v++) assert_float_equal(split[v], whole[v], 1e-3f * (1.0f + fabsf(whole[v])));
    free(whole);
    free(split);
    rlx_llm_free(m);
  }
}

/* A prompt of 40 ids in pieces (the prompt steps, 1-4 token steps), then
 * three single-token steps, on 1, 2 and 3 threads: the logits after each
 * piece bitwise the same (every parallel loop splits), for a K-quant, a
 * Q8_0 model and a Q4_0 one with xq8 (the int8 tiles) and an f32 one. */
static void logits_are_the_same_on_any_thread_count(void **state) {
  (void)state;
  const char *models[] = {SPM_MODEL, "build/lm/qwen2-q8_0.gguf", "build/lm/qwen3-f32.gguf", "build/lm/qwen3-q4_0.gguf"};
  const size_t pieces[] = {17, 4, 3, 2, 9, 5, 1, 1, 1};
  rlx_parallel_set_min_work(1);
  for (int k = 0; k < 4; k++) {
    float *logits[3] = {NULL};
    size_t nv = 0;
    for (int t = 0; t < 3; t++) {
      rlx_llm_options opt = {.xq8 = k == 1 || k == 3, .threads = t + 1};
      rlx_llm *m = NULL;
      assert_int_equal(rlx_llm_open_file(models[k], &opt, &m), RLX_OK);
      rlx_llm_info in;
      rlx_llm_get_info(m, &in);
      assert_int_equal(in.threads, t + 1);
      nv = (size_t)in.n_vocab;
      logits[t] = malloc(9 * nv * sizeof(float));
      int32_t ids[48];
      for (int i = 0; i < 48; i++) ids[i] = (i * 29 + 5) % in.n_vocab;
      size_t at = 0;
      for (int p = 0; p < 9; p++) {
        assert_int_equal(rlx_llm_eval(m, ids + at, pieces[p], logits[t] + p * nv), RLX_OK);
        at += pieces[p];
      }
      rlx_llm_free(m);
    }
    for (int t = 1; t < 3; t++)
      if (memcmp(logits[t], logits[0], 9 * nv * sizeof(float)))
        fail_msg("%s: logits on %d threads differ from 1 thread", models[k], t + 1);
    for (int t = 0; t < 3; t++) free(logits[t]);
  }
  rlx_parallel_set_min_work(RLX_PARALLEL_MIN_WORK);
  rlx_llm_options bad = {.threads = -2};
  rlx_llm *m = NULL;
  assert_int_equal(rlx_llm_open_file(SPM_MODEL, &bad, &m), RLX_ERR_INVALID_ARG);
  assert_null(m);
  assert_non_null(strstr(rlx_last_error(), "threads"));
}

/* xq8: a prompt of 90 tokens (the int8 tiles) and the same tokens one by
 * one (the int8 rows of one-token steps) give bitwise the same logits, with
 * each tile set this CPU has (portable C, AVX2, AVX-512 VNNI); the logits
 * move from the f32 products' by the rounding, not more; other weight
 * types are left as they are; a bad value is refused. */
static void xq8_model(void **state) {
  (void)state;
  const char *models[] = {"build/lm/llama-q8_0.gguf", BPE_MODEL, "build/lm/llama-q4_0.gguf"};
  const rlx_q8_tile_set *sets[] = {rlx_q8_tiles_portable(), rlx_q8_tiles_avx2(), rlx_q8_tiles_vnni()};
  for (int k = 0; k < 3; k++) {
    rlx_llm_options opt = {.xq8 = 1};
    rlx_llm *m = NULL, *plain = open_or_fail(models[k], 0);
    assert_int_equal(rlx_llm_open_file(models[k], &opt, &m), RLX_OK);
    rlx_llm_info in;
    rlx_llm_get_info(m, &in);
    assert_int_equal(in.xq8, 1);
    int32_t ids[90];
    for (int i = 0; i < 90; i++) ids[i] = (i * 37 + 11) % in.n_vocab;
    float *whole = malloc((size_t)in.n_vocab * sizeof(float)), *split = malloc((size_t)in.n_vocab * sizeof(float));
    float *f32 = malloc((size_t)in.n_vocab * sizeof(float));
    const size_t all[] = {90}, ones[90] = {[0 ... 89] = 1};
    eval_split(m, ids, ones, 90, split);
    for (int s = 0; s < 3; s++) {
      if (!sets[s]) continue;
      rlx_q8_tiles_force(sets[s]);
      eval_split(m, ids, all, 1, whole);
      if (memcmp(whole, split, (size_t)in.n_vocab * sizeof(float)))
        fail_msg("%s, %s tiles: the prompt's logits differ from one token at a time", models[k], sets[s]->name);
    }
    rlx_q8_tiles_force(NULL);
    eval_split(plain, ids, all, 1, f32);
    float moved = 0, scale = 0;
    for (int32_t v = 0; v < in.n_vocab; v++) {
      moved = fmaxf(moved, fabsf(whole[v] - f32[v]));
      scale = fmaxf(scale, fabsf(f32[v]));
    }
    fprintf(stderr, "xq8 %s: moved from f32 %.4f, logits up to %.2f\n", models[k], moved, scale);
    assert_true(moved > 1e-4f);          /* it rounds */
    assert_true(moved < 0.05f * scale);  /* by about 8 bits' worth */
    free(whole);
    free(split);
    free(f32);
    rlx_llm_free(m);
    rlx_llm_free(plain);
  }
  /* q4_K weights keep f32 activations: the same logits */
  rlx_llm_options opt = {.xq8 = 1};
  rlx_llm *k4 = NULL, *plain = open_or_fail(SPM_MODEL, 0);
  assert_int_equal(rlx_llm_open_file(SPM_MODEL, &opt, &k4), RLX_OK);
  int32_t ids[5] = {1, 7, 9, 11, 13};
  float *a = malloc(4096 * sizeof(float)), *b = malloc(4096 * sizeof(float));
  rlx_llm_info in;
  rlx_llm_get_info(k4, &in);
  assert_true(in.n_vocab <= 4096);
  assert_int_equal(rlx_llm_eval(k4, ids, 5, a), RLX_OK);
  assert_int_equal(rlx_llm_eval(plain, ids, 5, b), RLX_OK);
  assert_memory_equal(a, b, (size_t)in.n_vocab * sizeof(float));
  free(a);
  free(b);
  rlx_llm_free(k4);
  rlx_llm_free(plain);
  rlx_llm_options bad = {.xq8 = 2};
  rlx_llm *m = (rlx_llm *)1;
  assert_int_equal(rlx_llm_open_file(SPM_MODEL, &bad, &m), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "xq8 must be 0 or 1");
  assert_null(m);
}

static void context_limit_and_bad_ids(void **state) {
  (void)state;
  rlx_llm *m = open_or_fail(BPE_MODEL, 16);
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  assert_int_equal(in.n_ctx, 16);
  int32_t ids[20] = {0};
  for (int i = 0; i < 20; i++) ids[i] = i + 3;
  assert_int_equal(rlx_llm_eval(m, ids, 10, NULL), RLX_OK);
  assert_int_equal(rlx_llm_eval(m, ids, 7, NULL), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "context of 16");
  assert_int_equal(rlx_llm_position(m), 10);
  int32_t bad[2] = {5, in.n_vocab};
  assert_int_equal(rlx_llm_eval(m, bad, 2, NULL), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "ids[1]");
  bad[1] = -1;
  assert_int_equal(rlx_llm_eval(m, bad, 2, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_position(m), 10);
  assert_int_equal(rlx_llm_eval(m, ids, 6, NULL), RLX_OK);
  assert_int_equal(rlx_llm_position(m), 16);
  assert_int_equal(rlx_llm_eval(m, ids, 1, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_eval(m, ids, 0, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_eval(NULL, ids, 1, NULL), RLX_ERR_INVALID_ARG);
  rlx_llm_reset(m);
  assert_int_equal(rlx_llm_position(m), 0);
  rlx_llm_free(m);
}

/* What a generation gave: ids and the concatenated text. */
typedef struct {
  int32_t ids[256];
  int n;
  char text[4096];
  size_t len;
  int stop_after; /* the callback asks to stop after this many tokens (0: never) */
} collected;

static int collect(void *user, int32_t id, const char *text, size_t len) {
  collected *c = user;
  if (id >= 0) c->ids[c->n++] = id;
  assert_true(c->len + len < sizeof c->text);
  memcpy(c->text + c->len, text, len);
  c->len += len;
  c->text[c->len] = 0;
  return c->stop_after && c->n >= c->stop_after;
}

static rlx_llm_stats generate(rlx_llm *m, const char *prompt, const rlx_llm_sampling *s, collected *c) {
  rlx_llm_stats st;
  memset(c->ids, 0, sizeof c->ids);
  c->n = 0;
  c->len = 0;
  c->text[0] = 0;
  assert_int_equal(rlx_llm_generate(m, prompt, s, collect, c, &st), RLX_OK);
  return st;
}

static void generation(void **state) {
  (void)state;
  rlx_llm *m = open_or_fail(SPM_MODEL, 64);
  rlx_llm_sampling s = rlx_llm_sampling_default();
  s.max_tokens = 24;
  static collected a, b; /* zeroed: stop_after 0 */
  rlx_llm_stats st = generate(m, "The miller counted the sacks", &s, &a);
  assert_int_equal(st.stopped_by, 0);
  assert_int_equal(st.generated_tokens, 24);
  assert_int_equal(a.n, 24);
  assert_true(st.prompt_tokens > 1);
  /* Greedy is deterministic and equals evaluating by hand. */
  generate(m, "The miller counted the sacks", &s, &b);
  assert_memory_equal(a.ids, b.ids, sizeof a.ids);
  int32_t ids[64];
  size_t n = tokenize(m, "The miller counted the sacks", ids, 64);
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  float *logits = malloc((size_t)in.n_vocab * sizeof(float));
  rlx_llm_reset(m);
  assert_int_equal(rlx_llm_eval(m, ids, n, logits), RLX_OK);
  for (int t = 0; t < 4; t++) {
    int32_t best = 0;
    for (int32_t v = 1; v < in.n_vocab; v++)
      if (logits[v] > logits[best]) best = v;
    assert_int_equal(best, a.ids[t]);
    assert_int_equal(rlx_llm_eval(m, &best, 1, logits), RLX_OK);
  }
  free(logits);

  /* A stop string: the text up to it, nothing after. */
  char stop_text[8];
  size_t from = a.len / 2;
  memcpy(stop_text, a.text + from, 3);
  stop_text[3] = 0;
  const char *stops[] = {"\x01never", stop_text};
  s.stop = stops;
  s.n_stop = 2;
  st = generate(m, "The miller counted the sacks", &s, &b);
  const char *first = strstr(a.text, stop_text);
  assert_int_equal(st.stopped_by, 2);
  assert_int_equal(b.len, (size_t)(first - a.text));
  assert_memory_equal(b.text, a.text, b.len);
  s.n_stop = 0;

  /* max_tokens 0, the callback, a full context. */
  s.max_tokens = 0;
  st = generate(m, "The miller", &s, &b);
  assert_int_equal(st.generated_tokens, 0);
  assert_int_equal(b.n, 0);
  s.max_tokens = 24;
  b.stop_after = 3;
  st = generate(m, "The miller", &s, &b);
  assert_int_equal(st.stopped_by, 3);
  assert_int_equal(b.n, 3);
  b.stop_after = 0;
  s.max_tokens = 200;
  st = generate(m, "The miller counted the sacks", &s, &b);
  assert_int_equal(st.stopped_by, 4);
  assert_int_equal(st.prompt_tokens + st.generated_tokens, 64 + 1); /* the last token is sampled, not evaluated */
  /* No practical max_tokens: the context, not max_tokens, sizes what the
   * generator holds (INT32_MAX ids would be 8 GiB). */
  s.max_tokens = INT32_MAX;
  check_alloc_reset_peak();
  const size_t live = check_alloc_live_bytes();
  st = generate(m, "The miller counted the sacks", &s, &b);
  assert_int_equal(st.stopped_by, 4);
  assert_int_equal(st.prompt_tokens + st.generated_tokens, 64 + 1);
  if (check_alloc_active()) assert_true(check_alloc_peak_bytes() < live + (1u << 20));

  /* Seeded sampling repeats; another seed differs. */
  s.max_tokens = 24;
  s.temperature = 1.0f;
  s.seed = 7;
  generate(m, "The miller", &s, &a);
  generate(m, "The miller", &s, &b);
  assert_memory_equal(a.ids, b.ids, sizeof a.ids);
  s.seed = 8;
  generate(m, "The miller", &s, &b);
  assert_memory_not_equal(a.ids, b.ids, sizeof a.ids);

  /* Refusals. */
  s = rlx_llm_sampling_default();
  s.max_tokens = -1;
  assert_int_equal(rlx_llm_generate(m, "x", &s, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  s = rlx_llm_sampling_default();
  const char *empty[] = {""};
  s.stop = empty;
  s.n_stop = 1;
  assert_int_equal(rlx_llm_generate(m, "x", &s, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "stop[0]");
  s = rlx_llm_sampling_default();
  s.top_p = 2.0f;
  assert_int_equal(rlx_llm_generate(m, "x", &s, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_generate(m, NULL, NULL, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  rlx_llm_generator *gen = (rlx_llm_generator *)1;
  assert_int_equal(rlx_llm_generator_new(m, ids, 0, NULL, &gen), RLX_ERR_INVALID_ARG);
  assert_null(gen);
  rlx_llm_free(m);
}

/* The generator by hand: done stays done; the text is whole UTF-8. */
static void generator_steps(void **state) {
  (void)state;
  rlx_llm *m = open_or_fail(BPE_MODEL, 0);
  int32_t ids[32];
  size_t n = tokenize(m, "Hello world", ids, 32);
  rlx_llm_sampling s = rlx_llm_sampling_default();
  s.max_tokens = 5;
  rlx_llm_generator *gen;
  assert_int_equal(rlx_llm_generator_new(m, ids, n, &s, &gen), RLX_OK);
  int done = 0, steps = 0;
  int32_t gen_ids[8];
  char streamed[1024];
  size_t streamed_len = 0;
  while (!done) {
    int32_t id;
    const char *text;
    size_t len;
    assert_int_equal(rlx_llm_generator_next(gen, &id, &text, &len, &done), RLX_OK);
    assert_int_equal(strlen(text), len);
    memcpy(streamed + streamed_len, text, len);
    streamed_len += len;
    if (id >= 0) gen_ids[steps] = id;
    steps++;
  }
  assert_int_equal(steps, 5);
  /* The streamed text equals the generated ids detokenized at once (a
   * byte-level BPE vocab without clean-up), bad bytes as U+FFFD in both. */
  rlx_llm_stats st;
  rlx_llm_generator_stats(gen, &st);
  char whole[3 * 1024];
  size_t len;
  assert_int_equal(rlx_llm_detokenize(m, gen_ids, (size_t)st.generated_tokens, whole, sizeof whole, &len), RLX_OK);
  assert_int_equal(len, streamed_len);
  assert_memory_equal(whole, streamed, len);
  int32_t id = 0;
  const char *text = NULL;
  len = 9;
  assert_int_equal(rlx_llm_generator_next(gen, &id, &text, &len, &done), RLX_OK);
  assert_true(done && id == -1 && len == 0);
  assert_int_equal(rlx_llm_generator_next(gen, NULL, &text, &len, &done), RLX_ERR_INVALID_ARG);
  assert_int_equal(st.generated_tokens, 5);
  rlx_llm_generator_free(gen);
  rlx_llm_free(m);
}

/* Greedy decoding done by the caller (the WebGPU path: the argmax taken on
 * the GPU, rlx_llm_generator_next_chosen): a second model plays the GPU;
 * the ids, text and end equal the library's own greedy generation, with a
 * stop string and at max_tokens; wrong uses are refused. */
static size_t chosen_run(rlx_llm *m, rlx_llm *gpu, const int32_t *prompt, size_t n, const rlx_llm_sampling *s,
                         int32_t *ids, char *text, rlx_llm_stats *st) {
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  float *logits = malloc((size_t)in.n_vocab * sizeof(float));
  rlx_llm_generator *gen;
  assert_int_equal(rlx_llm_generator_new_external(m, prompt, n, s, &gen), RLX_OK);
  assert_true(rlx_llm_generator_greedy(gen));
  rlx_llm_reset(gpu);
  assert_int_equal(rlx_llm_eval(gpu, prompt, n, logits), RLX_OK);
  assert_int_equal(rlx_llm_set_logits(m, logits, (int32_t)n), RLX_OK);
  int32_t id;
  const char *piece;
  size_t len, n_ids = 0, n_text = 0;
  int done = 0;
  /* before a token is pending there is nothing to choose after */
  assert_int_equal(rlx_llm_generator_next_chosen(gen, 1, &id, &piece, &len, &done), RLX_ERR_STATE);
  assert_int_equal(rlx_llm_generator_next(gen, &id, &piece, &len, &done), RLX_OK);
  for (;;) {
    if (id >= 0) ids[n_ids++] = id;
    memcpy(text + n_text, piece, len);
    n_text += len;
    if (done) break;
    int32_t pending = rlx_llm_generator_pending(gen), best = 0;
    assert_int_equal(rlx_llm_eval(gpu, &pending, 1, logits), RLX_OK);
    for (int32_t v = 1; v < in.n_vocab; v++)
      if (logits[v] > logits[best]) best = v;
    assert_int_equal(rlx_llm_generator_next_chosen(gen, best, &id, &piece, &len, &done), RLX_OK);
  }
  text[n_text] = 0;
  rlx_llm_generator_stats(gen, st);
  assert_int_equal(rlx_llm_position(m), (int32_t)(n + n_ids) - 1); /* the last token sampled, not evaluated */
  rlx_llm_generator_free(gen);
  free(logits);
  return n_ids;
}

static void chosen_generator(void **state) {
  (void)state;
  rlx_llm *m = open_or_fail(SPM_MODEL, 64), *gpu = open_or_fail(SPM_MODEL, 64);
  int32_t prompt[64], ids[64];
  size_t n = tokenize(m, "The miller counted the sacks", prompt, 64);
  rlx_llm_sampling s = rlx_llm_sampling_default();
  s.max_tokens = 20;
  static collected want, want_stop;
  rlx_llm_stats st_want = generate(m, "The miller counted the sacks", &s, &want), st;
  char text[4096];
  size_t got = chosen_run(m, gpu, prompt, n, &s, ids, text, &st);
  assert_int_equal(got, 20);
  assert_int_equal(st.stopped_by, st_want.stopped_by);
  assert_memory_equal(ids, want.ids, got * sizeof(int32_t));
  assert_string_equal(text, want.text);
  /* a stop string in the middle: the same cut */
  char stop_text[8];
  memcpy(stop_text, want.text + want.len / 2, 3);
  stop_text[3] = 0;
  const char *stops[] = {stop_text};
  s.stop = stops;
  s.n_stop = 1;
  rlx_llm_stats st_stop = generate(m, "The miller counted the sacks", &s, &want_stop);
  chosen_run(m, gpu, prompt, n, &s, ids, text, &st);
  assert_int_equal(st.stopped_by, 2);
  assert_int_equal(st_stop.stopped_by, 2);
  assert_string_equal(text, want_stop.text);
  s.n_stop = 0;

  /* refusals: not external, not greedy, a token outside the vocab, -1 (bad logits) */
  rlx_llm_generator *gen;
  int32_t id;
  const char *piece;
  size_t len;
  int done;
  assert_int_equal(rlx_llm_generator_new(m, prompt, n, &s, &gen), RLX_OK);
  assert_int_equal(rlx_llm_generator_next(gen, &id, &piece, &len, &done), RLX_OK);
  assert_int_equal(rlx_llm_generator_next_chosen(gen, 1, &id, &piece, &len, &done), RLX_ERR_STATE);
  assert_contains(rlx_last_error(), "greedy");
  rlx_llm_generator_free(gen);
  s.temperature = 0.7f;
  assert_int_equal(rlx_llm_generator_new_external(m, prompt, n, &s, &gen), RLX_OK);
  assert_false(rlx_llm_generator_greedy(gen));
  rlx_llm_generator_free(gen);
  s.temperature = 0.0f;
  s.repeat_penalty = 1.3f;
  assert_int_equal(rlx_llm_generator_new_external(m, prompt, n, &s, &gen), RLX_OK);
  assert_false(rlx_llm_generator_greedy(gen));
  rlx_llm_generator_free(gen);
  s.repeat_penalty = 1.0f;
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  float *logits = malloc((size_t)in.n_vocab * sizeof(float));
  assert_int_equal(rlx_llm_generator_new_external(m, prompt, n, &s, &gen), RLX_OK);
  rlx_llm_reset(gpu);
  assert_int_equal(rlx_llm_eval(gpu, prompt, n, logits), RLX_OK);
  assert_int_equal(rlx_llm_set_logits(m, logits, (int32_t)n), RLX_OK);
  assert_int_equal(rlx_llm_generator_next(gen, &id, &piece, &len, &done), RLX_OK);
  assert_int_equal(rlx_llm_generator_next_chosen(gen, 1 << 30, &id, &piece, &len, &done), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "outside the vocabulary");
  assert_int_equal(rlx_llm_generator_next_chosen(gen, -1, &id, &piece, &len, &done), RLX_ERR_NUMERIC);
  assert_contains(rlx_last_error(), "NaN");
  assert_int_equal(rlx_llm_position(m), (int32_t)n); /* nothing taken */
  rlx_llm_generator_free(gen);
  free(logits);
  rlx_llm_free(gpu);
  rlx_llm_free(m);
}

/* Every allocation of open and of a short generation may fail: a status,
 * no leak (the checking allocator counts live bytes). */
static void allocation_failures(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  size_t live = check_alloc_live_bytes();
  check_alloc_fail_at(-1, 0);
  rlx_llm *m = open_or_fail(BPE_MODEL, 32);
  rlx_llm_free(m);
  long total = check_alloc_count();
  long stride = total / 150 + 1;
  for (long k = 0; k < total; k += stride) {
    check_alloc_fail_at(k, 0);
    rlx_llm_options opt = {.n_ctx = 32};
    rlx_status st = rlx_llm_open_file(BPE_MODEL, &opt, &m);
    check_alloc_fail_at(-1, 0);
    if (st == RLX_OK) rlx_llm_free(m);
    else assert_null(m);
    assert_int_equal(check_alloc_live_bytes(), live);
  }
  for (int32_t xq8 = 0; xq8 < 2; xq8++) { /* with 8-bit activations too: their scratch */
    rlx_llm_options opt = {.n_ctx = 32, .xq8 = xq8};
    check_alloc_fail_at(-1, 0);
    assert_int_equal(rlx_llm_open_file(BPE_MODEL, &opt, &m), RLX_OK);
    int32_t ids[8] = {5, 6, 7};
    rlx_llm_sampling s = rlx_llm_sampling_default();
    s.max_tokens = 4;
    const char *stops[] = {"zz"};
    s.stop = stops;
    s.n_stop = 1;
    assert_int_equal(rlx_llm_generate_ids(m, ids, 3, &s, NULL, NULL, NULL), RLX_OK);
    total = check_alloc_count();
    const size_t with_model = check_alloc_live_bytes(); /* after the sessions' first runs */
    for (long k = 0; k < total; k++) {
      check_alloc_fail_at(k, 0);
      rlx_llm_generate_ids(m, ids, 3, &s, NULL, NULL, NULL);
      check_alloc_fail_at(-1, 0);
      assert_int_equal(check_alloc_live_bytes(), with_model);
    }
    rlx_llm_free(m);
    assert_int_equal(check_alloc_live_bytes(), live);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(open_refusals),   cmocka_unit_test(info_and_tokens),
      cmocka_unit_test(eval_splits_agree), cmocka_unit_test(logits_are_the_same_on_any_thread_count),
      cmocka_unit_test(context_limit_and_bad_ids),
      cmocka_unit_test(generation),      cmocka_unit_test(generator_steps),
      cmocka_unit_test(chosen_generator),  cmocka_unit_test(xq8_model),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
