/* llm_load.c - opens a GGUF language model: architecture and
 * hyperparameters from the metadata, every tensor checked against the
 * shape the architecture needs, the tokenizer, the KV cache.  Weights stay
 * where the file's bytes are (2-D ones in their own type); only 1-D
 * tensors that are not aligned f32 are copied. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/pool.h"
#include "gguf_quants.h"
#include "llm.h"

#define FAIL(code, ...) (rlx_error((code), __VA_ARGS__))

static const char *const ARCH_NAMES[] = {"llama", "qwen2", "qwen3"};

/* ---- metadata -------------------------------------------------------------- */
static rlx_status meta_int(const rlx_gguf *g, const char *arch, const char *key, int required, int64_t min,
                           int64_t max, int64_t *out) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", arch, key);
  if (rlx_gguf_find_kv(g, k) < 0) {
    if (required) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: the file has no '%s'", k);
    return RLX_OK;
  }
  int64_t v;
  if (rlx_gguf_get_int(g, k, &v) != RLX_OK)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: '%s' is not an integer", k);
  if (v < min || v > max)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: '%s' is %lld; expected %lld to %lld", k, (long long)v,
                (long long)min, (long long)max);
  *out = v;
  return RLX_OK;
}

static rlx_status meta_float(const rlx_gguf *g, const char *arch, const char *key, double min, double max,
                             float *out) {
  char k[128];
  snprintf(k, sizeof k, "%s.%s", arch, key);
  if (rlx_gguf_find_kv(g, k) < 0) return RLX_OK;
  double v;
  if (rlx_gguf_get_float(g, k, &v) != RLX_OK)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: '%s' is not a number", k);
  if (!(v > min && v <= max)) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: '%s' is %g; out of range", k, v);
  *out = (float)v;
  return RLX_OK;
}

