/* tokenizer_load.c - builds an rlx_tokenizer from a GGUF file's
 * tokenizer.ggml.* metadata, following llama.cpp's llama_vocab::load:
 * per-model defaults, the pre-tokenizer name table (the families this
 * library implements), token attributes from token_type, the special-id
 * keys, and the text-based fix-ups llama.cpp applies (EOT/EOM/FIM tokens
 * found by text, control-looking tokens made CONTROL, "unused" control
 * tokens, the end-of-generation set).  Malformed metadata is refused with a
 * message naming the key; nothing read from the file is trusted. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"
#include "../core/core.h"

#define KEY(k) "tokenizer.ggml." k

/* ---- metadata helpers ------------------------------------------------------------ */
static int is_int_type(rlx_gguf_vtype t) {
  return t == RLX_GGUF_VAL_U8 || t == RLX_GGUF_VAL_I8 || t == RLX_GGUF_VAL_U16 || t == RLX_GGUF_VAL_I16 ||
         t == RLX_GGUF_VAL_U32 || t == RLX_GGUF_VAL_I32 || t == RLX_GGUF_VAL_U64 || t == RLX_GGUF_VAL_I64 ||
         t == RLX_GGUF_VAL_BOOL;
}

/* The value of key: *found = 0 when absent; a value of another kind is an
 * error naming the key. */
static rlx_status get_kv(const rlx_gguf *g, const char *key, rlx_gguf_vtype want, rlx_gguf_vtype elem,
                         rlx_gguf_value *v, int64_t *idx, int *found) {
  *found = 0;
  int64_t i = rlx_gguf_find_kv(g, key);
  if (i < 0) return RLX_OK;
  const char *k;
  rlx_status st = rlx_gguf_kv(g, i, &k, v);
  if (st != RLX_OK) return st;
  int ok = want == RLX_GGUF_VAL_I64 ? is_int_type(v->type) : v->type == want;
  if (ok && want == RLX_GGUF_VAL_ARRAY && elem != RLX_GGUF_VAL_ARRAY) ok = v->elem_type == elem;
  if (!ok) {
    const char *ty = rlx_gguf_vtype_name(v->type), *el = rlx_gguf_vtype_name(v->elem_type);
    const char *want_s = want == RLX_GGUF_VAL_I64 ? "an integer or bool" : want == RLX_GGUF_VAL_STRING ? "a string"
                         : elem == RLX_GGUF_VAL_STRING ? "an array of strings"
                         : elem == RLX_GGUF_VAL_I32 ? "an array of i32" : "an array";
    return rlx_error(RLX_ERR_INVALID_ARG, "%s is %s%s%s, not %s", key, ty ? ty : "?",
                     v->type == RLX_GGUF_VAL_ARRAY ? " of " : "", v->type == RLX_GGUF_VAL_ARRAY ? (el ? el : "?") : "",
                     want_s);
  }
  if (idx) *idx = i;
  *found = 1;
  return RLX_OK;
}

/* A bounded printable copy for messages. */
static const char *show(char *buf, size_t cap, const char *s, size_t len) {
  size_t o = 0;
  for (size_t i = 0; i < len && o + 4 < cap; i++) buf[o++] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
  buf[o] = 0;
  return buf;
}

