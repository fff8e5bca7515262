/* test_tokenizer.c - the GGUF tokenizers (src/models/tokenizer.h).
 *
 * Small vocabs are written with the GGUF writer and read back from memory:
 * an SPM ("llama") vocab with <0xNN> byte tokens, scored pieces, control and
 * user-defined tokens, and a byte-level BPE ("gpt2") vocab with ranked
 * merges.  Exact ids are checked for hand-worked cases (merges by score and
 * by rank, leftmost on ties, space prefix and its re-adding after special
 * tokens, byte fallback, unknown token), the pre-tokenizers' word splits
 * (qwen2, llama3, gpt-2, default: digits, punctuation, contractions,
 * whitespace runs, CJK, emoji, combining marks), llama.cpp's detokenize
 * rules, round trips over a corpus, the streaming detokenizer across split
 * multibyte characters, invalid UTF-8, tiny buffers, malformed metadata, and
 * every allocation failing in turn (no leak, no crash). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check_alloc.h"
#include "rlx_gguf.h"
#include "../../src/models/tokenizer.h"
#include "../../src/models/tokenizer_impl.h"

/* ---- building vocabs --------------------------------------------------------------- */
#define ABSENT INT64_MIN
typedef struct {
  const char *model, *pre;
  const char *const *tokens;
  size_t n_tokens;
  const float *scores;
  size_t n_scores;
  const int32_t *types;
  size_t n_types;
  const char *const *merges;
  size_t n_merges;
  int64_t bos, eos, unk, add_bos, add_eos, add_space_prefix;
  void (*extra)(rlx_gguf_writer *w);
} spec;

static spec blank(void) {
  spec s;
  memset(&s, 0, sizeof s);
  s.bos = s.eos = s.unk = s.add_bos = s.add_eos = s.add_space_prefix = ABSENT;
  return s;
}

