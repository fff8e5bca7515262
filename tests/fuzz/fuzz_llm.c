/* fuzz_llm.c - libFuzzer target: the GGUF language models
 * (src/models/llm_*.c, include/rlx_llm.h).  A real model is far past
 * -max_len, so the fuzzer is structured: the input bytes choose a model and
 * it is written in memory with the GGUF writer, then opened with
 * rlx_llm_open_memory.  The bytes choose
 *   - the architecture (llama, qwen2, qwen3, an unknown name, none);
 *   - the hyperparameters and how each is written: as any integer type, left
 *     out, absurd (0, negative, past int32, ...), a wrong value type (string,
 *     f32, array, bool), one off; heads that do not divide, odd key_length,
 *     context 1 ...;
 *   - each tensor's weight type (every type of rlx_gguf_types.def that fits
 *     its rows), or the tensor dropped, renamed or given wrong dims, extra
 *     optional tensors (biases, q/k norms) and an unused one;
 *   - the tokenizer: SentencePiece (<unk>, <s>, </s>, the 256 <0xNN> byte
 *     tokens, a few pieces, some from the input) or byte-level BPE with
 *     merges, or a tiny vocab; scores, token types, BOS/EOS ids and the
 *     add_bos flag written well or badly; a token_embd whose rows may
 *     disagree with the vocab;
 *   - small seeded weights (quantized from floats) or raw random bytes;
 *     alignment 32 or 64; the buffer aligned or not, with or without the
 *     padding after the last tensor; the n_ctx, budget and xq8 options.
 * Sizes are capped (n_embd <= 64, or 256 with one layer, n_ff <= 64 and 4
 * positions so that rows of the K-quants' 256-value blocks occur; 2 layers,
 * n_ff <= 256, vocab <= 300, n_ctx <= 64) so that an input runs in
 * milliseconds.  When the model opens: get_info agrees with what was
 * written; a string from the input is tokenized (sized exactly, ids in the
 * vocab) and detokenized; ids (valid and invalid) are evaluated, a refusal
 * leaving the position as it was, the context limit enforced, and one run
 * equal to the same ids evaluated in pieces (f32 activations); a
 * generator runs with sampling parameters and stop strings from the input
 * (every chunk valid UTF-8, it ends by max_tokens or a full context at the
 * latest); rlx_llm_generate
 * with a callback that stops; reset; free.  Every refusal comes with a
 * message in rlx_last_error().  The seeds (tests/fuzz/corpus/llm/) come from
 * tests/fuzz/make_llm_seeds.py, which follows the order of the reads here:
 * a change of that order wants the seeds written again. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_gguf.h"
#include "rlx_llm.h"
#include "fuzz_check.h"

void rlx_clear_error(void); /* src/core/core.h */


/* A refusal carries a message. */
#define REFUSED(st) CHECK((st) != RLX_OK && rlx_last_error()[0])

/* ---- the input -------------------------------------------------------------- */
typedef struct {
  const uint8_t *p;
  size_t n, at;
} reader;

static uint8_t u8(reader *r) { return r->at < r->n ? r->p[r->at++] : 0; }
static uint32_t u16(reader *r) {
  uint32_t lo = u8(r);
  return lo | (uint32_t)u8(r) << 8;
}

static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* ---- metadata, written well or badly ------------------------------------------ */
enum { K_MISSING, K_INT, K_BAD }; /* how an integer key was written */
typedef struct {
  int how;
  int64_t v;
} written;

/* Writes key = v (mode byte: mostly v in one of the integer types; else
 * missing, absurd, a wrong type, off by one). */
static written put_int(rlx_gguf_writer *w, const char *key, int64_t v, uint8_t mode) {
  written out = {K_INT, v};
  if (mode >= 0xC0 && mode < 0xD8) return (written){K_MISSING, 0};
  if (mode >= 0xD8 && mode < 0xE8) { /* absurd */
    static const int64_t absurd[] = {0, -1, INT32_MIN, INT32_MAX, (int64_t)1 << 40, -1 /* u64 max */, 65537, 1025,
                                     1, 2, 3, 1 << 24, (1 << 24) + 1, 1 << 16, (1 << 16) + 1, 7};
    const int k = (mode - 0xD8) & 15;
    if (k == 5) {
      uint64_t big = UINT64_MAX;
      CHECK(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_U64, &big) == RLX_OK);
      return (written){K_BAD, 0};
    }
    out.v = v = absurd[k];
    mode = 7; /* as i64 */
  } else if (mode >= 0xE8 && mode < 0xF8) { /* a wrong value type */
    switch (mode & 3) {
      case 0: {
        char s[24];
        int len = snprintf(s, sizeof s, "%lld", (long long)v);
        CHECK(rlx_gguf_writer_add_string(w, key, s, (uint64_t)len) == RLX_OK);
        return (written){K_BAD, 0};
      }
      case 1: {
        float f = (float)v;
        CHECK(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_F32, &f) == RLX_OK);
        return (written){K_BAD, 0};
      }
      case 2: {
        uint32_t a[2] = {(uint32_t)v, (uint32_t)v};
        CHECK(rlx_gguf_writer_add_array(w, key, RLX_GGUF_VAL_U32, a, 1 + (mode >> 2 & 1)) == RLX_OK);
        return (written){K_BAD, 0};
      }
      default: { /* a bool reads as an integer 0 or 1 */
        uint8_t b = (mode >> 2) & 1;
        CHECK(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_BOOL, &b) == RLX_OK);
        return (written){K_INT, b};
      }
    }
  } else if (mode >= 0xF8) { /* one off */
    out.v = v = v + ((mode & 1) ? 1 : -1);
  }
  /* The value's type (mode & 7), where the value fits; else i64. */
  static const struct {
    rlx_gguf_vtype type;
    int64_t lo, hi;
  } INT_TYPES[8] = {{RLX_GGUF_VAL_U32, 0, UINT32_MAX},         {RLX_GGUF_VAL_I32, INT32_MIN, INT32_MAX},
                    {RLX_GGUF_VAL_U64, 0, INT64_MAX},          {RLX_GGUF_VAL_U16, 0, UINT16_MAX},
                    {RLX_GGUF_VAL_I16, INT16_MIN, INT16_MAX},  {RLX_GGUF_VAL_U8, 0, UINT8_MAX},
                    {RLX_GGUF_VAL_I8, INT8_MIN, INT8_MAX},     {RLX_GGUF_VAL_I64, INT64_MIN, INT64_MAX}};
  int k = mode & 7;
  if (v < INT_TYPES[k].lo || v > INT_TYPES[k].hi) k = 7;
  union {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
  } x;
  switch (INT_TYPES[k].type) {
    case RLX_GGUF_VAL_U8: x.u8 = (uint8_t)v; break;
    case RLX_GGUF_VAL_I8: x.i8 = (int8_t)v; break;
    case RLX_GGUF_VAL_U16: x.u16 = (uint16_t)v; break;
    case RLX_GGUF_VAL_I16: x.i16 = (int16_t)v; break;
    case RLX_GGUF_VAL_U32: x.u32 = (uint32_t)v; break;
    case RLX_GGUF_VAL_I32: x.i32 = (int32_t)v; break;
    case RLX_GGUF_VAL_U64: x.u64 = (uint64_t)v; break;
    default: x.i64 = v; break;
  }
  CHECK(rlx_gguf_writer_add(w, key, INT_TYPES[k].type, &x) == RLX_OK);
  return out;
}