/* ---- the pre-tokenizer names ------------------------------------------------------- */
typedef struct {
  const char *name;
  tok_pre pre;
  int8_t clean, llama3_bos, no_bos;
} pre_entry;
static const pre_entry PRE_TABLE[] = {
    {"default", PRE_DEFAULT, 1, 0, 0},
    {"gpt-2", PRE_GPT2, 1, 0, 0}, {"phi-2", PRE_GPT2, 1, 0, 0}, {"jina-es", PRE_GPT2, 1, 0, 0},
    {"jina-de", PRE_GPT2, 1, 0, 0}, {"gigachat", PRE_GPT2, 1, 0, 0}, {"jina-v2-es", PRE_GPT2, 1, 0, 0},
    {"jina-v2-de", PRE_GPT2, 1, 0, 0}, {"a.x-4.0", PRE_GPT2, 1, 0, 0}, {"mellum", PRE_GPT2, 1, 0, 0},
    {"modern-bert", PRE_GPT2, 1, 0, 0}, {"exaone4", PRE_GPT2, 1, 0, 0}, {"mpt", PRE_GPT2, 1, 0, 0},
    {"olmo", PRE_GPT2, 1, 0, 0}, {"jais", PRE_GPT2, 1, 0, 0}, {"trillion", PRE_GPT2, 0, 0, 0},
    {"granite-docling", PRE_GPT2, 0, 0, 0},
    {"llama3", PRE_LLAMA3, 1, 1, 0}, {"llama-v3", PRE_LLAMA3, 1, 1, 0}, {"llama-bpe", PRE_LLAMA3, 1, 1, 0},
    {"falcon3", PRE_LLAMA3, 1, 1, 0}, {"falcon-h1", PRE_LLAMA3, 1, 1, 0}, {"pixtral", PRE_LLAMA3, 1, 1, 0},
    {"midm-2.0", PRE_LLAMA3, 1, 1, 0}, {"lfm2", PRE_LLAMA3, 1, 1, 0}, {"jina-v5-nano", PRE_LLAMA3, 1, 1, 0},
    {"dbrx", PRE_LLAMA3, 1, 0, 0}, {"smaug-bpe", PRE_LLAMA3, 1, 0, 0}, {"glm4", PRE_LLAMA3, 1, 0, 1},
    {"chatglm-bpe", PRE_LLAMA3, 1, 0, 1},
    {"qwen2", PRE_QWEN2, 0, 0, 0}, {"deepseek-r1-qwen", PRE_QWEN2, 0, 0, 0}, {"kormo", PRE_QWEN2, 0, 0, 0},
    {"f2llmv2", PRE_QWEN2, 0, 0, 0}, {"hunyuan", PRE_QWEN2, 0, 0, 0}, {"solar-open", PRE_QWEN2, 0, 0, 0},
    {"stablelm2", PRE_QWEN2, 1, 0, 0}, {"megrez", PRE_QWEN2, 1, 0, 0},
};
static const char *const PRE_NAMES[] = {"default", "gpt-2", "llama3", "qwen2"};

/* ---- texts llama.cpp recognises ------------------------------------------------------ */
#define LIST_END NULL
static const char *const EOT_TEXTS[] = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
                                        "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]",
                                        "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                                        "<end_of_utterance>", LIST_END};
static const char *const EOM_TEXTS[] = {"<|eom_id|>", LIST_END};
static const char *const FIM_PRE_TEXTS[] = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>",
                                            "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>", "<PRE>",
                                            "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>", LIST_END};
static const char *const FIM_SUF_TEXTS[] = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>",
                                            "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>", "<SUF>",
                                            "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>", LIST_END};
static const char *const FIM_MID_TEXTS[] = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>",
                                            "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>", "<MID>",
                                            "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>", LIST_END};
static const char *const FIM_PAD_TEXTS[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", LIST_END};
static const char *const FIM_REP_TEXTS[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
                                            LIST_END};
static const char *const FIM_SEP_TEXTS[] = {"<|file_sep|>", LIST_END};
static const char *const EOG_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>", "<end_of_turn>",
    "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>",
    "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~[", LIST_END};
static const char *const ALWAYS_USER_DEFINED[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>",
                                                  LIST_END};

static int text_is(const rlx_tokenizer *t, int32_t id, const char *s) {
  size_t n;
  const char *x = tok_text(t, id, &n);
  return n == strlen(s) && memcmp(x, s, n) == 0;
}
static int in_list(const rlx_tokenizer *t, int32_t id, const char *const *list) {
  for (; *list; list++)
    if (text_is(t, id, *list)) return 1;
  return 0;
}
static int32_t find_str(const rlx_tokenizer *t, const char *s) { return tok_find(t, s, strlen(s)); }

