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
                          NULL or "": the default's */
  int32_t seq;         /* tokens per window: 2 .. the model's n_ctx_train */
  rlx_optimizer optimizer; /* any kind of rlx.h; lr, momentum, eps and
                              weight_decay >= 0 and finite */
  uint64_t seed;       /* A's initial values */
} rlx_llm_finetune_options;

/* rank 8, alpha 16, targets "attn_q,attn_v", seq 128, AdamW (lr 2e-4,
 * betas 0.9 and 0.999, eps 1e-8, no weight decay), seed 0. */
rlx_llm_finetune_options rlx_llm_finetune_default_options(void);

/* The defaults of a whole run that `rlx finetune` and the JS SDK's
 * finetune() share (beside the options' and the data's): windows per
 * step, learning rate and seed. */
#define RLX_LLM_FINETUNE_RUN_BATCH 4
#define RLX_LLM_FINETUNE_RUN_LR 1e-3
#define RLX_LLM_FINETUNE_RUN_SEED 1

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

/* What rlx_llm_finetune_compile's plan computes (its `train` argument). */
typedef enum { RLX_LLM_PLAN_LOSS, RLX_LLM_PLAN_STEP, RLX_LLM_PLAN_GRADS } rlx_llm_finetune_plan;

/* A session of ft for n_windows windows compiled for device (rlx.h's
 * rlx_device), for an executor that runs it elsewhere (the GPU executors
 * of web/runtime/): train RLX_LLM_PLAN_STEP (1), a training step (inputs "ids", "targets",
 * "mask" as rlx_llm_finetune_step takes them, with 0 for a target under a
 * zero weight; output 0 the loss before the update; the pairs and the
 * optimizer state are params updated by the plan), RLX_LLM_PLAN_LOSS (0),
 * the loss alone, RLX_LLM_PLAN_GRADS (2), the loss and the pairs' gradients
 * without an update
 * (input "d_output" = 1 as well; output 0 the loss, 1 + 2 i and 2 + 2 i
 * pair i's dA and dB, as rlx_llm_finetune_grad; the pairs are params the
 * caller may write first).  Its params are bound to the model's weights and ft's pairs and
 * optimizer state as they are now; the session does not write them back
 * into ft.  Freed with rlx_session_free, before ft and the model. */
rlx_status rlx_llm_finetune_compile(rlx_llm_finetune *ft, int32_t n_windows, rlx_device device, int32_t train,
                                    rlx_session **out);

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

/* ---- the model's adapters ----------------------------------------------------
 * A model's own adapters (rlx_llm_options.lora) are not in the fine-tuning
 * graph: a fine-tuning object computes the base model plus its own pairs.
 *
 * rlx_llm_finetune_load_lora copies adapter i of the model (opened with it)
 * into ft's pairs, to train on from there: the adapter must hold exactly
 * ft's pairs (the same targets on every layer), each of ft's rank, with
 * ft's alpha (an adapter without alpha: alpha = rank); refusals name the
 * pair and what differs.
 *
 * rlx_llm_finetune_from_lora makes an object whose pairs hold the sum of
 * every adapter of the model, at their scales: its evaluations are the
 * adapted model's, as generation computes it (the union of the adapters'
 * targets; rank the sum of each adapter's largest rank, alpha = rank, each
 * adapter's A in its rows and s B in its columns, zeros where an adapter
 * has no pair).  Without adapters: rank 1 on attn_q with B zero, the base
 * model.  Refused when the ranks add up past a weight's size. */
rlx_status rlx_llm_finetune_load_lora(rlx_llm_finetune *ft, int32_t i);
rlx_status rlx_llm_finetune_from_lora(const rlx_llm *m, int32_t seq, rlx_llm_finetune **out);

/* ft's pairs as llama.cpp's adapter file (rlx_llm_lora_write: f32, alpha
 * the pairs', general.architecture arch, e.g. rlx_llm_info.arch): to path,
 * whole or absent, or its bytes into buf[0, cap) as
 * rlx_llm_lora_write_memory does (buf NULL: *size only). */
rlx_status rlx_llm_finetune_write_lora(const rlx_llm_finetune *ft, const char *arch, const char *path);
rlx_status rlx_llm_finetune_write_lora_memory(const rlx_llm_finetune *ft, const char *arch, void *buf, size_t cap,
                                              size_t *size);

