/* llm_external.c - the params of a model opened with its weights external
 * (rlx_llm_open_head: only the GGUF header is in memory, the tensor data
 * streamed from the file straight to GPU buffers by
 * web/runtime/llm_gpu_stream.js).  Its steps' weight params are bound to
 * nothing here; this table names each param the GPU executor must supply,
 * with its buffer's size and where its bytes lie in the file: every weight
 * (2-D ones in their file type, 1-D ones f32) and the KV caches (zeros,
 * no bytes in the file, never allocated here).  The CPU side of a GPU step
 * needs none of the weights: the embedding rows are gathered on the GPU and
 * only the logits come back. */
#include <stdio.h>

#include "llm.h"

enum { GLOBALS = 3 }; /* token_embd, output_norm, output */

/* Weight slot i of the fixed order (NULL past the weights; absent ones included). */
static const llm_weight *slot(const rlx_llm *m, int64_t i) {
  if (i < GLOBALS) return i == 0 ? &m->token_embd : i == 1 ? &m->output_norm : &m->output;
  i -= GLOBALS;
  if (i >= (int64_t)m->info.n_layer * LLM_LAYER_WEIGHTS) return NULL;
  return rlx_llm_layer_weight(&m->layers[i / LLM_LAYER_WEIGHTS], (int)(i % LLM_LAYER_WEIGHTS));
}

int32_t rlx_llm_external_count(const rlx_llm *m) {
  if (!m || !m->external) return 0;
  int32_t n = 2 * m->info.n_layer; /* the caches */
  for (int64_t i = 0; slot(m, i); i++) n += slot(m, i)->qtype >= 0;
  return n;
}

rlx_status rlx_llm_external(const rlx_llm *m, int32_t i, const char **name, uint64_t *bytes, uint64_t *offset,
                            uint64_t *file_bytes) {
  if (!m || !name || !bytes || !offset || !file_bytes)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_external: an argument is NULL");
  if (!m->external) return rlx_error(RLX_ERR_STATE, "rlx_llm_external: the model holds its weights (not streamed)");
  int32_t k = i;
  for (int64_t s = 0; k >= 0 && slot(m, s); s++) {
    const llm_weight *w = slot(m, s);
    if (w->qtype < 0) continue;
    if (k-- == 0) {
      *name = w->name;
      *bytes = w->bytes;
      *offset = w->offset;
      *file_bytes = w->file_bytes;
      return RLX_OK;
    }
  }
  const rlx_llm_info *in = &m->info;
  if (k < 0 || k >= 2 * in->n_layer)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_external: param %d is out of range (%d)", (int)i,
                     (int)rlx_llm_external_count(m));
  static char cache_name[32]; /* valid until the next call */
  snprintf(cache_name, sizeof cache_name, "cache.%c.%d", k % 2 ? 'v' : 'k', (int)(k / 2));
  *name = cache_name;
  *bytes = (uint64_t)in->n_head_kv * (uint64_t)in->n_ctx * (uint64_t)in->head_dim * 4u;
  *offset = 0;
  *file_bytes = 0;
  return RLX_OK;
}