static rlx_status read_hparams(rlx_llm *m, const rlx_llm_options *opt) {
  const rlx_gguf *g = m->gguf;
  const char *s;
  uint64_t len;
  if (rlx_gguf_get_string(g, "general.architecture", &s, &len) != RLX_OK)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: the file has no 'general.architecture' string");
  m->arch = -1;
  for (int a = 0; a < 3; a++)
    if (strlen(ARCH_NAMES[a]) == len && memcmp(ARCH_NAMES[a], s, len) == 0) m->arch = a;
  if (m->arch < 0)
    return FAIL(RLX_ERR_UNSUPPORTED, "rlx_llm_open: architecture '%.40s' is not supported (supported: llama, "
                "qwen2, qwen3)", s);
  snprintf(m->arch_name, sizeof m->arch_name, "%s", ARCH_NAMES[m->arch]);
  if (rlx_gguf_get_string(g, "general.name", &s, &len) == RLX_OK)
    snprintf(m->name, sizeof m->name, "%.*s", (int)(len < 95 ? len : 95), s);
  const char *a = m->arch_name;
  rlx_llm_info *in = &m->info;
  int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = -1, n_ff = 0, ctx = 0, key_len = -1, val_len = -1,
          n_rot = -1;
  rlx_status st;
  if ((st = meta_int(g, a, "embedding_length", 1, 1, 1 << 16, &n_embd)) ||
      (st = meta_int(g, a, "block_count", 1, 1, 1024, &n_layer)) ||
      (st = meta_int(g, a, "attention.head_count", 1, 1, 1024, &n_head)) ||
      (st = meta_int(g, a, "attention.head_count_kv", 0, 1, 1024, &n_head_kv)) ||
      (st = meta_int(g, a, "feed_forward_length", 1, 1, 1 << 20, &n_ff)) ||
      (st = meta_int(g, a, "context_length", 1, 1, 1 << 24, &ctx)) ||
      (st = meta_int(g, a, "attention.key_length", 0, 2, 1024, &key_len)) ||
      (st = meta_int(g, a, "attention.value_length", 0, 2, 1024, &val_len)) ||
      (st = meta_int(g, a, "rope.dimension_count", 0, 0, 1024, &n_rot)))
    return st;
  if (n_head_kv < 0) n_head_kv = n_head;
  if (n_head % n_head_kv)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: %lld heads are not a multiple of %lld KV heads",
                (long long)n_head, (long long)n_head_kv);
  if (key_len < 0) {
    if (n_embd % n_head)
      return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: embedding_length %lld is not a multiple of %lld heads",
                  (long long)n_embd, (long long)n_head);
    key_len = n_embd / n_head;
  }
  if (val_len >= 0 && val_len != key_len)
    return FAIL(RLX_ERR_UNSUPPORTED, "rlx_llm_open: key_length %lld and value_length %lld differ",
                (long long)key_len, (long long)val_len);
  if (key_len % 2) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: head size %lld is odd", (long long)key_len);
  if (n_rot >= 0 && n_rot != key_len)
    return FAIL(RLX_ERR_UNSUPPORTED, "rlx_llm_open: RoPE over %lld of %lld head dimensions is not supported",
                (long long)n_rot, (long long)key_len);
  in->rope_theta = 10000.0f;
  in->rms_eps = 1e-5f;
  /* A RoPE base at or below 1 is no model's (and makes the angles too
   * large for float rotations to agree across step splits). */
  if ((st = meta_float(g, a, "rope.freq_base", 1.0, 1e12, &in->rope_theta)) ||
      (st = meta_float(g, a, "attention.layer_norm_rms_epsilon", 0.0, 1.0, &in->rms_eps)))
    return st;
  in->n_embd = (int32_t)n_embd;
  in->n_layer = (int32_t)n_layer;
  in->n_head = (int32_t)n_head;
  in->n_head_kv = (int32_t)n_head_kv;
  in->head_dim = (int32_t)key_len;
  in->n_ff = (int32_t)n_ff;
  in->n_ctx_train = (int32_t)ctx;
  int32_t want = opt && opt->n_ctx ? opt->n_ctx : (ctx < RLX_LLM_DEFAULT_CTX ? (int32_t)ctx : RLX_LLM_DEFAULT_CTX);
  if (opt && (opt->n_ctx < 0 || opt->n_ctx > ctx))
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: n_ctx %d is outside 1 .. the model's context length %lld",
                (int)opt->n_ctx, (long long)ctx);
  in->n_ctx = want;
  in->rope_neox = m->arch != LLM_LLAMA;
  if (opt && opt->xq8 != 0 && opt->xq8 != 1)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: xq8 must be 0 or 1, got %d", (int)opt->xq8);
  in->xq8 = opt ? opt->xq8 : 0;
  return rlx_threads_resolve(opt ? opt->threads : 0, "rlx_llm_open", &in->threads);
}

/* ---- tensors --------------------------------------------------------------- */
static void *keep_copy(rlx_llm *m, size_t bytes) {
  struct llm_copy *grown = rlx_realloc(m->copies, (size_t)m->n_copies * sizeof *grown,
                                       (size_t)(m->n_copies + 1) * sizeof *grown);
  if (!grown) return NULL;
  m->copies = grown;
  void *p = rlx_calloc(1, bytes);
  if (p) m->copies[m->n_copies++] = (struct llm_copy){p, bytes};
  return p;
}

/* An external weight (rlx_llm_open_head): its data stays in the file, for
 * the GPU; a 1-D one must be f32 there (the steps read 1-D weights as f32,
 * which the in-memory path converts). */
static rlx_status external_weight(const rlx_gguf_tensor_info *t, llm_weight *w) {
  if (!w->matrix && t->type != RLX_GGUF_TYPE_F32)
    return FAIL(RLX_ERR_UNSUPPORTED, "rlx_llm_open: tensor '%s' is a 1-D %s tensor; a model streamed to the GPU takes "
                "1-D tensors in f32 only (load it in memory)", w->name, rlx_gguf_type_name(t->type));
  w->qtype = (int32_t)t->type;
  w->bytes = (size_t)((t->bytes + 3) & ~(uint64_t)3);
  w->data = NULL;
  return RLX_OK;
}