/* A float key: *set is 1 when written as a number (then *v is what a
 * float reading gives), -1 when written as something else, 0 missing. */
static void put_float(rlx_gguf_writer *w, const char *key, double sane, uint8_t mode, int *set, double *v) {
  *set = 1;
  *v = sane;
  if (mode < 0xA0) {
    float f = (float)sane;
    CHECK(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_F32, &f) == RLX_OK);
    *v = f;
  } else if (mode < 0xC0) {
    *set = 0;
  } else if (mode < 0xF0) {
    static const double odd[] = {0.0, -1.0, 1e-30, 1e30, 1e12, 1.0, 2.0, 1e-12, 0.5, 1e13, NAN, INFINITY};
    double d = odd[(mode - 0xC0) % 12];
    if (mode & 0x10) {
      CHECK(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_F64, &d) == RLX_OK);
      *v = d;
    } else {
      float f = (float)d;
      CHECK(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_F32, &f) == RLX_OK);
      *v = f;
    }
  } else if (mode < 0xF8) { /* an integer is a number too */
    int32_t i = (int32_t)(mode & 7) * 5000 - 1;
    CHECK(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_I32, &i) == RLX_OK);
    *v = i;
  } else {
    *set = -1;
    CHECK(rlx_gguf_writer_add_string(w, key, "1e4", 3) == RLX_OK);
  }
}

/* ---- the tokenizer ---------------------------------------------------------- */
#define MAX_VOCAB 300
typedef struct {
  char store[MAX_VOCAB][16];
  const char *tok[MAX_VOCAB];
  float score[MAX_VOCAB];
  int32_t type[MAX_VOCAB];
  int n;
} vocab;

static int add_token(vocab *v, const char *s, float score, int32_t type) {
  if (v->n >= MAX_VOCAB) return 0;
  snprintf(v->store[v->n], sizeof v->store[0], "%s", s);
  v->score[v->n] = score;
  v->type[v->n] = type;
  v->n++;
  return 1;
}