void rlx_tokenizer_free(rlx_tokenizer *t) {
  if (!t) return;
  size_t n = (size_t)t->n_vocab;
  rlx_free(t->text, t->text_bytes);
  rlx_free(t->text_off, (n + 1) * sizeof *t->text_off);
  rlx_free(t->scores, n * sizeof *t->scores);
  rlx_free(t->attr, n * sizeof *t->attr);
  rlx_free(t->piece, t->piece_bytes);
  rlx_free(t->piece_off, (n + 1) * sizeof *t->piece_off);
  rlx_free(t->slots, (size_t)t->n_slots * sizeof *t->slots);
  rlx_free(t->merge_keys, (size_t)t->n_merge_slots * sizeof *t->merge_keys);
  rlx_free(t->merge_rank, (size_t)t->n_merge_slots * sizeof *t->merge_rank);
  rlx_free(t->special, (size_t)(t->n_special > 0 ? t->n_special : 1) * sizeof *t->special);
  rlx_free(t, sizeof *t);
}


/* ---- loading steps ------------------------------------------------------------------ */
static uint32_t pow2_at_least(uint64_t n) {
  uint32_t p = 16;
  while (p < n && p < (1u << 31)) p *= 2;
  return p;
}

static rlx_status read_tokens(const rlx_gguf *g, rlx_tokenizer *t) {
  rlx_gguf_value v;
  int64_t kv = -1;
  int found;
  rlx_status st = get_kv(g, KEY("tokens"), RLX_GGUF_VAL_ARRAY, RLX_GGUF_VAL_STRING, &v, &kv, &found);
  if (st != RLX_OK) return st;
  if (!found) return rlx_error(RLX_ERR_INVALID_ARG, KEY("tokens") " is missing");
  if (v.count == 0 || v.count > (1u << 30))
    return rlx_error(RLX_ERR_INVALID_ARG, KEY("tokens") " has %llu entries (1 to 2^30 allowed)",
                     (unsigned long long)v.count);
  size_t n = (size_t)v.count;
  uint64_t total = 0; /* 64-bit: sums of lengths never wrap, in wasm32 either */
  char tmp[32];
  for (size_t i = 0; i < n; i++) {
    const char *s;
    uint64_t len;
    if ((st = rlx_gguf_array_string(g, kv, i, &s, &len)) != RLX_OK) return st;
    total += len ? len : (uint64_t)snprintf(tmp, sizeof tmp, "[EMPTY_%zu]", i);
    if (total > UINT32_MAX) return rlx_error(RLX_ERR_INVALID_ARG, KEY("tokens") " holds more than 4 GiB of text");
  }
  t->n_vocab = (int32_t)n;
  t->text_bytes = total ? (size_t)total : 1;
  t->n_slots = pow2_at_least(2 * (uint64_t)n);
  t->text = rlx_malloc(t->text_bytes);
  t->text_off = rlx_calloc(n + 1, sizeof *t->text_off); /* calloc: a count * size that would wrap is refused */
  t->scores = rlx_calloc(n, sizeof *t->scores);
  t->attr = rlx_calloc(n, sizeof *t->attr);
  t->slots = rlx_calloc(t->n_slots, sizeof *t->slots);
  if (!t->text || !t->text_off || !t->scores || !t->attr || !t->slots)
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_from_gguf: out of memory for %zu tokens", n);
  memset(t->slots, 0xFF, (size_t)t->n_slots * sizeof *t->slots);
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    const char *s;
    uint64_t len;
    rlx_gguf_array_string(g, kv, i, &s, &len);
    t->text_off[i] = (uint32_t)off;
    if (len) memcpy(t->text + off, s, (size_t)len);
    else len = (uint64_t)snprintf(t->text + off, sizeof tmp, "[EMPTY_%zu]", i);
    off += (size_t)len;
    t->text_off[i + 1] = (uint32_t)off;
    t->attr[i] = TOK_NORMAL;
    int32_t dup = tok_find(t, t->text + t->text_off[i], (size_t)len);
    if (dup != RLX_TOKEN_NULL) {
      char buf[64];
      return rlx_error(RLX_ERR_INVALID_ARG, KEY("tokens") ": duplicate token '%s' (ids %d and %zu)",
                       show(buf, sizeof buf, t->text + t->text_off[i], (size_t)len), dup, i);
    }
    uint64_t h = 0xcbf29ce484222325ull; /* the same hash as tok_find */
    for (size_t j = 0; j < len; j++) h = (h ^ (unsigned char)t->text[t->text_off[i] + j]) * 0x100000001b3ull;
    h ^= h >> 29;
    uint32_t mask = t->n_slots - 1, k = (uint32_t)h & mask;
    while (t->slots[k] >= 0) k = (k + 1) & mask;
    t->slots[k] = (int32_t)i;
  }
  return RLX_OK;
}

