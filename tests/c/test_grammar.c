/* test_grammar.c - GBNF grammars (include/rlx_llm_grammar.h): a table of
 * grammars the parser takes, a table it refuses with the message each
 * should give, and the matcher accepting and refusing strings (fed whole,
 * byte by byte, and with multi-byte UTF-8 split between feeds), copies
 * that move on independently, and allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check_alloc.h"
#include "rlx_llm_grammar.h"

static rlx_llm_grammar *parse(const char *text) {
  rlx_llm_grammar *g = NULL;
  rlx_status st = rlx_llm_grammar_parse(text, strlen(text), &g);
  if (st != RLX_OK) fail_msg("%s\nin: %s", rlx_last_error(), text);
  return g;
}

/* 1 when s is a whole string of g, fed in pieces of `step` bytes. */
static int matches(const rlx_llm_grammar *g, const char *s, size_t step) {
  rlx_llm_grammar_state *st;
  assert_int_equal(rlx_llm_grammar_state_new(g, &st), RLX_OK);
  size_t n = strlen(s);
  int ok = 1;
  for (size_t i = 0; i < n && ok; i += step) {
    size_t k = n - i < step ? n - i : step;
    assert_int_equal(rlx_llm_grammar_state_accept(st, s + i, k, &ok), RLX_OK);
  }
  ok = ok && rlx_llm_grammar_state_complete(st);
  rlx_llm_grammar_state_free(st);
  return ok;
}

typedef struct {
  const char *grammar;
  const char *yes[6], *no[6];
} match_case;

static const match_case cases[] = {
  {"root ::= \"yes\" | \"no\"", {"yes", "no"}, {"", "ye", "yess", "maybe"}},
  {"root ::= [a-z]+ \"!\"?  # a word\n", {"a", "abc", "abc!"}, {"", "!", "A", "ab!!"}},
  {"root ::= [^0-9]*", {"", "x y", "\xc3\xa9t\xc3\xa9"}, {"a1"}},
  {"root ::= .{2,3}", {"ab", "\xe2\x82\xac\xe2\x82\xac", "abc"}, {"a", "abcd"}},
  {"root ::= \"(\" expr \")\"\nexpr ::= term (\"+\" term)*\nterm ::= [0-9]+ | \"(\" expr \")\"",
   {"(1)", "(1+22)", "((1+2)+3)"}, {"()", "(1+)", "(1", "1"}},
  {"root ::= item (\",\" item){0,2}\nitem ::= \"a\" | \"bb\"", {"a", "a,bb", "bb,a,a"}, {"a,a,a,a", "a,", ""}},
  {"root ::= x{3}\nx ::= [ab]", {"aba", "bbb"}, {"ab", "abab"}},
  {"root ::= (\"a\" | \"b\")\n  | \"c\"   # continued on a '|' line\n", {"a", "b", "c"}, {"ab", "d"}},
  {"root ::= \"\\x41\\u00e9\\n\\t\\\"\\\\\" [\\]\\-]", {"A\xc3\xa9\n\t\"\\]", "A\xc3\xa9\n\t\"\\-"}, {"A"}},
  {"root ::= \"\xe2\x82\xac\" [\xce\xb1-\xcf\x89]", {"\xe2\x82\xac\xce\xb2"}, {"\xe2\x82\xac" "a", "\xe2\x82"}},
  {"root ::= \"\" | \"x\" root", {"", "x", "xxxx"}, {"y"}},
  {"root ::= \"a\" dead | \"b\"\ndead ::= \"c\" dead", {"b"}, {"a", "ac", "acc"}},
  /* user rules named as the parser once named the rules it makes for groups */
  {"root ::= (\"a\") root-1 root-2\nroot-1 ::= \"b\"\nroot-2 ::= (\"c\")+ root-3?\nroot-3 ::= \"d\"",
   {"abc", "abccd"}, {"ab", "a", "abd"}},
};

