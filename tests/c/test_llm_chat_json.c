/* test_llm_chat_json.c - OpenAI-style messages read from JSON
 * (rlx_llm_chat_parse_messages): roles and contents with every escape,
 * surrogate pairs, other keys of any type skipped; malformed JSON, a
 * missing or non-string role or content, \u0000, lone surrogates and an
 * empty array refused naming where; allocation failures leak nothing. */
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
#include "check_alloc.h"

static const char good[] =
    " [ {\"role\": \"system\", \"content\": \"Be \\\"brief\\\".\\n\\ttabs \\\\ \\/ \\b\\f\\r\"},\n"
    "  {\"name\": {\"a\": [1, -2.5e3, true, false, null, {}, []]}, \"role\":\"user\", \"content\": "
    "\"caf\\u00e9 \\u20ac \\ud83d\\ude00 \xc3\xa9\"},\n"
    "  {\"content\": \"\", \"role\": \"assistant\", \"tool_calls\": []} ] ";

static void parses_messages(void **state) {
  (void)state;
  rlx_llm_chat_message *m = NULL;
  int32_t n = 0;
  assert_int_equal(rlx_llm_chat_parse_messages(good, strlen(good), &m, &n), RLX_OK);
  assert_int_equal(n, 3);
  assert_string_equal(m[0].role, "system");
  assert_string_equal(m[0].content, "Be \"brief\".\n\ttabs \\ / \b\f\r");
  assert_string_equal(m[1].role, "user");
  assert_string_equal(m[1].content, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xc3\xa9");
  assert_string_equal(m[2].role, "assistant");
  assert_string_equal(m[2].content, "");
  rlx_llm_chat_messages_free(m, n);
  rlx_llm_chat_messages_free(NULL, 0);
}

static void refuses_bad_json(void **state) {
  (void)state;
  static const struct {
    const char *json, *says;
  } cases[] = {
      {"", "an array of messages expected"},
      {"{}", "an array of messages expected"},
      {"[]", "no messages"},
      {"[{\"role\": \"user\"}]", "has no content"},
      {"[{\"content\": \"x\"}]", "has no role"},
      {"[{}]", "has no role"},
      {"[{\"role\": 1, \"content\": \"x\"}]", "role must be a string"},
      {"[{\"role\": \"user\", \"content\": [{\"type\": \"text\"}]}]", "content must be a string"},
      {"[{\"role\": \"user\", \"content\": \"a\\u0000b\"}]", "NUL"},
      {"[{\"role\": \"user\", \"content\": \"\\ud800\"}]", "lone surrogate"},
      {"[{\"role\": \"user\", \"content\": \"\\udc00x\"}]", "lone surrogate"},
      {"[{\"role\": \"user\", \"content\": \"\\q\"}]", "malformed escape"},
      {"[{\"role\": \"user\", \"content\": \"\\u12\"}]", "malformed escape"},
      {"[{\"role\": \"user\", \"content\": \"a\nb\"}]", "control character"},
      {"[{\"role\": \"user\", \"content\": \"abc", "unterminated string"},
      {"[{\"role\": \"user\", \"content\": \"abc\\", "unterminated string"},
      {"[{\"role\": \"user\" \"content\": \"x\"}]", "'}' expected"},
      {"[{\"role\": \"user\", \"content\": \"x\"}", "']' expected"},
      {"[{\"role\": \"user\", \"content\": \"x\"}] x", "text after the array"},
      {"[{\"role\": \"user\", \"role\": \"user\", \"content\": \"x\"}]", "a second \"role\""},
      {"[{\"role\": \"user\", \"content\": \"x\", \"n\": tru}]", "a value expected"},
      {"[{\"role\": \"user\", \"content\": \"x\", \"n\": [1 2]}]", "']' expected"},
      {"[{\"role\": \"user\", \"content\": \"x\", \"n\": "
       "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]"
       "]]]]]]]]]]]]]]]]]]]]]]}]", "nested too deep"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    rlx_llm_chat_message *m = (rlx_llm_chat_message *)1;
    int32_t n = 5;
    if (rlx_llm_chat_parse_messages(cases[i].json, strlen(cases[i].json), &m, &n) != RLX_ERR_INVALID_ARG)
      fail_msg("accepted: %s", cases[i].json);
    assert_null(m);
    assert_int_equal(n, 0);
    assert_contains(rlx_last_error(), cases[i].says);
  }
  /* The length bounds the text: a prefix of good JSON is not good JSON. */
  rlx_llm_chat_message *m;
  int32_t n;
  for (size_t len = 0; len + 2 < strlen(good); len++)
    assert_int_equal(rlx_llm_chat_parse_messages(good, len, &m, &n), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_chat_parse_messages(NULL, 3, &m, &n), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_chat_parse_messages(good, strlen(good), NULL, &n), RLX_ERR_INVALID_ARG);
}

/* 0 when the messages were read (and freed), else the status. */
static int parse_life(void *user) {
  (void)user;
  rlx_llm_chat_message *m = NULL;
  int32_t n = 0;
  rlx_status st = rlx_llm_chat_parse_messages(good, strlen(good), &m, &n);
  rlx_llm_chat_messages_free(m, n);
  return st;
}

static void allocation_failures(void **state) {
  (void)state;
  const char *why = check_alloc_sweep(parse_life, NULL, 0);
  if (why) fail_msg("%s", why);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(parses_messages),
      cmocka_unit_test(refuses_bad_json),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