/* Finds `name` with dims [cols] (rows 0) or [cols, rows]; optional tensors
 * that are absent get qtype -1. */
static rlx_status weight(rlx_llm *m, const char *name, int64_t cols, int64_t rows, int optional, llm_weight *w) {
  memset(w, 0, sizeof *w);
  snprintf(w->name, sizeof w->name, "%s", name);
  w->qtype = -1;
  int64_t i = rlx_gguf_find_tensor(m->gguf, name);
  if (i < 0) return optional ? RLX_OK : FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: the file has no tensor '%s'", name);
  rlx_gguf_tensor_info t;
  rlx_status st = rlx_gguf_tensor(m->gguf, i, &t);
  if (st != RLX_OK) return st;
  int want_dims = rows ? 2 : 1;
  if (t.n_dims != want_dims || t.dims[0] != cols || (rows && t.dims[1] != rows)) {
    char got[64] = "", need[48];
    for (int d = 0; d < t.n_dims; d++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", d ? ", " : "", (long long)t.dims[d]);
    if (rows) snprintf(need, sizeof need, "[%lld, %lld]", (long long)cols, (long long)rows);
    else snprintf(need, sizeof need, "[%lld]", (long long)cols);
    return FAIL(RLX_ERR_SHAPE, "rlx_llm_open: tensor '%s' has dims [%s]; the model's hyperparameters need %s", name,
                got, need);
  }
  w->matrix = rows != 0;
  w->rows = rows ? (int32_t)rows : 1;
  w->cols = (int32_t)cols;
  w->offset = t.file_offset;
  w->file_bytes = t.bytes;
  int32_t block = rlx_gguf_type_block_elems(t.type);
  if (rows && (block <= 0 || cols % block))
    return FAIL(RLX_ERR_UNSUPPORTED, "rlx_llm_open: tensor '%s' (type %d) cannot be used as a weight matrix", name,
                (int)t.type);
  if (m->external) return external_weight(&t, w);
  if (!rows) { /* 1-D: f32, aligned */
    w->qtype = RLX_GGUF_TYPE_F32;
    w->bytes = (size_t)cols * 4;
    if (t.type == RLX_GGUF_TYPE_F32 && ((uintptr_t)t.data & 3) == 0) {
      w->data = (void *)t.data;
      return RLX_OK;
    }
    if (!(w->data = keep_copy(m, w->bytes))) return FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open: out of memory");
    return rlx_gguf_read_tensor_f32(m->gguf, i, w->data, (size_t)cols);
  }
  const struct llm_part *part = &m->parts[rlx_gguf_tensor_part(m->gguf, i)];
  return rlx_llm_matrix_data(m, &t, part->buf, part->size, w);
}

rlx_status rlx_llm_matrix_data(rlx_llm *m, const rlx_gguf_tensor_info *t, const unsigned char *buf, size_t size,
                               llm_weight *w) {
  w->qtype = (int32_t)t->type;
  w->bytes = (size_t)((t->bytes + 3) & ~(uint64_t)3);
  /* The session reads whole 4-byte words: a tensor not 4-aligned, or
   * ending within 3 bytes of the buffer's end, gets a padded copy. */
  const unsigned char *p = t->data;
  if (((uintptr_t)p & 3) == 0 && (size_t)(p - buf) + w->bytes <= size) {
    w->data = (void *)p;
    return RLX_OK;
  }
  if (!(w->data = keep_copy(m, w->bytes))) return FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open: out of memory");
  memcpy(w->data, p, (size_t)t->bytes);
  return RLX_OK;
}

static rlx_status layer_weights(rlx_llm *m, int32_t l, llm_layer *L) {
  const rlx_llm_info *in = &m->info;
  const int64_t e = in->n_embd, q = (int64_t)in->n_head * in->head_dim, kv = (int64_t)in->n_head_kv * in->head_dim;
  const int qwen2 = m->arch == LLM_QWEN2, qwen3 = m->arch == LLM_QWEN3;
  char n[64];
  rlx_status st;
#define W(field, suffix, cols, rows, optional)                         \
  snprintf(n, sizeof n, "blk.%d.%s", (int)l, suffix);                  \
  if ((st = weight(m, n, cols, rows, optional, &L->field)) != RLX_OK) return st;
  W(attn_norm, "attn_norm.weight", e, 0, 0)
  W(wq, "attn_q.weight", e, q, 0)
  W(wk, "attn_k.weight", e, kv, 0)
  W(wv, "attn_v.weight", e, kv, 0)
  W(wo, "attn_output.weight", q, e, 0)
  W(bq, "attn_q.bias", q, 0, !qwen2)
  W(bk, "attn_k.bias", kv, 0, !qwen2)
  W(bv, "attn_v.bias", kv, 0, !qwen2)
  W(q_norm, "attn_q_norm.weight", in->head_dim, 0, !qwen3)
  W(k_norm, "attn_k_norm.weight", in->head_dim, 0, !qwen3)
  W(ffn_norm, "ffn_norm.weight", e, 0, 0)
  W(gate, "ffn_gate.weight", e, in->n_ff, 0)
  W(up, "ffn_up.weight", e, in->n_ff, 0)
  W(down, "ffn_down.weight", in->n_ff, e, 0)
#undef W
  return RLX_OK;
}

static rlx_status load_weights(rlx_llm *m) {
  rlx_llm_info *in = &m->info;
  int64_t i = rlx_gguf_find_tensor(m->gguf, "token_embd.weight");
  rlx_gguf_tensor_info t;
  if (i < 0 || rlx_gguf_tensor(m->gguf, i, &t) != RLX_OK || t.n_dims != 2)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: the file has no 2-D tensor 'token_embd.weight'");
  if (t.dims[1] < 1 || t.dims[1] > INT32_MAX)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: a vocabulary of %lld tokens", (long long)t.dims[1]);
  in->n_vocab = (int32_t)t.dims[1];
  if (rlx_tokenizer_n_vocab(m->tok) != in->n_vocab)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open: the tokenizer has %d tokens; token_embd.weight has %d rows",
                (int)rlx_tokenizer_n_vocab(m->tok), (int)in->n_vocab);
  rlx_status st;
  if ((st = weight(m, "token_embd.weight", in->n_embd, in->n_vocab, 0, &m->token_embd)) ||
      (st = weight(m, "output_norm.weight", in->n_embd, 0, 0, &m->output_norm)) ||
      (st = weight(m, "output.weight", in->n_embd, in->n_vocab, 1, &m->output)))
    return st;
  in->tied_output = m->output.qtype < 0;
  if (!(m->layers = rlx_calloc((size_t)in->n_layer, sizeof *m->layers)))
    return FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open: out of memory");
  for (int32_t l = 0; l < in->n_layer; l++)
    if ((st = layer_weights(m, l, &m->layers[l])) != RLX_OK) return st;
  return RLX_OK;
}