static rlx_status read_scores_types(const rlx_gguf *g, rlx_tokenizer *t) {
  rlx_gguf_value v;
  int found;
  size_t n = (size_t)t->n_vocab;
  rlx_status st = get_kv(g, KEY("scores"), RLX_GGUF_VAL_ARRAY, RLX_GGUF_VAL_ARRAY, &v, NULL, &found);
  if (st != RLX_OK) return st;
  if (found) {
    if (v.elem_type != RLX_GGUF_VAL_F32 && v.elem_type != RLX_GGUF_VAL_I32)
      return rlx_error(RLX_ERR_INVALID_ARG, KEY("scores") " must be an array of f32 or i32");
    if (v.count != n)
      return rlx_error(RLX_ERR_INVALID_ARG, KEY("scores") " has %llu entries for %zu tokens",
                       (unsigned long long)v.count, n);
    for (size_t i = 0; i < n; i++) {
      float s;
      if (v.elem_type == RLX_GGUF_VAL_F32) memcpy(&s, (const char *)v.data + 4 * i, 4);
      else {
        int32_t k;
        memcpy(&k, (const char *)v.data + 4 * i, 4);
        s = (float)k;
      }
      if (s != s) return rlx_error(RLX_ERR_INVALID_ARG, KEY("scores") "[%zu] is NaN", i);
      t->scores[i] = s;
    }
  }
  st = get_kv(g, KEY("token_type"), RLX_GGUF_VAL_ARRAY, RLX_GGUF_VAL_I32, &v, NULL, &found);
  if (st != RLX_OK) return st;
  if (found) {
    if (v.count != n)
      return rlx_error(RLX_ERR_INVALID_ARG, KEY("token_type") " has %llu entries for %zu tokens",
                       (unsigned long long)v.count, n);
    static const uint16_t BY_TYPE[7] = {TOK_UNDEFINED, TOK_NORMAL, TOK_UNKNOWN, TOK_CONTROL,
                                        TOK_USER_DEFINED, TOK_UNUSED, TOK_BYTE};
    for (size_t i = 0; i < n; i++) {
      int32_t k;
      memcpy(&k, (const char *)v.data + 4 * i, 4);
      t->attr[i] = k >= 0 && k < 7 ? BY_TYPE[k] : TOK_UNDEFINED;
    }
  }
  return RLX_OK;
}

