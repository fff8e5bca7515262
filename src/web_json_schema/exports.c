/* exports.c - the wasm export surface of the JSON Schema converter
 * (web/pkg/rlx_json_schema.wasm), a module of its own so that the
 * language-model modules do not carry it: web/runtime/llm_json_schema.js
 * loads it on the first options.jsonSchema and gives the GBNF text it
 * writes to the model's module (rlx_llm_grammar_parse).  Pointers are byte
 * offsets into the exported `memory`; JS allocates with
 * rlx_wasm_alloc/rlx_wasm_free; errors are negative rlx_status codes with
 * the converter's message in rlx_last_error() (include/rlx_llm_grammar.h). */
#include <stddef.h>
#include <stdlib.h>
#include "rlx_llm_grammar.h"

#define EXPORT(name) __attribute__((export_name(#name)))

EXPORT(rlx_wasm_alloc) void *w_alloc(size_t bytes) { return malloc(bytes ? bytes : 1); }
EXPORT(rlx_wasm_free) void w_free(void *p) { free(p); }
EXPORT(rlx_last_error) const char *w_last_error(void) { return rlx_last_error(); }
EXPORT(rlx_status_name) const char *w_status_name(int32_t s) { return rlx_status_name((rlx_status)s); }

/* A JSON schema's text[0, len) (no NUL needed) as GBNF: *gbnf the text,
 * NUL-terminated, *gbnf_len its bytes; freed with rlx_llm_text_free. */
EXPORT(rlx_llm_json_schema_to_gbnf)
int32_t w_json_schema_to_gbnf(const char *text, size_t len, char **gbnf, size_t *gbnf_len) {
  return rlx_llm_json_schema_to_gbnf(text, len, gbnf, gbnf_len);
}
EXPORT(rlx_llm_text_free) void w_text_free(char *text) { rlx_llm_text_free(text); }
