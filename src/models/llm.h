/* llm.h - the language model's internals (include/rlx_llm.h is the public
 * side): hyperparameters read from the GGUF metadata, the weights as views
 * into the file's buffer, the KV cache, and one compiled session per step
 * size.  llm_load.c fills it (llm_lora.c its LoRA adapters), llm_graph.c
 * builds a step's graph, llm_run.c compiles and runs steps, llm_generate.c
 * samples. */
#ifndef RLX_LLM_INTERNAL_H
#define RLX_LLM_INTERNAL_H

#include <stdint.h>

#include "../core/core.h"
#include "rlx_gguf.h"
#include "rlx_llm.h"
#include "tokenizer.h"

enum { LLM_LLAMA = 0, LLM_QWEN2 = 1, LLM_QWEN3 = 2 };

/* Steps are compiled for these token counts; a longer prompt runs as a
 * sequence of them (largest first). */
#define LLM_N_STEP_SIZES 4
extern const int32_t rlx_llm_step_sizes[LLM_N_STEP_SIZES];

/* One weight as the graph sees it: a param named `name` bound to `data`.
 * 2-D weights keep their file type (qtype, rows x cols, bound as i32
 * words); 1-D ones are f32 (copied when the file has another type or an
 * unaligned offset). */
typedef struct {
  char name[64];
  int32_t qtype;      /* rlx_gguf_type; -1 for a missing optional tensor */
  int32_t matrix;     /* 1: a 2-D weight (of any rows, 1 too: a 1-token vocab, n_ff 1) */
  int32_t rows, cols; /* 1-D: rows 1 */
  void *data;         /* NULL for an external weight (rlx_llm_open_head) */
  size_t bytes;       /* bound bytes (a multiple of 4) */
  uint64_t offset;    /* where its data is in the file (external weights: the bytes streamed there) */
  uint64_t file_bytes; /* its bytes in the file (bytes rounds them up to whole words) */
} llm_weight;

/* The products a LoRA adapter may adapt, in the order of
 * rlx_llm_lora_target (llm_lora.c: their tensor names). */
enum { LLM_P_Q, LLM_P_K, LLM_P_V, LLM_P_O, LLM_P_GATE, LLM_P_UP, LLM_P_DOWN, LLM_N_PROJ };

/* One adapted product: y += scale (x A^T) B^T.  a: [r rows, n_in cols],
 * b: [n_out rows, r cols], both F32 or F16 and bound in place (params
 * "lora.<i>.<base>.lora_a" / "_b"); a.qtype -1: this product has none. */
typedef struct {
  llm_weight a, b;
  float scale;        /* the user's scale * alpha / r (alpha 0: the user's scale) */
} llm_lora_pair;

typedef struct {
  unsigned char *owned;   /* the file's bytes when read from a path */
  size_t size;
  llm_lora_pair *pairs;   /* [n_layer * LLM_N_PROJ], layer-major */
  float alpha;            /* adapter.lora.alpha (0: absent) */
} llm_adapter;

typedef struct {
  llm_weight attn_norm, wq, wk, wv, wo, bq, bk, bv, q_norm, k_norm, ffn_norm, gate, up, down;
  float *k_cache, *v_cache; /* [n_head_kv, n_ctx, head_dim] each */
} llm_layer;

struct rlx_llm {
  rlx_gguf *gguf;
  struct llm_part {         /* the file's bytes: one part, or each part of a split model */
    const unsigned char *buf; /* the caller's, or owned when read from a path */
    size_t size;
    unsigned char *owned;
  } *parts;
  int32_t n_parts;
  rlx_tokenizer *tok;
  int arch;
  char arch_name[16], name[96], weight_types[160];
  rlx_llm_info info;      /* as rlx_llm_get_info returns it */
  llm_weight token_embd, output_norm, output;
  llm_layer *layers;
  struct llm_copy { void *p; size_t bytes; } *copies; /* f32 or padded copies made at load */
  int32_t n_copies;
  float *kv;              /* every layer's caches, one allocation */
  rlx_session *steps[LLM_N_STEP_SIZES];
  int32_t pos;            /* tokens in the cache */
  uint64_t n_evaluated;   /* tokens evaluated since open (rlx_llm_tokens_evaluated) */
  uint64_t ctx_epoch;     /* bumped whenever the context changes: a chat session's check that it still owns it */
  float *logits;          /* n_vocab */
  llm_adapter *lora;      /* info.n_lora adapters (llm_lora.c) */
  int external;           /* opened by rlx_llm_open_head: no weights or KV cache here (llm_external.c) */
};

/* llm_load.c: w->data for the 2-D tensor t of a file whose bytes are
 * buf[0, size): in place when it is 4-aligned and its whole 4-byte words
 * lie in the buffer, else a padded copy the model keeps until free. */
rlx_status rlx_llm_matrix_data(rlx_llm *m, const rlx_gguf_tensor_info *t, const unsigned char *buf, size_t size,
                               llm_weight *w);
/* llm_load.c: the model from the header of a GGUF file (head[0, head_len)
 * of its file_size bytes) with its weights external: bound to nothing,
 * known by file offset and size, the KV cache not allocated; the steps run
 * only where a GPU executor supplies those params (llm_external.c lists
 * them).  A header past head_len fails with *need set (rlx_gguf_open_head). */
rlx_status rlx_llm_open_head(const void *head, size_t head_len, uint64_t file_size, const rlx_llm_options *opt,
                             uint64_t *need, rlx_llm **out);
/* llm_run.c: weight j (0 .. LLM_LAYER_WEIGHTS - 1) of a layer, absent
 * optional ones (qtype -1) included. */