static uint32_t gpt2_char(int b) {
  int pr = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE, n = 0;
  if (pr) return (uint32_t)b;
  for (int c = 0; c < b; c++) n += !((c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE);
  return 256u + (uint32_t)n;
}

/* Writes the tokenizer's keys; returns the vocab's size. */
static int put_tokenizer(rlx_gguf_writer *w, reader *r, int bpe, vocab *v) {
  const uint8_t flags = u8(r), extra = u8(r);
  v->n = 0;
  if (flags & 0x80) { /* a tiny vocab: a few SentencePiece specials and letters */
    static const char *const tiny[] = {"<unk>", "<s>", "</s>",           "a",
                                       "\xE2\x96\x81", "b", ("\xE2\x96\x81" "a"), "<0x41>"};
    const int n = 1 + (extra & 7);
    for (int i = 0; i < n; i++) add_token(v, tiny[i], -(float)i, i == 0 ? 2 : i < 3 ? 3 : i == 7 ? 6 : 1);
    bpe = 0;
  } else if (!bpe) {
    add_token(v, "<unk>", 0, 2);
    add_token(v, "<s>", 0, 3);
    add_token(v, "</s>", 0, 3);
    for (int b = 0; b < 256; b++) {
      char hex[8];
      snprintf(hex, sizeof hex, "<0x%02X>", b);
      add_token(v, hex, 0, 6);
    }
    static const char *const pieces[] = {"\xE2\x96\x81", "\xE2\x96\x81t", "he", "\xE2\x96\x81the", "<|im_start|>",
                                         "\xC3\xA9", "ab", "<tool>"};
    for (int i = 0; i < 8; i++)
      if (extra & (1 << i)) add_token(v, pieces[i], -1.0f - (float)i, pieces[i][0] == '<' ? (i == 7 ? 4 : 3) : 1);
  } else {
    for (int b = 0; b < 256; b++) {
      uint32_t c = gpt2_char(b);
      char s[4] = {0};
      if (c < 0x80) s[0] = (char)c;
      else s[0] = (char)(0xC0 | (c >> 6)), s[1] = (char)(0x80 | (c & 63));
      add_token(v, s, 0, 1);
    }
    static const char *const pieces[] = {"\xC4\xA0t", "he", "\xC4\xA0the", "<|endoftext|>", "<|im_start|>",
                                         "<|im_end|>"};
    for (int i = 0; i < 6; i++) add_token(v, pieces[i], 0, pieces[i][0] == '<' ? 3 : 1);
  }
  /* Pieces from the input (maybe duplicates, which are refused). */
  const int n_in = (flags >> 4) & 3;
  for (int i = 0; i < n_in; i++) {
    char s[8] = {0};
    const int len = 1 + u8(r) % 6;
    for (int k = 0; k < len; k++) s[k] = (char)(1 + u8(r) % 255);
    add_token(v, s, -0.5f * (float)i, (flags & 8) ? 4 : 1);
  }
  for (int i = 0; i < v->n; i++) v->tok[i] = v->store[i];

  const uint8_t mode = u8(r);
  if ((mode & 7) == 7) { /* the model: missing or unknown */
    if (mode & 8) CHECK(rlx_gguf_writer_add_string(w, "tokenizer.ggml.model", "bert", 4) == RLX_OK);
  } else {
    CHECK(rlx_gguf_writer_add_string(w, "tokenizer.ggml.model", bpe ? "gpt2" : "llama", bpe ? 4 : 5) == RLX_OK);
  }
  if (bpe && !(mode & 0x10)) CHECK(rlx_gguf_writer_add_string(w, "tokenizer.ggml.pre", "qwen2", 5) == RLX_OK);
  const int n_tok = (mode & 0x60) == 0x60 ? v->n - 1 : v->n; /* the other arrays one longer */
  if ((mode & 0x60) != 0x40)
    CHECK(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", v->tok, NULL, (uint64_t)n_tok) == RLX_OK);
  if (!(mode & 0x80))
    CHECK(rlx_gguf_writer_add_array(w, "tokenizer.ggml.scores", RLX_GGUF_VAL_F32, v->score, (uint64_t)v->n) ==
          RLX_OK);
  if (!(mode & 0x20) || !(mode & 0x40))
    CHECK(rlx_gguf_writer_add_array(w, "tokenizer.ggml.token_type", RLX_GGUF_VAL_I32, v->type, (uint64_t)v->n) ==
          RLX_OK);
  if (bpe) {
    static const char *const merges[] = {"\xC4\xA0 t", "h e", "\xC4\xA0t he", "x y"};
    const uint64_t n_merges = (mode & 3) == 3 ? 4 : 3; /* the 4th names pieces that are not tokens */
    CHECK(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", merges, NULL, n_merges) == RLX_OK);
  }
  const uint8_t ids = u8(r);
  const int32_t bos = bpe ? v->n - 2 : 1, eos = bpe ? v->n - 1 : 2;
  put_int(w, "tokenizer.ggml.bos_token_id", (ids & 3) == 3 ? v->n + (ids >> 4) : bos, (ids & 3) == 2 ? 0xC0 : 0);
  put_int(w, "tokenizer.ggml.eos_token_id", (ids & 12) == 12 ? -1 - (ids >> 4) : eos, (ids & 12) == 8 ? 0xC0 : 0);
  if (ids & 0x10) {
    uint8_t add = (ids >> 5) & 1;
    CHECK(rlx_gguf_writer_add(w, "tokenizer.ggml.add_bos_token", RLX_GGUF_VAL_BOOL, &add) == RLX_OK);
  }
  return n_tok; /* the vocabulary, when the file opens: a shorter tokens array opens only alone */
}

/* ---- tensors ---------------------------------------------------------------- */
static const rlx_gguf_type TYPES[] = {RLX_GGUF_TYPE_F32,  RLX_GGUF_TYPE_F16,  RLX_GGUF_TYPE_Q4_0, RLX_GGUF_TYPE_Q4_1,
                                      RLX_GGUF_TYPE_Q5_0, RLX_GGUF_TYPE_Q5_1, RLX_GGUF_TYPE_Q8_0, RLX_GGUF_TYPE_Q4_K,
                                      RLX_GGUF_TYPE_Q5_K, RLX_GGUF_TYPE_Q6_K, RLX_GGUF_TYPE_BF16};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])
#define MAX_TENSORS 48

typedef struct {
  char name[64];
  int n_dims;
  int64_t dims[4];
  int64_t elems;
  uint64_t bytes;
  void *data;
} tensor;

typedef struct {
  tensor t[MAX_TENSORS];
  int n;
  uint64_t params, bytes;
  int have_output; /* "output.weight" written with that name */
} tensors;

/* Adds a tensor of dims [cols] or [cols, rows], mutated as the byte says. */
static void add_tensor(rlx_gguf_writer *w, reader *r, tensors *ts, const char *name, int64_t cols, int64_t rows,
                       int raw, uint64_t seed) {
  if (ts->n >= MAX_TENSORS || cols < 1 || rows < 0) return;
  const uint8_t b = u8(r), mutate = b >> 5;
  if (mutate == 5) return; /* dropped */
  tensor *t = &ts->t[ts->n];
  snprintf(t->name, sizeof t->name, "%s%s", name, mutate == 6 ? (b & 1 ? "x" : ".0") : "");
  t->n_dims = rows ? 2 : 1;
  t->dims[0] = cols;
  t->dims[1] = rows ? rows : 1;
  if (mutate == 7) { /* wrong dims */
    switch (b & 3) {
      case 0: t->dims[0] = t->dims[1], t->dims[1] = cols; break;
      case 1: t->dims[t->n_dims - 1] += 1; break;
      case 2: t->n_dims = t->n_dims == 2 ? 1 : 2, t->dims[1] = 1; break;
      default: t->n_dims = 3, t->dims[2] = 1 + (b >> 2 & 1); break;
    }
  }
  rlx_gguf_type type = TYPES[(b & 15) % N_TYPES];
  if (t->dims[0] % rlx_gguf_type_block_elems(type)) type = (b & 16) ? RLX_GGUF_TYPE_BF16 : RLX_GGUF_TYPE_F16;
  t->elems = 1;
  for (int d = 0; d < t->n_dims; d++) t->elems *= t->dims[d];
  CHECK(rlx_gguf_row_bytes(type, t->elems, &t->bytes) == RLX_OK);
  CHECK((t->data = malloc((size_t)t->bytes + 1)) != NULL);
  uint64_t s = seed ^ (uint64_t)ts->n * 0x9E3779B97F4A7C15ull;
  if (raw) {
    for (uint64_t i = 0; i < t->bytes; i++) ((uint8_t *)t->data)[i] = (uint8_t)splitmix64(&s);
  } else {
    float *f = malloc((size_t)t->elems * sizeof *f);
    CHECK(f != NULL);
    const int norm = rows == 0; /* norms near 1, the rest small */
    for (int64_t i = 0; i < t->elems; i++)
      f[i] = (norm ? 1.0f : 0.0f) + (float)((int64_t)(splitmix64(&s) >> 40) - (1 << 23)) / (float)(1 << 23) * 0.25f;
    CHECK(rlx_gguf_quantize(type, f, t->elems, t->data, (size_t)t->bytes) == RLX_OK);
    free(f);
  }
  CHECK(rlx_gguf_writer_add_tensor(w, t->name, type, t->n_dims, t->dims, t->data, t->bytes) == RLX_OK);
  if (strcmp(t->name, "output.weight") == 0) ts->have_output = 1;
  ts->params += (uint64_t)t->elems;
  ts->bytes += t->bytes;
  ts->n++;
}

/* ---- after opening ---------------------------------------------------------- */
typedef struct {
  int calls, stop_after;
} on_token_state;

static int on_token(void *user, int32_t id, const char *text, size_t len) {
  on_token_state *s = user;
  (void)id;
  CHECK(text != NULL && valid_utf8((const uint8_t *)text, len));
  return ++s->calls >= s->stop_after;
}

/* Evaluates ids from the input: a refusal keeps the position; a success
 * moves it. */
static void eval_some(rlx_llm *m, const rlx_llm_info *in, reader *r, float *logits, int check_finite) {
  int32_t ids[80];
  const size_t n = u8(r) % 80;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    ids[i] = (int32_t)(u16(r) % (uint32_t)(in->n_vocab + 3)) - 1; /* -1 and n_vocab, n_vocab + 1: outside */
    bad |= ids[i] < 0 || ids[i] >= in->n_vocab;
  }
  const int32_t pos = rlx_llm_position(m);
  rlx_clear_error();
  rlx_status st = rlx_llm_eval(m, n ? ids : NULL, n, logits);
  if (n == 0 || bad || (int64_t)n > (int64_t)in->n_ctx - pos) {
    REFUSED(st);
    CHECK(rlx_llm_position(m) == pos);
    return;
  }
  if (st != RLX_OK) { /* only a numeric refusal is possible here */
    REFUSED(st);
    CHECK(rlx_llm_position(m) == pos);
    return;
  }
  CHECK(rlx_llm_position(m) == pos + (int32_t)n);
  if (check_finite)
    for (int32_t v = 0; v < in->n_vocab; v++) CHECK(isfinite(logits[v]));
}