static void test_matches(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rlx_llm_grammar *g = parse(cases[i].grammar);
    for (int k = 0; k < 6; k++) {
      for (size_t step = 1; step <= 4; step += 3) {
        if (cases[i].yes[k] && !matches(g, cases[i].yes[k], step))
          fail_msg("case %zu: '%s' refused (step %zu)", i, cases[i].yes[k], step);
        if (cases[i].no[k] && matches(g, cases[i].no[k], step))
          fail_msg("case %zu: '%s' accepted (step %zu)", i, cases[i].no[k], step);
      }
      if (cases[i].yes[k] && !matches(g, cases[i].yes[k], 1000)) fail_msg("case %zu: '%s' refused", i, cases[i].yes[k]);
    }
    rlx_llm_grammar_free(g);
  }
}

typedef struct {
  const char *grammar, *message;
} bad_case;

static const bad_case bad[] = {
  {"", "grammar: no 'root' rule"},
  {"start ::= \"a\"", "grammar: no 'root' rule"},
  {"root ::= foo", "grammar: line 1, column 10: undefined rule 'foo'"},
  {"root ::= \"a\"\nroot ::= \"b\"", "grammar: line 2, column 1: rule 'root' is defined twice"},
  {"root ::= (\"a\"", "grammar: line 1, column 10: a '(' without its ')'"},
  {"root ::= \"a\")", "grammar: line 1, column 13: a ')' without its '('"},
  {"root ::= \"abc", "grammar: line 1, column 10: unterminated string literal"},
  {"root ::= [a-z", "grammar: line 1, column 10: unterminated character class"},
  {"root ::= []", "grammar: line 1, column 10: an empty character class"},
  {"root ::= [z-a]", "grammar: line 1, column 11: a reversed range in a character class"},
  {"root ::= [^\\x00-\\U0010FFFF]", "grammar: line 1, column 10: a character class that matches nothing"},
  {"root ::= \"\\q\"", "grammar: line 1, column 11: unknown escape '\\q'"},
  {"root ::= \"\\x4\"", "grammar: line 1, column 11: '\\x' needs 2 hex digits"},
  {"root ::= \"\\U00110000\"", "grammar: line 1, column 11: '\\U' escape 0x110000 is past U+10FFFF"},
  {"root ::= \"\xff\"", "grammar: line 1, column 11: invalid UTF-8"},
  {"root \"a\"", "grammar: line 1, column 6: expected '::=' after the rule name"},
  {"::= \"a\"", "grammar: line 1, column 1: expected a rule name"},
  {"root ::= * \"a\"", "grammar: line 1, column 10: '*' with nothing before it to repeat"},
  {"root ::= \"a\"{3,1}", "grammar: line 1, column 13: {3,1}: the most is less than the least"},
  {"root ::= \"a\"{99999}", "grammar: line 1, column 14: a repetition count over 10000"},
  {"root ::= \"a\"{2", "grammar: line 1, column 15: expected '}' to close the '{'"},
  {"root ::= \"a\" b ::= \"c\"", "grammar: line 1, column 14: a new rule starts inside the rule before it (a missing "
                                 "line break?)"},
  {"root ::= root \"a\" | \"b\"", "grammar: rule 'root' can reach itself without consuming input (left recursion, "
                                  "or a repetition of something that can be empty)"},
  {"root ::= (\"a\"?)*", "grammar: rule 'root~3' can reach itself without consuming input (left recursion, or a "
                         "repetition of something that can be empty)"},
  {"root ::= \"a\" root", "grammar: the grammar admits no string: 'root' never completes (every way through it "
                          "recurses forever or uses a rule that does)"},
  {"root ::= x\nx ::= x", "grammar: the grammar admits no string: 'root' never completes (every way through it "
                          "recurses forever or uses a rule that does)"},
  {"root ::= \"a\" %", "grammar: line 1, column 14: unexpected '%'"},
};

static void test_refused(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rlx_llm_grammar *g = (rlx_llm_grammar *)1;
    rlx_status st = rlx_llm_grammar_parse(bad[i].grammar, strlen(bad[i].grammar), &g);
    if (st != RLX_ERR_INVALID_ARG || g) fail_msg("case %zu (%s): status %d", i, bad[i].grammar, (int)st);
    if (strcmp(rlx_last_error(), bad[i].message) != 0)
      fail_msg("case %zu: got\n  %s\nwant\n  %s", i, rlx_last_error(), bad[i].message);
  }
  assert_int_equal(rlx_llm_grammar_parse(NULL, 1, NULL), RLX_ERR_INVALID_ARG);
}

