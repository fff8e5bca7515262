/* test_llm_hostile.c - language-model files and calls made to hurt
 * (include/rlx_llm.h): small models written in memory with the GGUF
 * writer, each with one hostile trait.  A vocabulary whose rendered pieces
 * would be far larger than the file is refused before the pieces are
 * allocated; narrow shapes (a feed-forward width of 1, a 1-token vocab)
 * load; a model of many layers loads with a number of allocations and a
 * peak of memory proportional to its layers; the context is never passed
 * (the caller-evaluated generator, rlx_llm_eval past the end); a vanishing
 * temperature is greedy. */
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

#include "../../src/models/llm.h"
#include "assert_text.h"
#include "check_alloc.h"

/* ---- a toy llama with a byte-level BPE vocab, written in memory ---------- */
typedef struct {
  int32_t n_embd, n_layer, n_head, n_ff, n_ctx;
  int32_t n_vocab;       /* tokens "a", "b", ... unless tokens is set */
  const char *const *tokens;
} toy;

static toy toy_default(void) { return (toy){8, 1, 2, 8, 64, 6, NULL}; }

typedef struct {
  float *data[16 * 1024 + 4];
  int n;
} toy_bufs;

static void add_tensor(rlx_gguf_writer *w, toy_bufs *b, const char *name, int64_t cols, int64_t rows) {
  const int64_t n = cols * (rows ? rows : 1);
  float *x = malloc((size_t)n * sizeof *x);
  assert_non_null(x);
  for (int64_t i = 0; i < n; i++) x[i] = rows ? 0.05f * (float)((i * 7 + b->n) % 11 - 5) : 1.0f;
  b->data[b->n++] = x;
  const int64_t dims[2] = {cols, rows};
  assert_int_equal(rlx_gguf_writer_add_tensor(w, name, RLX_GGUF_TYPE_F32, rows ? 2 : 1, dims, x, (uint64_t)n * 4),
                   RLX_OK);
}

static void kv_u32(rlx_gguf_writer *w, const char *key, int32_t v) {
  uint32_t u = (uint32_t)v;
  assert_int_equal(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_U32, &u), RLX_OK);
}

