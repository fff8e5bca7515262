/* test_llm_chat_session.c - chat sessions keep their KV cache
 * (rlx_llm_chat_* in include/rlx_llm_chat.h), on the build/lm fixtures:
 * a three-turn chat evaluates only the tokens after what the cache holds
 * (counted by rlx_llm_tokens_evaluated) and its replies equal greedy
 * generation from scratch on the same prompt; regenerating evaluates one
 * token and gives the same reply; an edited turn rolls the cache back to
 * the divergence; a full context is refused or its oldest turns dropped,
 * as the policy says; a context moved under the session is recomputed;
 * the template is detected from a file's tokenizer.chat_template (one none
 * of the families' refused unless named); bad input is refused with the
 * reason. */
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

#define MODEL "build/lm/qwen2-q8_0.gguf"  /* byte-level BPE, <|im_start|> / <|im_end|> */
#define SPM_MODEL "build/lm/llama-q4_0.gguf" /* SentencePiece, BOS added */
#define MAX_TOKENS 6

static rlx_llm *open_model(const char *path, int32_t n_ctx) {
  rlx_llm_options opt = {.n_ctx = n_ctx};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  return m;
}

static rlx_llm_chat *new_chat(rlx_llm *m, rlx_llm_chat_overflow overflow) {
  rlx_llm_chat_options opt = {"chatml", overflow};
  rlx_llm_chat *c = NULL;
  if (rlx_llm_chat_new(m, &opt, &c) != RLX_OK) fail_msg("%s", rlx_last_error());
  return c;
}

static rlx_llm_sampling greedy(void) {
  rlx_llm_sampling s = rlx_llm_sampling_default();
  s.max_tokens = MAX_TOKENS;
  return s;
}

typedef struct {
  int32_t ids[256];
  size_t n;
} id_list;

static int collect(void *user, int32_t id, const char *text, size_t len) {
  (void)text, (void)len;
  id_list *l = user;
  if (id >= 0 && l->n < 256) l->ids[l->n++] = id;
  return 0;
}

/* The reply to the session's last prompt computed from an empty cache on
 * another instance of the model must equal the session's. */
static void check_from_scratch(rlx_llm *fresh, const rlx_llm_chat *c) {
  size_t n_prompt, n_reply;
  const int32_t *prompt = rlx_llm_chat_prompt_ids(c, &n_prompt);
  const int32_t *reply = rlx_llm_chat_reply_ids(c, &n_reply);
  rlx_llm_sampling s = greedy();
  id_list want = {.n = 0};
  assert_int_equal(rlx_llm_generate_ids(fresh, prompt, n_prompt, &s, collect, &want, NULL), RLX_OK);
  assert_int_equal(n_reply, want.n);
  assert_memory_equal(reply, want.ids, n_reply * sizeof *reply);
}

/* One turn: answers msgs, checks what was evaluated against what the cache
 * held; returns the reply (strdup'd). */
static char *turn(rlx_llm *m, rlx_llm_chat *c, const rlx_llm_chat_message *msgs, int32_t n, int32_t held,
                  rlx_llm_chat_stats *st) {
  const uint64_t before = rlx_llm_tokens_evaluated(m);
  rlx_llm_sampling s = greedy();
  if (rlx_llm_chat_respond(c, msgs, n, &s, NULL, NULL, st) != RLX_OK) fail_msg("%s", rlx_last_error());
  const uint64_t evaluated = rlx_llm_tokens_evaluated(m) - before;
  /* Everything the cache held is reused (the prompt begins with it). */
  assert_int_equal(st->cached_tokens, held);
  assert_int_equal(st->gen.prompt_tokens, st->prompt_tokens - held);
  /* Evaluated: the new prompt tokens, then each reply token but the last
   * (sampled, not yet run) unless an end-of-generation token ended it. */
  assert_int_equal(evaluated, (uint64_t)(st->prompt_tokens - held) + (uint64_t)(rlx_llm_position(m) - st->prompt_tokens));
  size_t len;
  const char *r = rlx_llm_chat_reply(c, &len);
  assert_int_equal(strlen(r), len);
  return strdup(r);
}

