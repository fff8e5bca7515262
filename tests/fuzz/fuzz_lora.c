/* fuzz_lora.c - libFuzzer target: LoRA adapter files (src/models/
 * llm_lora.c at open, llm_lora_merge.c).  Two bytes choose the base (a
 * small llama written here with the GGUF writer: 2 layers, embedding 32,
 * 2 heads of 16 with 1 KV head, feed-forward 32; its 2-D weights f32, f16,
 * q8_0 or q4_0), the merge type, one or two adapters and their scales; the
 * rest is the adapter file, as rlx_llm_lora.data / size (the second
 * adapter is the same bytes).  The base is opened with the adapters: a
 * refusal carries a message, and the merge refuses them with the same
 * status; an accepted adapter evaluates a few ids, reads its pairs back,
 * and merges (rlx_llm_lora_merge_memory, sized first): a refusal there is
 * a merged value out of range (RLX_ERR_NUMERIC) with a message; a merged
 * file parses, keeps the base's metadata count and every tensor no
 * adapter touched byte for byte, opens and evaluates, and at scale 0 with
 * an f32 base (auto) is the base itself.  The seeds
 * (tests/fuzz/corpus/lora/) come from tests/fuzz/make_seeds.py, which
 * writes adapters for this base's shapes. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_gguf.h"
#include "rlx_llm.h"
#include "fuzz_check.h"

#define N_EMBD 32
#define N_HEAD 2
#define HEAD_DIM 16
#define N_KV (1 * HEAD_DIM)
#define N_FF 32
#define N_LAYER 2
#define N_VOCAB 259 /* <unk> <s> </s> and the 256 byte tokens */

static const rlx_gguf_type BASE_TYPES[4] = {RLX_GGUF_TYPE_F32, RLX_GGUF_TYPE_F16, RLX_GGUF_TYPE_Q8_0,
                                            RLX_GGUF_TYPE_Q4_0};
static const float SCALES[8] = {1.0f, 0.5f, 0.0f, -1.0f, 3.75f, 1e4f, -0.25f, 2.0f};

static void add_u32(rlx_gguf_writer *w, const char *key, uint32_t v) {
  CHECK(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_U32, &v) == RLX_OK);
}

/* A tensor [cols, rows] of seeded values in +-a around offset. */
static void add_tensor(rlx_gguf_writer *w, void **keep, int *n_keep, const char *name, rlx_gguf_type type,
                       int64_t cols, int64_t rows, float a, float offset) {
  const int64_t n = cols * rows;
  float *x = malloc((size_t)n * sizeof *x);
  CHECK(x != NULL);
  uint64_t s = 0x9E3779B97F4A7C15ull * (uint64_t)(*n_keep + 1);
  for (int64_t i = 0; i < n; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = offset + a * ((float)(s >> 40) / 8388608.0f - 1.0f);
  }
  uint64_t bytes;
  CHECK(rlx_gguf_row_bytes(type, n, &bytes) == RLX_OK);
  void *q = malloc((size_t)bytes);
  CHECK(q != NULL && rlx_gguf_quantize(type, x, n, q, (size_t)bytes) == RLX_OK);
  free(x);
  keep[(*n_keep)++] = q;
  const int64_t dims[2] = {cols, rows};
  CHECK(rlx_gguf_writer_add_tensor(w, name, type, rows > 1 ? 2 : 1, dims, q, bytes) == RLX_OK);
}

