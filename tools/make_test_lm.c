/* make_test_lm.c - writes a small language model as a GGUF file, with
 * seeded random weights and a tokenizer trained on a text corpus, laid out
 * as llama.cpp reads the "llama", "qwen2" and "qwen3" architectures.  The
 * test fixtures of build/lm/ (make lm-fixtures) and the llama.cpp reference
 * outputs of tests/llama_ref/ are made with it.
 *
 *   build/make_test_lm --arch llama|qwen2|qwen3 --type TYPE --out FILE
 *       [--seed N] [--n-embd 256] [--n-layer 2] [--n-head 4] [--n-head-kv 2]
 *       [--head-dim D] [--n-ff 512] [--n-vocab 560] [--n-ctx 512]
 *       [--corpus tests/llm/corpus.txt] [--tied]
 *
 * TYPE is f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k or q6_k:
 * the type of every 2-D weight (token_embd included); norm weights and
 * biases stay f32.  --head-dim defaults to n_embd / n_head, and to 128 for
 * qwen3 (so that it differs from n_embd / n_head, as in Qwen3 models).
 * --tied leaves out output.weight (the output reuses token_embd).
 *
 * The bytes depend only on the arguments and the corpus: the weights come
 * from a splitmix64 generator (uniform values), seeded per tensor
 * from --seed and the tensor's name.  The scales make the next-token
 * distribution peaked (logits with a standard deviation of about 16), so
 * that rounding differences rarely change the greedy choice. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "make_test_lm.h"
#include "rlx_gguf.h"

typedef struct {
  const char *name;  /* argument */
  rlx_gguf_type type;
  uint32_t ftype;    /* general.file_type (llama_ftype) */
} type_row;

static const type_row TYPES[] = {
    {"f32", RLX_GGUF_TYPE_F32, 0},    {"f16", RLX_GGUF_TYPE_F16, 1},    {"bf16", RLX_GGUF_TYPE_BF16, 32},
    {"q8_0", RLX_GGUF_TYPE_Q8_0, 7},  {"q4_0", RLX_GGUF_TYPE_Q4_0, 2},  {"q4_1", RLX_GGUF_TYPE_Q4_1, 3},
    {"q5_0", RLX_GGUF_TYPE_Q5_0, 8},  {"q5_1", RLX_GGUF_TYPE_Q5_1, 9},  {"q4_k", RLX_GGUF_TYPE_Q4_K, 14},
    {"q5_k", RLX_GGUF_TYPE_Q5_K, 16}, {"q6_k", RLX_GGUF_TYPE_Q6_K, 18},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

typedef struct {
  const char *arch, *out, *corpus;
  const type_row *type;
  uint64_t seed;
  long n_embd, n_layer, n_head, n_head_kv, head_dim, n_ff, n_vocab, n_ctx;
  int tied;
} options;

static int usage(const char *msg, const char *arg) {
  fprintf(stderr, "make_test_lm: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
  fprintf(stderr,
          "usage: make_test_lm --arch llama|qwen2|qwen3 --type f32|f16|bf16|q8_0|q4_0|q4_1|q5_0|q5_1|q4_k|q5_k|q6_k\n"
          "                    --out FILE [--seed N] [--n-embd 256] [--n-layer 2] [--n-head 4] [--n-head-kv 2]\n"
          "                    [--head-dim D] [--n-ff 512] [--n-vocab 560] [--n-ctx 512]\n"
          "                    [--corpus tests/llm/corpus.txt] [--tied]\n");
  return 2;
}

/* ---- weights ------------------------------------------------------------------ */
static uint64_t splitmix64(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t fnv1a(const char *s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001B3ull;
  return h;
}

/* Uniform values in [-1, 1) with 24 bits (exact in float), times a:
 * standard deviation a / sqrt(3).  Then offset. */
static void fill(float *x, int64_t n, uint64_t seed, const char *name, float a, float offset) {
  uint64_t s = seed * 0xD1342543DE82EF95ull ^ fnv1a(name);
  for (int64_t i = 0; i < n; i++) {
    int32_t r = (int32_t)(splitmix64(&s) >> 40) - (1 << 23);
    volatile float v = a * ((float)r * (1.0f / (float)(1 << 23))); /* rounded here: never a fused multiply-add */
    x[i] = offset + v;
  }
}

typedef struct {
  rlx_gguf_writer *w;
  void **bufs;
  int n_bufs;
  uint64_t seed;
} model;

static int check(rlx_status st) {
  if (st != RLX_OK) fprintf(stderr, "make_test_lm: %s\n", rlx_last_error());
  return st == RLX_OK;
}

/* A tensor of ne0 x ne1 values (ne1 = 1: 1-D), uniform in offset +- a,
 * stored as type. */
static int add_tensor(model *m, const char *name, rlx_gguf_type type, int64_t ne0, int64_t ne1, float a, float offset) {
  int64_t n = ne0 * ne1;
  uint64_t bytes;
  if (!check(rlx_gguf_row_bytes(type, n, &bytes))) return 0;
  float *x = malloc((size_t)n * sizeof(float));
  void *q = type == RLX_GGUF_TYPE_F32 ? (void *)x : malloc((size_t)bytes);
  if (!x || !q) {
    fprintf(stderr, "make_test_lm: out of memory\n");
    return 0;
  }
  fill(x, n, m->seed, name, a, offset);
  if (q != x) {
    int ok = check(rlx_gguf_quantize(type, x, n, q, (size_t)bytes));
    free(x);
    if (!ok) return 0;
  }
  m->bufs[m->n_bufs++] = q;
  int64_t dims[2] = {ne0, ne1};
  return check(rlx_gguf_writer_add_tensor(m->w, name, type, ne1 == 1 ? 1 : 2, dims, q, bytes));
}

/* ---- metadata ---------------------------------------------------------------------- */
static int kv_u32(rlx_gguf_writer *w, const char *key, uint32_t v) {
  return check(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_U32, &v));
}
static int kv_f32(rlx_gguf_writer *w, const char *key, float v) {
  return check(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_F32, &v));
}
static int kv_bool(rlx_gguf_writer *w, const char *key, int v) {
  uint8_t b = (uint8_t)(v != 0);
  return check(rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_BOOL, &b));
}
static int kv_str(rlx_gguf_writer *w, const char *key, const char *s) {
  return check(rlx_gguf_writer_add_string(w, key, s, strlen(s)));
}
static int kv_arch_u32(rlx_gguf_writer *w, const char *arch, const char *key, long v) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", arch, key);
  return kv_u32(w, k, (uint32_t)v);
}

