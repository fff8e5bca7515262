/* test_llm_split.c - a model split as llama.cpp's gguf-split splits it
 * (tools/gguf_split.h) opens as one model: rlx_llm_open_parts and
 * rlx_llm_open_file given the first part's path give the whole file's
 * logits; a missing, repeated or misplaced part, a part of another count
 * and a tensor in two parts are refused naming the part. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlx_llm.h"
#include "../../tools/gguf_split.h"

#define MODEL "build/lm/llama-q4_0.gguf"
#define PREFIX "build/lm/split-test/llama-q4_0"
#define N 3

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("cannot open %s (run make lm-fixtures)", path);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = malloc(*size);
  assert_int_equal(fread(buf, 1, *size, f), *size);
  fclose(f);
  return buf;
}

static void logits_of(rlx_llm *m, float *out, int32_t n_vocab) {
  const int32_t ids[] = {1, 5, 9, 2, 7};
  assert_int_equal(rlx_llm_eval(m, ids, 5, out), RLX_OK);
  (void)n_vocab;
}

/* rlx_llm_open_parts of these parts: its status, the message in *msg. */
static rlx_status open_parts(unsigned char **bufs, size_t *sizes, int32_t n, const char **msg) {
  rlx_llm *m = NULL;
  rlx_llm_options opt = {.n_ctx = 16};
  rlx_status st = rlx_llm_open_parts((const void *const *)bufs, sizes, n, &opt, &m);
  *msg = rlx_last_error();
  rlx_llm_free(m);
  return st;
}

static void split_equals_whole(void **state) {
  (void)state;
  size_t size;
  unsigned char *whole = slurp(MODEL, &size);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_memory(whole, size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  assert_int_equal(system("mkdir -p build/lm/split-test"), 0);
  assert_int_equal(gguf_split_write(g, N, PREFIX), RLX_OK);
  rlx_gguf_free(g);

  rlx_llm_options opt = {.n_ctx = 16};
  rlx_llm *a = NULL, *b = NULL, *c = NULL;
  assert_int_equal(rlx_llm_open_memory(whole, size, &opt, &a), RLX_OK);
  unsigned char *bufs[N + 1];
  size_t sizes[N + 1];
  char path[256];
  for (int k = 0; k < N; k++) {
    snprintf(path, sizeof path, PREFIX "-%05d-of-%05d.gguf", k + 1, N);
    bufs[k] = slurp(path, &sizes[k]);
  }
  if (rlx_llm_open_parts((const void *const *)bufs, sizes, N, &opt, &b) != RLX_OK) fail_msg("%s", rlx_last_error());
  if (rlx_llm_open_file(PREFIX "-00001-of-00003.gguf", &opt, &c) != RLX_OK) fail_msg("%s", rlx_last_error());
  rlx_llm_info ia, ib;
  rlx_llm_get_info(a, &ia);
  rlx_llm_get_info(b, &ib);
  assert_int_equal(ia.n_params, ib.n_params);
  float *la = malloc(4 * (size_t)ia.n_vocab), *lb = malloc(4 * (size_t)ia.n_vocab), *lc = malloc(4 * (size_t)ia.n_vocab);
  logits_of(a, la, ia.n_vocab);
  logits_of(b, lb, ia.n_vocab);
  logits_of(c, lc, ia.n_vocab);
  assert_memory_equal(la, lb, 4 * (size_t)ia.n_vocab);
  assert_memory_equal(la, lc, 4 * (size_t)ia.n_vocab);
  free(la), free(lb), free(lc);
  rlx_llm_free(a), rlx_llm_free(b), rlx_llm_free(c);

  /* Refusals, each naming the part */
  const char *msg;
  assert_int_equal(open_parts(bufs, sizes, 1, &msg), RLX_ERR_INVALID_ARG);   /* part 1 alone */
  assert_non_null(strstr(msg, "part 1 of a model split in 3 parts"));
  assert_int_equal(open_parts(bufs, sizes, 2, &msg), RLX_ERR_INVALID_ARG);   /* part 3 missing */
  assert_non_null(strstr(msg, "part 1 of the 2 given says the model has 3 parts"));
  unsigned char *dup[N] = {bufs[0], bufs[1], bufs[1]};
  size_t dsz[N] = {sizes[0], sizes[1], sizes[1]};
  assert_int_equal(open_parts(dup, dsz, N, &msg), RLX_ERR_INVALID_ARG);      /* part 2 twice */
  assert_non_null(strstr(msg, "part 3 of 3 is split.no 1 (part 2): a part given twice"));
  unsigned char *swap[N] = {bufs[0], bufs[2], bufs[1]};
  size_t ssz[N] = {sizes[0], sizes[2], sizes[1]};
  assert_int_equal(open_parts(swap, ssz, N, &msg), RLX_ERR_INVALID_ARG);     /* out of order */
  assert_non_null(strstr(msg, "part 2 of 3 is split.no 2 (part 3): the parts must come in order"));
  /* A tensor in two parts: part 2 written again with part 1's first tensor as well */
  rlx_gguf *p2;
  assert_int_equal(rlx_gguf_open_memory(bufs[1], sizes[1], RLX_GGUF_NO_BUDGET, &p2), RLX_OK);
  assert_int_equal(rlx_gguf_open_memory(whole, size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  rlx_gguf_writer *w;
  assert_int_equal(rlx_gguf_writer_new(&w), RLX_OK);
  for (int64_t i = 0; i < rlx_gguf_kv_count(p2); i++) {
    const char *key;
    rlx_gguf_value v;
    assert_int_equal(rlx_gguf_kv(p2, i, &key, &v), RLX_OK);
    if (strcmp(key, "general.alignment") != 0) assert_int_equal(rlx_gguf_writer_add_kv(w, p2, i), RLX_OK);
  }
  rlx_gguf_tensor_info t;
  for (int64_t i = -1; i < rlx_gguf_tensor_count(p2); i++) {
    assert_int_equal(rlx_gguf_tensor(i < 0 ? g : p2, i < 0 ? 0 : i, &t), RLX_OK);
    assert_int_equal(rlx_gguf_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims, t.data, t.bytes), RLX_OK);
  }
  char first[128];
  assert_int_equal(rlx_gguf_tensor(g, 0, &t), RLX_OK);
  snprintf(first, sizeof first, "tensor '%s' is in part 1 and in part 2", t.name);
  uint64_t bytes;
  assert_int_equal(rlx_gguf_writer_size(w, &bytes), RLX_OK);
  unsigned char *twice = malloc(bytes);
  assert_int_equal(rlx_gguf_writer_write_memory(w, twice, bytes), RLX_OK);
  rlx_gguf_writer_free(w);
  rlx_gguf_free(p2);
  rlx_gguf_free(g);
  unsigned char *both[N] = {bufs[0], twice, bufs[2]};
  size_t bsz[N] = {sizes[0], (size_t)bytes, sizes[2]};
  assert_int_equal(open_parts(both, bsz, N, &msg), RLX_ERR_INVALID_ARG);
  assert_non_null(strstr(msg, first));
  free(twice);
  /* The native path of a missing part names it */
  rlx_llm *none = NULL;
  assert_int_not_equal(rlx_llm_open_file("build/lm/split-test/absent-00001-of-00002.gguf", &opt, &none), RLX_OK);
  assert_non_null(strstr(rlx_last_error(), "part 1 of the 2 that"));
  for (int k = 0; k < N; k++) free(bufs[k]);
  free(whole);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(split_equals_whole)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