/* The same valid ids in one call and in pieces: the same logits. */
static void eval_split(rlx_llm *m, const rlx_llm_info *in, reader *r, float *a, float *b) {
  int32_t ids[64];
  const int n = 1 + u8(r) % (in->n_ctx < 64 ? in->n_ctx : 64);
  for (int i = 0; i < n; i++) ids[i] = (int32_t)(u16(r) % (uint32_t)in->n_vocab);
  rlx_llm_reset(m);
  CHECK(rlx_llm_eval(m, ids, (size_t)n, a) == RLX_OK);
  rlx_llm_reset(m);
  CHECK(rlx_llm_position(m) == 0);
  for (int at = 0; at < n;) {
    int k = 1 + u8(r) % 20;
    if (k > n - at) k = n - at;
    CHECK(rlx_llm_eval(m, ids + at, (size_t)k, b) == RLX_OK);
    at += k;
    CHECK(rlx_llm_position(m) == at);
  }
  if (in->xq8) return; /* a code that rounds the other way in one split moves the rest: test_llm.c bounds it */
  float scale = 1.0f;
  for (int32_t v = 0; v < in->n_vocab; v++) scale = fmaxf(scale, fabsf(a[v]));
  for (int32_t v = 0; v < in->n_vocab; v++) CHECK(fabsf(a[v] - b[v]) <= 1e-3f * scale);
}

