/* grammar.c - the language-model module's exports for output constrained
 * to a grammar (web/runtime/llm_grammar.js): GBNF text or a JSON schema
 * parsed into a grammar (include/rlx_llm_grammar.h), and freed; the
 * generator takes it
 * (rlx_llm_generator_new in exports.c).  Pointers are byte offsets into
 * the module's memory; errors are negative rlx_status codes with the
 * parser's message in rlx_last_error(). */
#include <stddef.h>

#include "rlx_llm_grammar.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* text[0, len) (no NUL needed) parsed; *out the grammar, or NULL. */
EXPORT(rlx_llm_grammar_parse) int32_t w_grammar_parse(const char *text, size_t len, rlx_llm_grammar **out) {
  return rlx_llm_grammar_parse(text, len, out);
}
/* A JSON schema's text[0, len) converted (the subset of
 * docs/language-models.md, JSON Schema) and parsed, as above. */
EXPORT(rlx_llm_grammar_from_json_schema)
int32_t w_grammar_from_json_schema(const char *text, size_t len, rlx_llm_grammar **out) {
  return rlx_llm_grammar_from_json_schema(text, len, out);
}
EXPORT(rlx_llm_grammar_free) void w_grammar_free(rlx_llm_grammar *g) { rlx_llm_grammar_free(g); }