static void *g_mem;
static rlx_gguf *make_gguf(const spec *s) {
  rlx_gguf_writer *w;
  assert_int_equal(rlx_gguf_writer_new(&w), RLX_OK);
  if (s->model) assert_int_equal(rlx_gguf_writer_add_string(w, "tokenizer.ggml.model", s->model, strlen(s->model)), RLX_OK);
  if (s->pre) assert_int_equal(rlx_gguf_writer_add_string(w, "tokenizer.ggml.pre", s->pre, strlen(s->pre)), RLX_OK);
  if (s->tokens)
    assert_int_equal(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", s->tokens, NULL, s->n_tokens), RLX_OK);
  if (s->scores)
    assert_int_equal(rlx_gguf_writer_add_array(w, "tokenizer.ggml.scores", RLX_GGUF_VAL_F32, s->scores, s->n_scores),
                     RLX_OK);
  if (s->types)
    assert_int_equal(rlx_gguf_writer_add_array(w, "tokenizer.ggml.token_type", RLX_GGUF_VAL_I32, s->types, s->n_types),
                     RLX_OK);
  if (s->merges)
    assert_int_equal(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", s->merges, NULL, s->n_merges), RLX_OK);
  struct {
    const char *key;
    int64_t v;
    int is_bool;
  } nums[] = {{"tokenizer.ggml.bos_token_id", s->bos, 0},        {"tokenizer.ggml.eos_token_id", s->eos, 0},
              {"tokenizer.ggml.unknown_token_id", s->unk, 0},    {"tokenizer.ggml.add_bos_token", s->add_bos, 1},
              {"tokenizer.ggml.add_eos_token", s->add_eos, 1},   {"tokenizer.ggml.add_space_prefix", s->add_space_prefix, 1}};
  for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
    if (nums[i].v == ABSENT) continue;
    uint32_t u = (uint32_t)nums[i].v;
    uint8_t b = (uint8_t)nums[i].v;
    assert_int_equal(rlx_gguf_writer_add(w, nums[i].key, nums[i].is_bool ? RLX_GGUF_VAL_BOOL : RLX_GGUF_VAL_U32,
                                         nums[i].is_bool ? (const void *)&b : (const void *)&u),
                     RLX_OK);
  }
  if (s->extra) s->extra(w);
  uint64_t size;
  assert_int_equal(rlx_gguf_writer_size(w, &size), RLX_OK);
  g_mem = malloc((size_t)size);
  assert_int_equal(rlx_gguf_writer_write_memory(w, g_mem, (size_t)size), RLX_OK);
  rlx_gguf_writer_free(w);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_memory(g_mem, (size_t)size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  return g;
}
static void drop_gguf(rlx_gguf *g) {
  rlx_gguf_free(g);
  free(g_mem);
  g_mem = NULL;
}

static rlx_status build(const spec *s, rlx_tokenizer **t) {
  rlx_gguf *g = make_gguf(s);
  rlx_status st = rlx_tokenizer_from_gguf(g, t);
  drop_gguf(g);
  return st;
}

/* SPM: 0 <unk>, 1 <s>, 2 </s>, 3..258 <0x00>..<0xFF>, then PIECES. */
#define BYTE(b) (3 + (b))
static const struct {
  const char *text;
  float score;
  int32_t type;
} PIECES[] = {
    {"\xE2\x96\x81", -1, 1},          /* 259 */
    {"h", -2, 1},      {"e", -2, 1},  {"l", -2, 1},  {"o", -2, 1}, {"a", -2, 1}, /* 260..264 */
    {"ll", -4, 1},     {"llo", -3, 1}, {"he", -5, 1}, {"hello", -2.5f, 1},          /* 265..268 */
    {"\xE2\x96\x81hello", -1.5f, 1}, {"\xE2\x96\x81h", -6, 1}, {"aa", -4, 1},       /* 269..271 */
    {"<|im_start|>", 0, 3}, {"<tool>", 0, 4},                                        /* 272, 273 */
    {"w", -2, 1}, {"\xE2\x96\x81w", -3, 1}, {"or", -3, 1}, {"ld", -3, 1},            /* 274..277 */
    {"\xE2\x96\x81wor", -4, 1}, {"\xE2\x96\x81world", -2, 1},                        /* 278, 279 */
    {"r", -2, 1}, {"d", -2, 1}, {"<|im_end|>", 0, 1},                                /* 280..282 */
};
#define N_PIECES (sizeof PIECES / sizeof PIECES[0])
enum { SP = 259, T_A = 264, T_AA = 271, T_HELLO = 268, T_SPHELLO = 269, T_IMSTART = 272, T_TOOL = 273,
       T_SPWORLD = 279, T_IMEND = 282, N_SPM = 259 + N_PIECES };

static char spm_text[N_SPM][24];
static const char *spm_tokens[N_SPM];
static float spm_scores[N_SPM + 1];
static int32_t spm_types[N_SPM + 1]; /* one spare: a test writes one too many */

static spec spm_spec(int with_bytes) {
  size_t n = 0;
  const char *fixed[3] = {"<unk>", "<s>", "</s>"};
  for (int i = 0; i < 3; i++, n++) {
    strcpy(spm_text[n], fixed[i]);
    spm_types[n] = i == 0 ? 2 : 3;
    spm_scores[n] = 0;
  }
  for (int b = 0; b < 256; b++, n++) {
    if (with_bytes) snprintf(spm_text[n], 24, "<0x%02X>", b);
    else snprintf(spm_text[n], 24, "[nobyte%d]", b);
    spm_types[n] = with_bytes ? 6 : 5;
    spm_scores[n] = 0;
  }
  for (size_t i = 0; i < N_PIECES; i++, n++) {
    strcpy(spm_text[n], PIECES[i].text);
    spm_scores[n] = PIECES[i].score;
    spm_types[n] = PIECES[i].type;
  }
  for (size_t i = 0; i < n; i++) spm_tokens[i] = spm_text[i];
  spec s = blank();
  s.model = "llama";
  s.tokens = spm_tokens, s.n_tokens = n;
  s.scores = spm_scores, s.n_scores = n;
  s.types = spm_types, s.n_types = n;
  return s;
}

/* BPE: ids 0..255 the byte-level character of byte id, then merge results
 * and three control tokens. */
static const char *const BPE_MERGES[] = {"\xC4\xA0 t", "h e", "l l", "\xC4\xA0t he", "he ll", "hell o",
                                         "\xC4\xA0 w", "o r", "\xC4\xA0w or", "l d", "\xC4\xA0wor ld", "' s", "1 2"};
static const char *const BPE_WORDS[] = {"\xC4\xA0t", "he", "ll", "\xC4\xA0the", "hell", "hello", "\xC4\xA0w", "or",
                                        "\xC4\xA0wor", "ld", "\xC4\xA0world", "'s", "12",
                                        "<|endoftext|>", "<|im_start|>", "<|im_end|>"};
enum { B_THE = 259, B_HELLO = 261, B_WORLD = 266, B_S = 267, B_12 = 268, B_EOT = 269, B_IMSTART = 270,
       B_IMEND = 271, N_BPE = 272 };
static char bpe_text[N_BPE][16];
static const char *bpe_tokens[N_BPE];
static int32_t bpe_types[N_BPE];

/* GPT-2's bytes_to_unicode, written out independently. */
static uint32_t gpt2_char(int b) {
  int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  if (printable) return (uint32_t)b;
  int n = 0;
  for (int c = 0; c < b; c++)
    n += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF));
  return 256u + (uint32_t)n;
}

static spec bpe_spec(const char *pre) {
  for (int b = 0; b < 256; b++) {
    uint32_t c = gpt2_char(b);
    if (c < 0x80) bpe_text[b][0] = (char)c, bpe_text[b][1] = 0;
    else bpe_text[b][0] = (char)(0xC0 | (c >> 6)), bpe_text[b][1] = (char)(0x80 | (c & 63)), bpe_text[b][2] = 0;
    bpe_types[b] = 1;
  }
  for (int i = 0; i < N_BPE - 256; i++) {
    strcpy(bpe_text[256 + i], BPE_WORDS[i]);
    bpe_types[256 + i] = 256 + i >= B_EOT ? 3 : 1;
  }
  for (int i = 0; i < N_BPE; i++) bpe_tokens[i] = bpe_text[i];
  spec s = blank();
  s.model = "gpt2";
  s.pre = pre;
  s.tokens = bpe_tokens, s.n_tokens = N_BPE;
  s.types = bpe_types, s.n_types = N_BPE;
  s.merges = BPE_MERGES, s.n_merges = sizeof BPE_MERGES / sizeof BPE_MERGES[0];
  s.bos = B_EOT, s.eos = B_EOT;
  return s;
}