/* "q8_0 x 15, f32 x 5": the tensors' types with their counts. */
static void describe_types(rlx_llm *m) {
  int64_t count[RLX_WT_CODES] = {0};
  uint64_t params = 0;
  for (int64_t i = 0; i < rlx_gguf_tensor_count(m->gguf); i++) {
    rlx_gguf_tensor_info t;
    if (rlx_gguf_tensor(m->gguf, i, &t) != RLX_OK) continue;
    params += (uint64_t)t.n_elements;
    if ((uint32_t)t.type < RLX_WT_CODES) count[t.type]++;
  }
  m->info.n_params = params;
  size_t at = 0;
  for (int c = 0; c < RLX_WT_CODES; c++)
    if (count[c] && at < sizeof m->weight_types)
      at += (size_t)snprintf(m->weight_types + at, sizeof m->weight_types - at, "%s%s x %lld", at ? ", " : "",
                             rlx_gguf_type_name((rlx_gguf_type)c), (long long)count[c]);
}

static rlx_status alloc_cache(rlx_llm *m) {
  rlx_llm_info *in = &m->info;
  const uint64_t per = (uint64_t)in->n_head_kv * (uint64_t)in->n_ctx * (uint64_t)in->head_dim;
  const uint64_t floats = per * 2u * (uint64_t)in->n_layer;
  if (floats > SIZE_MAX / 4 / 2)
    return FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open: a KV cache of %d positions does not fit in memory", (int)in->n_ctx);
  in->kv_bytes = floats * 4u;
  if (!(m->logits = rlx_calloc((size_t)in->n_vocab, sizeof(float))))
    return FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open: out of memory");
  if (m->external) return RLX_OK; /* the caches are the GPU's */
  if (!(m->kv = rlx_calloc((size_t)floats, 4)))
    return FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open: out of memory for the KV cache (%llu bytes for %d positions; "
                "ask for a smaller n_ctx)", (unsigned long long)in->kv_bytes, (int)in->n_ctx);
  for (int32_t l = 0; l < in->n_layer; l++) {
    m->layers[l].k_cache = m->kv + (size_t)per * (size_t)(2 * l);
    m->layers[l].v_cache = m->kv + (size_t)per * (size_t)(2 * l + 1);
  }
  return RLX_OK;
}