static void generate(rlx_llm *m, const rlx_llm_info *in, reader *r, const int32_t *prompt, size_t n_prompt) {
  const uint8_t f = u8(r);
  rlx_llm_sampling s = rlx_llm_sampling_default();
  const uint8_t t = u8(r);
  s.temperature = t < 0xF0 ? (float)t / 64.0f : t == 0xF0 ? -1.0f : t == 0xF1 ? NAN : t == 0xF2 ? INFINITY : 1e30f;
  s.top_k = (int32_t)u8(r) - 8;
  const uint8_t p = u8(r);
  s.top_p = p == 0 ? 1.0f : p <= 200 ? (float)p / 200.0f : p == 0xFF ? NAN : 1.0f + (float)(p - 200) / 10.0f;
  const uint8_t mp = u8(r);
  s.min_p = mp <= 200 ? (float)mp / 400.0f : mp == 0xFF ? -0.5f : 2.0f;
  const uint8_t rp = u8(r);
  s.repeat_penalty = rp == 0 ? 1.0f : rp < 0xF0 ? (float)rp / 64.0f : rp == 0xF0 ? 0.0f : rp == 0xF1 ? -1.0f : NAN;
  s.repeat_last_n = (int32_t)u8(r) - 2;
  s.seed = u16(r);
  const uint8_t mt = u8(r);
  s.max_tokens = mt < 0xF0 ? mt % 80 : mt == 0xF0 ? -1 : mt == 0xF1 ? INT32_MAX : 1000;
  /* Stop strings: valid UTF-8 (ASCII, é) from the input; an empty one is refused. */
  char stop_store[4][8];
  const char *stops[4];
  s.n_stop = (f >> 4) & 3;
  for (int i = 0; i < s.n_stop; i++) {
    int len = u8(r) % 5, at = 0;
    for (int k = 0; k < len && at < 5; k++) {
      uint8_t c = u8(r);
      if (c >= 0xF0) stop_store[i][at++] = (char)0xC3, stop_store[i][at++] = (char)0xA9;
      else stop_store[i][at++] = (char)(0x20 + c % 0x5F);
    }
    stop_store[i][at] = 0;
    stops[i] = stop_store[i];
  }
  s.stop = stops;
  if ((f & 0xC0) == 0xC0) s.n_stop = -1;
  const int bad_params = !(s.temperature >= 0.0f) || isinf(s.temperature) || !(s.top_p >= 0.0f && s.top_p <= 1.0f) ||
                         !(s.min_p >= 0.0f && s.min_p <= 1.0f) || !(s.repeat_penalty > 0.0f) ||
                         isinf(s.repeat_penalty) || s.repeat_last_n < -1 || s.max_tokens < 0 || s.n_stop < 0;
  int empty_stop = 0;
  for (int i = 0; i < s.n_stop; i++) empty_stop |= stops[i][0] == 0;
  int bad_prompt = n_prompt == 0 || (int64_t)n_prompt > in->n_ctx;
  for (size_t i = 0; i < n_prompt; i++) bad_prompt |= prompt[i] < 0 || prompt[i] >= in->n_vocab;

  rlx_llm_generator *gen = NULL;
  rlx_clear_error();
  rlx_status st = rlx_llm_generator_new(m, n_prompt ? prompt : NULL, n_prompt, &s, &gen);
  if (bad_params || empty_stop || bad_prompt) {
    REFUSED(st);
    CHECK(gen == NULL);
  }
  if (st != RLX_OK) {
    REFUSED(st);
  } else {
    int done = 0, steps = 0;
    while (!done) {
      int32_t id;
      const char *text;
      size_t len;
      rlx_clear_error();
      st = rlx_llm_generator_next(gen, &id, &text, &len, &done);
      if (st != RLX_OK) {
        REFUSED(st);
        break;
      }
      CHECK(text != NULL && text[len] == 0 && valid_utf8((const uint8_t *)text, len));
      CHECK(id >= -1 && id < in->n_vocab);
      CHECK(++steps <= in->n_ctx + 2 && steps <= s.max_tokens + 2); /* it ends */
    }
    rlx_llm_stats stats;
    rlx_llm_generator_stats(gen, &stats);
    CHECK(stats.prompt_tokens == (int32_t)n_prompt);
    CHECK(stats.generated_tokens >= 0 && stats.generated_tokens <= s.max_tokens);
    if (done) {
      CHECK(stats.stopped_by >= 0 && stats.stopped_by <= 4);
      if (stats.stopped_by == 4) CHECK(rlx_llm_position(m) == in->n_ctx);
      if (stats.stopped_by == 0) CHECK(stats.generated_tokens == s.max_tokens);
    }
    rlx_llm_generator_free(gen);
  }
  if (f & 1) { /* from text, with a callback that stops */
    char prompt_text[16];
    const size_t len = u8(r) % sizeof prompt_text;
    for (size_t i = 0; i < len; i++) prompt_text[i] = (char)(1 + u8(r) % 255);
    prompt_text[len] = 0;
    on_token_state cb = {0, 1 + (f >> 1) % 4};
    rlx_llm_stats stats;
    rlx_clear_error();
    st = rlx_llm_generate(m, prompt_text, &s, on_token, &cb, &stats);
    if (st != RLX_OK) REFUSED(st);
    else CHECK(cb.calls <= cb.stop_after && stats.generated_tokens <= s.max_tokens);
  }
}

