/* transformer_export.c - the transformer of rlx_models.h written as a GGUF
 * file of the llama architecture, the layout llama.cpp and rlx_llm read:
 *
 *   ours (x W, W [in, out])        GGUF (dims [in, out]: out rows of in)
 *   embed [vocab, dim]             token_embd.weight, rows as they are
 *   layers.l.wq/wk [dim, dim]      blk.l.attn_q/attn_k.weight, transposed,
 *                                  rows of each head reordered (below)
 *   layers.l.wv/wo, wgate/wup/wdown  attn_v/attn_output, ffn_gate/ffn_up/ffn_down
 *   attn_norm, ffn_norm, final_norm  blk.l.attn_norm/ffn_norm, output_norm (f32)
 *   lm_head [dim, vocab]           output.weight, transposed
 *
 * Our RoPE rotates the halves of a head (x[i], x[i + D/2]); llama's rotates
 * adjacent pairs (x[2i], x[2i + 1]) with the same frequency for pair i.
 * Writing q and k output row i of a head as row 2i and row i + D/2 as row
 * 2i + 1 makes llama's rotation of the reordered q, k the reordered copy
 * of ours, and q . k (so attention) is unchanged by the common reorder.
 *
 * The vocabulary is SentencePiece placeholders: <unk>, <s>, </s>, the 256
 * byte tokens when the vocab has room, "\u2581" (the space), then
 * "\u2581t<i>" pieces. */
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "rlx_gguf.h"
#include "transformer.h"

#define N_CTX 4096 /* written as the context length: RoPE has no limit here */

/* Value (r, c) of our param `name` [rows, cols] as GGUF row-major data of
 * the transposed matrix, q/k rows reordered when `rope_rows` (head_dim). */
static float *gguf_rows(const rlx_transformer_config *c, const char *name, int64_t rows, int64_t cols, int transpose,
                        int32_t rope_rows) {
  float *out = rlx_malloc((size_t)(rows * cols) * sizeof(float));
  if (!out) return NULL;
  const int64_t out_rows = transpose ? cols : rows, out_cols = transpose ? rows : cols;
  for (int64_t r = 0; r < out_rows; r++) {
    int64_t src_r = r;
    if (rope_rows) { /* GGUF row r of a head is our row (pair p, half h) */
      const int64_t D = rope_rows, head = r / D, j = r % D;
      src_r = head * D + (j / 2) + (j % 2) * (D / 2);
    }
    for (int64_t k = 0; k < out_cols; k++) {
      const uint64_t i = transpose ? (uint64_t)(k * cols + src_r) : (uint64_t)(src_r * cols + k);
      out[r * out_cols + k] = rlx_transformer_weight(c->seed, name, i);
    }
  }
  return out;
}

typedef struct {
  rlx_gguf_writer *w;
  void **bufs;
  size_t *sizes;
  int32_t n, cap;
} exporter;

static rlx_status keep(exporter *e, void *p, size_t bytes) {
  e->bufs[e->n] = p;
  e->sizes[e->n++] = bytes;
  return RLX_OK;
}

/* Adds GGUF tensor gname [in, out] from our param `name`; 1-D when out == 0. */
static rlx_status tensor(exporter *e, const rlx_transformer_config *c, rlx_gguf_type type, const char *gname,
                         const char *name, int64_t in, int64_t out, int transpose, int32_t rope_rows) {
  const int64_t rows = out ? out : 1, n = in * rows;
  float *x = gguf_rows(c, name, transpose ? in : rows, transpose ? rows : in, transpose, rope_rows);
  if (!x) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_transformer_export_gguf: out of memory");
  keep(e, x, (size_t)n * sizeof(float));
  if (!out || type == RLX_GGUF_TYPE_F32) {
    int64_t dims[1] = {in};
    return out ? rlx_gguf_writer_add_tensor(e->w, gname, RLX_GGUF_TYPE_F32, 2, (int64_t[]){in, out}, x,
                                            (uint64_t)n * 4)
               : rlx_gguf_writer_add_tensor(e->w, gname, RLX_GGUF_TYPE_F32, 1, dims, x, (uint64_t)n * 4);
  }
  uint64_t bytes;
  rlx_status st = rlx_gguf_row_bytes(type, n, &bytes);
  if (st != RLX_OK) return st;
  void *q = rlx_malloc((size_t)bytes);
  if (!q) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_transformer_export_gguf: out of memory");
  keep(e, q, (size_t)bytes);
  if ((st = rlx_gguf_quantize(type, x, n, q, (size_t)bytes)) != RLX_OK) return st;
  return rlx_gguf_writer_add_tensor(e->w, gname, type, 2, (int64_t[]){in, out}, q, bytes);
}