/* A euro sign split 1 + 2 bytes, and bytes that can never be UTF-8. */
static void test_split_utf8_and_copies(void **state) {
  (void)state;
  rlx_llm_grammar *g = parse("root ::= \"\xe2\x82\xac\" [0-9] | \"\xe2\x82\xad\"");
  rlx_llm_grammar_state *s, *c;
  int ok;
  assert_int_equal(rlx_llm_grammar_state_new(g, &s), RLX_OK);
  assert_int_equal(rlx_llm_grammar_state_accept(s, "\xe2", 1, &ok), RLX_OK);
  assert_true(ok);
  assert_false(rlx_llm_grammar_state_complete(s));
  assert_int_equal(rlx_llm_grammar_state_accept(s, "\x82\xae", 2, &ok), RLX_OK); /* U+20AE: no */
  assert_false(ok);
  assert_int_equal(rlx_llm_grammar_state_accept(s, "\xff", 1, &ok), RLX_OK);
  assert_false(ok);
  assert_int_equal(rlx_llm_grammar_state_copy(s, &c), RLX_OK);
  assert_int_equal(rlx_llm_grammar_state_accept(s, "\x82\xac", 2, &ok), RLX_OK);
  assert_true(ok);
  assert_false(rlx_llm_grammar_state_complete(s));
  assert_int_equal(rlx_llm_grammar_state_accept(s, "7", 1, &ok), RLX_OK);
  assert_true(ok && rlx_llm_grammar_state_complete(s));
  assert_int_equal(rlx_llm_grammar_state_accept(c, "\x82", 1, &ok), RLX_OK); /* the copy goes its own way */
  assert_true(ok);
  assert_int_equal(rlx_llm_grammar_state_accept(c, "\xad", 1, &ok), RLX_OK);
  assert_true(ok && rlx_llm_grammar_state_complete(c));
  rlx_llm_grammar_state_free(s);
  rlx_llm_grammar_state_free(c);
  /* an overlong form and a lone surrogate are not UTF-8 */
  rlx_llm_grammar *any = parse("root ::= .*");
  assert_false(matches(any, "\xc0\xaf", 1));
  assert_false(matches(any, "\xed\xa0\x80", 1));
  assert_true(matches(any, "\xf0\x9f\x98\x80", 1));
  rlx_llm_grammar_free(any);
  rlx_llm_grammar_free(g);
}

static int parse_and_match(void *arg) {
  (void)arg;
  static const char text[] = "root ::= (\"a\" | [b-d] x){1,3} \"\xe2\x82\xac\"\nx ::= \"y\"? # end\n";
  rlx_llm_grammar *g;
  rlx_status st = rlx_llm_grammar_parse(text, strlen(text), &g);
  if (st != RLX_OK) return st;
  rlx_llm_grammar_state *s = NULL, *c = NULL;
  int ok = 0;
  st = rlx_llm_grammar_state_new(g, &s);
  if (st == RLX_OK) st = rlx_llm_grammar_state_accept(s, "aby\xe2", 4, &ok);
  if (st == RLX_OK) st = rlx_llm_grammar_state_copy(s, &c);
  if (st == RLX_OK) st = rlx_llm_grammar_state_accept(c, "\x82\xac", 2, &ok);
  rlx_llm_grammar_state_free(c);
  rlx_llm_grammar_state_free(s);
  rlx_llm_grammar_free(g);
  return st != RLX_OK ? (int)st : ok ? 0 : 99;
}

static void test_alloc_failures(void **state) {
  (void)state;
  const char *why = check_alloc_sweep(parse_and_match, NULL, 0);
  if (why) fail_msg("%s", why);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_matches),
    cmocka_unit_test(test_refused),
    cmocka_unit_test(test_split_utf8_and_copies),
    cmocka_unit_test(test_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
