/* test_json_schema.c - JSON Schema to grammar (rlx_llm_json_schema_to_gbnf,
 * rlx_llm_grammar_from_json_schema): for each feature of the subset a
 * table of documents the grammar must take whole and documents it must
 * refuse; a table of schemas refused with the message each should give;
 * the GBNF text's ownership; allocation failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "check_alloc.h"
#include "rlx_llm_grammar.h"

/* 1 when doc is a whole string of g (fed in one piece). */
static int takes(const rlx_llm_grammar *g, const char *doc) {
  rlx_llm_grammar_state *st;
  int ok;
  assert_int_equal(rlx_llm_grammar_state_new(g, &st), RLX_OK);
  assert_int_equal(rlx_llm_grammar_state_accept(st, doc, strlen(doc), &ok), RLX_OK);
  ok = ok && rlx_llm_grammar_state_complete(st);
  rlx_llm_grammar_state_free(st);
  return ok;
}

typedef struct {
  const char *schema;
  const char *yes[8], *no[10];
} schema_case;

static const schema_case cases[] = {
  /* primitives */
  {"{\"type\": \"string\"}", {"\"\"", "\"a b\"", "\"\\\"\\u00e9\\n\"", "\"\xc3\xa9\""}, {"a", "\"a", "1", "\"\\x\"", "\"\n\""}},
  {"{\"type\": \"number\"}", {"0", "-1.5", "2e10", "3.25E-2"}, {"01", "1.", ".5", "+1", "\"1\"", "1e"}},
  {"{\"type\": \"integer\"}", {"0", "-17", "1234567890"}, {"1.0", "-", "1e3", "00", "12345678901234567"}},
  {"{\"type\": \"boolean\"}", {"true", "false"}, {"True", "1", "null"}},
  {"{\"type\": \"null\"}", {"null"}, {"nil", "", "0"}},
  /* strings with lengths */
  {"{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 3}", {"\"ab\"", "\"abc\"", "\"\\n\\t\""}, {"\"a\"", "\"abcd\""}},
  {"{\"type\": \"string\", \"minLength\": 1}", {"\"a\"", "\"abcdefgh\""}, {"\"\""}},
  /* type lists */
  {"{\"type\": [\"string\", \"null\"]}", {"\"x\"", "null"}, {"1", "true"}},
  /* enum and const (a value of another type than "type" is dropped) */
  {"{\"enum\": [\"red\", 7, null, [1, {\"a\": \"b\"}]]}", {"\"red\"", "7", "null", "[1,{\"a\":\"b\"}]"},
   {"\"blue\"", "8", "\"7\"", "[1]"}},
  {"{\"type\": \"string\", \"enum\": [\"a\", 1]}", {"\"a\""}, {"1"}},
  {"{\"const\": \"on\"}", {"\"on\""}, {"\"off\"", "on"}},
  /* arrays */
  {"{\"type\": \"array\", \"items\": {\"type\": \"integer\"}, \"minItems\": 1, \"maxItems\": 3}",
   {"[1]", "[1, 2, 3]", "[ 1,2 ]"}, {"[]", "[1,2,3,4]", "[\"a\"]", "[1,]"}},
  {"{\"type\": \"array\"}", {"[]", "[1, \"a\", [null], {}]"}, {"{}", "[,]"}},
  {"{\"type\": \"array\", \"maxItems\": 0}", {"[]"}, {"[1]"}},
  {"{\"items\": {\"type\": \"boolean\"}, \"minItems\": 2}", {"[true, false]", "[true, true, false]"}, {"[true]", "[1, 2]"}},
  /* objects: required in order, then any subset of the optional ones in order */
  {"{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"integer\"}, \"b\": {\"type\": \"string\"}, "
   "\"c\": {\"type\": \"boolean\"}, \"d\": {\"type\": \"null\"}}, \"required\": [\"c\", \"a\"]}",
   {"{\"a\": 1, \"c\": true}", "{\"a\":1,\"c\":true,\"b\":\"x\"}", "{\"a\":1,\"c\":true,\"d\":null}",
    "{\"a\":1,\"c\":true,\"b\":\"x\",\"d\":null}"},
   {"{\"a\": 1}", "{\"c\":true,\"a\":1}", "{\"a\":1,\"c\":true,\"d\":null,\"b\":\"x\"}", "{\"a\":1,\"c\":true,\"e\":1}",
    "{\"a\":\"1\",\"c\":true}", "{\"a\":1,\"c\":true,\"b\":\"x\",\"b\":\"y\"}"}},
  {"{\"properties\": {\"x\": {}, \"y\": {}}}", {"{}", "{\"x\": 1}", "{\"y\": [2]}", "{\"x\": 1, \"y\": {}}"},
   {"{\"y\": 1, \"x\": 2}", "{\"z\": 1}"}},
  /* additionalProperties: true, a schema (other keys never a declared name), false */
  {"{\"properties\": {\"id\": {\"type\": \"integer\"}}, \"required\": [\"id\"], \"additionalProperties\": true}",
   {"{\"id\": 1}", "{\"id\": 1, \"name\": \"x\", \"i\": [1]}", "{\"id\":1,\"idx\":2,\"\":3}"},
   {"{\"id\": 1, \"id\": \"x\"}", "{\"name\": \"x\"}", "{\"id\":1,\"i\\u0064\":2}"}},
  {"{\"type\": \"object\", \"additionalProperties\": {\"type\": \"number\"}}", {"{}", "{\"a\": 1, \"b\": 2.5}"},
   {"{\"a\": \"x\"}", "[]"}},
  {"{\"type\": \"object\", \"additionalProperties\": false}", {"{}"}, {"{\"a\": 1}"}},
  /* any object, any value */
  {"{\"type\": \"object\"}", {"{}", "{\"a\": [1, {\"b\": null}], \"c\": \"d\"}"}, {"[]", "1", "{\"a\"}"}},
  {"{}", {"1", "\"s\"", "[true, {\"k\": null}]", "{}", "null"}, {"", "tru", "[1,]", "{1: 2}"}},
  {"true", {"1", "{}"}, {"x"}},
  /* anyOf, oneOf, nested objects */
  {"{\"anyOf\": [{\"type\": \"integer\"}, {\"type\": \"object\", \"properties\": {\"p\": {\"type\": \"object\", "
   "\"properties\": {\"q\": {\"const\": 1}}, \"required\": [\"q\"]}}, \"required\": [\"p\"]}]}",
   {"5", "{\"p\": {\"q\": 1}}"}, {"{\"p\": {}}", "{\"p\": {\"q\": 2}}", "\"5\""}},
  {"{\"oneOf\": [{\"type\": \"string\"}, {\"type\": \"array\", \"items\": {\"type\": \"null\"}}]}",
   {"\"a\"", "[null, null]"}, {"[1]", "null"}},
  /* $ref into $defs and definitions, recursive */
  {"{\"$defs\": {\"node\": {\"type\": \"object\", \"properties\": {\"v\": {\"type\": \"integer\"}, \"next\": "
   "{\"anyOf\": [{\"$ref\": \"#/$defs/node\"}, {\"type\": \"null\"}]}}, \"required\": [\"v\", \"next\"]}}, "
   "\"$ref\": \"#/$defs/node\"}",
   {"{\"v\": 1, \"next\": null}", "{\"v\": 1, \"next\": {\"v\": 2, \"next\": {\"v\": 3, \"next\": null}}}"},
   {"{\"v\": 1}", "{\"v\": 1, \"next\": {\"v\": 2}}"}},
  {"{\"definitions\": {\"a/b\": {\"type\": \"boolean\"}}, \"type\": \"array\", \"items\": {\"$ref\": "
   "\"#/definitions/a~1b\"}}", {"[true]"}, {"[1]"}},
  {"{\"type\": \"array\", \"items\": {\"$ref\": \"#\"}, \"maxItems\": 2}", {"[]", "[[], [[]]]"}, {"[1]", "[[], [], []]"}},
  /* whitespace between tokens is bounded */
  {"{\"type\": \"array\", \"items\": {\"type\": \"null\"}}", {"[ null ]", "[\n  null,\n\tnull\n]"},
   {"[  null]", "[\n\n\nnull]", "[\n                     null]"}},
};