static void use(rlx_llm *m, reader *r, const tensors *ts, int raw) {
  rlx_llm_info in;
  CHECK(rlx_llm_get_info(m, &in) == RLX_OK);
  float *a = malloc((size_t)in.n_vocab * sizeof *a), *b = malloc((size_t)in.n_vocab * sizeof *b);
  CHECK(a && b);
  /* Tokenize a string from the input, sized exactly; detokenize it. */
  char text[64];
  const size_t len = u8(r) % sizeof text;
  for (size_t i = 0; i < len; i++) text[i] = (char)u8(r);
  const uint8_t how = u8(r);
  const int add_bos = (int)(how & 3) - 1, special = (how >> 2) & 1; /* add_bos 2: refused */
  size_t n = 0, n2 = 0;
  rlx_clear_error();
  rlx_status st = rlx_llm_tokenize(m, text, len, add_bos, special, NULL, 0, &n);
  int32_t *ids = NULL;
  if (add_bos == 2) {
    REFUSED(st);
  } else {
    CHECK(st == RLX_OK ? n == 0 : st == RLX_ERR_INVALID_ARG && n > 0 && rlx_last_error()[0]);
    CHECK((ids = malloc((n ? n : 1) * sizeof *ids)) != NULL);
    CHECK(rlx_llm_tokenize(m, text, len, add_bos, special, ids, n, &n2) == RLX_OK && n2 == n);
    for (size_t i = 0; i < n; i++) CHECK(ids[i] >= 0 && ids[i] < in.n_vocab);
    size_t tl = 0, tl2 = 0;
    st = rlx_llm_detokenize(m, ids, n, NULL, 0, &tl);
    CHECK(st == RLX_OK || st == RLX_ERR_INVALID_ARG);
    char *out = malloc(tl + 1);
    CHECK(out != NULL);
    CHECK(rlx_llm_detokenize(m, ids, n, out, tl + 1, &tl2) == RLX_OK && tl2 == tl && out[tl] == 0);
    free(out);
  }
  /* Detokenize ids outside the vocab: refused. */
  int32_t outside[2] = {0, (how & 0x10) ? -1 : in.n_vocab};
  char small[64];
  size_t sl;
  rlx_clear_error();
  REFUSED(rlx_llm_detokenize(m, outside, 2, small, sizeof small, &sl));

  const int finite = !raw;
  eval_some(m, &in, r, a, finite);
  eval_some(m, &in, r, a, finite);
  /* In pieces as in one call (the loader refuses a RoPE base at or below 1,
   * whose angles would be too large for the splits to agree). */
  CHECK(in.rope_theta > 1.0f);
  if (!raw && !(how & 0x20)) eval_split(m, &in, r, a, b);
  /* Fill the context, then one more is refused. */
  if (how & 0x40) {
    rlx_llm_reset(m);
    int32_t zero[80] = {0};
    CHECK(rlx_llm_eval(m, zero, (size_t)in.n_ctx, NULL) == RLX_OK && rlx_llm_position(m) == in.n_ctx);
    rlx_clear_error();
    REFUSED(rlx_llm_eval(m, zero, 1, a));
    CHECK(rlx_llm_position(m) == in.n_ctx);
  }
  if (ids) generate(m, &in, r, ids, n);
  (void)ts;
  rlx_llm_reset(m);
  CHECK(rlx_llm_position(m) == 0);
  free(ids);
  free(a);
  free(b);
}

/* ---- one input -------------------------------------------------------------- */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  reader rd = {data, size, 0}, *r = &rd;
  const uint8_t f0 = u8(r), f1 = u8(r);
  static const char *const ARCH[] = {"llama", "qwen2", "qwen3", "gpt9"};
  const int arch = f0 & 3, bpe = (f0 >> 2) & 1, tied = (f0 >> 3) & 1, raw = (f0 >> 4) & 1, extra = (f0 >> 5) & 1;
  const int align64 = (f0 >> 6) & 1, unaligned = f1 & 1, trim = (f1 >> 1) & 1;
  const int qwen2 = arch == 1, qwen3 = arch == 2;

  /* Hyperparameters as the tensors have them. */
  static const int64_t EMBD[] = {32, 64, 16, 8, 256, 2, 4, 48}, FF[] = {64, 32, 128, 16, 256, 8, 2, 48},
                       CTX[] = {64, 32, 16, 1, 4, 2, 63, 5};
  const uint8_t d0 = u8(r), d1 = u8(r), d2 = u8(r);
  const int64_t n_embd = EMBD[d0 & 7], n_head = 1 + ((d0 >> 4) & 3);
  const int wide = n_embd == 256; /* rows for the K-quants: one layer, n_ff <= 64, 4 positions at most */
  const int64_t n_layer = wide ? 1 : 1 + ((d0 >> 3) & 1);
  const int hkv_mode = d0 >> 6;
  const int64_t n_head_kv = hkv_mode == 0   ? n_head
                            : hkv_mode == 1 ? 1
                            : hkv_mode == 2 ? (n_head % 2 ? n_head : n_head / 2)
                                            : 1 + (d1 >> 6); /* may not divide n_head */
  const int key_mode = d1 & 3;            /* 0: derived, 1: written, 2: any even, 3: odd */
  int64_t head_dim = n_embd / n_head;
  if (key_mode == 2) head_dim = 2 * (1 + ((d1 >> 2) & 15));
  if (key_mode == 3) head_dim = 1 + 2 * ((d1 >> 2) & 7);
  if (qwen3 && key_mode == 0 && (d1 & 0x20)) head_dim = 2 * n_embd / n_head; /* qwen3: head_dim != n_embd / n_head */
  if (head_dim < 1) head_dim = 1;
  const int64_t n_ff = wide && FF[d2 & 7] > 64 ? 32 : FF[d2 & 7];
  const int64_t n_ctx_train = wide && CTX[(d2 >> 3) & 7] > 4 ? 4 : CTX[(d2 >> 3) & 7];

  rlx_gguf_writer *w;
  CHECK(rlx_gguf_writer_new(&w) == RLX_OK);
  if (align64) CHECK(rlx_gguf_writer_set_alignment(w, 64) == RLX_OK);
  const uint8_t am = u8(r);
  if (am < 0xF0) CHECK(rlx_gguf_writer_add_string(w, "general.architecture", ARCH[arch], strlen(ARCH[arch])) == RLX_OK);
  else if (am < 0xF8) {
    uint32_t x = 1;
    CHECK(rlx_gguf_writer_add(w, "general.architecture", RLX_GGUF_VAL_U32, &x) == RLX_OK);
  }
  if (am & 1) CHECK(rlx_gguf_writer_add_string(w, "general.name", "fuzz model", 10) == RLX_OK);
  const char *a = ARCH[arch];
  char key[96];