static rlx_tokenizer *spm(void) {
  spec s = spm_spec(1);
  rlx_tokenizer *t;
  assert_int_equal(build(&s, &t), RLX_OK);
  return t;
}
static rlx_tokenizer *bpe(const char *pre) {
  spec s = bpe_spec(pre);
  rlx_tokenizer *t;
  rlx_status st = build(&s, &t);
  if (st != RLX_OK) fail_msg("%s", rlx_last_error());
  return t;
}

/* ---- checking helpers ----------------------------------------------------------------- */
static size_t enc(const rlx_tokenizer *t, const char *s, int add, int parse, int32_t *ids, size_t cap) {
  size_t n;
  rlx_status st = rlx_tokenizer_encode(t, s, strlen(s), add, parse, ids, cap, &n);
  if (st != RLX_OK) fail_msg("encode '%s': %s", s, rlx_last_error());
  return n;
}

static void expect_ids(const rlx_tokenizer *t, const char *s, int add, int parse, const int32_t *want, size_t n_want) {
  int32_t ids[256];
  size_t n = enc(t, s, add, parse, ids, 256);
  int same = n == n_want;
  for (size_t i = 0; same && i < n; i++) same = ids[i] == want[i];
  if (!same) {
    char got[1024];
    size_t o = 0;
    for (size_t i = 0; i < n && o < 1000; i++) o += (size_t)snprintf(got + o, sizeof got - o, "%d ", ids[i]);
    got[o] = 0;
    fail_msg("encode '%s': got [%s] (%zu ids, want %zu)", s, got, n, n_want);
  }
}
#define EXPECT(t, s, add, parse, ...)                                          \
  do {                                                                         \
    const int32_t want_[] = {__VA_ARGS__};                                     \
    expect_ids(t, s, add, parse, want_, sizeof want_ / sizeof want_[0]);       \
  } while (0)

static const char *dec(const rlx_tokenizer *t, const int32_t *ids, size_t n, int skip) {
  static char buf[4096];
  size_t len;
  rlx_status st = rlx_tokenizer_decode(t, ids, n, buf, sizeof buf, &len, skip);
  if (st != RLX_OK) fail_msg("decode: %s", rlx_last_error());
  assert_int_equal(strlen(buf), len);
  return buf;
}

/* The words of s under t's pre-tokenizer, joined by '|'. */
static const char *words(const rlx_tokenizer *t, const char *s) {
  static char out[1024];
  uint32_t lens[128];
  size_t n, o = 0, at = 0;
  assert_int_equal(tok_bpe_split(t, s, strlen(s), lens, 128, &n), RLX_OK);
  for (size_t k = 0; k < n; k++) {
    if (k) out[o++] = '|';
    for (uint32_t c = 0; c < lens[k]; c++) {
      size_t next = at;
      tok_utf8_decode((const unsigned char *)s, strlen(s), &next);
      memcpy(out + o, s + at, next - at);
      o += next - at;
      at = next;
    }
  }
  out[o] = 0;
  return out;
}

/* ---- SPM ---------------------------------------------------------------------------------- */
static void spm_merges_by_score(void **state) {
  (void)state;
  rlx_tokenizer *t = spm();
  assert_string_equal(rlx_tokenizer_model(t), "llama");
  assert_int_equal(rlx_tokenizer_n_vocab(t), N_SPM);
  assert_int_equal(rlx_tokenizer_bos(t), 1);
  assert_int_equal(rlx_tokenizer_eos(t), 2);
  assert_int_equal(rlx_tokenizer_unk(t), 0);
  EXPECT(t, "hello world", 0, 0, T_SPHELLO, T_SPWORLD);
  EXPECT(t, "hello world", -1, 0, 1, T_SPHELLO, T_SPWORLD); /* add_bos by default for llama */
  EXPECT(t, "hello world", 1, 0, 1, T_SPHELLO, T_SPWORLD);
  EXPECT(t, "aaa", 0, 0, SP, T_AA, T_A);                     /* equal scores: the leftmost pair first */
  EXPECT(t, "", -1, 0, 1);                                   /* '' -> [BOS], as SentencePiece */
  int32_t none[1];
  assert_int_equal(enc(t, "", 0, 0, none, 1), 0);
  rlx_tokenizer_free(t);
}

static void spm_byte_fallback_and_unknown(void **state) {
  (void)state;
  rlx_tokenizer *t = spm();
  EXPECT(t, "\xC3\xA9", 0, 0, SP, BYTE(0xC3), BYTE(0xA9));                          /* é */
  EXPECT(t, "\xF0\x9F\x98\x80", 0, 0, SP, BYTE(0xF0), BYTE(0x9F), BYTE(0x98), BYTE(0x80)); /* emoji */
  EXPECT(t, "\xFF", 0, 0, SP, BYTE(0xFF));                                          /* invalid UTF-8: a byte */
  EXPECT(t, "a\xC3", 0, 0, SP, T_A, BYTE(0xC3));                                    /* cut sequence */
  assert_string_equal(dec(t, (int32_t[]){BYTE(0xC3), BYTE(0xA9)}, 2, 1), "\xC3\xA9");
  rlx_tokenizer_free(t);
  spec s = spm_spec(0); /* no byte tokens: the unknown token, once per character */
  assert_int_equal(build(&s, &t), RLX_OK);
  EXPECT(t, "\xC3\xA9" "a", 0, 0, SP, 0, T_A);
  rlx_tokenizer_free(t);
}