static int add_tokenizer(rlx_gguf_writer *w, const options *o, const lm_vocab *v) {
  int spm = strcmp(o->arch, "llama") == 0;
  int ok = kv_str(w, "tokenizer.ggml.model", spm ? "llama" : "gpt2");
  if (!spm) ok = ok && kv_str(w, "tokenizer.ggml.pre", "qwen2");
  ok = ok && check(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", (const char *const *)v->tokens, NULL,
                                                     (uint64_t)v->n_tokens));
  if (v->scores)
    ok = ok && check(rlx_gguf_writer_add_array(w, "tokenizer.ggml.scores", RLX_GGUF_VAL_F32, v->scores,
                                               (uint64_t)v->n_tokens));
  ok = ok && check(rlx_gguf_writer_add_array(w, "tokenizer.ggml.token_type", RLX_GGUF_VAL_I32, v->types,
                                             (uint64_t)v->n_tokens));
  if (v->n_merges)
    ok = ok && check(rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.merges", (const char *const *)v->merges,
                                                       NULL, (uint64_t)v->n_merges));
  if (v->bos >= 0) ok = ok && kv_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)v->bos);
  if (v->eos >= 0) ok = ok && kv_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)v->eos);
  if (v->unk >= 0) ok = ok && kv_u32(w, "tokenizer.ggml.unknown_token_id", (uint32_t)v->unk);
  if (v->pad >= 0) ok = ok && kv_u32(w, "tokenizer.ggml.padding_token_id", (uint32_t)v->pad);
  ok = ok && kv_bool(w, "tokenizer.ggml.add_bos_token", spm);
  ok = ok && kv_bool(w, "tokenizer.ggml.add_eos_token", 0);
  if (spm) ok = ok && kv_bool(w, "tokenizer.ggml.add_space_prefix", 1);
  return ok;
}

static int add_metadata(rlx_gguf_writer *w, const options *o, long n_vocab) {
  const char *a = o->arch;
  int llama = strcmp(a, "llama") == 0, qwen3 = strcmp(a, "qwen3") == 0;
  char name[64];
  snprintf(name, sizeof name, "rlx-test-lm-%s", a);
  int ok = kv_str(w, "general.architecture", a) && kv_str(w, "general.name", name);
  ok = ok && check(rlx_gguf_writer_set_alignment(w, 32));
  ok = ok && kv_u32(w, "general.file_type", o->type->ftype) && kv_u32(w, "general.quantization_version", 2);
  ok = ok && kv_arch_u32(w, a, "context_length", o->n_ctx) && kv_arch_u32(w, a, "embedding_length", o->n_embd);
  ok = ok && kv_arch_u32(w, a, "block_count", o->n_layer) && kv_arch_u32(w, a, "feed_forward_length", o->n_ff);
  ok = ok && kv_arch_u32(w, a, "attention.head_count", o->n_head);
  ok = ok && kv_arch_u32(w, a, "attention.head_count_kv", o->n_head_kv);
  if (qwen3 || o->head_dim * o->n_head != o->n_embd) {
    ok = ok && kv_arch_u32(w, a, "attention.key_length", o->head_dim);
    ok = ok && kv_arch_u32(w, a, "attention.value_length", o->head_dim);
  }
  char k[128];
  snprintf(k, sizeof k, "%s.rope.freq_base", a);
  ok = ok && kv_f32(w, k, llama ? 10000.0f : 1000000.0f);
  snprintf(k, sizeof k, "%s.attention.layer_norm_rms_epsilon", a);
  ok = ok && kv_f32(w, k, llama ? 1e-5f : 1e-6f);
  if (llama) {
    ok = ok && kv_arch_u32(w, a, "rope.dimension_count", o->head_dim);
    ok = ok && kv_arch_u32(w, a, "vocab_size", n_vocab);
  }
  return ok;
}