#define KEY(k) (snprintf(key, sizeof key, "%s.%s", a, k), key)
  const written w_embd = put_int(w, KEY("embedding_length"), n_embd, u8(r));
  const written w_layer = put_int(w, KEY("block_count"), n_layer, u8(r));
  const written w_head = put_int(w, KEY("attention.head_count"), n_head, u8(r));
  written w_head_kv = {K_MISSING, 0};
  uint8_t mode = u8(r);
  if (n_head_kv != n_head || !(mode & 0x20)) w_head_kv = put_int(w, KEY("attention.head_count_kv"), n_head_kv, mode);
  const written w_ff = put_int(w, KEY("feed_forward_length"), n_ff, u8(r));
  const written w_ctx = put_int(w, KEY("context_length"), n_ctx_train, u8(r));
  written w_key = {K_MISSING, 0}, w_val = {K_MISSING, 0}, w_rot = {K_MISSING, 0};
  mode = u8(r);
  if (key_mode || (mode & 0x20) || head_dim != n_embd / n_head) {
    w_key = put_int(w, KEY("attention.key_length"), head_dim, mode);
    if (mode & 0x10) w_val = put_int(w, KEY("attention.value_length"), head_dim, u8(r));
  }
  mode = u8(r);
  if (mode & 0x20) w_rot = put_int(w, KEY("rope.dimension_count"), head_dim, mode);
  int theta_set, eps_set;
  double theta, eps;
  put_float(w, KEY("rope.freq_base"), 1e6, u8(r), &theta_set, &theta);
  put_float(w, KEY("attention.layer_norm_rms_epsilon"), 1e-6, u8(r), &eps_set, &eps);
#undef KEY

  static vocab v;
  const int n_vocab = put_tokenizer(w, r, bpe, &v);
  const uint8_t dv = u8(r);
  static const int64_t DELTA[] = {0, 0, 0, 0, 1, -1, 5, -200};
  int64_t embd_rows = n_vocab + DELTA[dv & 7];
  if (embd_rows < 1) embd_rows = 1;

  /* Tensors in the layout the architecture reads. */
  static tensors ts;
  memset(&ts, 0, sizeof ts);
  const uint64_t seed = u16(r);
  const int64_t q = n_head * head_dim, kv = n_head_kv * head_dim;
  add_tensor(w, r, &ts, "token_embd.weight", n_embd, embd_rows, raw, seed);
  add_tensor(w, r, &ts, "output_norm.weight", n_embd, 0, raw, seed);
  if (!tied) add_tensor(w, r, &ts, "output.weight", n_embd, embd_rows, raw, seed);
  for (int64_t l = 0; l < n_layer; l++) {
    char n[64];
#define T(suffix, cols, rows) \
  (snprintf(n, sizeof n, "blk.%d.%s", (int)l, suffix), add_tensor(w, r, &ts, n, cols, rows, raw, seed))
    T("attn_norm.weight", n_embd, 0);
    T("attn_q.weight", n_embd, q);
    T("attn_k.weight", n_embd, kv);
    T("attn_v.weight", n_embd, kv);
    T("attn_output.weight", q, n_embd);
    if (qwen2 || extra) {
      T("attn_q.bias", q, 0);
      T("attn_k.bias", kv, 0);
      T("attn_v.bias", kv, 0);
    }
    if (qwen3 || extra) {
      T("attn_q_norm.weight", head_dim, 0);
      T("attn_k_norm.weight", head_dim, 0);
    }
    T("ffn_norm.weight", n_embd, 0);
    T("ffn_gate.weight", n_embd, n_ff);
    T("ffn_up.weight", n_embd, n_ff);
    T("ffn_down.weight", n_ff, n_embd);
#undef T
  }
  if (dv & 0x80) add_tensor(w, r, &ts, "rope_freqs.weight", head_dim / 2 > 0 ? head_dim / 2 : 1, 0, raw, seed);

  uint64_t file_size;
  CHECK(rlx_gguf_writer_size(w, &file_size) == RLX_OK);
  uint8_t *mem = malloc((size_t)file_size + 8);
  CHECK(mem != NULL);
  uint8_t *image = mem + (unaligned ? 1 + (f1 >> 2 & 1) : 0);
  CHECK(rlx_gguf_writer_write_memory(w, image, (size_t)file_size) == RLX_OK);
  rlx_gguf_writer_free(w);
  for (int i = 0; i < ts.n; i++) free(ts.t[i].data);
  size_t open_size = (size_t)file_size;
  if (trim && ts.n) { /* end the buffer right after the last tensor's data */
    rlx_gguf *g;
    CHECK(rlx_gguf_open_memory(image, open_size, RLX_GGUF_NO_BUDGET, &g) == RLX_OK);
    uint64_t end = rlx_gguf_data_offset(g);
    for (int64_t i = 0; i < rlx_gguf_tensor_count(g); i++) {
      rlx_gguf_tensor_info t;
      CHECK(rlx_gguf_tensor(g, i, &t) == RLX_OK);
      if (t.file_offset + t.bytes > end) end = t.file_offset + t.bytes;
    }
    rlx_gguf_free(g);
    open_size = (size_t)end;
  }

  /* RLX_FUZZ_LLM_DUMP=path: the file this input makes, written there (make
   * writes the seeds' models so that tests/node/llm_files_wasm.test.mjs
   * opens them with the wasm module). */
  const char *dump = getenv("RLX_FUZZ_LLM_DUMP");
  if (dump) {
    FILE *f = fopen(dump, "wb");
    CHECK(f && fwrite(image, 1, open_size, f) == open_size && fclose(f) == 0);
  }

  /* Options: n_ctx 0 (the model's, when that is small), in range, or outside. */
  const uint8_t o = u8(r);
  rlx_llm_options opt = {.n_ctx = 0};
  const int64_t ctx_written = w_ctx.how == K_INT ? w_ctx.v : 0;
  if (o < 0x40 && ctx_written <= 64) opt.n_ctx = 0;
  else if (o < 0xF0) opt.n_ctx = 1 + (int32_t)(o % 64);
  else if (o < 0xF8) opt.n_ctx = (o & 1) ? -1 : 65 + (o & 6);
  else opt.n_ctx = (int32_t)(o & 7) + 1;
  if (o >= 0x40 && o < 0xF0 && ctx_written > 0 && opt.n_ctx > ctx_written) opt.n_ctx = (int32_t)ctx_written;
  if ((f1 & 0x18) == 0x18) opt.budget = (f1 & 0x20) ? 64 : ts.bytes; /* too small, or just enough */
  opt.xq8 = f1 >> 7;                                                    /* 8-bit activations */

  rlx_llm *m = (rlx_llm *)1;
  rlx_clear_error();
  rlx_status st = rlx_llm_open_memory(image, open_size, &opt, &m);
