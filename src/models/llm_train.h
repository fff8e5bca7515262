/* llm_train.h - between the LoRA training graph (llm_train_graph.c) and
 * the fine-tuning sessions (llm_finetune.c): the projections an adapter
 * can target, the pairs as the graph builder reads them, and the graph it
 * returns with the model weights its params stand for. */
#ifndef RLX_LLM_TRAIN_INTERNAL_H
#define RLX_LLM_TRAIN_INTERNAL_H

#include "llm.h"
#include "rlx_llm_train.h"

/* The targetable projections are llm.h's LLM_P_* (LLM_N_PROJ of them),
 * named by rlx_llm_lora_target and found by rlx_llm_proj_weight. */

/* One adapter pair: params "<name>.lora_a" [rank, n_in] and
 * "<name>.lora_b" [n_out, rank]. */
typedef struct {
  char name[64];         /* the base tensor's */
  char a_name[80], b_name[80];
  int32_t layer, target, n_in, n_out;
  float *a, *b;          /* the values (the fine-tuning object's memory) */
} llm_train_pair;

typedef struct {
  const llm_train_pair *pairs;
  const int32_t *pair_at; /* [n_layer * LLM_N_PROJ]: pair index or -1 */
  int32_t rank;
  float scale;
} llm_lora_set;

/* The graph of n_windows windows of seq tokens: inputs "ids", "targets"
 * (i32 [n_windows * seq]) and "mask" (f32, same), outputs loss (scalar)
 * and logits [n_windows * seq, n_vocab]; params[2 i], params[2 i + 1] are
 * pair i's A and B.  weights[0 .. n_weights) are the model weights behind
 * the graph's other params (by name; freed with rlx_free, *n_weights
 * entries). */
typedef struct {
  rlx_graph *g;
  rlx_node loss, logits;
  rlx_node *params;      /* 2 per pair */
  const llm_weight **weights;
  int32_t n_weights, cap_weights, n_params;
} llm_train_graph;

rlx_status llm_train_graph_build(const rlx_llm *m, const llm_lora_set *lora, int32_t n_pairs, int32_t n_windows,
                                 int32_t seq, llm_train_graph *out);
void llm_train_graph_free(llm_train_graph *t);

/* llm_finetune.c: the model ft was made for. */
const rlx_llm *llm_finetune_model(const rlx_llm_finetune *ft);

/* The sessions of a fine-tuning object: a training step (output the loss;
 * the pairs and the optimizer state updated), the loss and logits, the
 * loss and every pair's gradients, the loss alone. */
enum { FT_TRAIN, FT_EVAL, FT_GRAD, FT_N_SESSIONS, FT_LOSS = FT_N_SESSIONS };

/* llm_finetune.c: session `kind` of ft for n windows compiled for device,
 * every param bound (the model's weights in place, the pairs and the
 * optimizer state in ft's memory); the caller frees it, before ft. */
/* llm_finetune.c: checks n_windows windows (ids in the vocabulary, weights
 * finite and >= 0, scored targets in the vocabulary; refusals name fn) and
 * writes them as the sessions take them: fed_targets (0 under a zero
 * weight), fed_mask (1 for every token when mask is NULL), n_windows * seq
 * values each.  llm_finetune_seq: tokens per window. */
rlx_status llm_finetune_check_windows(const rlx_llm_finetune *ft, const char *fn, const int32_t *ids,
                                      const int32_t *targets, const float *mask, int32_t n_windows,
                                      int32_t *fed_targets, float *fed_mask);
int32_t llm_finetune_seq(const rlx_llm_finetune *ft);

rlx_status llm_finetune_compile(rlx_llm_finetune *ft, int kind, int32_t n, rlx_device device, rlx_session **out);

/* llm_jsonl.c: line[0, len) of a JSONL file as an example {"prompt": S,
 * "completion": S}: both strings decoded (UTF-8) into out (len bytes
 * suffice), the prompt's *prompt_len bytes then the completion's
 * *completion_len.  Returns 1, 0 for a blank line, or -1 with the problem
 * in err[0, err_cap). */
int llm_jsonl_example(const char *line, size_t len, char *out, size_t *prompt_len, size_t *completion_len, char *err,
                      size_t err_cap);

#endif