static rlx_status read_merges(const rlx_gguf *g, rlx_tokenizer *t) {
  rlx_gguf_value v;
  int64_t kv = -1;
  int found;
  rlx_status st = get_kv(g, KEY("merges"), RLX_GGUF_VAL_ARRAY, RLX_GGUF_VAL_STRING, &v, &kv, &found);
  if (st != RLX_OK) return st;
  if (!found) return rlx_error(RLX_ERR_INVALID_ARG, KEY("merges") " is missing (required by the gpt2 model)");
  if (v.count > (1u << 30)) return rlx_error(RLX_ERR_INVALID_ARG, KEY("merges") " has too many entries");
  if (v.count == 0) return RLX_OK;
  t->n_merge_slots = pow2_at_least(2 * v.count);
  t->merge_keys = rlx_calloc(t->n_merge_slots, sizeof *t->merge_keys);
  t->merge_rank = rlx_calloc(t->n_merge_slots, sizeof *t->merge_rank);
  if (!t->merge_keys || !t->merge_rank)
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_from_gguf: out of memory for %llu merges",
                     (unsigned long long)v.count);
  for (uint64_t i = 0; i < v.count; i++) {
    const char *s;
    uint64_t len, sp = 1;
    char buf[64];
    if ((st = rlx_gguf_array_string(g, kv, i, &s, &len)) != RLX_OK) return st;
    while (sp < len && s[sp] != ' ') sp++;
    if (sp >= len)
      return rlx_error(RLX_ERR_INVALID_ARG, KEY("merges") "[%llu] '%s' is not two pieces split by a space",
                       (unsigned long long)i, show(buf, sizeof buf, s, (size_t)len));
    int32_t l = tok_find(t, s, (size_t)sp), r = tok_find(t, s + sp + 1, (size_t)(len - sp - 1));
    if (l == RLX_TOKEN_NULL || r == RLX_TOKEN_NULL)
      return rlx_error(RLX_ERR_INVALID_ARG, KEY("merges") "[%llu] '%s' names a piece that is not a token",
                       (unsigned long long)i, show(buf, sizeof buf, s, (size_t)len));
    if (tok_merge_rank(t, l, r) >= 0) continue; /* the first rank wins, as llama.cpp's emplace */
    uint64_t key = (((uint64_t)(uint32_t)l << 32) | (uint32_t)r) + 1, h = key;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    uint32_t mask = t->n_merge_slots - 1, k = (uint32_t)h & mask;
    while (t->merge_keys[k]) k = (k + 1) & mask;
    t->merge_keys[k] = key;
    t->merge_rank[k] = (int32_t)i;
  }
  return RLX_OK;
}

/* A special id key: present and inside the vocab replaces *id. */
static rlx_status read_id(const rlx_gguf *g, const char *key, int32_t n, int32_t *id) {
  rlx_gguf_value v;
  int found;
  if (*id >= n) *id = RLX_TOKEN_NULL; /* a default outside the vocab is disabled */
  rlx_status st = get_kv(g, key, RLX_GGUF_VAL_I64, RLX_GGUF_VAL_ARRAY, &v, NULL, &found);
  if (st == RLX_OK && found && v.i64 >= 0 && v.i64 < n) *id = (int32_t)v.i64;
  return st;
}

static rlx_status read_flag(const rlx_gguf *g, const char *key, int *flag) {
  rlx_gguf_value v;
  int found;
  rlx_status st = get_kv(g, key, RLX_GGUF_VAL_I64, RLX_GGUF_VAL_ARRAY, &v, NULL, &found);
  if (st == RLX_OK && found) *flag = v.i64 != 0;
  return st;
}

static int contains(const char *s, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++)
    if (memcmp(s + i, needle, k) == 0) return 1;
  return 0;
}

