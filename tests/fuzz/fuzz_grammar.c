/* fuzz_grammar.c - libFuzzer target: GBNF grammars (include/rlx_llm_grammar.h).
 * The input up to the first NUL is a grammar; a refusal must be
 * RLX_ERR_INVALID_ARG (or out of memory) with a "grammar: " message.  A
 * grammar that parses is fed the bytes after the NUL, one feed whole and a
 * copy byte by byte: both must agree on every step, on being complete, and
 * a refused feed must leave the state as it was.  A grammar too ambiguous
 * to follow may refuse a feed with an error, the same way both times. */
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "rlx_llm_grammar.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t glen = nul ? (size_t)(nul - data) : size;
  rlx_llm_grammar *g = NULL;
  rlx_status st = rlx_llm_grammar_parse((const char *)data, glen, &g);
  if (st != RLX_OK) {
    CHECK(g == NULL && (st == RLX_ERR_NO_MEMORY || (st == RLX_ERR_INVALID_ARG &&
                                                     strncmp(rlx_last_error(), "grammar: ", 9) == 0)));
    return 0;
  }
  const char *text = nul ? (const char *)nul + 1 : "";
  size_t n = nul ? size - glen - 1 : 0;
  rlx_llm_grammar_state *whole = NULL, *steps = NULL;
  st = rlx_llm_grammar_state_new(g, &whole);
  if (st == RLX_OK) CHECK(rlx_llm_grammar_state_copy(whole, &steps) == RLX_OK);
  int ok_whole = 0, ok_steps = 1;
  rlx_status st_whole = st == RLX_OK ? rlx_llm_grammar_state_accept(whole, text, n, &ok_whole) : st, st_steps = st;
  for (size_t i = 0; st == RLX_OK && i < n && ok_steps && st_steps == RLX_OK; i++) {
    int c0 = rlx_llm_grammar_state_complete(steps);
    st_steps = rlx_llm_grammar_state_accept(steps, text + i, 1, &ok_steps);
    if (st_steps == RLX_OK && !ok_steps) CHECK(rlx_llm_grammar_state_complete(steps) == c0);
  }
  CHECK(st_whole == RLX_OK || st_whole == RLX_ERR_INVALID_ARG || st_whole == RLX_ERR_NO_MEMORY);
  CHECK(st_steps == RLX_OK || st_steps == RLX_ERR_INVALID_ARG || st_steps == RLX_ERR_NO_MEMORY);
  if (st_whole == RLX_OK && st_steps == RLX_OK) {
    CHECK(ok_whole == ok_steps);
    if (ok_whole) CHECK(rlx_llm_grammar_state_complete(whole) == rlx_llm_grammar_state_complete(steps));
  }
  rlx_llm_grammar_state_free(whole);
  rlx_llm_grammar_state_free(steps);
  rlx_llm_grammar_free(g);
  return 0;
}