/* The file's bytes (free with free()). */
static unsigned char *toy_file(const toy *t, size_t *size) {
  rlx_gguf_writer *w;
  assert_int_equal(rlx_gguf_writer_new(&w), RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_string(w, "general.architecture", "llama", 5), RLX_OK);
  kv_u32(w, "llama.embedding_length", t->n_embd);
  kv_u32(w, "llama.block_count", t->n_layer);
  kv_u32(w, "llama.attention.head_count", t->n_head);
  kv_u32(w, "llama.feed_forward_length", t->n_ff);
  kv_u32(w, "llama.context_length", t->n_ctx);
  assert_int_equal(rlx_gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2", 4), RLX_OK);
  char names[64][2];
  const char *own[64];
  const char *const *tokens = t->tokens;
  if (!tokens) {
    assert_true(t->n_vocab <= 64);
    for (int i = 0; i < t->n_vocab; i++) names[i][0] = (char)('!' + i), names[i][1] = 0, own[i] = names[i];
    tokens = own;
  }
  assert_int_equal(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tokens, NULL, (uint64_t)t->n_vocab),
                   RLX_OK);
  assert_int_equal(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", NULL, NULL, 0), RLX_OK);
  static toy_bufs b;
  b.n = 0;
  const int64_t e = t->n_embd, ff = t->n_ff;
  add_tensor(w, &b, "token_embd.weight", e, t->n_vocab);
  add_tensor(w, &b, "output_norm.weight", e, 0);
  char name[64];
  for (int32_t l = 0; l < t->n_layer; l++) {
    static const struct {
      const char *suffix;
      int cols_ff, rows; /* rows: 0 1-D, 1 e, 2 ff */
    } L[] = {{"attn_norm.weight", 0, 0}, {"attn_q.weight", 0, 1},    {"attn_k.weight", 0, 1},
             {"attn_v.weight", 0, 1},    {"attn_output.weight", 0, 1}, {"ffn_norm.weight", 0, 0},
             {"ffn_gate.weight", 0, 2},  {"ffn_up.weight", 0, 2},    {"ffn_down.weight", 1, 1}};
    for (size_t k = 0; k < sizeof L / sizeof L[0]; k++) {
      snprintf(name, sizeof name, "blk.%d.%s", (int)l, L[k].suffix);
      add_tensor(w, &b, name, L[k].cols_ff ? ff : e, L[k].rows == 0 ? 0 : L[k].rows == 1 ? e : ff);
    }
  }
  uint64_t bytes;
  assert_int_equal(rlx_gguf_writer_size(w, &bytes), RLX_OK);
  unsigned char *buf = malloc((size_t)bytes);
  assert_non_null(buf);
  assert_int_equal(rlx_gguf_writer_write_memory(w, buf, (size_t)bytes), RLX_OK);
  rlx_gguf_writer_free(w);
  for (int i = 0; i < b.n; i++) free(b.data[i]);
  *size = (size_t)bytes;
  return buf;
}

static rlx_status toy_open(const unsigned char *buf, size_t size, int32_t n_ctx, rlx_llm **m) {
  rlx_llm_options opt = {.n_ctx = n_ctx};
  return rlx_llm_open_memory(buf, size, &opt, m);
}

/* The default toy opened with n_ctx positions (*buf: its file, free() it
 * after rlx_llm_free). */
static rlx_llm *toy_default_open(int32_t n_ctx, unsigned char **buf) {
  toy t = toy_default();
  size_t size;
  *buf = toy_file(&t, &size);
  rlx_llm *m = NULL;
  assert_int_equal(toy_open(*buf, size, n_ctx, &m), RLX_OK);
  return m;
}

/* ---- pieces: bounded by the file --------------------------------------------
 * A byte-level token made of characters outside GPT-2's 256 renders each
 * one as "[UNK_BYTE_0x..<the whole token>]" (llama.cpp's rule): quadratic in
 * the token.  n CJK characters: 3n bytes of text, n * (3n + 19) of piece. */
static char *cjk_token(size_t n_chars) {
  char *s = malloc(3 * n_chars + 1);
  assert_non_null(s);
  for (size_t i = 0; i < n_chars; i++) memcpy(s + 3 * i, "\xE4\xB8\x80", 3); /* U+4E00 */
  s[3 * n_chars] = 0;
  return s;
}

static void pieces_bounded_by_the_file(void **state) {
  (void)state;
  /* 4,000 characters: a 12 KB token whose piece would be 48 MB. */
  char *big = cjk_token(4000);
  const char *tokens[3] = {"a", "b", big};
  toy t = toy_default();
  t.tokens = tokens;
  t.n_vocab = 3;
  size_t size;
  unsigned char *buf = toy_file(&t, &size);
  check_alloc_reset_peak();
  const size_t live = check_alloc_live_bytes();
  rlx_llm *m = (rlx_llm *)1;
  assert_int_equal(toy_open(buf, size, 0, &m), RLX_ERR_INVALID_ARG);
  assert_null(m);
  assert_contains(rlx_last_error(), "tokenizer.ggml.tokens");
  assert_contains(rlx_last_error(), "pieces");
  /* refused before the pieces were allocated */
  if (check_alloc_active()) assert_true(check_alloc_peak_bytes() < live + 4 * size + (1u << 20));
  free(buf);
  free(big);

  /* A few such characters in a token are no problem: a vocab of short
   * foreign tokens still loads, and renders as llama.cpp does. */
  char *small = cjk_token(2);
  tokens[2] = small;
  buf = toy_file(&t, &size);
  assert_int_equal(toy_open(buf, size, 0, &m), RLX_OK);
  char piece[128];
  size_t len = 0;
  int32_t id = 2;
  assert_int_equal(rlx_llm_detokenize(m, &id, 1, piece, sizeof piece, &len), RLX_OK);
  assert_int_equal(len, 2 * (12 + 6 + 6 + 1));
  assert_memory_equal(piece, "[UNK_BYTE_0xe4b880\xE4\xB8\x80\xE4\xB8\x80]", 25);
  rlx_llm_free(m);
  free(buf);
  free(small);
}

/* ---- narrow shapes -------------------------------------------------------------- */
/* A 2-D weight of one row is a matrix, not a vector: it loads, evaluates
 * to finite logits and generates. */
static void narrow_shapes_load(void **state) {
  (void)state;
  toy shapes[2] = {toy_default(), toy_default()};
  shapes[0].n_ff = 1;
  shapes[1].n_vocab = 1;
  for (int k = 0; k < 2; k++) {
    size_t size;
    unsigned char *buf = toy_file(&shapes[k], &size);
    rlx_llm *m = NULL;
    rlx_status st = toy_open(buf, size, 0, &m);
    if (st != RLX_OK) fail_msg("%s: %s", k ? "1-token vocab" : "n_ff 1", rlx_last_error());
    rlx_llm_info in;
    assert_int_equal(rlx_llm_get_info(m, &in), RLX_OK);
    assert_int_equal(in.n_ff, shapes[k].n_ff);
    assert_int_equal(in.n_vocab, shapes[k].n_vocab);
    float logits[8];
    const int32_t ids[3] = {0, 0, 0};
    assert_int_equal(rlx_llm_eval(m, ids, 3, logits), RLX_OK);
    for (int32_t v = 0; v < in.n_vocab; v++) assert_true(isfinite(logits[v]));
    rlx_llm_sampling s = rlx_llm_sampling_default();
    s.max_tokens = 4;
    rlx_llm_stats stats;
    assert_int_equal(rlx_llm_generate_ids(m, ids, 1, &s, NULL, NULL, &stats), RLX_OK);
    assert_int_equal(stats.generated_tokens, 4);
    rlx_llm_free(m);
    free(buf);
  }
}

/* ---- many layers: the cost of loading grows with the layers ---------------------
 * Allocations and the peak of memory while opening, per layer, are about
 * the same for 64 and for 1,024 layers (something quadratic in the layers
 * or tensors shows as a per-layer cost that grows with the count). */
static void open_cost(int32_t n_layer, long *allocs, size_t *peak, size_t *file) {
  toy t = toy_default();
  t.n_layer = n_layer;
  t.n_ctx = 4; /* the step of one token and of four */
  unsigned char *buf = toy_file(&t, file);
  const size_t live = check_alloc_live_bytes();
  check_alloc_reset_peak();
  check_alloc_fail_at(-1, 0); /* counts from here */
  rlx_llm *m = NULL;
  if (toy_open(buf, *file, 0, &m) != RLX_OK) fail_msg("%d layers: %s", (int)n_layer, rlx_last_error());
  *allocs = check_alloc_count();
  *peak = check_alloc_peak_bytes() - live;
  int32_t id = 1;
  assert_int_equal(rlx_llm_eval(m, &id, 1, NULL), RLX_OK);
  rlx_llm_free(m);
  free(buf);
}

static void many_layers_load_in_proportion(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  long a64, a1024;
  size_t p64, p1024, f64, f1024;
  open_cost(64, &a64, &p64, &f64);
  open_cost(1024, &a1024, &p1024, &f1024);
  fprintf(stderr, "open: 64 layers %ld allocations, peak %zu bytes (file %zu); 1,024 layers %ld, peak %zu (file %zu)\n",
          a64, p64, f64, a1024, p1024, f1024);
  /* 16 times the layers: at most 20 times the allocations and the memory */
  assert_true(a1024 < 20 * a64);
  assert_true(p1024 < 20 * p64);
}

/* ---- the context ------------------------------------------------------------------ */
/* A greedy generator whose caller evaluates (the WebGPU path) and picks
 * the next token itself (rlx_llm_generator_next_chosen): the position stops
 * at n_ctx, generation ends as a full context (stopped_by 4), and nothing
 * is written past the history. */
static void chosen_generator_stops_at_the_context(void **state) {
  (void)state;
  unsigned char *buf;
  rlx_llm *m = toy_default_open(8, &buf);
  rlx_llm_sampling s = rlx_llm_sampling_default();
  s.max_tokens = 1000;
  const int32_t prompt[3] = {1, 2, 3};
  rlx_llm_generator *gen;
  assert_int_equal(rlx_llm_generator_new_external(m, prompt, 3, &s, &gen), RLX_OK);
  float logits[8] = {0, 0, 0, 0, 1, 0};
  assert_int_equal(rlx_llm_set_logits(m, logits, 3), RLX_OK);
  int32_t id;
  const char *text;
  size_t len;
  int done = 0, calls = 0;
  assert_int_equal(rlx_llm_generator_next(gen, &id, &text, &len, &done), RLX_OK);
  while (!done && calls < 200) {
    assert_int_equal(rlx_llm_generator_next_chosen(gen, 4, &id, &text, &len, &done), RLX_OK);
    assert_true(rlx_llm_position(m) <= 8);
    calls++;
  }
  assert_true(done);
  rlx_llm_stats st;
  rlx_llm_generator_stats(gen, &st);
  assert_int_equal(st.stopped_by, 4);
  assert_int_equal(rlx_llm_position(m), 8);
  assert_int_equal(st.prompt_tokens + st.generated_tokens, 8 + 1); /* the last sampled, not evaluated */
  rlx_llm_generator_free(gen);

  /* A prompt longer than the context is refused by every generator. */
  const int32_t long_prompt[9] = {1, 2, 3, 4, 5, 1, 2, 3, 4};
  gen = (rlx_llm_generator *)1;
  assert_int_equal(rlx_llm_generator_new_external(m, long_prompt, 9, &s, &gen), RLX_ERR_INVALID_ARG);
  assert_null(gen);
  assert_contains(rlx_last_error(), "rlx_llm_generator_new");
  assert_contains(rlx_last_error(), "context of 8");
  assert_int_equal(rlx_llm_generator_new(m, long_prompt, 9, &s, &gen), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "rlx_llm_generator_new");

  /* rlx_llm_eval and set_logits refuse a position past the context instead
   * of wrapping (a state only a defect could leave). */
  m->pos = 9;
  assert_int_equal(rlx_llm_eval(m, prompt, 1, NULL), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "context of 8");
  assert_int_equal(rlx_llm_set_logits(m, logits, 1), RLX_ERR_INVALID_ARG);
  m->pos = 0;
  rlx_llm_free(m);
  free(buf);
}

/* ---- temperature ------------------------------------------------------------------ */
/* Below RLX_LLM_MIN_TEMPERATURE sampling is greedy (and the generator says
 * so, for the GPU's argmax); huge logits at an ordinary temperature do
 * not overflow into NaN. */
/* The token a caller-evaluated generator at temperature t picks after
 * these logits (and whether it says it is greedy). */
static int32_t first_pick(rlx_llm *m, float t, const float *logits, int *greedy) {
  rlx_llm_sampling s = rlx_llm_sampling_default();
  s.temperature = t;
  const int32_t prompt[1] = {1};
  rlx_llm_generator *gen;
  assert_int_equal(rlx_llm_generator_new_external(m, prompt, 1, &s, &gen), RLX_OK);
  *greedy = rlx_llm_generator_greedy(gen);
  assert_int_equal(rlx_llm_set_logits(m, logits, 1), RLX_OK);
  int32_t id;
  const char *text;
  size_t len;
  int done;
  assert_int_equal(rlx_llm_generator_next(gen, &id, &text, &len, &done), RLX_OK);
  rlx_llm_generator_free(gen);
  return id;
}

static void vanishing_temperature_is_greedy(void **state) {
  (void)state;
  unsigned char *buf;
  rlx_llm *m = toy_default_open(8, &buf);
  const float temps[] = {1e-38f, 1e-45f, 1e-30f, RLX_LLM_MIN_TEMPERATURE * 0.5f};
  const float logits[6] = {5.0f, 40.0f, 20.0f, -10.0f, 10.0f, 2.5f};
  int greedy;
  for (size_t k = 0; k < sizeof temps / sizeof temps[0]; k++) {
    assert_int_equal(first_pick(m, temps[k], logits, &greedy), 1);
    assert_true(greedy);
  }
  const float huge[6] = {-3e38f, 3e38f, 1e38f, -1.0f, 2e38f, 0.0f};
  assert_int_equal(first_pick(m, 0.5f, huge, &greedy), 1);
  assert_false(greedy);
  rlx_llm_free(m);
  free(buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(pieces_bounded_by_the_file),
      cmocka_unit_test(narrow_shapes_load),
      cmocka_unit_test(many_layers_load_in_proportion),
      cmocka_unit_test(chosen_generator_stops_at_the_context),
      cmocka_unit_test(vanishing_temperature_is_greedy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