/* llama.cpp's text-based fix-ups and the end-of-generation set. */
static void fix_special(rlx_tokenizer *t) {
  int32_t n = t->n_vocab;
  struct {
    int32_t *id;
    const char *const *texts;
  } found[] = {{&t->eot, EOT_TEXTS}, {&t->eom, EOM_TEXTS}, {NULL, FIM_PRE_TEXTS}, {NULL, FIM_SUF_TEXTS},
               {NULL, FIM_MID_TEXTS}, {&t->fim_pad, FIM_PAD_TEXTS}, {&t->fim_rep, FIM_REP_TEXTS},
               {&t->fim_sep, FIM_SEP_TEXTS}};
  int32_t fim_pre = t->fim_pre, fim_suf = t->fim_suf, fim_mid = t->fim_mid;
  found[2].id = &fim_pre;
  found[3].id = &fim_suf;
  found[4].id = &fim_mid;
  for (int32_t id = 0; id < n; id++)
    for (size_t k = 0; k < sizeof found / sizeof found[0]; k++)
      if (*found[k].id == RLX_TOKEN_NULL && in_list(t, id, found[k].texts)) {
        *found[k].id = id;
        t->attr[id] |= TOK_CONTROL;
      }
  for (int32_t id = 0; id < n; id++) {
    size_t len;
    const char *s = tok_text(t, id, &len);
    if ((t->attr[id] & TOK_CONTROL) && contains(s, len, "unused")) t->attr[id] |= TOK_UNUSED;
  }
  int32_t eog_ids[] = {t->fim_pad, t->fim_rep, t->fim_sep, t->eos, t->eot, t->eom};
  for (int32_t id = 0; id < n; id++) {
    if (in_list(t, id, EOG_TEXTS)) t->attr[id] |= TOK_EOG | TOK_CONTROL;
    if (in_list(t, id, ALWAYS_USER_DEFINED)) t->attr[id] = (uint16_t)(TOK_USER_DEFINED | (t->attr[id] & TOK_EOG));
  }
  for (size_t k = 0; k < sizeof eog_ids / sizeof eog_ids[0]; k++)
    if (eog_ids[k] != RLX_TOKEN_NULL) t->attr[eog_ids[k]] |= TOK_EOG;
  int32_t end = find_str(t, "<|end|>"), s_id = find_str(t, "</s>");
#define IS_EOG(txt) (find_str(t, txt) != RLX_TOKEN_NULL && (t->attr[find_str(t, txt)] & TOK_EOG))
  int has_call = IS_EOG("<|call|>") || IS_EOG("<|calls|>");
  if (end != RLX_TOKEN_NULL && (t->attr[end] & TOK_EOG) && has_call && (IS_EOG("<|return|>") || IS_EOG("<|flush|>")))
    t->attr[end] = TOK_USER_DEFINED;
  if (s_id != RLX_TOKEN_NULL && (t->attr[s_id] & TOK_EOG) && IS_EOG("<|tool_response>")) t->attr[s_id] = TOK_NORMAL;
#undef IS_EOG
}

typedef struct {
  uint32_t len;
  int32_t id;
} by_len;
static int by_len_cmp(const void *a, const void *b) {
  const by_len *x = a, *y = b;
  if (x->len != y->len) return x->len > y->len ? -1 : 1;
  return x->id < y->id ? -1 : x->id > y->id;
}