static void spm_special_tokens_and_space_prefix(void **state) {
  (void)state;
  rlx_tokenizer *t = spm();
  EXPECT(t, "<|im_start|>hello", 0, 1, T_IMSTART, T_SPHELLO);
  /* the space prefix is re-added after every special token */
  EXPECT(t, "<|im_start|>hello<|im_start|>hello", 0, 1, T_IMSTART, T_SPHELLO, T_IMSTART, T_SPHELLO);
  EXPECT(t, "<|im_start|>hello", -1, 1, 1, T_IMSTART, T_SPHELLO);
  /* not parsed: plain text */
  int32_t ids[64];
  size_t n = enc(t, "<|im_start|>hello", 0, 0, ids, 64);
  for (size_t i = 0; i < n; i++) assert_int_not_equal(ids[i], T_IMSTART);
  assert_string_equal(dec(t, ids, n, 1), "<|im_start|>hello");
  /* user-defined tokens split out even without parse_special */
  EXPECT(t, "a<tool>b", 0, 0, SP, T_A, T_TOOL, SP, BYTE('b'));
  n = enc(t, "mixed <tool> user", 0, 0, ids, 64);
  assert_string_equal(dec(t, ids, n, 1), "mixed <tool>  user"); /* llama.cpp's re-added space */
  /* <|im_end|> was NORMAL: llama.cpp makes it CONTROL and end-of-generation */
  assert_true(rlx_tokenizer_is_eog(t, T_IMEND));
  assert_true(rlx_tokenizer_is_control(t, T_IMEND));
  assert_true(rlx_tokenizer_is_eog(t, 2));
  assert_false(rlx_tokenizer_is_eog(t, 1));
  assert_false(rlx_tokenizer_is_eog(t, -1));
  assert_false(rlx_tokenizer_is_eog(t, N_SPM));
  EXPECT(t, "<|im_end|>", 0, 1, T_IMEND);
  rlx_tokenizer_free(t);
  spec s = spm_spec(1); /* add_space_prefix = false, add_eos = true */
  s.add_space_prefix = 0;
  s.add_eos = 1;
  assert_int_equal(build(&s, &t), RLX_OK);
  EXPECT(t, "hello", -1, 0, 1, T_HELLO, 2);
  EXPECT(t, "hello", 0, 0, T_HELLO);
  rlx_tokenizer_free(t);
}

static void spm_pieces_and_decode(void **state) {
  (void)state;
  rlx_tokenizer *t = spm();
  char buf[64];
  size_t len;
  assert_int_equal(rlx_tokenizer_piece(t, T_SPHELLO, buf, sizeof buf, &len, 0), RLX_OK);
  assert_string_equal(buf, " hello");
  assert_int_equal(rlx_tokenizer_piece(t, 1, buf, sizeof buf, &len, 0), RLX_OK);
  assert_int_equal(len, 0);
  assert_int_equal(rlx_tokenizer_piece(t, 1, buf, sizeof buf, &len, 1), RLX_OK);
  assert_string_equal(buf, "<s>");
  assert_int_equal(rlx_tokenizer_piece(t, BYTE('A'), buf, sizeof buf, &len, 0), RLX_OK);
  assert_string_equal(buf, "A");
  assert_int_equal(rlx_tokenizer_piece(t, T_TOOL, buf, sizeof buf, &len, 0), RLX_OK);
  assert_string_equal(buf, "<tool>");
  /* llama.cpp: the leading space goes, except right after a dropped BOS */
  assert_string_equal(dec(t, (int32_t[]){T_SPHELLO, T_SPWORLD}, 2, 1), "hello world");
  assert_string_equal(dec(t, (int32_t[]){1, T_SPHELLO, T_SPWORLD}, 3, 1), " hello world");
  assert_string_equal(dec(t, (int32_t[]){1, T_SPHELLO, T_SPWORLD}, 3, 0), "<s> hello world");
  assert_string_equal(dec(t, (int32_t[]){T_IMSTART, T_SPHELLO}, 2, 1), " hello");
  assert_string_equal(dec(t, (int32_t[]){T_IMSTART, T_SPHELLO}, 2, 0), "<|im_start|> hello");
  assert_string_equal(dec(t, NULL, 0, 1), "");
  /* bad ids */
  assert_int_equal(rlx_tokenizer_piece(t, N_SPM, buf, sizeof buf, &len, 0), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_tokenizer_decode(t, (int32_t[]){-5}, 1, buf, sizeof buf, &len, 1), RLX_ERR_INVALID_ARG);
  rlx_tokenizer_free(t);
}

