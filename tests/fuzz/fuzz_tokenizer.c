/* fuzz_tokenizer.c - libFuzzer target: the GGUF tokenizers
 * (src/models/tokenizer*.c).  The bytes are text, encoded by an SPM vocab
 * (byte tokens, scored pieces, control and user-defined tokens) and by one
 * byte-level BPE vocab under each pre-tokenizer (qwen2, llama3, gpt-2,
 * default), with and without parsing special tokens.  Every call succeeds;
 * the ids are in the vocab; a buffer one id short is refused with the same
 * count; decode sizes itself exactly; the streaming detokenizer emits
 * well-formed UTF-8 only; and for well-formed UTF-8 input the BPE
 * tokenizers without clean-up give the text back byte for byte. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_gguf.h"
#include "../../src/models/tokenizer.h"
#include "fuzz_check.h"


#define N_TOK 4096
static int32_t ids[N_TOK + 8];
static char text[N_TOK * 64];

static rlx_tokenizer *load(rlx_gguf_writer *w) {
  uint64_t size;
  CHECK(rlx_gguf_writer_size(w, &size) == RLX_OK);
  void *mem = malloc((size_t)size);
  CHECK(rlx_gguf_writer_write_memory(w, mem, (size_t)size) == RLX_OK);
  rlx_gguf_writer_free(w);
  rlx_gguf *g;
  CHECK(rlx_gguf_open_memory(mem, (size_t)size, RLX_GGUF_NO_BUDGET, &g) == RLX_OK);
  rlx_tokenizer *t;
  CHECK(rlx_tokenizer_from_gguf(g, &t) == RLX_OK);
  rlx_gguf_free(g);
  free(mem);
  return t;
}

static rlx_tokenizer *make_spm(void) {
  static char store[300][16];
  static const char *tok[300];
  static float score[300];
  static int32_t type[300];
  static const char *const pieces[] = {"\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "a", "ba", "bab",
                                       "\xC3\xA9", "<|im_start|>", "<tool>", "</s>", "<s>", "<unk>"};
  int n = 0;
  for (int b = 0; b < 256; b++, n++) {
    snprintf(store[n], 16, "<0x%02X>", b);
    type[n] = 6;
  }
  for (size_t i = 0; i < sizeof pieces / sizeof pieces[0]; i++, n++) {
    strcpy(store[n], pieces[i]);
    score[n] = -(float)(i % 5);
    type[n] = pieces[i][0] == '<' ? (strcmp(pieces[i], "<tool>") == 0 ? 4 : 3) : 1;
  }
  for (int i = 0; i < n; i++) tok[i] = store[i];
  rlx_gguf_writer *w;
  CHECK(rlx_gguf_writer_new(&w) == RLX_OK);
  CHECK(rlx_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama", 5) == RLX_OK);
  CHECK(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tok, NULL, (uint64_t)n) == RLX_OK);
  CHECK(rlx_gguf_writer_add_array(w, "tokenizer.ggml.scores", RLX_GGUF_VAL_F32, score, (uint64_t)n) == RLX_OK);
  CHECK(rlx_gguf_writer_add_array(w, "tokenizer.ggml.token_type", RLX_GGUF_VAL_I32, type, (uint64_t)n) == RLX_OK);
  uint32_t bos = 268, eos = 266, unk = 268;
  CHECK(rlx_gguf_writer_add(w, "tokenizer.ggml.bos_token_id", RLX_GGUF_VAL_U32, &bos) == RLX_OK);
  CHECK(rlx_gguf_writer_add(w, "tokenizer.ggml.eos_token_id", RLX_GGUF_VAL_U32, &eos) == RLX_OK);
  CHECK(rlx_gguf_writer_add(w, "tokenizer.ggml.unknown_token_id", RLX_GGUF_VAL_U32, &unk) == RLX_OK);
  return load(w);
}

static uint32_t gpt2_char(int b) {
  int pr = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE, n = 0;
  if (pr) return (uint32_t)b;
  for (int c = 0; c < b; c++) n += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
  return 256u + (uint32_t)n;
}

static rlx_tokenizer *make_bpe(const char *pre) {
  static char store[270][16];
  static const char *tok[270];
  static int32_t type[270];
  static const char *const extra[] = {"\xC4\xA0t", "he", "\xC4\xA0the", "12", "'s", "<|endoftext|>", "<|im_end|>"};
  static const char *const merges[] = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "1 2", "' s"};
  int n = 0;
  for (int b = 0; b < 256; b++, n++) {
    uint32_t c = gpt2_char(b);
    if (c < 0x80) store[n][0] = (char)c, store[n][1] = 0;
    else store[n][0] = (char)(0xC0 | (c >> 6)), store[n][1] = (char)(0x80 | (c & 63)), store[n][2] = 0;
    type[n] = 1;
  }
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++, n++) {
    strcpy(store[n], extra[i]);
    type[n] = extra[i][0] == '<' ? 3 : 1;
  }
  for (int i = 0; i < n; i++) tok[i] = store[i];
  rlx_gguf_writer *w;
  CHECK(rlx_gguf_writer_new(&w) == RLX_OK);
  CHECK(rlx_gguf_writer_add_string(w, "tokenizer.ggml.model", "gpt2", 4) == RLX_OK);
  CHECK(rlx_gguf_writer_add_string(w, "tokenizer.ggml.pre", pre, strlen(pre)) == RLX_OK);
  CHECK(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tok, NULL, (uint64_t)n) == RLX_OK);
  CHECK(rlx_gguf_writer_add_array(w, "tokenizer.ggml.token_type", RLX_GGUF_VAL_I32, type, (uint64_t)n) == RLX_OK);
  CHECK(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", merges, NULL, 5) == RLX_OK);
  uint32_t bos = 261;
  CHECK(rlx_gguf_writer_add(w, "tokenizer.ggml.bos_token_id", RLX_GGUF_VAL_U32, &bos) == RLX_OK);
  CHECK(rlx_gguf_writer_add(w, "tokenizer.ggml.eos_token_id", RLX_GGUF_VAL_U32, &bos) == RLX_OK);
  return load(w);
}

static void run(const rlx_tokenizer *t, const uint8_t *data, size_t size, int parse, int exact) {
  size_t n, n2, len, len2;
  CHECK(rlx_tokenizer_encode(t, (const char *)data, size, -1, parse, ids, N_TOK, &n) == RLX_OK || n > N_TOK);
  if (n > N_TOK) return;
  int32_t vocab = rlx_tokenizer_n_vocab(t);
  for (size_t i = 0; i < n; i++) CHECK(ids[i] >= 0 && ids[i] < vocab);
  if (n) {
    CHECK(rlx_tokenizer_encode(t, (const char *)data, size, -1, parse, ids + N_TOK, 0, &n2) == RLX_ERR_INVALID_ARG);
    CHECK(n2 == n);
  }
  for (int skip = 0; skip < 2; skip++) { /* sizing with cap 0 reports the exact length */
    rlx_status st = rlx_tokenizer_decode(t, ids, n, NULL, 0, &len, skip);
    CHECK(rlx_tokenizer_decode(t, ids, n, text, sizeof text, &len2, skip) == RLX_OK);
    CHECK(len == len2 && (st == RLX_OK) == (len == 0));
  }
  if (exact && !parse && valid_utf8(data, size)) {
    CHECK(rlx_tokenizer_encode(t, (const char *)data, size, 0, 0, ids, N_TOK, &n) == RLX_OK);
    CHECK(rlx_tokenizer_decode(t, ids, n, text, sizeof text, &len, 1) == RLX_OK);
    CHECK(len == size && memcmp(text, data, size) == 0);
  }
  rlx_detok d;
  rlx_detok_init(&d, parse);
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    CHECK(rlx_detok_push(&d, t, ids[i], text + o, sizeof text - o, &len) == RLX_OK);
    o += len;
  }
  CHECK(rlx_detok_flush(&d, text + o, sizeof text - o, &len) == RLX_OK);
  o += len;
  CHECK(valid_utf8((const uint8_t *)text, o));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static rlx_tokenizer *ts[5];
  if (!ts[0]) {
    ts[0] = make_spm();
    ts[1] = make_bpe("qwen2");
    ts[2] = make_bpe("llama3");
    ts[3] = make_bpe("gpt-2");
    ts[4] = make_bpe("default");
  }
  if (size > 16384) return 0;
  for (int k = 0; k < 5; k++)
    for (int parse = 0; parse < 2; parse++) run(ts[k], data, size, parse, k == 1);
  return 0;
}
