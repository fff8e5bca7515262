/* make_test_lm.h - the tokenizer vocabularies build/make_test_lm trains from
 * a text corpus (tools/make_test_lm_vocab.c): a SentencePiece-style vocab
 * for the "llama" tokenizer and a byte-level BPE vocab with merges for the
 * "gpt2" one.  Training is deterministic (ties broken by the pieces' bytes). */
#ifndef MAKE_TEST_LM_H
#define MAKE_TEST_LM_H

#include <stddef.h>
#include <stdint.h>

/* tokenizer.ggml.token_type values */
enum { TOK_NORMAL = 1, TOK_UNKNOWN = 2, TOK_CONTROL = 3, TOK_USER_DEFINED = 4, TOK_UNUSED = 5, TOK_BYTE = 6 };

typedef struct {
  int32_t n_tokens;
  char **tokens;      /* NUL-terminated UTF-8 */
  float *scores;      /* NULL: none (gpt2) */
  int32_t *types;
  int32_t n_merges;   /* gpt2: "left right" in byte-level symbols */
  char **merges;
  int32_t bos, eos, unk, pad; /* -1: none */
} lm_vocab;

/* "llama": <unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then the
 * pieces ('\xe2\x96\x81' for spaces) learned by merging frequent pairs, then
 * the corpus's frequent characters; scores decrease along the pieces.
 * n_vocab is the wanted total; fewer when the corpus runs out of pairs.
 * Returns 0 and prints a message on failure. */
int lm_vocab_train_spm(const char *text, size_t len, int32_t n_vocab, lm_vocab *v);
/* "gpt2" (pre "qwen2"): the 256 byte-level symbols, one token per learned
 * merge, then <|endoftext|>, <|im_start|>, <|im_end|> (CONTROL). */
int lm_vocab_train_bpe(const char *text, size_t len, int32_t n_vocab, lm_vocab *v);
void lm_vocab_free(lm_vocab *v);

#endif
