/* tokenizer_impl.h - the tokenizer's internals, shared by tokenizer.c (vocab
 * loading, lookups, special tokens, encode), tokenizer_spm.c,
 * tokenizer_bpe.c and tokenizer_text.c (pieces, decode, streaming). */
#ifndef RLX_TOKENIZER_IMPL_H
#define RLX_TOKENIZER_IMPL_H

#include <stddef.h>
#include <stdint.h>
#include "tokenizer.h"

/* Token attributes: llama.cpp's llama_token_attr bits, plus EOG. */
enum {
  TOK_UNDEFINED = 0,
  TOK_UNKNOWN = 1 << 0,
  TOK_UNUSED = 1 << 1,
  TOK_NORMAL = 1 << 2,
  TOK_CONTROL = 1 << 3,
  TOK_USER_DEFINED = 1 << 4,
  TOK_BYTE = 1 << 5,
  TOK_EOG = 1 << 14
};

typedef enum { TOK_SPM = 1, TOK_BPE = 2 } tok_type;
/* Pre-tokenizer regex families (tokenizer_bpe.c). */
typedef enum { PRE_DEFAULT = 0, PRE_GPT2, PRE_LLAMA3, PRE_QWEN2 } tok_pre;

struct rlx_tokenizer {
  tok_type type;
  tok_pre pre;
  const char *model_name, *pre_name;
  int32_t n_vocab;

  char *text;         /* every token's text, back to back */
  size_t text_bytes;
  uint32_t *text_off; /* n_vocab + 1 */
  float *scores;      /* n_vocab */
  uint16_t *attr;     /* n_vocab */

  char *piece;        /* the rendered piece of every token (special = 1) */
  size_t piece_bytes;
  uint32_t *piece_off; /* n_vocab + 1 */

  int32_t *slots;     /* text -> id: open addressing, -1 empty */
  uint32_t n_slots;   /* a power of two */

  uint64_t *merge_keys; /* (left id << 32 | right id) + 1, 0 empty */
  int32_t *merge_rank;
  uint32_t n_merge_slots; /* a power of two, or 0 */

  int32_t *special;   /* CONTROL | USER_DEFINED | UNKNOWN ids, longest text first */
  int32_t n_special;

  int32_t byte_tok[256]; /* SPM: <0xNN> (or the 1-byte token); BPE: the 1-byte token */

  int32_t bos, eos, eot, eom, unk, pad, fim_pre, fim_suf, fim_mid, fim_pad, fim_rep, fim_sep;
  int add_bos, add_eos, add_space_prefix, clean_spaces, ignore_merges;
};

/* Lookups (tokenizer.c). */
int32_t tok_find(const rlx_tokenizer *t, const char *s, size_t len); /* RLX_TOKEN_NULL if absent */
int32_t tok_merge_rank(const rlx_tokenizer *t, int32_t left, int32_t right); /* -1 if none */
static inline const char *tok_text(const rlx_tokenizer *t, int32_t id, size_t *len) {
  *len = t->text_off[id + 1] - t->text_off[id];
  return t->text + t->text_off[id];
}

/* Output of ids: written while they fit, always counted. */
typedef struct {
  int32_t *ids;
  size_t cap, n;
} tok_out;
static inline void tok_emit(tok_out *o, int32_t id) {
  if (o->n < o->cap) o->ids[o->n] = id;
  o->n++;
}

/* A growable scratch buffer through the allocator hook. */
typedef struct {
  void *p;
  size_t bytes;
} tok_buf;
int tok_reserve(tok_buf *b, size_t bytes); /* 0 on allocation failure */
void tok_buf_free(tok_buf *b);

/* Heap of merge candidates: lowest key first, then lowest left (both
 * tokenizers: SPM uses -score as key, BPE the rank). */
typedef struct {
  float key;
  int32_t left, right;
  uint32_t n_left, n_right; /* the symbols' byte lengths when pushed */
} tok_bigram;
typedef struct {
  tok_buf buf;
  size_t n;
} tok_heap;
int tok_heap_push(tok_heap *h, tok_bigram b); /* 0 on allocation failure */
int tok_heap_pop(tok_heap *h, tok_bigram *b);

/* Symbols of a word being merged (a doubly linked list over an array). */
typedef struct {
  uint32_t off, n;    /* bytes in the word */
  int32_t prev, next; /* -1 at the ends */
  int32_t id;         /* BPE: the token of the current text, or -1 */
} tok_sym;

/* UTF-8 length by lead byte, as llama.cpp's unicode_len_utf8 (1 for a
 * continuation byte, 4 for 0xF0..0xFF). */
static inline size_t tok_utf8_len(unsigned char c) {
  static const uint8_t lookup[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return lookup[c >> 4];
}
/* Lenient decode at s[*i] (llama.cpp's unicode_cpt_from_utf8 with its
 * U+FFFD-and-skip-one-byte recovery; values past U+10FFFF count as bad). */
uint32_t tok_utf8_decode(const unsigned char *s, size_t len, size_t *i);
size_t tok_utf8_encode(uint32_t cp, unsigned char out[4]);

/* Tokenizer bodies: append the ids of one text fragment. */
rlx_status tok_spm_fragment(const rlx_tokenizer *t, const char *text, size_t len, int space_prefix, tok_out *o);
rlx_status tok_bpe_fragment(const rlx_tokenizer *t, const char *text, size_t len, tok_out *o);
/* The pre-tokenizer's words of text as code-point counts (for tests). */
rlx_status tok_bpe_split(const rlx_tokenizer *t, const char *text, size_t len, uint32_t *lens, size_t cap,
                         size_t *n_words);
/* GPT-2 byte <-> unicode mapping (tokenizer_bpe.c). */
uint32_t tok_byte_to_cpt(unsigned char b);
int tok_cpt_to_byte(uint32_t cp); /* -1 if cp is not one of the 256 */
/* The piece of id, rendered with special = 1 (tokenizer_text.c); into buf
 * when it fits, returns its length (64-bit: counted without wrapping in
 * wasm32 too). */
uint64_t tok_render_piece(const rlx_tokenizer *t, int32_t id, char *buf, size_t cap);
/* Every token's piece is cached at load.  A piece is at most its token's
 * text, but for one rule: byte-level BPE renders each character outside
 * GPT-2's 256 as "[UNK_BYTE_0x<its hex><the whole token>]" (llama.cpp's),
 * quadratic in the token's length: 37,837 CJK characters would render to
 * 4 GiB.  A vocab whose pieces take more than TOK_PIECE_PER_TEXT_BYTE bytes
 * per byte of token text, plus TOK_PIECE_SLACK, is refused before they are
 * allocated (a real vocab's pieces are about its text; a few foreign
 * characters in short tokens fit many times over). */
#define TOK_PIECE_PER_TEXT_BYTE 16
#define TOK_PIECE_SLACK (1 << 20)

#endif