#define LLM_LAYER_WEIGHTS 14
const llm_weight *rlx_llm_layer_weight(const llm_layer *L, int j);
/* llm_external.c: param i (0 .. count - 1) of an external model's steps:
 * its name (valid until the next call), its GPU buffer's bytes, and where
 * its data is in the file (file_bytes 0: zeros, a KV cache).  -1 past the
 * end. */
int32_t rlx_llm_external_count(const rlx_llm *m);
rlx_status rlx_llm_external(const rlx_llm *m, int32_t i, const char **name, uint64_t *bytes, uint64_t *offset,
                            uint64_t *file_bytes);
/* llm_load.c: the whole GGUF file at path (its header read first, its
 * tensor data within budget) in a buffer for rlx_free(*buf, *size);
 * messages begin with fn. */
rlx_status rlx_llm_read_gguf(const char *fn, const char *path, uint64_t budget, unsigned char **buf, size_t *size);
/* llm_lora.c: opens opt->lora's adapters against the loaded model (every
 * refusal names the adapter and what is wrong); rlx_llm_free frees them. */
rlx_status rlx_llm_lora_open(rlx_llm *m, const rlx_llm_options *opt, uint64_t budget);
void rlx_llm_lora_free(rlx_llm *m);
/* Layer L's weight of product p (LLM_P_*). */
const llm_weight *rlx_llm_proj_weight(const llm_layer *L, int p);
/* The pair adapter i has on layer l's product p, or NULL. */
const llm_lora_pair *rlx_llm_lora_pair(const rlx_llm *m, int32_t i, int32_t l, int p);

/* llm_graph.c: the graph of one step of n tokens: inputs "ids" (i32 [n])
 * and "pos" (i32 [1]), output the logits after the last token [1, n_vocab];
 * fuse: the norms inside the products and the rotations inside attention_kv
 * (the WebGPU steps). */
rlx_status rlx_llm_build_step(const rlx_llm *m, int32_t n, int fuse, rlx_graph **out, rlx_node *logits);
/* llm_run.c: binds every weight and cache param of a compiled step to the
 * model's memory (any device: tests/c/test_webgl_llm.c binds a WebGL2
 * step). */
rlx_status rlx_llm_bind_params(const rlx_llm *m, rlx_session *s);
/* llm_run.c: the step session for n tokens (compiled on first use). */
rlx_status rlx_llm_step_session(rlx_llm *m, int32_t k, rlx_session **out);

/* ---- steps evaluated outside the library (llm_run.c) -----------------------
 * For an executor the library does not drive, such as the browser's WebGPU
 * executor (web/runtime/webgpu.js, reached through src/web_llm_gpu/): the
 * step of rlx_llm_step_sizes[k] tokens compiled for `device`, its params
 * bound to the model's weights and caches (the caller owns the session);
 * the caller runs the steps and hands the logits after the last token
 * back, with the number of tokens it evaluated at the position.  fuse:
 * the fused graph (rlx_llm_build_step), for WebGPU. */
rlx_status rlx_llm_compile_step(const rlx_llm *m, int32_t k, rlx_device device, int fuse, rlx_session **out);
rlx_status rlx_llm_set_logits(rlx_llm *m, const float *logits, int32_t n_tokens);
/* llm_generate.c: a generator whose model the caller evaluates: the prompt
 * is not evaluated here (the context is reset); before every
 * rlx_llm_generator_next the caller evaluates what is in the context but
 * not yet evaluated (the prompt, then the pending token,
 * rlx_llm_generator_pending) and calls rlx_llm_set_logits.  next() refuses
 * (RLX_ERR_STATE) when it has not. */
rlx_status rlx_llm_generator_new_external(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt,
                                          const rlx_llm_sampling *s, rlx_llm_generator **out);
/* llm_generate.c: a generator whose prompt's first `keep` tokens are
 * already in the KV cache (keep < n_prompt, keep <= the position): the
 * context is cut back to them and only the rest is evaluated (a chat
 * session's turns).  stats.prompt_tokens counts the evaluated ones. */
rlx_status rlx_llm_generator_new_cached(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, size_t keep,
                                        const rlx_llm_sampling *s, rlx_llm_generator **out);
/* Either of the two (external nonzero: the caller evaluates the prompt
 * past `keep`, as for rlx_llm_generator_new_external): the wasm modules'
 * one entry, for generation and kept conversations on every backend. */
rlx_status rlx_llm_generator_new_kept(rlx_llm *m, const int32_t *prompt_ids, size_t n_prompt, size_t keep,
                                      const rlx_llm_sampling *s, int external, rlx_llm_generator **out);
/* The sampled token next() will want evaluated, or -1. */
int32_t rlx_llm_generator_pending(const rlx_llm_generator *gen);
/* 1 when the generator's choice is the plain argmax of the logits (lowest
 * id on ties): a temperature below RLX_LLM_MIN_TEMPERATURE and no
 * repetition penalty. */
int rlx_llm_generator_greedy(const rlx_llm_generator *gen);
/* next() for a greedy external generator whose caller evaluated the
 * pending token and took the argmax of its logits itself (on the GPU):
 * tok is that argmax, or -1 when the logits held NaN or +inf or were all
 * -inf (RLX_ERR_NUMERIC, as the sampler refuses them).  The position
 * advances past the pending token; the logits are not handed over. */
rlx_status rlx_llm_generator_next_chosen(rlx_llm_generator *gen, int32_t tok, int32_t *id, const char **text,
                                         size_t *len, int *done);

#endif
