/* grammar.c - the language-model module's exports for output constrained
 * to a grammar (web/runtime/llm_grammar.js): GBNF text parsed into a grammar
 * (include/rlx_llm_grammar.h), and freed; the generator takes it
 * (rlx_llm_generator_new in exports.c).  A JSON schema comes here as the
 * GBNF text of the converter's own module (src/web_json_schema/exports.c),
 * so that this module does not carry the converter.  Pointers are byte
 * offsets into the module's memory; errors are negative rlx_status codes
 * with the parser's message in rlx_last_error(). */
#include <stddef.h>

#include "rlx_llm_grammar.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* text[0, len) (no NUL needed) parsed; *out the grammar, or NULL. */
EXPORT(rlx_llm_grammar_parse) int32_t w_grammar_parse(const char *text, size_t len, rlx_llm_grammar **out) {
  return rlx_llm_grammar_parse(text, len, out);
}
EXPORT(rlx_llm_grammar_free) void w_grammar_free(rlx_llm_grammar *g) { rlx_llm_grammar_free(g); }