/* ---- the model ------------------------------------------------------------------- */
static int add_weights(model *m, const options *o, long n_vocab) {
  rlx_gguf_type t = o->type->type, f32 = RLX_GGUF_TYPE_F32;
  int qwen2 = strcmp(o->arch, "qwen2") == 0, qwen3 = strcmp(o->arch, "qwen3") == 0;
  int64_t e = o->n_embd, q = o->n_head * o->head_dim, kv = o->n_head_kv * o->head_dim, ff = o->n_ff;
  /* a = sqrt(3) * standard deviation */
  const float s3 = 1.7320508f, logit_std = 16.0f;
  /* sqrtf is correctly rounded (IEEE 754), so these are the same everywhere */
  float r_e = 1.0f / sqrtf((float)e), r_q = 1.0f / sqrtf((float)q), r_ff = 1.0f / sqrtf((float)ff);
  /* With a tied output the logits are token_embd . norm(h): the layers'
   * outputs are scaled up so that h is not mostly the current token's
   * embedding (else the model only repeats its input). */
  float g = o->tied ? 8.0f : 1.0f;
  int ok = add_tensor(m, "token_embd.weight", t, e, n_vocab, s3, 0.0f);
  ok = ok && add_tensor(m, "output_norm.weight", f32, e, 1, 0.1f, 1.0f);
  if (!o->tied) ok = ok && add_tensor(m, "output.weight", t, e, n_vocab, s3 * logit_std * r_e, 0.0f);
  for (long l = 0; ok && l < o->n_layer; l++) {
    char n[64];
#define NAME(s) (snprintf(n, sizeof n, "blk.%ld.%s", l, s), n)
    ok = ok && add_tensor(m, NAME("attn_norm.weight"), f32, e, 1, 0.1f, 1.0f);
    ok = ok && add_tensor(m, NAME("attn_q.weight"), t, e, q, s3 * 1.5f * r_e, 0.0f);
    ok = ok && add_tensor(m, NAME("attn_k.weight"), t, e, kv, s3 * 1.5f * r_e, 0.0f);
    ok = ok && add_tensor(m, NAME("attn_v.weight"), t, e, kv, s3 * r_e, 0.0f);
    ok = ok && add_tensor(m, NAME("attn_output.weight"), t, q, e, s3 * g * r_q, 0.0f);
    if (qwen2) {
      ok = ok && add_tensor(m, NAME("attn_q.bias"), f32, q, 1, s3 * 0.5f, 0.0f);
      ok = ok && add_tensor(m, NAME("attn_k.bias"), f32, kv, 1, s3 * 0.5f, 0.0f);
      ok = ok && add_tensor(m, NAME("attn_v.bias"), f32, kv, 1, s3 * 0.1f, 0.0f);
    }
    if (qwen3) {
      ok = ok && add_tensor(m, NAME("attn_q_norm.weight"), f32, o->head_dim, 1, 0.2f, 1.0f);
      ok = ok && add_tensor(m, NAME("attn_k_norm.weight"), f32, o->head_dim, 1, 0.2f, 1.0f);
    }
    ok = ok && add_tensor(m, NAME("ffn_norm.weight"), f32, e, 1, 0.1f, 1.0f);
    ok = ok && add_tensor(m, NAME("ffn_gate.weight"), t, e, ff, s3 * 1.5f * r_e, 0.0f);
    ok = ok && add_tensor(m, NAME("ffn_up.weight"), t, e, ff, s3 * 1.5f * r_e, 0.0f);
    ok = ok && add_tensor(m, NAME("ffn_down.weight"), t, ff, e, s3 * g * r_ff, 0.0f);
#undef NAME
  }
  return ok;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0, k;
  char *buf = malloc(cap);
  while (buf && (k = fread(buf + n, 1, cap - n, f)) > 0) {
    n += k;
    if (n == cap) {
      char *b = realloc(buf, cap *= 2);
      if (!b) free(buf);
      buf = b;
    }
  }
  fclose(f);
  *len = n;
  return buf;
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end;
  long v = strtol(s, &end, 10);
  if (!*s || *end || v < lo || v > hi) return 0;
  *out = v;
  return 1;
}