/* ---- training data ------------------------------------------------------------
 * Windows for rlx_llm_finetune_step / eval from a text or JSONL source,
 * tokenized with the model's tokenizer as a prompt is for generation (BOS
 * as the file asks, special-token text parsed).
 *
 * Text (UTF-8): the whole file is one token stream (BOS once, at its
 * start), cut into windows of seq + 1 tokens that start seq tokens apart:
 * window k holds t[k seq .. k seq + seq]; its ids are t[k seq .. k seq +
 * seq), its targets t[k seq + 1 .. k seq + seq], every target weight 1.
 * Each token but the first is thus a target exactly once, except those of
 * a tail shorter than a window, which is dropped (n_dropped).  A text of
 * fewer than seq + 1 tokens is refused with its count.
 *
 * JSONL: one object per line, {"prompt": STRING, "completion": STRING}
 * (no other keys; blank lines skipped).  An example is the tokens of
 * prompt + completion (BOS first, as the file asks) and then EOS (when the
 * model has one); its scored targets (weight 1) are the completion's tokens
 * and the EOS, the prompt's are weight 0.  The prompt's tokens are the
 * longest common prefix of the example's tokens with the prompt's own
 * (a token that spans the boundary counts as the completion's).  Each
 * example has its own windows, cut as a text's (a longer one spans several
 * windows, the later ones without BOS) with its last window padded: ids
 * and targets after the example's end are EOS (0 without one) under weight
 * 0.  A window with no scored target is left out.  A bad line is refused
 * with its number and the problem.
 *
 * The training windows come in file order (shuffle 0) or in an order drawn
 * from seed (shuffle 1: a seeded permutation).  Validation windows come
 * from a separate source when one is given (all of its windows, in file
 * order), else they are held out of the training source: the last
 * round(valid_fraction * n) windows of the order (shuffled or not), at
 * least one when there are two or more windows and valid_fraction > 0,
 * never all of them. */
typedef enum { RLX_LLM_DATA_AUTO, RLX_LLM_DATA_TEXT, RLX_LLM_DATA_JSONL } rlx_llm_data_format;
#define RLX_LLM_DATA_TRAIN 0
#define RLX_LLM_DATA_VALID 1

typedef struct {
  const char *path;    /* a file (not in the wasm modules) ... */
  const char *text;    /* ... or, when path is NULL, its bytes text[0, len) */
  size_t len;
  rlx_llm_data_format format; /* AUTO: JSONL for a path ending in ".jsonl", else text */
} rlx_llm_data_source;

typedef struct {
  int32_t seq;          /* tokens per window (as rlx_llm_finetune_options.seq): >= 2 */
  int32_t shuffle;      /* 1: seeded order; 0: file order */
  uint64_t seed;
  float valid_fraction; /* of the windows held out without a validation source: [0, 1) */
} rlx_llm_data_options;

/* seq 128, shuffle 1, seed 0, valid_fraction 0.1. */
rlx_llm_data_options rlx_llm_data_default_options(void);

typedef struct rlx_llm_data rlx_llm_data;
/* valid NULL: held out of train.  The model is used while reading only. */
rlx_status rlx_llm_data_new(const rlx_llm *m, const rlx_llm_data_source *train, const rlx_llm_data_source *valid,
                            const rlx_llm_data_options *opt, rlx_llm_data **out);
void rlx_llm_data_free(rlx_llm_data *d);

typedef struct {
  int32_t seq;
  int32_t n_windows[2];  /* [RLX_LLM_DATA_TRAIN], [RLX_LLM_DATA_VALID] */
  int64_t n_scored[2];   /* targets of weight 1 over the split's windows */
  int64_t n_tokens[2];   /* tokens read for each source (BOS, EOS included; a
                            held-out split counts in [TRAIN]) */
  int64_t n_dropped[2];  /* tokens of a text's tail that no window covers */
  int32_t n_examples[2]; /* JSONL examples (0 for a text) */
} rlx_llm_data_info;
rlx_status rlx_llm_data_get_info(const rlx_llm_data *d, rlx_llm_data_info *info);

/* Windows first .. first + n - 1 of a split, counted around it (window j
 * is window j mod n_windows), as the arguments of rlx_llm_finetune_step /
 * eval: ids, targets and mask of n * seq values each. */
rlx_status rlx_llm_data_windows(const rlx_llm_data *d, int32_t split, int64_t first, int32_t n, int32_t *ids,
                                int32_t *targets, float *mask);

#ifdef __cplusplus
}
#endif
#endif