static void test_accepts_and_refuses(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    rlx_llm_grammar *g = NULL;
    const char *s = cases[i].schema;
    if (rlx_llm_grammar_from_json_schema(s, strlen(s), &g) != RLX_OK) fail_msg("case %zu: %s", i, rlx_last_error());
    for (int k = 0; k < 10; k++) {
      if (k < 8 && cases[i].yes[k] && !takes(g, cases[i].yes[k])) fail_msg("case %zu: refused %s", i, cases[i].yes[k]);
      if (cases[i].no[k] && takes(g, cases[i].no[k])) fail_msg("case %zu: took %s", i, cases[i].no[k]);
    }
    rlx_llm_grammar_free(g);
  }
}

typedef struct {
  const char *schema, *message;
} bad_case;

static const bad_case bad[] = {
  {"{\"type\": ", "json schema: a value expected at byte 9"},
  {"{\"type\": \"string\"} x", "json schema: text after the value at byte 19"},
  {"[]", "json schema: (root): a schema must be an object or a boolean"},
  {"false", "json schema: (root): the schema false admits nothing"},
  {"{\"type\": \"string\", \"pattern\": \"^a\"}", "json schema: /pattern: 'pattern' is not supported"},
  {"{\"type\": \"string\", \"format\": \"date\"}", "json schema: /format: 'format' is not supported"},
  {"{\"properties\": {\"age\": {\"type\": \"integer\", \"minimum\": 0}}}",
   "json schema: /properties/age/minimum: 'minimum' is not supported"},
  {"{\"type\": \"decimal\"}", "json schema: /type: unknown type 'decimal'"},
  {"{\"type\": [\"string\", 3]}", "json schema: /type/1: a type must be a string"},
  {"{\"type\": []}", "json schema: /type: an empty list of types admits nothing"},
  {"{\"$ref\": \"https://example.com/s.json\"}",
   "json schema: /$ref: only references within the schema ('#' or '#/...') are supported"},
  {"{\"$ref\": \"#/$defs/missing\"}", "json schema: /$ref: '#/$defs/missing' is not in the schema"},
  {"{\"$ref\": \"#\", \"type\": \"string\"}", "json schema: /type: 'type' beside '$ref' is not supported"},
  {"{\"$defs\": {\"a\": {\"anyOf\": [{\"type\": \"null\"}, {\"$ref\": \"#/$defs/b\"}]}, \"b\": {\"$ref\": "
   "\"#/$defs/a\"}}, \"$ref\": \"#/$defs/a\"}",
   "json schema: /$defs/b/$ref: this reference comes back to where it is before any text is written (a recursion "
   "with no end)"},
  {"{\"properties\": {\"a\": {\"$ref\": \"#\"}}, \"required\": [\"a\"]}",
   "json schema: (root): the schema admits no finite document (grammar: the grammar admits no string: 'root' never "
   "completes (every way through it recurses forever or uses a rule that does))"},
  {"{\"enum\": []}", "json schema: /enum: an empty enum admits nothing"},
  {"{\"type\": \"integer\", \"enum\": [\"a\", 1.5]}",
   "json schema: /enum: no value here is of the schema's type, so the schema admits nothing"},
  {"{\"enum\": [1], \"maxLength\": 2}", "json schema: /maxLength: 'maxLength' beside 'enum' is not supported"},
  {"{\"anyOf\": []}", "json schema: /anyOf: an empty list admits nothing"},
  {"{\"oneOf\": {}}", "json schema: /oneOf: must be an array of schemas"},
  {"{\"anyOf\": [{\"type\": \"null\"}, {\"type\": \"nope\"}]}", "json schema: /anyOf/1/type: unknown type 'nope'"},
  {"{\"type\": \"string\", \"minLength\": 4, \"maxLength\": 2}",
   "json schema: /maxLength: less than minLength (4), so no string fits"},
  {"{\"type\": \"array\", \"minItems\": 3, \"maxItems\": 1}",
   "json schema: /maxItems: less than minItems (3), so no array fits"},
  {"{\"type\": \"array\", \"maxItems\": 1.5}", "json schema: /maxItems: must be a whole number from 0 to 10000"},
  {"{\"type\": \"string\", \"maxLength\": 10001}", "json schema: /maxLength: must be a whole number from 0 to 10000"},
  {"{\"type\": \"array\", \"items\": [{}]}",
   "json schema: /items: a list of item schemas (tuple form) is not supported"},
  {"{\"properties\": {\"a\": {}}, \"required\": [\"b\"]}", "json schema: /required/0: 'b' is not in properties"},
  {"{\"properties\": {\"a\": {}, \"a\": {}}}", "json schema: /properties: 'a' is given twice"},
  {"{\"properties\": []}", "json schema: /properties: must be an object"},
  {"{\"properties\": {\"x~y/z\": {\"type\": \"bool\"}}}", "json schema: /properties/x~0y~1z/type: unknown type 'bool'"},
  {"{\"additionalProperties\": 1}", "json schema: /additionalProperties: must be a boolean or a schema"},
};