static void three_turns_reuse_the_cache(const char *path) {
  rlx_llm *m = open_model(path, 512), *fresh = open_model(path, 512);
  rlx_llm_chat *c = new_chat(m, RLX_LLM_CHAT_REFUSE);
  rlx_llm_chat_message msgs[8] = {{"system", "You are a helpful assistant who answers briefly."},
                                  {"user", "Hello, who are you?"}};
  rlx_llm_chat_stats st;
  char *r1 = turn(m, c, msgs, 2, 0, &st);
  check_from_scratch(fresh, c);
  const int32_t first_prompt = st.prompt_tokens;
  int32_t held = rlx_llm_position(m);
  msgs[2] = (rlx_llm_chat_message){"assistant", r1};
  msgs[3] = (rlx_llm_chat_message){"user", "Tell me about the sea."};
  char *r2 = turn(m, c, msgs, 4, held, &st);
  assert_true(held > first_prompt);
  assert_true(st.gen.prompt_tokens < st.prompt_tokens / 2); /* the system prompt and turn 1 were not recomputed */
  check_from_scratch(fresh, c);
  size_t n2;
  const int32_t *p2 = rlx_llm_chat_prompt_ids(c, &n2);
  int32_t *prompt2 = malloc(n2 * sizeof *prompt2);
  memcpy(prompt2, p2, n2 * sizeof *p2);
  held = rlx_llm_position(m);
  msgs[4] = (rlx_llm_chat_message){"assistant", r2};
  msgs[5] = (rlx_llm_chat_message){"user", "And the mountains?"};
  char *r3 = turn(m, c, msgs, 6, held, &st);
  check_from_scratch(fresh, c);
  size_t n3;
  const int32_t *p3 = rlx_llm_chat_prompt_ids(c, &n3);
  assert_true(n3 > n2);
  assert_memory_equal(p3, prompt2, n2 * sizeof *p3); /* turn 3's prompt extends turn 2's */
  /* Regenerate: the same messages again evaluate only the last prompt
   * token and give the same (greedy) reply. */
  const int32_t prompt3 = st.prompt_tokens;
  char *again = turn(m, c, msgs, 6, prompt3 - 1, &st);
  assert_int_equal(st.gen.prompt_tokens, 1);
  assert_string_equal(again, r3);
  /* Edit turn 2's question: the cache rolls back to where it changed
   * (inside turn 2's user message), the reply equals a recomputation. */
  msgs[3] = (rlx_llm_chat_message){"user", "Tell me about the desert."};
  const uint64_t before = rlx_llm_tokens_evaluated(m);
  rlx_llm_sampling s = greedy();
  assert_int_equal(rlx_llm_chat_respond(c, msgs, 6, &s, NULL, NULL, &st), RLX_OK);
  size_t ne;
  const int32_t *pe = rlx_llm_chat_prompt_ids(c, &ne);
  int32_t lcp = 0;
  while ((size_t)lcp < n2 && (size_t)lcp < ne && pe[lcp] == prompt2[lcp]) lcp++;
  assert_true(lcp > first_prompt && lcp < (int32_t)n2);
  assert_int_equal(st.cached_tokens, lcp);
  assert_int_equal(st.gen.prompt_tokens, (int32_t)ne - lcp);
  assert_true(rlx_llm_tokens_evaluated(m) - before >= (uint64_t)((int32_t)ne - lcp));
  check_from_scratch(fresh, c);
  /* The model's context moved under the session: it recomputes all. */
  rlx_llm_reset(m);
  assert_int_equal(rlx_llm_chat_respond(c, msgs, 6, &s, NULL, NULL, &st), RLX_OK);
  assert_int_equal(st.cached_tokens, 0);
  check_from_scratch(fresh, c);
  free(r1), free(r2), free(r3), free(again), free(prompt2);
  rlx_llm_chat_free(c);
  rlx_llm_free(m);
  rlx_llm_free(fresh);
}

static void three_turns_bpe(void **state) {
  (void)state;
  three_turns_reuse_the_cache(MODEL);
}

static void three_turns_spm(void **state) {
  (void)state;
  three_turns_reuse_the_cache(SPM_MODEL);
}