static rlx_status build_caches(rlx_tokenizer *t) {
  size_t n = (size_t)t->n_vocab, n_sp = 0;
  for (size_t i = 0; i < n; i++) n_sp += (t->attr[i] & (TOK_CONTROL | TOK_USER_DEFINED | TOK_UNKNOWN)) != 0;
  by_len *tmp = rlx_calloc(n_sp ? n_sp : 1, sizeof *tmp);
  t->special = rlx_calloc(n_sp ? n_sp : 1, sizeof *t->special);
  if (!tmp || !t->special) {
    rlx_free(tmp, (n_sp ? n_sp : 1) * sizeof *tmp);
    rlx_free(t->special, (n_sp ? n_sp : 1) * sizeof *t->special);
    t->special = NULL;
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_from_gguf: out of memory");
  }
  t->n_special = (int32_t)n_sp;
  for (size_t i = 0, k = 0; i < n; i++)
    if (t->attr[i] & (TOK_CONTROL | TOK_USER_DEFINED | TOK_UNKNOWN))
      tmp[k++] = (by_len){t->text_off[i + 1] - t->text_off[i], (int32_t)i};
  qsort(tmp, n_sp, sizeof *tmp, by_len_cmp);
  for (size_t k = 0; k < n_sp; k++) t->special[k] = tmp[k].id;
  rlx_free(tmp, (n_sp ? n_sp : 1) * sizeof *tmp);

  /* The pieces are sized before anything is allocated for them, and
   * bounded by the tokens' text (TOK_PIECE_PER_TEXT_BYTE). */
  const uint64_t most_u64 = (uint64_t)TOK_PIECE_PER_TEXT_BYTE * t->text_bytes + TOK_PIECE_SLACK;
  const uint64_t most = most_u64 < UINT32_MAX ? most_u64 : UINT32_MAX;
  uint64_t total = 0;
  for (size_t i = 0; i < n; i++) {
    const uint64_t bytes = tok_render_piece(t, (int32_t)i, NULL, 0);
    total += bytes;
    if (total > most)
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_from_gguf: " KEY("tokens") " renders to pieces of more than "
                       "%llu bytes (%d per byte of the tokens' %zu bytes of text, plus %d); token %zu alone renders to "
                       "%llu bytes", (unsigned long long)most, TOK_PIECE_PER_TEXT_BYTE, t->text_bytes, TOK_PIECE_SLACK, i,
                       (unsigned long long)bytes);
  }
  t->piece_bytes = total ? (size_t)total : 1;
  t->piece = rlx_malloc(t->piece_bytes);
  t->piece_off = rlx_calloc(n + 1, sizeof *t->piece_off);
  if (!t->piece || !t->piece_off) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_from_gguf: out of memory");
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    t->piece_off[i] = (uint32_t)off;
    off += (size_t)tok_render_piece(t, (int32_t)i, t->piece + off, (size_t)total - off);
  }
  t->piece_off[n] = (uint32_t)off;
  return RLX_OK;
}