static rlx_status kv_u32(rlx_gguf_writer *w, const char *key, uint32_t v) {
  return rlx_gguf_writer_add(w, key, RLX_GGUF_VAL_U32, &v);
}

static rlx_status add_vocab(exporter *e, int32_t vocab, char **pieces) {
  float *scores = rlx_malloc((size_t)vocab * sizeof(float));
  int32_t *types = rlx_malloc((size_t)vocab * sizeof(int32_t));
  if (!scores || !types) {
    rlx_free(scores, (size_t)vocab * sizeof(float));
    rlx_free(types, (size_t)vocab * sizeof(int32_t));
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_transformer_export_gguf: out of memory");
  }
  keep(e, scores, (size_t)vocab * sizeof(float));
  keep(e, types, (size_t)vocab * sizeof(int32_t));
  const int bytes = vocab >= 3 + 256;
  for (int32_t i = 0; i < vocab; i++) {
    pieces[i] = rlx_malloc(16);
    if (!pieces[i]) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_transformer_export_gguf: out of memory");
    keep(e, pieces[i], 16);
    scores[i] = i < 3 ? 0.0f : -(float)i;
    types[i] = i == 0 ? 2 : i < 3 ? 3 : (bytes && i < 259) ? 6 : 1; /* unknown, control, byte, normal */
    if (i < 3) snprintf(pieces[i], 16, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
    else if (bytes && i < 259) snprintf(pieces[i], 16, "<0x%02X>", (unsigned)(i - 3));
    else if (i == (bytes ? 259 : 3)) snprintf(pieces[i], 16, "\xe2\x96\x81"); /* the space */
    else snprintf(pieces[i], 16, "\xe2\x96\x81t%d", (int)i);
  }
  rlx_status st;
  rlx_gguf_writer *w = e->w;
  if ((st = rlx_gguf_writer_add_string(w, "tokenizer.ggml.model", "llama", 5)) ||
      (st = rlx_gguf_writer_add_string_array(w, "tokenizer.ggml.tokens", (const char *const *)pieces, NULL,
                                             (uint64_t)vocab)) ||
      (st = rlx_gguf_writer_add_array(w, "tokenizer.ggml.scores", RLX_GGUF_VAL_F32, scores, (uint64_t)vocab)) ||
      (st = rlx_gguf_writer_add_array(w, "tokenizer.ggml.token_type", RLX_GGUF_VAL_I32, types, (uint64_t)vocab)) ||
      (st = kv_u32(w, "tokenizer.ggml.unknown_token_id", 0)) || (st = kv_u32(w, "tokenizer.ggml.bos_token_id", 1)) ||
      (st = kv_u32(w, "tokenizer.ggml.eos_token_id", 2)))
    return st;
  uint8_t no = 0;
  return rlx_gguf_writer_add(w, "tokenizer.ggml.add_bos_token", RLX_GGUF_VAL_BOOL, &no);
}

static rlx_status add_metadata(rlx_gguf_writer *w, const rlx_transformer_config *c) {
  float theta = 10000.0f, eps = 1e-5f;
  rlx_status st;
  if ((st = rlx_gguf_writer_add_string(w, "general.architecture", "llama", 5)) ||
      (st = rlx_gguf_writer_add_string(w, "general.name", "rlx-transformer", 15)) ||
      (st = kv_u32(w, "llama.context_length", N_CTX)) || (st = kv_u32(w, "llama.embedding_length", (uint32_t)c->dim)) ||
      (st = kv_u32(w, "llama.block_count", (uint32_t)c->n_layers)) ||
      (st = kv_u32(w, "llama.feed_forward_length", (uint32_t)c->ffn)) ||
      (st = kv_u32(w, "llama.attention.head_count", (uint32_t)c->n_heads)) ||
      (st = kv_u32(w, "llama.attention.head_count_kv", (uint32_t)c->n_heads)) ||
      (st = kv_u32(w, "llama.rope.dimension_count", (uint32_t)c->head_dim)) ||
      (st = kv_u32(w, "llama.vocab_size", (uint32_t)c->vocab)) ||
      (st = rlx_gguf_writer_add(w, "llama.rope.freq_base", RLX_GGUF_VAL_F32, &theta)) ||
      (st = rlx_gguf_writer_add(w, "llama.attention.layer_norm_rms_epsilon", RLX_GGUF_VAL_F32, &eps)))
    return st;
  return RLX_OK;
}

static rlx_status add_weights(exporter *e, const rlx_transformer_config *c, rlx_gguf_type t) {
  const int64_t d = c->dim, f = c->ffn;
  rlx_status st;
  if ((st = tensor(e, c, t, "token_embd.weight", "embed", d, c->vocab, 0, 0))) return st;
  for (int32_t l = 0; l < c->n_layers; l++) {
    static const struct { const char *g, *ours; int in_ffn, out_ffn, rope, one_d; } L[] = {
        {"attn_norm.weight", "attn_norm", 0, 0, 0, 1}, {"attn_q.weight", "wq", 0, 0, 1, 0},
        {"attn_k.weight", "wk", 0, 0, 1, 0},           {"attn_v.weight", "wv", 0, 0, 0, 0},
        {"attn_output.weight", "wo", 0, 0, 0, 0},      {"ffn_norm.weight", "ffn_norm", 0, 0, 0, 1},
        {"ffn_gate.weight", "wgate", 0, 1, 0, 0},      {"ffn_up.weight", "wup", 0, 1, 0, 0},
        {"ffn_down.weight", "wdown", 1, 0, 0, 0}};
    for (size_t k = 0; k < sizeof L / sizeof L[0]; k++) {
      char g[64], ours[64];
      snprintf(g, sizeof g, "blk.%d.%s", (int)l, L[k].g);
      snprintf(ours, sizeof ours, "layers.%d.%s", (int)l, L[k].ours);
      const int64_t in = L[k].in_ffn ? f : d, out = L[k].one_d ? 0 : L[k].out_ffn ? f : d;
      if ((st = tensor(e, c, t, g, ours, in, out, !L[k].one_d, L[k].rope ? c->head_dim : 0))) return st;
    }
  }
  if ((st = tensor(e, c, t, "output_norm.weight", "final_norm", d, 0, 0, 0))) return st;
  return tensor(e, c, t, "output.weight", "lm_head", d, c->vocab, 1, 0);
}

rlx_status rlx_transformer_export_gguf(const rlx_transformer_config *cfg, rlx_gguf_type type, const char *path) {
  const char *fn = "rlx_transformer_export_gguf";
  rlx_status st = rlx_transformer_check_config(fn, cfg, 1);
  if (st != RLX_OK) return st;
  if (!path) return rlx_error(RLX_ERR_INVALID_ARG, "%s: path is NULL", fn);
  if (cfg->window) return rlx_error(RLX_ERR_UNSUPPORTED, "%s: a sliding window has no llama equivalent", fn);
  const int32_t block = rlx_gguf_type_block_elems(type);
  if (block <= 0) return rlx_error(RLX_ERR_INVALID_ARG, "%s: weight type %d is not supported", fn, (int)type);
  if (cfg->dim % block || cfg->ffn % block)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s packs rows in blocks of %d values: dim (%d) and ffn (%d) must be "
                     "multiples of it", fn, rlx_gguf_type_name(type), (int)block, (int)cfg->dim, (int)cfg->ffn);
  exporter e = {NULL, NULL, NULL, 0, 0};
  e.cap = 3 + 2 * (2 + 9 * cfg->n_layers + 2) + cfg->vocab; /* 2 buffers a tensor, the vocab's */
  e.bufs = rlx_calloc((size_t)e.cap, sizeof *e.bufs);
  e.sizes = rlx_calloc((size_t)e.cap, sizeof *e.sizes);
  char **pieces = rlx_calloc((size_t)cfg->vocab, sizeof *pieces);
  if (!e.bufs || !e.sizes || !pieces) st = rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory", fn);
  if (st == RLX_OK) st = rlx_gguf_writer_new(&e.w);
  if (st == RLX_OK) st = add_metadata(e.w, cfg);
  if (st == RLX_OK) st = add_vocab(&e, cfg->vocab, pieces);
  if (st == RLX_OK) st = add_weights(&e, cfg, type);
  if (st == RLX_OK) st = rlx_gguf_writer_write_file(e.w, path);
  rlx_gguf_writer_free(e.w);
  for (int32_t i = 0; i < e.n; i++) rlx_free(e.bufs[i], e.sizes[i]);
  rlx_free(e.bufs, (size_t)e.cap * sizeof *e.bufs);
  rlx_free(e.sizes, (size_t)e.cap * sizeof *e.sizes);
  rlx_free(pieces, (size_t)cfg->vocab * sizeof *pieces);
  return st;
}