static uint64_t budget_of(const rlx_llm_options *opt) {
  if (opt && opt->budget) return opt->budget;
#if defined(__wasm__)
  return RLX_GGUF_WASM32_DATA_BUDGET;
#else
  return RLX_GGUF_NO_BUDGET;
#endif
}

static rlx_status open_parsed(rlx_llm *m, const rlx_llm_options *opt) {
  rlx_status st;
  if ((st = read_hparams(m, opt)) != RLX_OK) return st;
  if ((st = rlx_tokenizer_from_gguf(m->gguf, &m->tok)) != RLX_OK) return st;
  m->info.weight_bytes = rlx_gguf_data_bytes(m->gguf);
  if ((st = load_weights(m)) != RLX_OK || (st = alloc_cache(m)) != RLX_OK ||
      (st = rlx_llm_lora_open(m, opt, budget_of(opt))) != RLX_OK)
    return st;
  describe_types(m);
  rlx_llm_info *in = &m->info;
  in->arch = m->arch_name;
  in->name = m->name;
  in->tokenizer = rlx_tokenizer_model(m->tok);
  in->weight_types = m->weight_types;
  in->bos = rlx_tokenizer_bos(m->tok);
  in->eos = rlx_tokenizer_eos(m->tok);
  in->add_bos = rlx_tokenizer_add_bos(m->tok);
  /* Every step compiled now: load reports a graph the model cannot make,
   * and the first prompt's speed is not the compiler's (not for external
   * weights: the CPU cannot run those steps). */
  for (int k = 0; k < LLM_N_STEP_SIZES && !m->external; k++) {
    rlx_session *s;
    if (rlx_llm_step_sizes[k] <= in->n_ctx && (st = rlx_llm_step_session(m, k, &s)) != RLX_OK) return st;
  }
  return RLX_OK;
}

/* The model m after its file was parsed with status st: opened into *out,
 * or freed with the error kept. */
static rlx_status finish_open(rlx_llm *m, rlx_status st, const rlx_llm_options *opt, rlx_llm **out) {
  if (st == RLX_OK) st = open_parsed(m, opt);
  if (st != RLX_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rlx_last_error());
    rlx_llm_free(m);
    return rlx_error(st, "%s", msg);
  }
  *out = m;
  return RLX_OK;
}

