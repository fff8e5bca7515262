/* transformer.h - internals of the decoder-only transformer (transformer.c)
 * for tests: the graph builder with parts switched off, and compiling a
 * session with its synthesized weights set. */
#ifndef RLX_MODELS_TRANSFORMER_H
#define RLX_MODELS_TRANSFORMER_H

#include "rlx_models.h"

/* Parts of each layer that can be left out (0 = the full model). */
enum {
  RLX_TF_NO_ROPE = 1,      /* attention without rotary embedding */
  RLX_TF_NO_FFN = 2,       /* no SwiGLU block (and no ffn_norm use) */
  RLX_TF_NO_ATTENTION = 4  /* no attention block */
};

/* Checks the configuration (sizes, dim = n_heads * head_dim, even
 * head_dim, n_tokens >= 1); what names the caller in messages. */
rlx_status rlx_transformer_check_config(const char *what, const rlx_transformer_config *cfg, int32_t n_tokens);

/* Adds the model to g: input "tokens" [n_tokens] (f32 ids), the params in
 * the reference order; *logits is [n_tokens, vocab]. */
rlx_status rlx_transformer_build(rlx_graph *g, const rlx_transformer_config *cfg, int32_t n_tokens, int flags,
                                 rlx_node *logits);

/* Builds, compiles (skip_fusion from cfg) and sets the synthesized weights:
 * run it after setting "tokens". */
rlx_status rlx_transformer_compile(const rlx_transformer_config *cfg, int32_t n_tokens, int flags, rlx_session **out);

/* Value i of the synthesized param called name: norms (names ending in
 * "norm") 1 +- 0.02, the others 0 +- 0.04, uniform. */
float rlx_transformer_weight(uint64_t seed, const char *name, uint64_t i);

#endif
