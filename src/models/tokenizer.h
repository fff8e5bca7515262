/* tokenizer.h - text <-> token ids for GGUF language models, matching
 * llama.cpp's tokenizers (src/llama-vocab.cpp, src/unicode.cpp there):
 *   "llama": SentencePiece-style (SPM) - space prefix, spaces as U+2581,
 *            bigram merges by piece score, <0xNN> byte fallback;
 *   "gpt2":  byte-level BPE - a pre-tokenizer regex chosen by
 *            tokenizer.ggml.pre (default, gpt-2, llama3, qwen2 families),
 *            GPT-2's byte-to-unicode mapping, merges by rank.
 * Special tokens (CONTROL, USER_DEFINED, UNKNOWN types) found in the text are
 * split out first, longest first.  Internal API for the model code; every
 * call returns rlx_status with a message in rlx_last_error(), never aborts.
 *
 * Size conventions: a call that writes into (buf, cap) sets *len (or
 * *n_ids) to what the full result needs even when cap is too small, and then
 * returns RLX_ERR_INVALID_ARG, so callers can size a buffer and call again.
 * Byte outputs get a NUL after the bytes when cap > *len.
 *
 * Invalid UTF-8 input never fails: SPM works on bytes (a bad byte falls back
 * to its <0xNN> token); BPE decodes leniently like llama.cpp (each byte that
 * does not start a well-formed sequence becomes U+FFFD; overlong forms and
 * surrogates are decoded as their code point; a value past U+10FFFF counts
 * as invalid). */
#ifndef RLX_TOKENIZER_H
#define RLX_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "rlx.h"
#include "rlx_gguf.h"

#define RLX_TOKEN_NULL (-1)

typedef struct rlx_tokenizer rlx_tokenizer;

/* Reads tokenizer.ggml.*: model ("llama" | "gpt2"), tokens, scores (f32 or
 * i32, optional), token_type (i32, optional), merges (gpt2), pre (gpt2),
 * bos/eos/eot/eom/unknown/padding_token_id, add_bos_token, add_eos_token,
 * add_space_prefix; missing keys take llama.cpp's defaults per model
 * ("llama": bos 1, eos 2, unk 0, add_bos, add_space_prefix; "gpt2": bos = eos
 * = 11 if the vocab has it, no BOS added except for llama3-style pre).
 * A missing or malformed required key -> RLX_ERR_INVALID_ARG naming it; an
 * unknown model or pre -> RLX_ERR_UNSUPPORTED.  A special id outside the
 * vocab is ignored (the default stays), as llama.cpp does. */
rlx_status rlx_tokenizer_from_gguf(const rlx_gguf *g, rlx_tokenizer **out);
void rlx_tokenizer_free(rlx_tokenizer *t);

int32_t rlx_tokenizer_n_vocab(const rlx_tokenizer *t);
int32_t rlx_tokenizer_bos(const rlx_tokenizer *t); /* RLX_TOKEN_NULL if none */
int32_t rlx_tokenizer_eos(const rlx_tokenizer *t);
int32_t rlx_tokenizer_eot(const rlx_tokenizer *t);
int32_t rlx_tokenizer_eom(const rlx_tokenizer *t);
int32_t rlx_tokenizer_unk(const rlx_tokenizer *t);
int32_t rlx_tokenizer_pad(const rlx_tokenizer *t);
int rlx_tokenizer_add_bos(const rlx_tokenizer *t); /* add_bos_token as resolved */
/* End of generation: eos, eot, eom, fim pad/rep/sep and the tokens llama.cpp
 * recognises by text (<|im_end|>, <|endoftext|>, <end_of_turn>, </s>, ...). */
int rlx_tokenizer_is_eog(const rlx_tokenizer *t, int32_t id);
/* Control (or unknown-type) token: rendered only on request. */
int rlx_tokenizer_is_control(const rlx_tokenizer *t, int32_t id);
const char *rlx_tokenizer_model(const rlx_tokenizer *t); /* "llama" | "gpt2" */
const char *rlx_tokenizer_pre(const rlx_tokenizer *t);   /* as resolved: "default", "gpt-2", "llama3", "qwen2" */
/* The token's text as stored in the vocab (not NUL-terminated). */
rlx_status rlx_tokenizer_token_text(const rlx_tokenizer *t, int32_t id, const char **text, size_t *len);