static void full_context_policy(void **state) {
  (void)state;
  rlx_llm *m = open_model(MODEL, 96);
  rlx_llm_chat_message msgs[9] = {{"system", "Be brief."}};
  static const char *const q[] = {"The first question is about rivers and lakes.",
                                  "The second question is about forests and trees.",
                                  "The third question is about deserts and dunes.",
                                  "The fourth question is about the sea."};
  for (int i = 0; i < 4; i++) {
    msgs[1 + 2 * i] = (rlx_llm_chat_message){"user", q[i]};
    msgs[2 + 2 * i] = (rlx_llm_chat_message){"assistant", "An answer of several words, to fill the context."};
  }
  rlx_llm_sampling s = greedy();
  rlx_llm_chat_stats st;
  rlx_llm_chat *c = new_chat(m, RLX_LLM_CHAT_REFUSE);
  assert_int_equal(rlx_llm_chat_respond(c, msgs, 8, &s, NULL, NULL, &st), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "the context holds 96");
  assert_contains(rlx_last_error(), "RLX_LLM_CHAT_DROP_OLDEST");
  rlx_llm_chat_free(c);
  c = new_chat(m, RLX_LLM_CHAT_DROP_OLDEST);
  assert_int_equal(rlx_llm_chat_respond(c, msgs, 8, &s, NULL, NULL, &st), RLX_OK);
  assert_true(st.dropped_messages >= 2 && st.dropped_messages % 2 == 0); /* whole turns */
  assert_true(st.prompt_tokens + MAX_TOKENS <= 96);
  /* The system prompt stays: the prompt opens with it. */
  size_t n;
  const int32_t *ids = rlx_llm_chat_prompt_ids(c, &n);
  int32_t sys[32];
  size_t ns = 0;
  static const char sys_text[] = "<|im_start|>system\nBe brief.<|im_end|>\n";
  assert_int_equal(rlx_llm_tokenize(m, sys_text, strlen(sys_text), 0, 1, sys, 32, &ns), RLX_OK);
  assert_memory_equal(ids, sys, ns * sizeof *ids);
  /* One user message that cannot fit even alone is refused, naming why. */
  static char longq[2048];
  memset(longq, 'a', sizeof longq - 1);
  for (size_t i = 0; i + 1 < sizeof longq; i += 2) longq[i] = ' ';
  rlx_llm_chat_message big[] = {{"system", "Be brief."}, {"user", longq}};
  assert_int_equal(rlx_llm_chat_respond(c, big, 2, &s, NULL, NULL, &st), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "tokens and the context holds 96");
  rlx_llm_chat_free(c);
  rlx_llm_free(m);
}

/* The fixture at path with tokenizer.chat_template = tmpl, as a file in
 * memory (*buf, for free() after the model). */
static rlx_llm *open_with_template(const char *path, const char *tmpl, void **buf) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  size_t size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  void *src = malloc(size);
  assert_int_equal(fread(src, 1, size, f), size);
  fclose(f);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_memory(src, size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  rlx_gguf_writer *w;
  assert_int_equal(rlx_gguf_writer_new(&w), RLX_OK);
  assert_int_equal(rlx_gguf_writer_set_alignment(w, rlx_gguf_alignment(g)), RLX_OK);
  for (int64_t i = 0; i < rlx_gguf_kv_count(g); i++) {
    const char *key;
    rlx_gguf_value v;
    assert_int_equal(rlx_gguf_kv(g, i, &key, &v), RLX_OK);
    if (strcmp(key, "general.alignment") != 0) assert_int_equal(rlx_gguf_writer_add_kv(w, g, i), RLX_OK);
  }
  assert_int_equal(rlx_gguf_writer_add_string(w, "tokenizer.chat_template", tmpl, strlen(tmpl)), RLX_OK);
  for (int64_t i = 0; i < rlx_gguf_tensor_count(g); i++) {
    rlx_gguf_tensor_info t;
    assert_int_equal(rlx_gguf_tensor(g, i, &t), RLX_OK);
    assert_int_equal(rlx_gguf_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims, t.data, t.bytes), RLX_OK);
  }
  uint64_t bytes;
  assert_int_equal(rlx_gguf_writer_size(w, &bytes), RLX_OK);
  *buf = malloc(bytes);
  assert_int_equal(rlx_gguf_writer_write_memory(w, *buf, bytes), RLX_OK);
  rlx_gguf_writer_free(w);
  rlx_gguf_free(g);
  free(src);
  rlx_llm_options opt = {.n_ctx = 128};
  rlx_llm *m = NULL;
  if (rlx_llm_open_memory(*buf, bytes, &opt, &m) != RLX_OK) fail_msg("%s", rlx_last_error());
  return m;
}