rlx_status rlx_llm_open_parts(const void *const *data, const size_t *sizes, int32_t n, const rlx_llm_options *opt,
                             rlx_llm **out) {
  if (!out) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open_parts: out is NULL");
  *out = NULL;
  if (!data || !sizes || n < 1 || n > RLX_GGUF_MAX_PARTS)
    return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open_parts: %d parts (1 to %d, with data and sizes)", n,
                RLX_GGUF_MAX_PARTS);
  for (int32_t k = 0; k < n; k++)
    if (!data[k]) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open_parts: data of part %d is NULL", k + 1);
  rlx_llm *m = rlx_calloc(1, sizeof *m);
  if (!m || !(m->parts = rlx_calloc((size_t)n, sizeof *m->parts))) {
    rlx_free(m, sizeof *m);
    return FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open_parts: out of memory");
  }
  m->n_parts = n;
  for (int32_t k = 0; k < n; k++) m->parts[k] = (struct llm_part){data[k], sizes[k], NULL};
  return finish_open(m, rlx_gguf_open_parts(data, sizes, n, budget_of(opt), &m->gguf), opt, out);
}

rlx_status rlx_llm_open_head(const void *head, size_t head_len, uint64_t file_size, const rlx_llm_options *opt,
                             uint64_t *need, rlx_llm **out) {
  if (!out || !need) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open_head: %s is NULL", out ? "need" : "out");
  *out = NULL;
  *need = 0;
  if (opt && opt->n_lora) return FAIL(RLX_ERR_UNSUPPORTED, "rlx_llm_open_head: LoRA adapters need the weights in memory");
  rlx_llm *m = rlx_calloc(1, sizeof *m);
  if (!m) return FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open_head: out of memory");
  m->external = 1;
  return finish_open(m, rlx_gguf_open_head(head, head_len, file_size, need, &m->gguf), opt, out);
}

rlx_status rlx_llm_open_memory(const void *data, size_t size, const rlx_llm_options *opt, rlx_llm **out) {
  if (!out) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open_memory: out is NULL");
  *out = NULL;
  if (!data) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open_memory: data is NULL");
  return rlx_llm_open_parts(&data, &size, 1, opt, out);
}

rlx_status rlx_llm_read_gguf(const char *fn, const char *path, uint64_t budget, unsigned char **out, size_t *out_size) {
  *out = NULL;
  /* The header first: a file that is not GGUF, or whose data is past the
   * budget, is refused before its bytes are read. */
  rlx_gguf *head;
  rlx_status st = rlx_gguf_open_file(path, budget, &head);
  if (st != RLX_OK) return st;
  rlx_gguf_free(head);
  FILE *f = fopen(path, "rb");
  if (!f) return FAIL(RLX_ERR_INVALID_ARG, "%s: cannot open '%s'", fn, path);
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  unsigned char *buf = size > 0 && fseek(f, 0, SEEK_SET) == 0 ? rlx_malloc((size_t)size) : NULL;
  if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
    fclose(f);
    if (buf) rlx_free(buf, (size_t)size);
    return size > 0 ? FAIL(RLX_ERR_NO_MEMORY, "%s: cannot read the %ld bytes of '%s'", fn, size, path)
                    : FAIL(RLX_ERR_INVALID_ARG, "%s: cannot read '%s'", fn, path);
  }
  fclose(f);
  *out = buf;
  *out_size = (size_t)size;
  return RLX_OK;
}

/* The parts a path names: "x-00001-of-00003.gguf" (llama.cpp's gguf-split
 * names) is part 1 of 3; any other name is one file.
 * *at: where the part number begins in path. */
