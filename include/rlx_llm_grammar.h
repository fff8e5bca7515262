/* rlx_llm_grammar.h - output constrained to a grammar: llama.cpp's GBNF
 * (rules "name ::= alternatives", string literals, character classes, ".",
 * groups, * + ? {m,n}, # comments, a "root" rule), parsed once and matched
 * over UTF-8 code points.  Give a parsed grammar to generation through
 * rlx_llm_sampling.grammar (include/rlx_llm.h).  The syntax and the refusals
 * are listed in docs/language-models.md (Grammars). */
#ifndef RLX_LLM_GRAMMAR_H
#define RLX_LLM_GRAMMAR_H

#include <stddef.h>
#include "rlx.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_llm_grammar rlx_llm_grammar;

/* Parses GBNF text (len bytes, no NUL needed).  A malformed grammar, or one
 * that admits no string, -> RLX_ERR_INVALID_ARG with rlx_last_error() saying
 * "grammar: line L, column C: <problem>" (or "grammar: <problem>" for what
 * belongs to no place). */
rlx_status rlx_llm_grammar_parse(const char *text, size_t len, rlx_llm_grammar **out);
void rlx_llm_grammar_free(rlx_llm_grammar *g);

/* Where a text is within the grammar: the live parses (a set of stacks of a
 * pushdown automaton) and the bytes of a code point not yet whole. */
typedef struct rlx_llm_grammar_state rlx_llm_grammar_state;

/* The state before any text (g must outlive it). */
rlx_status rlx_llm_grammar_state_new(const rlx_llm_grammar *g, rlx_llm_grammar_state **out);
rlx_status rlx_llm_grammar_state_copy(const rlx_llm_grammar_state *s, rlx_llm_grammar_state **out);
void rlx_llm_grammar_state_free(rlx_llm_grammar_state *s);
/* Feeds n bytes of UTF-8 (they may end inside a code point, which the state
 * keeps).  *accepted = 1: the text so far can still continue to a string of
 * the grammar, and the state moved; 0: it cannot, and the state is as it was. */
rlx_status rlx_llm_grammar_state_accept(rlx_llm_grammar_state *s, const char *bytes, size_t n, int *accepted);
/* 1 when the text so far is a whole string of the grammar (no partial code
 * point held). */
int rlx_llm_grammar_state_complete(const rlx_llm_grammar_state *s);

/* JSON Schema (len bytes of JSON) to GBNF, as llama.cpp's
 * json-schema-to-grammar converts it; the subset taken is listed in
 * docs/language-models.md (JSON Schema).  *gbnf: the grammar's text,
 * NUL-terminated (*gbnf_len bytes before the NUL; gbnf_len may be NULL),
 * freed with rlx_llm_text_free.  Malformed JSON, anything outside the
 * subset and a schema that admits no document -> RLX_ERR_INVALID_ARG with
 * rlx_last_error() "json schema: <where, a JSON pointer such as
 * /properties/age, or (root)>: <problem>" (malformed JSON: "json schema:
 * <problem> at byte N"). */
rlx_status rlx_llm_json_schema_to_gbnf(const char *schema, size_t len, char **gbnf, size_t *gbnf_len);
/* The same schema converted and parsed: a grammar for rlx_llm_sampling. */
rlx_status rlx_llm_grammar_from_json_schema(const char *schema, size_t len, rlx_llm_grammar **out);
/* Frees text this library returned (NULL: nothing). */
void rlx_llm_text_free(char *text);

#ifdef __cplusplus
}
#endif
#endif
