/* rlx_models.h - ready-made models on top of rlx.h: the four vision
 * classifiers, the two-layer MLP entry points, the decoder-only
 * transformer, and the Fashion-MNIST reader.  Compiled sessions are cached
 * by configuration, so repeated calls do not rebuild or recompile.
 * Same conventions as rlx.h: rlx_status plus rlx_last_error(). */
#ifndef RLX_MODELS_H
#define RLX_MODELS_H

#include "rlx.h"
#include "rlx_gguf.h"
#include "rlx_llm.h"
#include "rlx_llm_chat.h"
#include "rlx_llm_train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- vision models ------------------------------------------------------
 * NCHW float32 inputs, 10 classes, loss = mean softmax cross-entropy.
 * Slugs: mnist-cnn, mnist-mlp, cifar-cnn, resnet (aliases mnist_cnn,
 * mnist_mlp, cifar_cnn, resnet-cifar). */
#define RLX_VISION_MAX_PARAMS 16
typedef struct {
  const char *slug;           /* canonical slug */
  const char *title;
  int32_t input_rank;         /* 1 ([784]) or 3 ([C, H, W]) */
  int32_t input_dims[3];
  int32_t num_classes;
  int32_t n_params;
  const char *param_names[RLX_VISION_MAX_PARAMS];
  size_t param_sizes[RLX_VISION_MAX_PARAMS]; /* elements */
  int32_t param_ranks[RLX_VISION_MAX_PARAMS];
  int32_t param_dims[RLX_VISION_MAX_PARAMS][4];
  size_t input_len;           /* elements of one sample */
  size_t param_flat_len;      /* sum of param_sizes */
  int train_cpu, train_webgpu, train_webgl; /* can train on that backend */
} rlx_vision_info;

int32_t rlx_vision_count(void);
const char *rlx_vision_slug(int32_t i); /* NULL when out of range */
/* Fills info for slug or an alias; RLX_ERR_NOT_FOUND names the known slugs. */
rlx_status rlx_vision_info_get(const char *slug, rlx_vision_info *info);
/* Adds the model to g for a batch size: inputs "x" [batch, input_dims...]
 * (f32) and "labels" [batch] (i32), params by the names of the info. */
rlx_status rlx_vision_build(rlx_graph *g, const char *slug, int32_t batch, rlx_node *logits, rlx_node *loss);
/* He-style uniform init in [-sqrt(2/fan_in), sqrt(2/fan_in)) from seed
 * (see vision_models.c), biases zero; flat holds every param in order
 * (param_flat_len values). */
rlx_status rlx_vision_init_params(const char *slug, uint64_t seed, float *flat, size_t len);
/* Inputs uniform in [-1, 1) from seed; label of sample i = (seed + i) mod 10. */
rlx_status rlx_vision_synthetic_batch(const char *slug, uint64_t seed, int32_t batch, float *x, size_t x_len,
                                      int32_t *labels, size_t labels_len);

/* Cached sessions for the usual calls (params passed flat each call). */
rlx_status rlx_vision_forward(const char *slug, int32_t batch, const float *x, const float *params,
                              float *logits /* batch * 10 */);
/* One SGD step: loss before the step, params updated in place. */
rlx_status rlx_vision_train_step(const char *slug, int32_t batch, const float *x, const int32_t *labels,
                                 float *params, float lr, float *loss);

/* Gradients of the mean loss for one batch: grads holds param_flat_len
 * values in param order (the flat layout of params); params are unchanged. */
rlx_status rlx_vision_grads(const char *slug, int32_t batch, const float *x, const int32_t *labels,
                            const float *params, float *grads, float *loss);

/* ---- the MLP: y = relu(x W1 + b1) W2 + b2 ---------------------------------
 * x[rows, in], w1[in, hid], b1[hid], w2[hid, out], b2[out]; loss = sum of
 * squared errors against t[rows, out]. */
typedef struct {
  int32_t rows, in, hid, out;
  const float *w1, *b1, *w2, *b2;
} rlx_mlp;
rlx_status rlx_mlp_forward(const rlx_mlp *m, const float *x, float *y /* rows*out */);
rlx_status rlx_mlp_loss(const rlx_mlp *m, const float *x, const float *t, float *loss);
/* grads = [loss, dw1..., db1..., dw2..., db2...] (1 + param count values). */
rlx_status rlx_mlp_grads(const rlx_mlp *m, const float *x, const float *t, float *grads);
/* params_out = updated [w1, b1, w2, b2] after p -= lr g. */
rlx_status rlx_mlp_train_step(const rlx_mlp *m, const float *x, const float *t, float lr, float *params_out);

/* ---- the transformer ------------------------------------------------------
 * Decoder-only: embed -> n_layers x (RMSNorm, causal MHA with RoPE (NeoX,
 * theta 10000), residual, RMSNorm, SwiGLU, residual) -> RMSNorm -> lm_head.
 * Weights synthesized from (seed, param name, index). Tokens are ids as f32. */
typedef struct {
  int32_t vocab, dim, n_layers, n_heads, head_dim, ffn;
  uint64_t seed;
  int32_t window;   /* 0: causal attention; > 0: sliding window of that many keys */
  int skip_fusion;  /* compile without fusion passes (for comparisons) */
} rlx_transformer_config;

/* Logits of the last position: vocab values. */
rlx_status rlx_transformer_next_logits(const rlx_transformer_config *cfg, const float *tokens, int32_t n_tokens,
                                       float *logits);
/* Logits of every position: n_tokens * vocab values. */
rlx_status rlx_transformer_logits(const rlx_transformer_config *cfg, const float *tokens, int32_t n_tokens,
                                  float *logits);
/* Number of fused nodes in the cached session for (cfg, n_tokens); -1 if none. */
int32_t rlx_transformer_fused_count(const rlx_transformer_config *cfg, int32_t n_tokens);
/* Writes the model as a GGUF file of the llama architecture, which llama.cpp
 * and rlx_llm_open_file load and run to the same logits: 2-D weights in
 * `type` (dim and ffn must be multiples of its block), norms in f32, q/k
 * rows reordered for llama's adjacent-pair RoPE, a placeholder
 * SentencePiece vocabulary of cfg->vocab pieces (BOS 1, EOS 2, not added
 * to prompts).  Causal models only (window 0). */
rlx_status rlx_transformer_export_gguf(const rlx_transformer_config *cfg, rlx_gguf_type type, const char *path);

/* ---- Fashion-MNIST (IDX files) -------------------------------------------- */
typedef struct {
  int32_t count, rows, cols;
  float *images;   /* count * rows * cols, scaled to [0, 1] */
  int32_t *labels; /* count */
} rlx_dataset;
/* Reads an IDX image file and its label file (gzip or raw). */
rlx_status rlx_dataset_load(const char *images_path, const char *labels_path, rlx_dataset *out);
void rlx_dataset_free(rlx_dataset *d);

/* Drops every cached session (they are also freed at exit of the process
 * only if this is called; a host that loads models repeatedly can call it). */
void rlx_models_clear_cache(void);

#ifdef __cplusplus
}
#endif
#endif