static void test_refused(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    rlx_llm_grammar *g = (rlx_llm_grammar *)1;
    char *text = (char *)1;
    size_t len = 1;
    rlx_status st = rlx_llm_grammar_from_json_schema(bad[i].schema, strlen(bad[i].schema), &g);
    if (st != RLX_ERR_INVALID_ARG || g) fail_msg("case %zu (%s): status %d", i, bad[i].schema, (int)st);
    if (strcmp(rlx_last_error(), bad[i].message) != 0)
      fail_msg("case %zu: got\n  %s\nwant\n  %s", i, rlx_last_error(), bad[i].message);
    st = rlx_llm_json_schema_to_gbnf(bad[i].schema, strlen(bad[i].schema), &text, &len);
    if (st != RLX_ERR_INVALID_ARG || text || len || strcmp(rlx_last_error(), bad[i].message) != 0)
      fail_msg("case %zu: to_gbnf gave %d: %s", i, (int)st, rlx_last_error());
  }
  rlx_llm_grammar *g;
  char *text;
  assert_int_equal(rlx_llm_grammar_from_json_schema(NULL, 1, &g), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_grammar_from_json_schema("{}", 2, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_json_schema_to_gbnf("{}", 2, NULL, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_json_schema_to_gbnf(NULL, 1, &text, NULL), RLX_ERR_INVALID_ARG);
}

/* The text is GBNF that parses on its own, NUL-terminated at its length. */
static void test_gbnf_text(void **state) {
  (void)state;
  static const char schema[] = "{\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}}";
  char *text;
  size_t len;
  assert_int_equal(rlx_llm_json_schema_to_gbnf(schema, strlen(schema), &text, &len), RLX_OK);
  assert_int_equal(strlen(text), len);
  assert_non_null(strstr(text, "root ::= "));
  rlx_llm_grammar *g;
  assert_int_equal(rlx_llm_grammar_parse(text, len, &g), RLX_OK);
  assert_true(takes(g, "{\"n\": 3}"));
  assert_false(takes(g, "{\"n\": \"3\"}"));
  rlx_llm_grammar_free(g);
  rlx_llm_text_free(text);
  rlx_llm_text_free(NULL);
}

static int convert_and_match(void *arg) {
  (void)arg;
  static const char schema[] = "{\"$defs\": {\"t\": {\"type\": [\"string\", \"null\"], \"maxLength\": 2}}, "
                               "\"properties\": {\"a\": {\"$ref\": \"#/$defs/t\"}, \"b\": {\"enum\": [1, [2]]}}, "
                               "\"required\": [\"a\"], \"additionalProperties\": {\"type\": \"array\", \"items\": {}}}";
  rlx_llm_grammar *g;
  rlx_status st = rlx_llm_grammar_from_json_schema(schema, strlen(schema), &g);
  if (st != RLX_OK) return st;
  rlx_llm_grammar_state *s = NULL;
  int ok = 0;
  st = rlx_llm_grammar_state_new(g, &s);
  if (st == RLX_OK) st = rlx_llm_grammar_state_accept(s, "{\"a\": null, \"c\": [1]}", 21, &ok);
  ok = ok && rlx_llm_grammar_state_complete(s);
  rlx_llm_grammar_state_free(s);
  rlx_llm_grammar_free(g);
  return st != RLX_OK ? (int)st : ok ? 0 : 99;
}

static void test_alloc_failures(void **state) {
  (void)state;
  const char *why = check_alloc_sweep(convert_and_match, NULL, 0);
  if (why) fail_msg("%s", why);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_accepts_and_refuses),
    cmocka_unit_test(test_refused),
    cmocka_unit_test(test_gbnf_text),
    cmocka_unit_test(test_alloc_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