/* The base model of type t as a GGUF file's bytes (made once, kept). */
static const unsigned char *base_model(int t, size_t *size) {
  static unsigned char *made[4];
  static size_t sizes[4];
  if (!made[t]) {
    rlx_gguf_writer *w;
    CHECK(rlx_gguf_writer_new(&w) == RLX_OK);
    CHECK(rlx_gguf_writer_add_string(w, "general.architecture", "llama", 5) == RLX_OK);
    add_u32(w, "general.file_type", t == 0 ? 0 : t == 1 ? 1 : t == 2 ? 7 : 2);
    add_u32(w, "llama.context_length", 64);
    add_u32(w, "llama.embedding_length", N_EMBD);
    add_u32(w, "llama.block_count", N_LAYER);
    add_u32(w, "llama.feed_forward_length", N_FF);
    add_u32(w, "llama.attention.head_count", N_HEAD);
    add_u32(w, "llama.attention.head_count_kv", 1);
    add_u32(w, "llama.rope.dimension_count", HEAD_DIM);
    static char store[N_VOCAB][8];
    static const char *tok[N_VOCAB];
    static float score[N_VOCAB];
    static int32_t type[N_VOCAB];
    const char *named[3] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < N_VOCAB; i++) {
      if (i < 3) snprintf(store[i], sizeof store[i], "%s", named[i]);
      else snprintf(store[i], sizeof store[i], "<0x%02X>", i - 3);
      tok[i] = store[i];
      type[i] = i == 0 ? 2 : i < 3 ? 3 : 6;
    }
    CHECK(rlx_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama", 5) == RLX_OK);
    CHECK(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", tok, NULL, N_VOCAB) == RLX_OK);
    CHECK(rlx_gguf_writer_add_array(w, "tokenizer.ggml.scores", RLX_GGUF_VAL_F32, score, N_VOCAB) == RLX_OK);
    CHECK(rlx_gguf_writer_add_array(w, "tokenizer.ggml.token_type", RLX_GGUF_VAL_I32, type, N_VOCAB) == RLX_OK);
    add_u32(w, "tokenizer.ggml.bos_token_id", 1);
    add_u32(w, "tokenizer.ggml.eos_token_id", 2);
    void *keep[64];
    int n_keep = 0;
    const rlx_gguf_type wt = BASE_TYPES[t], f32 = RLX_GGUF_TYPE_F32;
    add_tensor(w, keep, &n_keep, "token_embd.weight", wt, N_EMBD, N_VOCAB, 1.0f, 0.0f);
    add_tensor(w, keep, &n_keep, "output_norm.weight", f32, N_EMBD, 1, 0.1f, 1.0f);
    add_tensor(w, keep, &n_keep, "output.weight", wt, N_EMBD, N_VOCAB, 0.5f, 0.0f);
    for (int l = 0; l < N_LAYER; l++) {
      static const struct { const char *name; int64_t cols, rows; } W[9] = {
          {"attn_norm", N_EMBD, 1},  {"attn_q", N_EMBD, N_HEAD * HEAD_DIM}, {"attn_k", N_EMBD, N_KV},
          {"attn_v", N_EMBD, N_KV},  {"attn_output", N_HEAD * HEAD_DIM, N_EMBD}, {"ffn_norm", N_EMBD, 1},
          {"ffn_gate", N_EMBD, N_FF}, {"ffn_up", N_EMBD, N_FF}, {"ffn_down", N_FF, N_EMBD}};
      for (int k = 0; k < 9; k++) {
        char name[64];
        snprintf(name, sizeof name, "blk.%d.%s.weight", l, W[k].name);
        const int norm = W[k].rows == 1;
        add_tensor(w, keep, &n_keep, name, norm ? f32 : wt, W[k].cols, W[k].rows, norm ? 0.1f : 0.3f,
                   norm ? 1.0f : 0.0f);
      }
    }
    uint64_t bytes;
    CHECK(rlx_gguf_writer_size(w, &bytes) == RLX_OK);
    CHECK((made[t] = malloc((size_t)bytes)) != NULL);
    CHECK(rlx_gguf_writer_write_memory(w, made[t], (size_t)bytes) == RLX_OK);
    sizes[t] = (size_t)bytes;
    rlx_gguf_writer_free(w);
    for (int i = 0; i < n_keep; i++) free(keep[i]);
  }
  *size = sizes[t];
  return made[t];
}

static void evaluate(rlx_llm *m) {
  static const int32_t ids[5] = {1, 70, 3, 258, 120};
  static float logits[N_VOCAB];
  CHECK(rlx_llm_eval(m, ids, 5, logits) == RLX_OK);
}

/* The merged file: the base's metadata count, every tensor no adapter
 * touched as it was. */
static void check_merged(const unsigned char *base, size_t base_size, const unsigned char *out, size_t size) {
  rlx_gguf *b, *g;
  CHECK(rlx_gguf_open_memory(base, base_size, RLX_GGUF_NO_BUDGET, &b) == RLX_OK);
  CHECK(rlx_gguf_open_memory(out, size, RLX_GGUF_NO_BUDGET, &g) == RLX_OK);
  CHECK(rlx_gguf_kv_count(g) == rlx_gguf_kv_count(b) && rlx_gguf_tensor_count(g) == rlx_gguf_tensor_count(b));
  for (int64_t t = 0; t < rlx_gguf_tensor_count(b); t++) {
    rlx_gguf_tensor_info x, y;
    CHECK(rlx_gguf_tensor(b, t, &x) == RLX_OK && rlx_gguf_tensor(g, t, &y) == RLX_OK);
    CHECK(strcmp(x.name, y.name) == 0 && x.n_elements == y.n_elements);
    const size_t len = strlen(x.name);
    const int adaptable = strncmp(x.name, "blk.", 4) == 0 && len > 7 && strcmp(x.name + len - 7, ".weight") == 0 &&
                          !strstr(x.name, "_norm.");
    if (!adaptable) CHECK(x.type == y.type && x.bytes == y.bytes && memcmp(x.data, y.data, (size_t)x.bytes) == 0);
  }
  rlx_gguf_free(b);
  rlx_gguf_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const int t = data[0] & 3, merge_type = (data[0] >> 2) & 3, two = data[1] & 1;
  const float s0 = SCALES[(data[0] >> 4) & 7], s1 = SCALES[(data[1] >> 1) & 7];
  if (size == 2) return 0; /* no adapter bytes: "neither a path nor data" */
  size_t base_size;
  const unsigned char *base = base_model(t, &base_size);
  const rlx_llm_lora l[2] = {{NULL, data + 2, size - 2, s0}, {NULL, data + 2, size - 2, s1}};
  const int32_t n = two ? 2 : 1;
  rlx_llm_options opt = {.n_ctx = 8, .lora = l, .n_lora = n}; /* no budget: the merge has none */
  rlx_llm *m = NULL;
  const rlx_status opened = rlx_llm_open_memory(base, base_size, &opt, &m);
  size_t need = 1;
  const rlx_status sized = rlx_llm_lora_merge_memory(base, base_size, l, n, (rlx_llm_merge_type)merge_type, NULL, 0,
                                                     &need);
  CHECK(rlx_last_error()[0]); /* refused or too small: a message either way */
  if (opened != RLX_OK) {
    CHECK(m == NULL && sized == opened && need == 0);
    return 0;
  }
  CHECK(sized == RLX_ERR_INVALID_ARG && need > 0);
  evaluate(m);
  rlx_llm_info in;
  CHECK(rlx_llm_get_info(m, &in) == RLX_OK && in.n_lora == n);
  for (int32_t i = 0; i < n; i++)
    for (int32_t k = 0; k < rlx_llm_lora_pair_count(m, i); k++) {
      rlx_llm_lora_pair_info pi;
      CHECK(rlx_llm_lora_get_pair(m, i, k, &pi, NULL, 0, NULL, 0) == RLX_OK);
      CHECK(pi.rank >= 1 && pi.n_in >= 1 && pi.n_out >= 1 && pi.layer >= 0 && pi.layer < N_LAYER);
    }
  rlx_llm_free(m);
  unsigned char *out = malloc(need);
  CHECK(out != NULL);
  size_t got = 1;
  const rlx_status st = rlx_llm_lora_merge_memory(base, base_size, l, n, (rlx_llm_merge_type)merge_type, out, need,
                                                  &got);
  if (st != RLX_OK) {
    CHECK(st == RLX_ERR_NUMERIC && got == 0 && strstr(rlx_last_error(), "rlx_llm_lora_merge"));
    free(out);
    return 0;
  }
  CHECK(got == need);
  check_merged(base, base_size, out, got);
  if (s0 == 0.0f && (!two || s1 == 0.0f) && t == 0 && merge_type == RLX_LLM_MERGE_AUTO)
    CHECK(got == base_size && memcmp(out, base, got) == 0);
  opt.lora = NULL, opt.n_lora = 0;
  CHECK(rlx_llm_open_memory(out, got, &opt, &m) == RLX_OK);
  evaluate(m);
  rlx_llm_free(m);
  free(out);
  return 0;
}
