/* test_llm_grammar.c - generation under a grammar (rlx_llm_sampling.grammar)
 * on the random-weight test models, which emit garbage unconstrained: with
 * every sampler and several seeds the text is always a prefix of a string
 * of the grammar (checked by a fresh matcher, and by hand for a choice of
 * words), and complete whenever an end-of-generation token stopped it; a
 * grammar of one fixed string yields exactly that string; a grammar that
 * allows any text gives unconstrained greedy's tokens; a chat reply follows
 * the grammar too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check_alloc.h"
#include "rlx_llm.h"
#include "rlx_llm_chat.h"

static const char *const models[] = {"build/lm/qwen2-q8_0.gguf", "build/lm/llama-q4_0.gguf"};

static rlx_llm *open_model(const char *path) {
  rlx_llm_options opt = {.n_ctx = 128};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  return m;
}

static rlx_llm_grammar *parse(const char *text) {
  rlx_llm_grammar *g = NULL;
  if (rlx_llm_grammar_parse(text, strlen(text), &g) != RLX_OK) fail_msg("%s", rlx_last_error());
  return g;
}

typedef struct {
  char text[4096];
  size_t len;
  int32_t ids[256];
  size_t n;
  size_t clean; /* tokens before the first whose text holds U+FFFD, less the empty ones just before it */
  int dirty;
} out_text;

static int has_fffd(const char *t, size_t n) {
  for (size_t i = 0; i + 3 <= n; i++)
    if (!memcmp(t + i, "\xef\xbf\xbd", 3)) return 1;
  return 0;
}

static int collect(void *user, int32_t id, const char *text, size_t len) {
  out_text *o = user;
  if (o->len + len < sizeof o->text) memcpy(o->text + o->len, text, len), o->len += len;
  if (!o->dirty && has_fffd(text, len)) o->dirty = 1;
  if (!o->dirty && len) o->clean = o->n + 1;
  if (id >= 0 && o->n < 256) o->ids[o->n++] = id;
  o->text[o->len] = 0;
  return 0;
}

static rlx_llm_stats generate_from(rlx_llm *m, const char *prompt, const rlx_llm_sampling *s, out_text *o) {
  rlx_llm_stats st;
  memset(o, 0, sizeof *o);
  if (rlx_llm_generate(m, prompt, s, collect, o, &st) != RLX_OK) fail_msg("%s", rlx_last_error());
  if (!o->dirty) o->clean = o->n;
  return st;
}

static rlx_llm_stats generate(rlx_llm *m, const rlx_llm_sampling *s, out_text *o) {
  return generate_from(m, "Once upon a time", s, o);
}

/* 0: not a prefix; 1: a prefix; 2: a whole string of g. */
static int judge(const rlx_llm_grammar *g, const char *text, size_t len) {
  rlx_llm_grammar_state *s;
  int ok;
  assert_int_equal(rlx_llm_grammar_state_new(g, &s), RLX_OK);
  assert_int_equal(rlx_llm_grammar_state_accept(s, text, len, &ok), RLX_OK);
  int r = ok ? 1 + rlx_llm_grammar_state_complete(s) : 0;
  rlx_llm_grammar_state_free(s);
  return r;
}

static const char *const grammars[] = {
  "root ::= expr\nexpr ::= term ([-+*/] term)*\nterm ::= [0-9]+ | \"(\" expr \")\"",
  "root ::= \"[\" (item (\", \" item)*)? \"]\"\nitem ::= [a-z]{1,6}",
  "root ::= (\"yes\" | \"no\" | \"maybe\" | \"caf\xc3\xa9\")",
  "root ::= [^a-z]{2,12}",
};

static void test_follows_the_grammar(void **state) {
  (void)state;
  for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
    rlx_llm *m = open_model(models[mi]);
    for (size_t gi = 0; gi < sizeof grammars / sizeof *grammars; gi++) {
      rlx_llm_grammar *g = parse(grammars[gi]);
      int complete = 0;
      for (uint64_t seed = 0; seed < 6; seed++) {
        rlx_llm_sampling s = rlx_llm_sampling_default();
        s.temperature = seed == 0 ? 0.0f : 1.5f;
        s.top_k = seed == 2 ? 20 : 0;
        s.top_p = seed == 3 ? 0.9f : 1.0f;
        s.min_p = seed == 4 ? 0.05f : 0.0f;
        s.repeat_penalty = seed == 5 ? 1.3f : 1.0f;
        s.seed = seed;
        s.max_tokens = 24;
        s.grammar = g;
        out_text o;
        rlx_llm_stats st = generate(m, &s, &o);
        int j = judge(g, o.text, o.len);
        if (!j || (st.stopped_by == 1 && j != 2))
          fail_msg("%s, grammar %zu, seed %d: '%s' (%s, stopped by %d)", models[mi], gi, (int)seed, o.text,
                   j ? "a prefix only" : "not in the grammar", (int)st.stopped_by);
        if (gi == 2 && st.stopped_by == 1 && strcmp(o.text, "yes") && strcmp(o.text, "no") &&
            strcmp(o.text, "maybe") && strcmp(o.text, "caf\xc3\xa9"))
          fail_msg("not one of the words: '%s'", o.text);
        complete += st.stopped_by == 1;
      }
      if (gi == 2 && complete != 6) fail_msg("%s: %d of 6 choices ended", models[mi], complete);
      rlx_llm_grammar_free(g);
    }
    rlx_llm_free(m);
  }
}