static const char *const CORPUS[] = {
    "hello world", "The quick brown fox jumps over the lazy dog.", "  two leading spaces", "trailing spaces   ",
    "tabs\tand\nnew\r\nlines\n\n", "caf\xC3\xA9 na\xC3\xAFve r\xC3\xA9sum\xC3\xA9", "cafe\xCC\x81 (combining)",
    "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\xE3\x81\xAE\xE6\x96\x87", "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C",
    "emoji \xF0\x9F\x98\x80 \xF0\x9F\x8E\x89\xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD", "I'm sure they'll say it's 3.14, we've $100!",
    "a", " ", "", "x  \n y", "1234567890", "\xE2\x80\x83" "em space\xC2\xA0" "nbsp", "mixed\x01\x7F control",
};
#define N_CORPUS (sizeof CORPUS / sizeof CORPUS[0])

static void round_trips(void **state) {
  (void)state;
  rlx_tokenizer *ts[5] = {spm(), bpe("qwen2"), bpe("llama3"), bpe("gpt-2"), bpe("default")};
  for (int k = 0; k < 5; k++) {
    for (size_t i = 0; i < N_CORPUS; i++) {
      int32_t ids[512];
      size_t n = enc(ts[k], CORPUS[i], 0, 1, ids, 512);
      char buf[2048];
      size_t len;
      /* clean-up of spaces (gpt-2, default, llama3) is not an inverse: decode raw pieces there */
      size_t o = 0;
      for (size_t j = 0; j < n; j++) {
        assert_int_equal(rlx_tokenizer_piece(ts[k], ids[j], buf + o, sizeof buf - o, &len, 1), RLX_OK);
        o += len;
      }
      buf[o] = 0;
      const char *want = CORPUS[i];
      if (k == 0 && o > 0) { /* SPM: the space prefix */
        assert_int_equal(buf[0], ' ');
        assert_string_equal(buf + 1, want);
      } else {
        assert_string_equal(buf, want);
      }
      if (k < 2) assert_string_equal(dec(ts[k], ids, n, 1), want); /* no clean-up for llama, qwen2 */
    }
    rlx_tokenizer_free(ts[k]);
  }
}

/* ---- BPE ---------------------------------------------------------------------------------- */
static void bpe_merges_by_rank(void **state) {
  (void)state;
  rlx_tokenizer *t = bpe("qwen2");
  assert_string_equal(rlx_tokenizer_model(t), "gpt2");
  assert_string_equal(rlx_tokenizer_pre(t), "qwen2");
  EXPECT(t, "hello world", 0, 0, B_HELLO, B_WORLD);
  EXPECT(t, "hello world", -1, 0, B_HELLO, B_WORLD); /* gpt2: no BOS unless add_bos_token */
  EXPECT(t, "hello world", 1, 0, B_EOT, B_HELLO, B_WORLD);
  EXPECT(t, " the", 0, 0, B_THE);
  EXPECT(t, "it's", 0, 0, 'i', 't', B_S);
  EXPECT(t, "12345", 0, 0, '1', '2', '3', '4', '5'); /* qwen2: one digit per word, "1 2" cannot apply */
  EXPECT(t, "<|im_start|>hello<|im_end|>", 0, 1, B_IMSTART, B_HELLO, B_IMEND);
  EXPECT(t, "\xFF" "a", 0, 0, 0xEF, 0xBF, 0xBD, 'a'); /* invalid UTF-8 -> U+FFFD */
  EXPECT(t, "\xC3\xA9", 0, 0, 0xC3, 0xA9);
  int32_t ids[64];
  size_t n = enc(t, "<|im_start|>hello", 0, 0, ids, 64);
  for (size_t i = 0; i < n; i++) assert_int_not_equal(ids[i], B_IMSTART);
  assert_true(rlx_tokenizer_is_eog(t, B_IMEND));
  assert_true(rlx_tokenizer_is_eog(t, B_EOT));
  assert_string_equal(dec(t, (int32_t[]){0xEF, 0xBF, 0xBD, 'a'}, 4, 1), "\xEF\xBF\xBD" "a");
  assert_string_equal(dec(t, (int32_t[]){B_IMSTART, B_HELLO}, 2, 1), "hello");
  assert_string_equal(dec(t, (int32_t[]){B_IMSTART, B_HELLO}, 2, 0), "<|im_start|>hello");
  rlx_tokenizer_free(t);
  t = bpe("llama3"); /* \p{N}{1,3}, BOS added by default */
  EXPECT(t, "12345", 0, 0, B_12, '3', '4', '5');
  EXPECT(t, "hello", -1, 0, B_EOT, B_HELLO);
  rlx_tokenizer_free(t);
  t = bpe("gpt-2");
  EXPECT(t, "12345", 0, 0, B_12, '3', '4', '5');
  n = enc(t, "it 's ok .", 0, 0, ids, 64);
  assert_string_equal(dec(t, ids, n, 1), "it's ok."); /* clean_up_tokenization_spaces */
  rlx_tokenizer_free(t);
}