int main(int argc, char **argv) {
  options o = {NULL, NULL, "tests/llm/corpus.txt", NULL, 1, 256, 2, 4, 2, 0, 512, 560, 512, 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    long *num = strcmp(a, "--n-embd") == 0      ? &o.n_embd
                : strcmp(a, "--n-layer") == 0   ? &o.n_layer
                : strcmp(a, "--n-head") == 0    ? &o.n_head
                : strcmp(a, "--n-head-kv") == 0 ? &o.n_head_kv
                : strcmp(a, "--head-dim") == 0  ? &o.head_dim
                : strcmp(a, "--n-ff") == 0      ? &o.n_ff
                : strcmp(a, "--n-vocab") == 0   ? &o.n_vocab
                : strcmp(a, "--n-ctx") == 0     ? &o.n_ctx
                                                : NULL;
    if (strcmp(a, "--tied") == 0) {
      o.tied = 1;
      continue;
    }
    if (!v) return usage("missing value after", a);
    i++;
    if (num) {
      if (!parse_long(v, 1, 1 << 20, num)) return usage("expected a number from 1 to 1048576 after", a);
    } else if (strcmp(a, "--arch") == 0) {
      if (strcmp(v, "llama") && strcmp(v, "qwen2") && strcmp(v, "qwen3")) return usage("unknown --arch", v);
      o.arch = v;
    } else if (strcmp(a, "--type") == 0) {
      for (size_t k = 0; k < N_TYPES; k++)
        if (strcmp(v, TYPES[k].name) == 0) o.type = &TYPES[k];
      if (!o.type) return usage("unknown --type", v);
    } else if (strcmp(a, "--out") == 0) {
      o.out = v;
    } else if (strcmp(a, "--corpus") == 0) {
      o.corpus = v;
    } else if (strcmp(a, "--seed") == 0) {
      char *end;
      o.seed = strtoull(v, &end, 10);
      if (!*v || *end || *v == '-') return usage("expected a non-negative integer after --seed", v);
    } else {
      return usage("unknown option", a);
    }
  }
  if (!o.arch || !o.type || !o.out) return usage("--arch, --type and --out are required", NULL);
  if (!o.head_dim) o.head_dim = strcmp(o.arch, "qwen3") == 0 ? 128 : o.n_embd / o.n_head;
  if (o.n_head % o.n_head_kv) return usage("--n-head must be a multiple of --n-head-kv", NULL);
  if (o.head_dim % 2) return usage("--head-dim must be even (RoPE rotates pairs)", NULL);
  int32_t blk = rlx_gguf_type_block_elems(o.type->type);
  if (o.n_embd % blk || (o.n_head * o.head_dim) % blk || o.n_ff % blk) {
    fprintf(stderr, "make_test_lm: --type %s packs rows in blocks of %d: --n-embd, --n-ff and n_head * head_dim "
                    "(%ld, %ld, %ld) must be multiples of it\n",
            o.type->name, (int)blk, o.n_embd, o.n_ff, o.n_head * o.head_dim);
    return 2;
  }

  size_t len;
  char *text = read_file(o.corpus, &len);
  if (!text) {
    fprintf(stderr, "make_test_lm: cannot read the corpus '%s'\n", o.corpus);
    return 1;
  }
  lm_vocab v;
  int ok = strcmp(o.arch, "llama") == 0 ? lm_vocab_train_spm(text, len, (int32_t)o.n_vocab, &v)
                                         : lm_vocab_train_bpe(text, len, (int32_t)o.n_vocab, &v);
  free(text);
  if (!ok) return 1;
  model m = {NULL, calloc((size_t)(8 + 16 * o.n_layer), sizeof(void *)), 0, o.seed};
  ok = m.bufs && check(rlx_gguf_writer_new(&m.w));
  ok = ok && add_metadata(m.w, &o, v.n_tokens) && add_tokenizer(m.w, &o, &v) && add_weights(&m, &o, v.n_tokens);
  ok = ok && check(rlx_gguf_writer_write_file(m.w, o.out));
  uint64_t size = 0;
  if (ok) rlx_gguf_writer_size(m.w, &size);
  if (ok)
    printf("make_test_lm: %s: %s %s, %d tokens, %ld layers, n_embd %ld, head_dim %ld%s, %llu bytes\n", o.out,
           o.arch, o.type->name, (int)v.n_tokens, o.n_layer, o.n_embd, o.head_dim, o.tied ? ", tied output" : "",
           (unsigned long long)size);
  rlx_gguf_writer_free(m.w);
  for (int i = 0; m.bufs && i < m.n_bufs; i++) free(m.bufs[i]);
  free(m.bufs);
  lm_vocab_free(&v);
  return ok ? 0 : 1;
}