static rlx_status load(const rlx_gguf *g, rlx_tokenizer *t) {
  rlx_gguf_value v;
  int found;
  rlx_status st = get_kv(g, KEY("model"), RLX_GGUF_VAL_STRING, RLX_GGUF_VAL_ARRAY, &v, NULL, &found);
  if (st != RLX_OK) return st;
  if (!found) return rlx_error(RLX_ERR_INVALID_ARG, KEY("model") " is missing");
  char buf[64];
  if (v.count == 5 && memcmp(v.str, "llama", 5) == 0) {
    t->type = TOK_SPM;
    t->model_name = "llama";
    t->pre_name = "default";
    t->bos = 1, t->eos = 2, t->unk = 0;
    t->add_space_prefix = 1, t->add_bos = 1;
  } else if (v.count == 4 && memcmp(v.str, "gpt2", 4) == 0) {
    t->type = TOK_BPE;
    t->model_name = "gpt2";
    t->bos = 11, t->eos = 11;
    if ((st = get_kv(g, KEY("pre"), RLX_GGUF_VAL_STRING, RLX_GGUF_VAL_ARRAY, &v, NULL, &found)) != RLX_OK) return st;
    const pre_entry *e = &PRE_TABLE[0]; /* missing or empty: "default", as llama.cpp (with its warning) */
    if (found && v.count) {
      e = NULL;
      for (size_t i = 0; i < sizeof PRE_TABLE / sizeof PRE_TABLE[0]; i++)
        if (strlen(PRE_TABLE[i].name) == v.count && memcmp(PRE_TABLE[i].name, v.str, v.count) == 0) e = &PRE_TABLE[i];
      if (!e)
        return rlx_error(RLX_ERR_UNSUPPORTED, KEY("pre") " '%s' is not supported (default, gpt-2, llama3, qwen2 "
                         "and their aliases are)", show(buf, sizeof buf, v.str, (size_t)v.count));
    }
    t->pre = e->pre;
    t->pre_name = PRE_NAMES[e->pre];
    t->clean_spaces = e->clean;
    t->ignore_merges = t->add_bos = e->llama3_bos;
    if (e->no_bos) t->bos = RLX_TOKEN_NULL;
  } else {
    return rlx_error(RLX_ERR_UNSUPPORTED, KEY("model") " '%s' is not supported (llama, gpt2 are)",
                     show(buf, sizeof buf, v.str, (size_t)v.count));
  }
  if ((st = read_flag(g, KEY("add_space_prefix"), &t->add_space_prefix)) != RLX_OK) return st;
  if ((st = read_tokens(g, t)) != RLX_OK || (st = read_scores_types(g, t)) != RLX_OK) return st;
  if (t->type == TOK_BPE && (st = read_merges(g, t)) != RLX_OK) return st;
  struct {
    const char *key;
    int32_t *id;
  } ids[] = {{KEY("bos_token_id"), &t->bos},       {KEY("eos_token_id"), &t->eos},
             {KEY("eot_token_id"), &t->eot},       {KEY("eom_token_id"), &t->eom},
             {KEY("unknown_token_id"), &t->unk},   {KEY("padding_token_id"), &t->pad},
             {KEY("fim_pre_token_id"), &t->fim_pre}, {KEY("fim_suf_token_id"), &t->fim_suf},
             {KEY("fim_mid_token_id"), &t->fim_mid}, {KEY("fim_pad_token_id"), &t->fim_pad},
             {KEY("fim_rep_token_id"), &t->fim_rep}, {KEY("fim_sep_token_id"), &t->fim_sep},
             {KEY("prefix_token_id"), &t->fim_pre}, {KEY("suffix_token_id"), &t->fim_suf},
             {KEY("middle_token_id"), &t->fim_mid}};
  for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
    if ((st = read_id(g, ids[i].key, t->n_vocab, ids[i].id)) != RLX_OK) return st;
  if ((st = read_flag(g, KEY("add_bos_token"), &t->add_bos)) != RLX_OK ||
      (st = read_flag(g, KEY("add_eos_token"), &t->add_eos)) != RLX_OK)
    return st;
  if (t->add_bos && t->bos == RLX_TOKEN_NULL)
    return rlx_error(RLX_ERR_INVALID_ARG, KEY("add_bos_token") " is true, but " KEY("bos_token_id") " is not set");
  if (t->add_eos && t->eos == RLX_TOKEN_NULL)
    return rlx_error(RLX_ERR_INVALID_ARG, KEY("add_eos_token") " is true, but " KEY("eos_token_id") " is not set");
  fix_special(t);
  for (int b = 0; b < 256; b++) {
    char hex[8], one = (char)b;
    snprintf(hex, sizeof hex, "<0x%02X>", b);
    t->byte_tok[b] = t->type == TOK_SPM ? tok_find(t, hex, 6) : RLX_TOKEN_NULL;
    if (t->byte_tok[b] == RLX_TOKEN_NULL) t->byte_tok[b] = tok_find(t, &one, 1);
  }
  return build_caches(t);
}

rlx_status rlx_tokenizer_from_gguf(const rlx_gguf *g, rlx_tokenizer **out) {
  if (out) *out = NULL;
  if (!g || !out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_tokenizer_from_gguf: null argument");
  rlx_tokenizer *t = rlx_calloc(1, sizeof *t);
  if (!t) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_tokenizer_from_gguf: out of memory");
  t->bos = t->eos = t->eot = t->eom = t->unk = t->pad = RLX_TOKEN_NULL;
  t->fim_pre = t->fim_suf = t->fim_mid = t->fim_pad = t->fim_rep = t->fim_sep = RLX_TOKEN_NULL;
  rlx_status st = load(g, t);
  if (st != RLX_OK) {
    rlx_tokenizer_free(t);
    return st;
  }
  *out = t;
  return RLX_OK;
}
