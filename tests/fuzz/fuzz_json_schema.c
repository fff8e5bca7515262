/* fuzz_json_schema.c - libFuzzer target: JSON Schema to grammar
 * (rlx_llm_json_schema_to_gbnf, rlx_llm_grammar_from_json_schema).  The
 * input up to the first NUL is a schema; a refusal must be
 * RLX_ERR_INVALID_ARG (or out of memory) with a "json schema: " message,
 * the same from both calls.  A schema taken gives NUL-terminated GBNF of
 * the length told that the grammar parser takes; the bytes after the NUL
 * are fed to the grammar, and a document it takes whole must be JSON (one
 * with a \u escape aside: the grammar takes any, the reader used here
 * refuses \u0000 and lone surrogates). */
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "rlx_llm_grammar.h"
#include "../../src/models/json_value.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  const size_t slen = nul ? (size_t)(nul - data) : size;
  char *text = NULL;
  size_t len = 0;
  rlx_llm_grammar *g = NULL;
  rlx_status st = rlx_llm_json_schema_to_gbnf((const char *)data, slen, &text, &len);
  rlx_status st2 = rlx_llm_grammar_from_json_schema((const char *)data, slen, &g);
  if (st != RLX_OK) {
    CHECK(text == NULL && (st == RLX_ERR_NO_MEMORY || (st == RLX_ERR_INVALID_ARG &&
                                                        strncmp(rlx_last_error(), "json schema: ", 13) == 0)));
    CHECK(g == NULL && (st2 == st || st == RLX_ERR_NO_MEMORY || st2 == RLX_ERR_NO_MEMORY));
    return 0;
  }
  CHECK(text && strlen(text) == len);
  rlx_llm_grammar *again = NULL;
  CHECK(rlx_llm_grammar_parse(text, len, &again) == RLX_OK || rlx_last_error()[0]);
  rlx_llm_grammar_free(again);
  rlx_llm_text_free(text);
  if (st2 != RLX_OK) {
    CHECK(st2 == RLX_ERR_NO_MEMORY && g == NULL);
    return 0;
  }
  const char *doc = nul ? (const char *)nul + 1 : "";
  const size_t n = nul ? size - slen - 1 : 0;
  rlx_llm_grammar_state *s = NULL;
  int ok = 0;
  if (rlx_llm_grammar_state_new(g, &s) == RLX_OK && rlx_llm_grammar_state_accept(s, doc, n, &ok) == RLX_OK && ok &&
      rlx_llm_grammar_state_complete(s)) {
    int escaped = 0;
    for (size_t i = 0; i + 1 < n; i++) escaped |= doc[i] == '\\' && doc[i + 1] == 'u';
    rlx_jdoc *d = NULL;
    st = rlx_jdoc_parse(doc, n, "document", &d);
    CHECK(st == RLX_OK || st == RLX_ERR_NO_MEMORY || escaped);
    rlx_jdoc_free(d);
  }
  rlx_llm_grammar_state_free(s);
  rlx_llm_grammar_free(g);
  return 0;
}
