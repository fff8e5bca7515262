/* grammar.h - the compiled form of a GBNF grammar (grammar.c parses it,
 * grammar_match.c runs it) and the matcher's internal calls that the
 * grammar-constrained sampler (grammar_sample.c) uses.
 *
 * A grammar is rules; a rule is alternatives; an alternative is a run of
 * elements in el[] ending with G_END.  G_CHARS matches one code point in
 * ranges[a .. a+b) (inclusive [lo, hi] pairs, sorted, disjoint: negated
 * classes and "." are complemented at parse time); G_REF expands rule a.
 * Repetitions are rewritten into rules, so the matcher sees only these. */
#ifndef RLX_GRAMMAR_H
#define RLX_GRAMMAR_H

#include <stddef.h>
#include <stdint.h>
#include "rlx_llm_grammar.h"

/* The most a {m,n} repetition may count. */
#define RLX_GRAMMAR_MAX_REPEAT 10000

enum { G_END = 0, G_REF = 1, G_CHARS = 2 };
typedef struct {
  uint32_t type, a, b;
} rlx_gel;

struct rlx_llm_grammar {
  rlx_gel *el;
  size_t n_el;
  uint32_t (*ranges)[2];
  size_t n_ranges;
  uint32_t *alt;      /* each alternative's first element */
  uint32_t *rule_alt; /* rule r's alternatives: alt[rule_alt[r] .. rule_alt[r+1]) */
  uint32_t n_rules, n_alt, root;
};

/* A set of stacks, flat: each stack is [len, e_0 .. e_len-1] (the top, the
 * element to match next, last; always a G_CHARS element; len 0: complete). */
typedef struct {
  uint32_t *v;
  size_t n, cap;  /* words used, allocated */
  size_t count;   /* stacks */
} rlx_gstacks;

/* A UTF-8 decoder between tokens: the code point's bits so far and how
 * many continuation bytes it still needs. */
typedef struct {
  uint32_t cp, need, min; /* min: the least code point of its length (no overlong forms) */
} rlx_gutf8;

/* A set of stacks for finding repeats: the stacks in keys, a hash table
 * of their offsets (+1), each slot valid only with the current stamp (so
 * emptying it is one increment). */
typedef struct {
  rlx_gstacks keys;
  uint32_t (*slot)[2]; /* {stamp, offset + 1} */
  size_t cap_slot;
  uint32_t stamp;
} rlx_gset;

/* Scratch for rlx_gmatch_try: a worklist, two stack sets, a buffer and
 * the sets of the stacks an expansion has seen and put out. */
typedef struct {
  rlx_gstacks a, b, c;
  rlx_gset seen, put;
  uint32_t *tmp;
  size_t cap_tmp;
} rlx_gscratch;

void rlx_gscratch_free(rlx_gscratch *w);
/* Would in (with its partial code point u) still continue after bytes?
 * 1 yes (*out, *u_out: the result; out is one of w's sets), 0 no, or
 * the (negative) status of an error: out of memory, too many parses. */
int rlx_gmatch_try(const rlx_llm_grammar *g, const rlx_gstacks *in, rlx_gutf8 u, const unsigned char *bytes,
                   size_t n, rlx_gscratch *w, const rlx_gstacks **out, rlx_gutf8 *u_out);
/* The state's stacks and partial code point, and replacing them. */
const rlx_gstacks *rlx_gstate_stacks(const rlx_llm_grammar_state *s, rlx_gutf8 *u);
const rlx_llm_grammar *rlx_gstate_grammar(const rlx_llm_grammar_state *s);
rlx_status rlx_gstate_set(rlx_llm_grammar_state *s, const rlx_gstacks *st, rlx_gutf8 u);

/* ---- the byte automaton, built lazily (grammar_dfa.c) ---- */
typedef struct rlx_gdfa rlx_gdfa;
rlx_status rlx_gdfa_new(const rlx_llm_grammar *g, rlx_gdfa **out);
void rlx_gdfa_free(rlx_gdfa *d);
/* The state of stacks st with partial code point u (added when new; the
 * states may all be forgotten first, which makes earlier ids invalid). */
rlx_status rlx_gdfa_intern(rlx_gdfa *d, const rlx_gstacks *st, rlx_gutf8 u, int32_t *id);
/* *to: the state after bytes from state from, or -1 when the grammar
 * refuses them. */
rlx_status rlx_gdfa_walk(rlx_gdfa *d, int32_t from, const unsigned char *bytes, size_t n, int32_t *to);
int rlx_gdfa_complete(const rlx_gdfa *d, int32_t id);
/* Counts the times the states were forgotten (an id is valid within one). */
uint64_t rlx_gdfa_epoch(const rlx_gdfa *d);
/* A state's stacks (a view into the automaton, valid until it next grows)
 * and partial code point. */
const rlx_gstacks *rlx_gdfa_stacks(const rlx_gdfa *d, int32_t id, rlx_gutf8 *u, rlx_gstacks *view);

/* ---- sampling under a grammar (grammar_sample.c) ---- */
struct rlx_tokenizer;
struct rlx_sampler;
typedef struct rlx_gsampler rlx_gsampler;
/* The vocab's pieces are read once here; g must outlive the sampler. */
rlx_status rlx_gsampler_new(const rlx_llm_grammar *g, const struct rlx_tokenizer *t, int32_t n_vocab,
                            rlx_gsampler **out);
void rlx_gsampler_free(rlx_gsampler *gs);
/* The next token by s among those the grammar allows (greedy: s's pick of
 * the unmasked logits when allowed, else of the masked ones). */
rlx_status rlx_gsampler_sample(rlx_gsampler *gs, struct rlx_sampler *s, int greedy, const float *logits,
                               const int32_t *history, size_t n_history, int32_t *id);
/* Moves the grammar on by token id (an allowed one). */
rlx_status rlx_gsampler_accept(rlx_gsampler *gs, int32_t id);

#endif