#ifdef FUZZ_LLM_TRACE /* which inputs open: -DFUZZ_LLM_TRACE */
  fprintf(stderr, "open: %d %s\n", (int)st, st ? rlx_last_error() : "");
#endif
  if (st != RLX_OK) {
    REFUSED(st);
    CHECK(m == NULL);
    free(mem);
    return 0;
  }
  /* It opened: what was written was usable, and the info says it. */
  CHECK(arch < 3 && am < 0xF0 && ts.bytes <= (opt.budget ? opt.budget : UINT64_MAX));
  rlx_llm_info in;
  CHECK(rlx_llm_get_info(m, &in) == RLX_OK);
  CHECK(strcmp(in.arch, ARCH[arch]) == 0);
  CHECK(strcmp(in.name, (am & 1) ? "fuzz model" : "") == 0);
  CHECK(w_embd.how == K_INT && in.n_embd == w_embd.v);
  CHECK(w_layer.how == K_INT && in.n_layer == w_layer.v);
  CHECK(w_head.how == K_INT && in.n_head == w_head.v);
  CHECK(w_ff.how == K_INT && in.n_ff == w_ff.v);
  CHECK(w_ctx.how == K_INT && in.n_ctx_train == w_ctx.v);
  CHECK(w_head_kv.how != K_BAD && in.n_head_kv == (w_head_kv.how == K_INT ? w_head_kv.v : in.n_head));
  CHECK(w_key.how != K_BAD && in.head_dim == (w_key.how == K_INT ? w_key.v : in.n_embd / in.n_head));
  CHECK(w_val.how != K_BAD && (w_val.how == K_MISSING || w_val.v == in.head_dim));
  CHECK(w_rot.how != K_BAD && (w_rot.how == K_MISSING || w_rot.v == in.head_dim));
  CHECK(in.n_head % in.n_head_kv == 0 && in.head_dim % 2 == 0);
  CHECK(theta_set >= 0 && in.rope_theta == (theta_set ? (float)theta : 10000.0f));
  CHECK(eps_set >= 0 && in.rms_eps == (eps_set ? (float)eps : 1e-5f));
  CHECK(in.n_ctx == (opt.n_ctx ? opt.n_ctx : (in.n_ctx_train < RLX_LLM_DEFAULT_CTX ? in.n_ctx_train
                                                                                    : RLX_LLM_DEFAULT_CTX)));
  CHECK(in.n_ctx >= 1 && in.n_ctx <= 80);
  CHECK(in.n_vocab == n_vocab && in.n_vocab == embd_rows);
  CHECK(in.rope_neox == (arch != 0));
  CHECK(in.tied_output == !ts.have_output);
  CHECK(in.n_params == ts.params && in.weight_bytes == ts.bytes);
  CHECK(in.kv_bytes == 2ull * 4u * (uint64_t)in.n_layer * (uint64_t)in.n_head_kv * (uint64_t)in.n_ctx *
                           (uint64_t)in.head_dim);
  CHECK(in.bos >= -1 && in.bos < in.n_vocab && in.eos >= -1 && in.eos < in.n_vocab);
  CHECK((in.add_bos == 0 || in.add_bos == 1) && (!in.add_bos || in.bos >= 0));
  CHECK(in.tokenizer && (strcmp(in.tokenizer, "llama") == 0 || strcmp(in.tokenizer, "gpt2") == 0));
  CHECK(in.weight_types && in.weight_types[0]);
  CHECK(in.xq8 == opt.xq8);
  use(m, r, &ts, raw);
  rlx_llm_free(m);
  free(mem);
  return 0;
}