static void pre_tokenizer_splits(void **state) {
  (void)state;
  rlx_tokenizer *q = bpe("qwen2"), *l = bpe("llama3"), *g = bpe("gpt-2"), *d = bpe("default");
  assert_string_equal(words(q, "Hello world"), "Hello| world");
  assert_string_equal(words(q, "I'm don't WE'LL"), "I|'m| don|'t| WE|'LL");
  assert_string_equal(words(q, "12345"), "1|2|3|4|5");
  assert_string_equal(words(q, "3.14"), "3|.|1|4");
  assert_string_equal(words(q, "$100"), "$|1|0|0");
  assert_string_equal(words(q, "a  b"), "a| | b");
  assert_string_equal(words(q, "a\n\nb"), "a|\n\n|b");
  assert_string_equal(words(q, "x  \n y"), "x|  \n| y");
  assert_string_equal(words(q, "hello!!! ok"), "hello|!!!| ok");
  assert_string_equal(words(q, " !!\n\nx"), " !!\n\n|x");
  assert_string_equal(words(q, "end   "), "end|   ");
  assert_string_equal(words(q, "\t\tx"), "\t|\tx");
  assert_string_equal(words(q, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"), "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E");
  assert_string_equal(words(q, "\xE4\xBD\xA0\xE5\xA5\xBD\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C"),
                      "\xE4\xBD\xA0\xE5\xA5\xBD|\xEF\xBC\x8C\xE4\xB8\x96\xE7\x95\x8C"); /* 你好|，世界 */
  assert_string_equal(words(q, "caf\xC3\xA9"), "caf\xC3\xA9");
  assert_string_equal(words(q, "cafe\xCC\x81"), "cafe|\xCC\x81"); /* a combining mark is not \p{L} */
  assert_string_equal(words(q, "hi \xF0\x9F\x98\x80\xF0\x9F\x98\x80"), "hi| \xF0\x9F\x98\x80\xF0\x9F\x98\x80");
  assert_string_equal(words(q, "x\xE2\x80\x83y"), "x|\xE2\x80\x83y"); /* U+2003 em space is \s */
  assert_string_equal(words(q, "\xC2\xB2\xC2\xBD"), "\xC2\xB2|\xC2\xBD");   /* ²½ are \p{N} */
  assert_string_equal(words(l, "1234567"), "123|456|7");
  assert_string_equal(words(l, "I'M"), "I|'M");
  assert_string_equal(words(g, "I'm WE'LL"), "I|'m| WE|'|LL"); /* gpt-2: lower-case contractions only */
  assert_string_equal(words(g, "12345 abc"), "12345| abc");
  assert_string_equal(words(g, "x\n\ny"), "x|\n|\n|y");
  assert_string_equal(words(g, "a  b"), "a| | b");
  assert_string_equal(words(d, "hello, world!!"), "hello|,| world|!!");
  assert_string_equal(words(d, "a 12345678 b"), "a| |123|456|78| b");
  assert_string_equal(words(d, "$5+3"), "$|5|+|3");
  rlx_tokenizer_free(q);
  rlx_tokenizer_free(l);
  rlx_tokenizer_free(g);
  rlx_tokenizer_free(d);
}

/* ---- streaming ---------------------------------------------------------------------------- */
static const char *push(rlx_detok *d, const rlx_tokenizer *t, int32_t id) {
  static char out[64];
  size_t len;
  assert_int_equal(rlx_detok_push(d, t, id, out, sizeof out, &len), RLX_OK);
  assert_int_equal(strlen(out), len);
  return out;
}

static void streaming_detokenizer(void **state) {
  (void)state;
  rlx_tokenizer *t = spm();
  rlx_detok d;
  rlx_detok_init(&d, 0);
  assert_string_equal(push(&d, t, BYTE(0xF0)), "");
  assert_string_equal(push(&d, t, BYTE(0x9F)), "");
  assert_string_equal(push(&d, t, BYTE(0x98)), "");
  assert_string_equal(push(&d, t, BYTE(0x80)), "\xF0\x9F\x98\x80");
  assert_string_equal(push(&d, t, T_SPHELLO), " hello");
  assert_string_equal(push(&d, t, BYTE(0xFF)), "\xEF\xBF\xBD");
  assert_string_equal(push(&d, t, BYTE(0xE2)), "");
  assert_string_equal(push(&d, t, T_A), "\xEF\xBF\xBD" "a"); /* cut short by 'a' */
  assert_string_equal(push(&d, t, BYTE(0xE2)), "");
  assert_string_equal(push(&d, t, BYTE(0x82)), "");
  assert_string_equal(push(&d, t, BYTE(0xAC)), "\xE2\x82\xAC"); /* € */
  assert_string_equal(push(&d, t, BYTE(0xED)), "");
  assert_string_equal(push(&d, t, BYTE(0xA0)), "\xEF\xBF\xBD\xEF\xBF\xBD"); /* a surrogate is not UTF-8 */
  assert_string_equal(push(&d, t, 1), "");                                    /* control, not rendered */
  char out[16];
  size_t len;
  assert_string_equal(push(&d, t, BYTE(0xC3)), "");
  assert_int_equal(rlx_detok_push(&d, t, T_SPHELLO, out, 2, &len), RLX_ERR_INVALID_ARG);
  assert_int_equal(len, 9); /* U+FFFD + " hello"; nothing consumed */
  assert_int_equal(rlx_detok_flush(&d, out, 2, &len), RLX_ERR_INVALID_ARG);
  assert_int_equal(len, 3);
  assert_int_equal(rlx_detok_flush(&d, out, sizeof out, &len), RLX_OK);
  assert_string_equal(out, "\xEF\xBF\xBD");
  assert_int_equal(rlx_detok_flush(&d, out, sizeof out, &len), RLX_OK);
  assert_int_equal(len, 0);
  rlx_detok_init(&d, 1);
  assert_string_equal(push(&d, t, 1), "<s>");
  rlx_tokenizer_free(t);
  /* a whole corpus, token by token, through a BPE vocab without merges for non-ASCII text */
  t = bpe("qwen2");
  for (size_t i = 0; i < N_CORPUS; i++) {
    int32_t ids[512];
    size_t n = enc(t, CORPUS[i], 0, 0, ids, 512), o = 0;
    char text[2048];
    rlx_detok_init(&d, 0);
    for (size_t j = 0; j < n; j++) {
      assert_int_equal(rlx_detok_push(&d, t, ids[j], text + o, sizeof text - o, &len), RLX_OK);
      o += len;
    }
    assert_int_equal(rlx_detok_flush(&d, text + o, sizeof text - o, &len), RLX_OK);
    assert_int_equal(len, 0);
    assert_string_equal(text, CORPUS[i]);
  }
  rlx_tokenizer_free(t);
}

/* ---- sizes and bad input -------------------------------------------------------------------- */
static void tiny_caps(void **state) {
  (void)state;
  rlx_tokenizer *t = spm();
  size_t n;
  int32_t ids[3];
  assert_int_equal(rlx_tokenizer_encode(t, "hello world", 11, -1, 0, NULL, 0, &n), RLX_ERR_INVALID_ARG);
  assert_int_equal(n, 3);
  assert_int_equal(rlx_tokenizer_encode(t, "hello world", 11, -1, 0, ids, 2, &n), RLX_ERR_INVALID_ARG);
  assert_int_equal(n, 3);
  assert_int_equal(rlx_tokenizer_encode(t, "hello world", 11, -1, 0, ids, 3, &n), RLX_OK);
  assert_int_equal(ids[2], T_SPWORLD);
  char buf[12];
  size_t len;
  assert_int_equal(rlx_tokenizer_decode(t, ids, 3, buf, 0, &len, 1), RLX_ERR_INVALID_ARG);
  assert_int_equal(len, 12);
  assert_int_equal(rlx_tokenizer_decode(t, ids, 3, buf, 12, &len, 1), RLX_OK); /* exact: no NUL */
  assert_memory_equal(buf, " hello world", 12);
  assert_int_equal(rlx_tokenizer_piece(t, T_SPHELLO, buf, 3, &len, 0), RLX_ERR_INVALID_ARG);
  assert_int_equal(len, 6);
  assert_int_equal(rlx_tokenizer_encode(NULL, "x", 1, 0, 0, ids, 3, &n), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_tokenizer_encode(t, NULL, 1, 0, 0, ids, 3, &n), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_tokenizer_encode(t, "x", 1, 2, 0, ids, 3, &n), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_tokenizer_encode(t, "x", 1, 0, 0, ids, 3, NULL), RLX_ERR_INVALID_ARG);
  rlx_tokenizer_free(t);
  t = bpe("gpt-2"); /* clean-up changes the size: the size reported is the final one */
  int32_t w[16];
  size_t m = enc(t, "a , b", 0, 0, w, 16);
  assert_int_equal(rlx_tokenizer_decode(t, w, m, buf, 1, &len, 1), RLX_ERR_INVALID_ARG);
  assert_int_equal(len, 4);
  assert_int_equal(rlx_tokenizer_decode(t, w, m, buf, 4, &len, 1), RLX_OK);
  assert_memory_equal(buf, "a, b", 4);
  rlx_tokenizer_free(t);
  rlx_tokenizer_free(NULL);
}

static void bad_tokens_of(rlx_gguf_writer *w) {
  int32_t v[3] = {1, 2, 3};
  assert_int_equal(rlx_gguf_writer_add_array(w, "tokenizer.ggml.tokens", RLX_GGUF_VAL_I32, v, 3), RLX_OK);
}
static void bos_as_string(rlx_gguf_writer *w) {
  assert_int_equal(rlx_gguf_writer_add_string(w, "tokenizer.ggml.bos_token_id", "1", 1), RLX_OK);
}
static void scores_as_string(rlx_gguf_writer *w) {
  assert_int_equal(rlx_gguf_writer_add_string(w, "tokenizer.ggml.scores", "x", 1), RLX_OK);
}

static void expect_refused(spec s, rlx_status code, const char *needle) {
  rlx_tokenizer *t = (rlx_tokenizer *)&t;
  rlx_status st = build(&s, &t);
  if (st != code) fail_msg("status %d (want %d): %s", st, code, rlx_last_error());
  assert_null(t);
  if (!strstr(rlx_last_error(), needle)) fail_msg("message '%s' lacks '%s'", rlx_last_error(), needle);
}

static void bad_metadata(void **state) {
  (void)state;
  spec s = spm_spec(1);
  s.tokens = NULL;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.tokens");
  s = spm_spec(1);
  s.model = NULL;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.model");
  s.model = "bert";
  expect_refused(s, RLX_ERR_UNSUPPORTED, "tokenizer.ggml.model");
  s = spm_spec(1);
  s.n_scores--;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.scores");
  s = spm_spec(1);
  s.n_types++;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.token_type");
  s = spm_spec(1);
  spm_scores[270] = 0.0f / 0.0f;
  expect_refused(s, RLX_ERR_INVALID_ARG, "NaN");
  s = spm_spec(1);
  spm_tokens[270] = "<s>";
  expect_refused(s, RLX_ERR_INVALID_ARG, "duplicate");
  s = spm_spec(1);
  s.tokens = NULL;
  s.extra = bad_tokens_of;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.tokens");
  s = spm_spec(1);
  s.extra = bos_as_string;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.bos_token_id");
  s = spm_spec(1);
  s.scores = NULL;
  s.extra = scores_as_string;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.scores");
  s = bpe_spec("qwen2");
  s.merges = NULL;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.merges");
  static const char *const unknown_piece[] = {"h e", "x yz"};
  s.merges = unknown_piece, s.n_merges = 2;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.merges[1]");
  static const char *const no_space[] = {"he"};
  s.merges = no_space, s.n_merges = 1;
  expect_refused(s, RLX_ERR_INVALID_ARG, "tokenizer.ggml.merges[0]");
  s = bpe_spec("no-such-pre");
  expect_refused(s, RLX_ERR_UNSUPPORTED, "tokenizer.ggml.pre");
  s = bpe_spec("qwen2"); /* add_bos_token without a BOS: the default 11 is used, so ask for tiny */
  static const char *const tiny[] = {"a", "b", "c"};
  static const char *const tiny_merges[] = {"a b"};
  s.tokens = tiny, s.n_tokens = 3, s.types = NULL, s.merges = tiny_merges, s.n_merges = 1;
  s.bos = ABSENT, s.eos = ABSENT, s.add_bos = 1;
  expect_refused(s, RLX_ERR_INVALID_ARG, "add_bos_token");
  s.add_bos = ABSENT; /* a BOS id outside the vocab is ignored, as llama.cpp */
  s.bos = 99;
  rlx_tokenizer *t;
  assert_int_equal(build(&s, &t), RLX_OK);
  assert_int_equal(rlx_tokenizer_bos(t), RLX_TOKEN_NULL);
  assert_string_equal(rlx_tokenizer_pre(t), "qwen2");
  size_t n;
  assert_int_equal(rlx_tokenizer_encode(t, "ab", 2, 1, 0, NULL, 0, &n), RLX_ERR_INVALID_ARG);
  rlx_tokenizer_free(t);
  s.pre = NULL; /* missing pre: llama.cpp's "default" */
  assert_int_equal(build(&s, &t), RLX_OK);
  assert_string_equal(rlx_tokenizer_pre(t), "default");
  EXPECT(t, "ab", 0, 0, 0, 1); /* "a b" merges, "ab" is no token: its single bytes, as llama.cpp */
  rlx_tokenizer_free(t);
  assert_int_equal(rlx_tokenizer_from_gguf(NULL, &t), RLX_ERR_INVALID_ARG);
}

/* Every allocation of loading and of encoding fails in turn. */
static void allocation_failures(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  for (int which = 0; which < 2; which++) {
    spec s = which ? bpe_spec("default") : spm_spec(1);
    rlx_gguf *g = make_gguf(&s);
    size_t live = check_alloc_live_bytes();
    rlx_tokenizer *t = NULL;
    for (long k = 0;; k++) {
      check_alloc_fail_at(k, 0);
      rlx_status st = rlx_tokenizer_from_gguf(g, &t);
      long refused = check_alloc_refused();
      check_alloc_fail_at(-1, 0);
      if (!refused) {
        assert_int_equal(st, RLX_OK);
        break;
      }
      if (st != RLX_ERR_NO_MEMORY) fail_msg("allocation %ld: status %d (%s)", k, st, rlx_last_error());
      assert_null(t);
      assert_int_equal(check_alloc_live_bytes(), live);
    }
    drop_gguf(g);
    const char *text = "<|im_start|>hello world, caf\xC3\xA9 12345 \xF0\x9F\x98\x80";
    int32_t ids[128];
    size_t n, n_ok;
    assert_int_equal(rlx_tokenizer_encode(t, text, strlen(text), -1, 1, ids, 128, &n_ok), RLX_OK);
    live = check_alloc_live_bytes();
    for (long k = 0;; k++) {
      check_alloc_fail_at(k, 0);
      rlx_status st = rlx_tokenizer_encode(t, text, strlen(text), -1, 1, ids, 128, &n);
      long refused = check_alloc_refused();
      check_alloc_fail_at(-1, 0);
      assert_int_equal(check_alloc_live_bytes(), live);
      if (!refused) {
        assert_int_equal(st, RLX_OK);
        assert_int_equal(n, n_ok);
        break;
      }
      assert_int_equal(st, RLX_ERR_NO_MEMORY);
    }
    rlx_tokenizer_free(t);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(spm_merges_by_score),
      cmocka_unit_test(spm_byte_fallback_and_unknown),
      cmocka_unit_test(spm_special_tokens_and_space_prefix),
      cmocka_unit_test(spm_pieces_and_decode),
      cmocka_unit_test(round_trips),
      cmocka_unit_test(bpe_merges_by_rank),
      cmocka_unit_test(pre_tokenizer_splits),
      cmocka_unit_test(streaming_detokenizer),
      cmocka_unit_test(tiny_caps),
      cmocka_unit_test(bad_metadata),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