static int32_t split_parts(const char *path, size_t *at) {
  size_t len = strlen(path);
  const size_t tail = strlen("-00001-of-00003.gguf");
  if (len < tail) return 1;
  const char *s = path + len - tail;
  int no = 0, count = 0, used = 0;
  if (sscanf(s, "-%5d-of-%5d.gguf%n", &no, &count, &used) != 2 || (size_t)used != tail || no != 1 || count < 2)
    return 1;
  for (size_t k = 1; k < 6; k++)
    if (s[k] < '0' || s[k] > '9' || s[k + 9] < '0' || s[k + 9] > '9') return 1;
  *at = (size_t)(s - path) + 1;
  return count;
}

rlx_status rlx_llm_open_file(const char *path, const rlx_llm_options *opt, rlx_llm **out) {
  if (!out) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open_file: out is NULL");
  *out = NULL;
  if (!path) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_open_file: path is NULL");
  size_t at = 0, len = strlen(path);
  const int32_t n = split_parts(path, &at);
  unsigned char **bufs = rlx_calloc((size_t)n, sizeof *bufs);
  size_t *sizes = rlx_calloc((size_t)n, sizeof *sizes);
  char *name = rlx_malloc(len + 1);
  rlx_status st = bufs && sizes && name ? RLX_OK : FAIL(RLX_ERR_NO_MEMORY, "rlx_llm_open_file: out of memory");
  if (name) memcpy(name, path, len + 1);
  for (int32_t k = 0; k < n && st == RLX_OK; k++) {
    if (n > 1) {
      char no[6];
      snprintf(no, sizeof no, "%05d", (int)(k + 1) % 100000);
      memcpy(name + at, no, 5);
    }
    st = rlx_llm_read_gguf("rlx_llm_open_file", name, budget_of(opt), &bufs[k], &sizes[k]);
    if (st != RLX_OK && n > 1) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", rlx_last_error());
      st = rlx_error(st, "%s (part %d of the %d that '%s' names)", msg, k + 1, n, path);
    }
  }
  if (st == RLX_OK) st = rlx_llm_open_parts((const void *const *)bufs, sizes, n, opt, out);
  if (st == RLX_OK)
    for (int32_t k = 0; k < n; k++) (*out)->parts[k].owned = bufs[k];
  for (int32_t k = 0; st != RLX_OK && bufs && k < n; k++)
    if (bufs[k]) rlx_free(bufs[k], sizes[k]);
  rlx_free(bufs, (size_t)n * sizeof *bufs);
  rlx_free(sizes, (size_t)n * sizeof *sizes);
  rlx_free(name, len + 1);
  return st;
}

void rlx_llm_free(rlx_llm *m) {
  if (!m) return;
  for (int k = 0; k < LLM_N_STEP_SIZES; k++) rlx_session_free(m->steps[k]);
  rlx_llm_lora_free(m);
  for (int32_t i = 0; i < m->n_copies; i++) rlx_free(m->copies[i].p, m->copies[i].bytes);
  rlx_free(m->copies, (size_t)m->n_copies * sizeof *m->copies);
  rlx_free(m->layers, (size_t)m->info.n_layer * sizeof *m->layers);
  rlx_free(m->kv, (size_t)m->info.kv_bytes);
  rlx_free(m->logits, (size_t)m->info.n_vocab * sizeof(float));
  rlx_tokenizer_free(m->tok);
  rlx_gguf_free(m->gguf);
  for (int32_t k = 0; k < m->n_parts; k++)
    if (m->parts[k].owned) rlx_free(m->parts[k].owned, m->parts[k].size);
  rlx_free(m->parts, (size_t)m->n_parts * sizeof *m->parts);
  rlx_free(m, sizeof *m);
}

rlx_status rlx_llm_get_info(const rlx_llm *m, rlx_llm_info *info) {
  if (!m || !info) return FAIL(RLX_ERR_INVALID_ARG, "rlx_llm_get_info: %s is NULL", m ? "info" : "model");
  *info = m->info;
  return RLX_OK;
}