static void test_fixed_string(void **state) {
  (void)state;
  static const char want[] = "Hello, w\xc3\xb6rld! 42";
  rlx_llm_grammar *g = parse("root ::= \"Hello, w\\u00f6rld! 42\"");
  for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
    rlx_llm *m = open_model(models[mi]);
    for (uint64_t seed = 0; seed < 3; seed++) {
      rlx_llm_sampling s = rlx_llm_sampling_default();
      s.temperature = seed ? 0.9f : 0.0f;
      s.seed = seed;
      s.max_tokens = 64;
      s.grammar = g;
      out_text o;
      rlx_llm_stats st = generate(m, &s, &o);
      if (strcmp(o.text, want) != 0 || st.stopped_by != 1)
        fail_msg("%s seed %d: '%s' stopped by %d", models[mi], (int)seed, o.text, (int)st.stopped_by);
    }
    rlx_llm_free(m);
  }
  rlx_llm_grammar_free(g);
}

/* Any text: greedy under it is greedy for as long as greedy's text is
 * UTF-8 (a grammar matches code points: the random models' greedy text soon
 * holds bytes that are not, which no grammar admits). */
static void test_any_text_is_greedy(void **state) {
  (void)state;
  static const char *const prompts[] = {"Once upon a time", "The answer is", "Hello", "A list:"};
  rlx_llm_grammar *g = parse("root ::= .*");
  for (size_t mi = 0; mi < sizeof models / sizeof *models; mi++) {
    rlx_llm *m = open_model(models[mi]);
    size_t compared = 0;
    for (size_t pi = 0; pi < sizeof prompts / sizeof *prompts; pi++) {
      rlx_llm_sampling s = rlx_llm_sampling_default();
      s.max_tokens = 32;
      out_text plain, under;
      rlx_llm_stats a = generate_from(m, prompts[pi], &s, &plain);
      s.grammar = g;
      generate_from(m, prompts[pi], &s, &under);
      if (!plain.dirty) {
        assert_int_equal(plain.n, under.n);
        assert_string_equal(plain.text, under.text);
        assert_true(a.stopped_by == 0 || a.stopped_by == 1);
      }
      assert_true(under.n >= plain.clean);
      assert_memory_equal(plain.ids, under.ids, plain.clean * sizeof *plain.ids);
      compared += plain.clean;
    }
    if (compared < 8) fail_msg("%s: only %zu tokens of UTF-8 to compare", models[mi], compared);
    rlx_llm_free(m);
  }
  rlx_llm_grammar_free(g);
}

static void test_chat_reply(void **state) {
  (void)state;
  rlx_llm_grammar *g = parse("root ::= \"{\\\"answer\\\": \" (\"true\" | \"false\") \"}\"");
  rlx_llm *m = open_model(models[0]);
  rlx_llm_chat_options opt = {"chatml", 0};
  rlx_llm_chat *c;
  if (rlx_llm_chat_new(m, &opt, &c) != RLX_OK) fail_msg("%s", rlx_last_error());
  rlx_llm_chat_message msg = {"user", "Is water wet?"};
  rlx_llm_sampling s = rlx_llm_sampling_default();
  s.temperature = 1.0f;
  s.seed = 7;
  s.grammar = g;
  rlx_llm_chat_stats st;
  if (rlx_llm_chat_respond(c, &msg, 1, &s, NULL, NULL, &st) != RLX_OK) fail_msg("%s", rlx_last_error());
  size_t len;
  const char *reply = rlx_llm_chat_reply(c, &len);
  if (strcmp(reply, "{\"answer\": true}") && strcmp(reply, "{\"answer\": false}")) fail_msg("reply '%s'", reply);
  rlx_llm_chat_free(c);
  rlx_llm_free(m);
  rlx_llm_grammar_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_follows_the_grammar),
    cmocka_unit_test(test_fixed_string),
    cmocka_unit_test(test_any_text_is_greedy),
    cmocka_unit_test(test_chat_reply),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