static void template_from_the_file(void **state) {
  (void)state;
  void *buf;
  rlx_llm *m = open_with_template(MODEL, "{{ bos_token }}{% for m in messages %}{{ '<|start_header_id|>' + "
                                  "m['role'] + '<|end_header_id|>\n\n' + m['content'] | trim + '<|eot_id|>' }}"
                                  "{% endfor %}", &buf);
  rlx_llm_chat *c = NULL;
  assert_int_equal(rlx_llm_chat_new(m, NULL, &c), RLX_OK);
  const char *why;
  assert_string_equal(rlx_llm_chat_template(c, &why), "llama3");
  assert_contains(why, "detected from the file's tokenizer.chat_template");
  const rlx_llm_chat_message hi[] = {{"user", " Hi "}};
  char out[256];
  size_t len;
  assert_int_equal(rlx_llm_chat_prompt(c, hi, 1, 1, out, sizeof out, &len), RLX_OK);
  assert_string_equal(out, "<|endoftext|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                           "<|start_header_id|>assistant<|end_header_id|>\n\n"); /* the file's BOS text */
  rlx_llm_chat_free(c);
  rlx_llm_free(m);
  free(buf);
  /* A template none of the families': refused, unless one is named. */
  m = open_with_template(MODEL, "{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}\n{% endfor %}", &buf);
  assert_int_equal(rlx_llm_chat_new(m, NULL, &c), RLX_ERR_UNSUPPORTED);
  assert_null(c);
  assert_contains(rlx_last_error(), "--template NAME");
  rlx_llm_chat_options named = {"zephyr", RLX_LLM_CHAT_REFUSE};
  assert_int_equal(rlx_llm_chat_new(m, &named, &c), RLX_OK);
  assert_string_equal(rlx_llm_chat_template(c, &why), "zephyr");
  assert_contains(why, "as named");
  rlx_llm_chat_free(c);
  rlx_llm_free(m);
  free(buf);
}

static void refusals(void **state) {
  (void)state;
  rlx_llm *m = open_model(MODEL, 128);
  rlx_llm_chat *c = NULL;
  rlx_llm_chat_options bad_name = {"vicuna", RLX_LLM_CHAT_REFUSE};
  assert_int_equal(rlx_llm_chat_new(m, &bad_name, &c), RLX_ERR_UNSUPPORTED);
  assert_null(c);
  assert_contains(rlx_last_error(), "'vicuna' is not built in");
  rlx_llm_chat_options bad_policy = {NULL, (rlx_llm_chat_overflow)7};
  assert_int_equal(rlx_llm_chat_new(m, &bad_policy, &c), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_chat_new(NULL, NULL, &c), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_chat_new(m, NULL, NULL), RLX_ERR_INVALID_ARG);
  /* The fixture has no chat template: chatml, as llama.cpp, and why. */
  assert_int_equal(rlx_llm_chat_new(m, NULL, &c), RLX_OK);
  const char *why;
  assert_string_equal(rlx_llm_chat_template(c, &why), "chatml");
  assert_contains(why, "no tokenizer.chat_template");
  rlx_llm_sampling s = greedy();
  const rlx_llm_chat_message ends_with_assistant[] = {{"user", "a"}, {"assistant", "b"}};
  assert_int_equal(rlx_llm_chat_respond(c, ends_with_assistant, 2, &s, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "last message must be a user message");
  const rlx_llm_chat_message bad_role[] = {{"narrator", "a"}, {"user", "b"}};
  assert_int_equal(rlx_llm_chat_respond(c, bad_role, 2, &s, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "'narrator'");
  const rlx_llm_chat_message no_role[] = {{NULL, "a"}, {"user", "b"}};
  assert_int_equal(rlx_llm_chat_respond(c, no_role, 2, &s, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_chat_respond(c, NULL, 1, &s, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_chat_respond(NULL, no_role, 2, &s, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  rlx_llm_sampling neg = greedy();
  neg.max_tokens = -1;
  const rlx_llm_chat_message ok[] = {{"user", "hello"}};
  assert_int_equal(rlx_llm_chat_respond(c, ok, 1, &neg, NULL, NULL, NULL), RLX_ERR_INVALID_ARG);
  /* The session still works after refusals. */
  assert_int_equal(rlx_llm_chat_respond(c, ok, 1, &s, NULL, NULL, NULL), RLX_OK);
  rlx_llm_chat_free(c);
  rlx_llm_chat_free(NULL);
  rlx_llm_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(three_turns_bpe),
      cmocka_unit_test(three_turns_spm),
      cmocka_unit_test(full_context_policy),
      cmocka_unit_test(template_from_the_file),
      cmocka_unit_test(refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