/* add_special: -1 as the metadata says (BOS when add_bos_token, EOS when
 * add_eos_token: llama.cpp's add_special = true); 0 none; 1 BOS always (an
 * error if the vocab has none), EOS as the metadata says.
 * parse_special: 1 lets control tokens in the text ("<|im_start|>", "<s>")
 * become their ids; user-defined tokens are split out either way. */
rlx_status rlx_tokenizer_encode(const rlx_tokenizer *t, const char *text, size_t len, int add_special,
                                int parse_special, int32_t *ids, size_t cap, size_t *n_ids);

/* The same over text cut into parts: part i is text[ends[i-1], ends[i])
 * (ends ascending, the last = len) and control tokens are parsed in it only
 * when parse_special[i]; plain text is tokenized across part boundaries as
 * if uncut (a chat template's own text parsed, the user's not).  continued:
 * the text follows ids already made (SPM adds no space prefix to its
 * start). */
rlx_status rlx_tokenizer_encode_parts(const rlx_tokenizer *t, const char *text, size_t len, const size_t *ends,
                                      const unsigned char *parse_special, size_t n_parts, int add_special,
                                      int continued, int32_t *ids, size_t cap, size_t *n_ids);

/* The bytes token id stands for (llama.cpp's token_to_piece, lstrip 0):
 * SPM U+2581 -> ' ', <0xNN> byte tokens -> the byte; BPE byte-level
 * characters -> bytes; user-defined tokens as written; control and unknown
 * tokens only when special != 0 (else empty); unused/undefined types empty. */
rlx_status rlx_tokenizer_piece(const rlx_tokenizer *t, int32_t id, char *buf, size_t cap, size_t *len,
                               int special);

/* llama.cpp's detokenize.  skip_special = 1: remove_special (a leading BOS
 * and a trailing EOS are dropped when the metadata adds them) and control
 * tokens render as nothing; 0: every token rendered, control text included.
 * The first rendered piece loses one leading space when add_space_prefix is
 * set (SPM), except right after a dropped BOS, as llama.cpp does; BPE
 * vocabs with clean_up_tokenization_spaces (gpt-2, default, llama3) get
 * llama.cpp's space clean-up (" ." -> ".", " 's" -> "'s", ...). */
rlx_status rlx_tokenizer_decode(const rlx_tokenizer *t, const int32_t *ids, size_t n, char *buf, size_t cap,
                                size_t *len, int skip_special);

/* Streaming detokenizer for generated tokens: each push emits the token's
 * piece (lstrip 0, like llama.cpp's common_token_to_piece) as complete
 * UTF-8 only, holding back a trailing partial multibyte sequence until the
 * next token completes it; bytes that cannot be part of a well-formed
 * sequence come out as U+FFFD (one per byte).  flush emits what is held as
 * U+FFFD and resets.  On a too-small cap nothing is consumed (*len says the
 * size needed; at most 3 + 3 * piece bytes). */
typedef struct {
  unsigned char held[4];
  uint32_t n_held;
  int special; /* render control tokens */
} rlx_detok;

void rlx_detok_init(rlx_detok *d, int special);
rlx_status rlx_detok_push(rlx_detok *d, const rlx_tokenizer *t, int32_t id, char *out, size_t cap, size_t *len);
rlx_status rlx_detok_flush(rlx_detok *d, char *out, size_t cap, size_t *len);
/* in[0, n) as the streaming detokenizer would hand it out, whole: each byte
 * that cannot begin a well-formed sequence becomes U+FFFD, and so does a
 * character cut short by the end (one for all of it).  Sizing as above. */
rlx_status rlx_text_as_streamed(const char *in, size_t n, char *out, size_t cap, size_t *len);

#endif
