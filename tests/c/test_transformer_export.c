/* test_transformer_export.c - rlx_transformer_export_gguf: the transformer
 * written as a llama GGUF file and loaded by rlx_llm gives the transformer's
 * own logits (f32 exactly up to rounding, f16 and q8_0 within their
 * precision), for one prompt and token by token through the KV cache (so
 * the RoPE row reorder and every weight's layout are right); the file's
 * metadata and vocabulary; refusals.  llama.cpp's run of an exported file
 * is compared in tests/cli/llm_ref.mjs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlx_models.h"

#include "assert_text.h"

#define PATH "build/tests/transformer_export.gguf"
#define N_TOK 7

static const rlx_transformer_config CFG = {300, 64, 2, 4, 16, 96, 11, 0, 0};

/* Largest |a - b| over n values, and the largest |b|. */
static float max_diff(const float *a, const float *b, int32_t n, float *scale) {
  float d = 0.0f;
  *scale = 0.0f;
  for (int32_t i = 0; i < n; i++) {
    d = fmaxf(d, fabsf(a[i] - b[i]));
    *scale = fmaxf(*scale, fabsf(b[i]));
  }
  return d;
}

static void check_type(rlx_gguf_type type, float tol) {
  assert_int_equal(rlx_transformer_export_gguf(&CFG, type, PATH), RLX_OK);
  rlx_llm *m;
  assert_int_equal(rlx_llm_open_file(PATH, NULL, &m), RLX_OK);
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  assert_string_equal(in.arch, "llama");
  assert_int_equal(in.n_vocab, CFG.vocab);
  assert_int_equal(in.n_embd, CFG.dim);
  assert_int_equal(in.n_layer, CFG.n_layers);
  assert_int_equal(in.head_dim, CFG.head_dim);
  assert_int_equal(in.add_bos, 0);
  float tokens[N_TOK];
  int32_t ids[N_TOK];
  for (int i = 0; i < N_TOK; i++) ids[i] = (i * 97 + 5) % CFG.vocab, tokens[i] = (float)ids[i];
  float *want = malloc(CFG.vocab * sizeof(float)), *got = malloc(CFG.vocab * sizeof(float)), scale;
  for (int n = 1; n <= N_TOK; n++) { /* token by token through the cache */
    assert_int_equal(rlx_llm_eval(m, &ids[n - 1], 1, got), RLX_OK);
    assert_int_equal(rlx_transformer_next_logits(&CFG, tokens, n, want), RLX_OK);
    float d = max_diff(got, want, CFG.vocab, &scale);
    if (!(d <= tol * scale)) fail_msg("%s, %d tokens: logits differ by %g (largest %g)", rlx_gguf_type_name(type), n, d, scale);
  }
  rlx_llm_reset(m);
  assert_int_equal(rlx_llm_eval(m, ids, N_TOK, got), RLX_OK); /* the whole prompt at once */
  float d = max_diff(got, want, CFG.vocab, &scale);
  assert_true(d <= tol * scale);
  free(want);
  free(got);
  rlx_llm_free(m);
}

static void exported_models_run_as_ours(void **state) {
  (void)state;
  check_type(RLX_GGUF_TYPE_F32, 1e-4f);
  check_type(RLX_GGUF_TYPE_F16, 2e-2f);
  check_type(RLX_GGUF_TYPE_Q8_0, 5e-2f);
}

static void the_file(void **state) {
  (void)state;
  assert_int_equal(rlx_transformer_export_gguf(&CFG, RLX_GGUF_TYPE_Q4_0, PATH), RLX_OK);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_file(PATH, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  const char *s;
  uint64_t len;
  assert_int_equal(rlx_gguf_get_string(g, "tokenizer.ggml.model", &s, &len), RLX_OK);
  assert_string_equal(s, "llama");
  assert_int_equal(rlx_gguf_tensor_count(g), 2 + 9 * CFG.n_layers + 1);
  rlx_gguf_tensor_info t;
  assert_int_equal(rlx_gguf_tensor(g, rlx_gguf_find_tensor(g, "blk.1.ffn_down.weight"), &t), RLX_OK);
  assert_int_equal(t.type, RLX_GGUF_TYPE_Q4_0);
  assert_true(t.n_dims == 2 && t.dims[0] == CFG.ffn && t.dims[1] == CFG.dim);
  assert_int_equal(rlx_gguf_tensor(g, rlx_gguf_find_tensor(g, "output_norm.weight"), &t), RLX_OK);
  assert_int_equal(t.type, RLX_GGUF_TYPE_F32);
  int64_t kv = rlx_gguf_find_kv(g, "tokenizer.ggml.tokens");
  assert_int_equal(rlx_gguf_array_string(g, kv, 3 + 10, &s, &len), RLX_OK);
  assert_string_equal(s, "<0x0A>");
  rlx_gguf_free(g);
  /* Text through the placeholder vocabulary: bytes, round trip. */
  rlx_llm *m;
  assert_int_equal(rlx_llm_open_file(PATH, NULL, &m), RLX_OK);
  int32_t ids[32];
  size_t n;
  char out[64];
  assert_int_equal(rlx_llm_tokenize(m, "hi\n", 3, -1, 1, ids, 32, &n), RLX_OK);
  assert_int_equal(rlx_llm_detokenize(m, ids, n, out, sizeof out, &len), RLX_OK);
  assert_string_equal(out, "hi\n");
  rlx_llm_free(m);
}

static void refusals(void **state) {
  (void)state;
  rlx_transformer_config c = CFG;
  assert_int_equal(rlx_transformer_export_gguf(&c, RLX_GGUF_TYPE_F32, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_transformer_export_gguf(NULL, RLX_GGUF_TYPE_F32, PATH), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_transformer_export_gguf(&c, (rlx_gguf_type)99, PATH), RLX_ERR_INVALID_ARG);
  c.ffn = 100;
  assert_int_equal(rlx_transformer_export_gguf(&c, RLX_GGUF_TYPE_Q8_0, PATH), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "multiples");
  c = CFG;
  c.window = 4;
  assert_int_equal(rlx_transformer_export_gguf(&c, RLX_GGUF_TYPE_F32, PATH), RLX_ERR_UNSUPPORTED);
  assert_int_not_equal(rlx_transformer_export_gguf(&CFG, RLX_GGUF_TYPE_F32, "build/no/such/dir/x.gguf"), RLX_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(exported_models_run_as_ours),
      cmocka_unit_test(the_file),
      cmocka_unit_test(refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
