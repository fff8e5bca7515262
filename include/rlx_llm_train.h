/* rlx_llm_train.h - LoRA fine-tuning of a loaded language model (rlx_llm.h)
 * on the CPU (included by rlx_models.h).
 *
 * The base weights stay frozen and are read in place, in their file type,
 * from the model's buffer (no f32 copy).  Each targeted projection W
 * [n_out, n_in] of every layer gets a trainable pair A [r, n_in] and B
 * [n_out, r] (f32, row-major: PEFT's layout, and llama.cpp's adapter
 * tensors "<base>.lora_a" / "<base>.lora_b"), and computes
 *
 *   y = W x + (alpha / r) B (A x)
 *
 * A starts as PEFT's (Kaiming-uniform with a = sqrt(5): uniform in
 * [-1/sqrt(n_in), 1/sqrt(n_in)), drawn from the seed), B at zero, so a new
 * session computes exactly the base model.
 *
 * A window is seq tokens: ids, targets (usually the ids shifted by one) and
 * a mask of per-token loss weights (0: not scored, as the prompt of a
 * completion-only example).  The loss over n windows is
 *
 *   sum(mask * cross_entropy(logits, targets)) / max(1, sum(mask))
 *
 * taken over every token of every window (the full causal forward of each
 * window from position 0, no KV cache).  A step's windows form one batch
 * in one graph (the window axis is the batch axis of every op): gradients
 * over them are summed in the graph and the optimizer (rlx_optimizer, in
 * the compiled plan) steps once.  Sessions are compiled for a number of
 * windows on first use and compiled again when it changes; the adapters
 * and the optimizer state live in the fine-tuning object, so nothing is
 * lost.  Same conventions as rlx.h: rlx_status plus rlx_last_error(). */
#ifndef RLX_LLM_TRAIN_H
#define RLX_LLM_TRAIN_H

#include "rlx.h"
#include "rlx_llm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlx_llm_finetune rlx_llm_finetune;

typedef struct {
  int32_t rank;        /* r: 1 .. min(n_in, n_out) of every targeted weight */
  float alpha;         /* scale = alpha / rank (finite) */
  const char *targets; /* comma-separated projections: attn_q, attn_k, attn_v,
                          attn_output, ffn_gate, ffn_up, ffn_down, or "all";
                          NULL or "": attn_q,attn_v */
  int32_t seq;         /* tokens per window: 2 .. the model's n_ctx_train */
  rlx_optimizer optimizer; /* any kind of rlx.h; lr, momentum, eps and
                              weight_decay >= 0 and finite */
  uint64_t seed;       /* A's initial values */
} rlx_llm_finetune_options;

/* rank 8, alpha 16, attn_q,attn_v, seq 128, AdamW (lr 2e-4, betas 0.9 and
 * 0.999, eps 1e-8, no weight decay), seed 0. */
rlx_llm_finetune_options rlx_llm_finetune_default_options(void);

/* The model must stay open (and unchanged) until rlx_llm_finetune_free;
 * several fine-tuning objects may share it, and generation may go on
 * between steps.  opt NULL: the defaults. */
rlx_status rlx_llm_finetune_new(const rlx_llm *m, const rlx_llm_finetune_options *opt, rlx_llm_finetune **out);
void rlx_llm_finetune_free(rlx_llm_finetune *ft);

/* One optimizer step over n_windows windows: ids and targets hold
 * n_windows * seq ids (window after window), mask as many weights (finite,
 * >= 0; NULL: every token 1).  A target under a zero weight is not read
 * (any value, e.g. -100, may mark it).  *loss (may be NULL) is the loss
 * before the update. */
rlx_status rlx_llm_finetune_step(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask,
                                 int32_t n_windows, float *loss);
/* The loss without an update, and when logits is not NULL the logits of
 * every position (n_windows * seq * n_vocab floats, row after row). */
rlx_status rlx_llm_finetune_eval(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask,
                                 int32_t n_windows, float *loss, float *logits);
/* The loss and its gradients with respect to every A and B, without an
 * update; read them with rlx_llm_finetune_get_grad. */
rlx_status rlx_llm_finetune_grad(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask,
                                 int32_t n_windows, float *loss);
/* The learning rate of the next steps (finite, >= 0). */
rlx_status rlx_llm_finetune_set_lr(rlx_llm_finetune *ft, float lr);

/* ---- the adapter pairs ------------------------------------------------------
 * Pair i (layer by layer, in the order attn_q, attn_k, attn_v, attn_output,
 * ffn_gate, ffn_up, ffn_down within a layer) is named after its base
 * tensor, e.g. "blk.0.attn_q.weight". */
typedef struct {
  const char *name;   /* the base tensor's name (valid while ft is) */
  int32_t layer;
  int32_t n_in, n_out, rank; /* A is [rank, n_in], B [n_out, rank] */
  float alpha, scale; /* scale = alpha / rank */
} rlx_llm_finetune_pair_info;

int32_t rlx_llm_finetune_pair_count(const rlx_llm_finetune *ft);
rlx_status rlx_llm_finetune_pair(const rlx_llm_finetune *ft, int32_t i, rlx_llm_finetune_pair_info *info);
/* A and B of the pair called name (a_len = rank * n_in, b_len = n_out *
 * rank; either pointer may be NULL to skip it).  Setting them keeps the
 * optimizer's state (load an adapter, then train on). */
rlx_status rlx_llm_finetune_get_pair(const rlx_llm_finetune *ft, const char *name, float *a, size_t a_len, float *b,
                                     size_t b_len);
rlx_status rlx_llm_finetune_set_pair(rlx_llm_finetune *ft, const char *name, const float *a, size_t a_len,
                                     const float *b, size_t b_len);
/* d loss / dA and d loss / dB of the last rlx_llm_finetune_grad, shaped
 * and sized as get_pair's (RLX_ERR_STATE before one). */
rlx_status rlx_llm_finetune_get_grad(const rlx_llm_finetune *ft, const char *name, float *da, size_t a_len, float *db,
                                     size_t b_len);

#ifdef __cplusplus
}
#endif
#endif
