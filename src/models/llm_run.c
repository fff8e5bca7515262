/* llm_run.c - running a language model: the step sessions (compiled on
 * first use, every weight and the KV cache bound, not copied), evaluating
 * tokens at the current position in steps of 64, 16, 4 and 1 (or taking
 * the logits of steps another executor ran), and the tokenizer calls of
 * the public API. */
#include <stdio.h>
#include <string.h>

#include "llm.h"

const int32_t rlx_llm_step_sizes[LLM_N_STEP_SIZES] = {64, 16, 4, 1};

static rlx_status bind(rlx_session *s, const llm_weight *w) {
  if (w->qtype < 0 || !w->data) return RLX_OK; /* absent, or external (the GPU executor's) */
  rlx_status st = rlx_session_bind_param(s, w->name, w->data, w->bytes);
  /* A param no output depends on is dropped by the compiler: nothing to bind. */
  return st == RLX_ERR_NOT_FOUND ? RLX_OK : st;
}

const llm_weight *rlx_llm_layer_weight(const llm_layer *L, int j) {
  const llm_weight *ws[LLM_LAYER_WEIGHTS] = {&L->attn_norm, &L->wq,     &L->wk,     &L->wv,       &L->wo,
                                             &L->bq,        &L->bk,     &L->bv,     &L->q_norm,   &L->k_norm,
                                             &L->ffn_norm,  &L->gate,   &L->up,     &L->down};
  return ws[j];
}

rlx_status rlx_llm_bind_params(const rlx_llm *m, rlx_session *s) {
  const rlx_llm_info *in = &m->info;
  rlx_status st;
  if ((st = bind(s, &m->token_embd)) || (st = bind(s, &m->output_norm)) || (st = bind(s, &m->output))) return st;
  const size_t cache_bytes = (size_t)in->n_head_kv * (size_t)in->n_ctx * (size_t)in->head_dim * 4;
  for (int32_t l = 0; l < in->n_layer; l++) {
    const llm_layer *L = &m->layers[l];
    for (int j = 0; j < LLM_LAYER_WEIGHTS; j++)
      if ((st = bind(s, rlx_llm_layer_weight(L, j))) != RLX_OK) return st;
    char name[32];
    snprintf(name, sizeof name, "cache.k.%d", (int)l);
    if (m->kv && (st = rlx_session_bind_param(s, name, L->k_cache, cache_bytes)) != RLX_OK) return st;
    snprintf(name, sizeof name, "cache.v.%d", (int)l);
    if (m->kv && (st = rlx_session_bind_param(s, name, L->v_cache, cache_bytes)) != RLX_OK) return st;
    for (int32_t i = 0; i < in->n_lora; i++)
      for (int p = 0; p < LLM_N_PROJ; p++) {
        const llm_lora_pair *pr = rlx_llm_lora_pair(m, i, l, p);
        if (pr && ((st = bind(s, &pr->a)) != RLX_OK || (st = bind(s, &pr->b)) != RLX_OK)) return st;
      }
  }
  return RLX_OK;
}

rlx_status rlx_llm_compile_step(const rlx_llm *m, int32_t k, rlx_device device, int fuse, rlx_session **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_compile_step: out is NULL");
  *out = NULL;
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_compile_step: model is NULL");
  if (k < 0 || k >= LLM_N_STEP_SIZES)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_compile_step: step %d does not exist (0 .. %d)", (int)k,
                     LLM_N_STEP_SIZES - 1);
  rlx_graph *g;
  rlx_node logits;
  rlx_status st = rlx_llm_build_step(m, rlx_llm_step_sizes[k], fuse, &g, &logits);
  if (st != RLX_OK) return st;
  rlx_compile_options opt = {device, 0, 0, m->info.threads};
  rlx_session *s = NULL;
  st = rlx_compile(g, &logits, 1, &opt, &s);
  rlx_graph_free(g);
  if (st == RLX_OK) st = rlx_llm_bind_params(m, s);
  if (st != RLX_OK) {
    rlx_session_free(s);
    return st;
  }
  *out = s;
  return RLX_OK;
}

rlx_status rlx_llm_step_session(rlx_llm *m, int32_t k, rlx_session **out) {
  if (m->external)
    return rlx_error(RLX_ERR_UNSUPPORTED, "rlx_llm_eval: the model's weights were streamed to a GPU, not held here: "
                     "its steps run there only");
  if (!m->steps[k]) {
    rlx_status st = rlx_llm_compile_step(m, k, RLX_DEVICE_CPU, 0, &m->steps[k]);
    if (st != RLX_OK) return st;
  }
  *out = m->steps[k];
  return RLX_OK;
}

int32_t rlx_llm_position(const rlx_llm *m) { return m ? m->pos : 0; }

void rlx_llm_reset(rlx_llm *m) {
  if (!m) return;
  m->pos = 0; /* the cache past pos is never read: attention_kv writes before it reads */
  m->ctx_epoch++;
}

rlx_status rlx_llm_truncate(rlx_llm *m, int32_t n) {
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_truncate: model is NULL");
  if (n < 0 || n > m->pos)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_truncate: %d tokens cannot be kept of the %d in the context",
                     (int)n, (int)m->pos);
  m->pos = n; /* as reset: what lies past pos is written again before it is read */
  m->ctx_epoch++;
  return RLX_OK;
}

uint64_t rlx_llm_tokens_evaluated(const rlx_llm *m) { return m ? m->n_evaluated : 0; }

rlx_status rlx_llm_eval(rlx_llm *m, const int32_t *ids, size_t n, float *logits) {
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_eval: model is NULL");
  if (!ids || n == 0) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_eval: no ids to evaluate");
  const rlx_llm_info *in = &m->info;
  if (m->pos < 0 || m->pos > in->n_ctx || n > (size_t)(in->n_ctx - m->pos)) /* the room, never wrapped */
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_eval: %zu tokens at position %d do not fit the context of %d "
                     "tokens", n, (int)m->pos, (int)in->n_ctx);
  for (size_t i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= in->n_vocab)
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_eval: ids[%zu] = %d is outside the vocabulary (0 .. %d)", i,
                       (int)ids[i], (int)in->n_vocab - 1);
  const int32_t start = m->pos;
  size_t done = 0;
  rlx_session *s = NULL;
  while (done < n) {
    int k = 0;
    while ((size_t)rlx_llm_step_sizes[k] > n - done) k++;
    rlx_status st = rlx_llm_step_session(m, k, &s);
    int32_t pos = m->pos;
    if (st == RLX_OK) st = rlx_session_set_input_i32(s, "ids", ids + done, (size_t)rlx_llm_step_sizes[k]);
    if (st == RLX_OK) st = rlx_session_set_input_i32(s, "pos", &pos, 1);
    if (st == RLX_OK) st = rlx_session_run(s);
    if (st != RLX_OK) {
      m->pos = start; /* what was written past start is never read */
      return st;
    }
    m->pos += rlx_llm_step_sizes[k];
    done += (size_t)rlx_llm_step_sizes[k];
  }
  m->n_evaluated += n;
  m->ctx_epoch++;
  memcpy(m->logits, rlx_session_output(s, 0), (size_t)in->n_vocab * sizeof(float));
  if (logits) memcpy(logits, m->logits, (size_t)in->n_vocab * sizeof(float));
  return RLX_OK;
}

rlx_status rlx_llm_set_logits(rlx_llm *m, const float *logits, int32_t n_tokens) {
  if (!m || !logits) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_set_logits: %s is NULL", m ? "logits" : "model");
  if (n_tokens < 1 || m->pos < 0 || m->pos > m->info.n_ctx || n_tokens > m->info.n_ctx - m->pos)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_set_logits: %d tokens at position %d do not fit the context of %d",
                     (int)n_tokens, (int)m->pos, (int)m->info.n_ctx);
  memcpy(m->logits, logits, (size_t)m->info.n_vocab * sizeof(float));
  m->pos += n_tokens;
  m->n_evaluated += (uint64_t)n_tokens;
  m->ctx_epoch++;
  return RLX_OK;
}

rlx_status rlx_llm_tokenize(const rlx_llm *m, const char *text, size_t len, int add_bos, int special, int32_t *ids,
                            size_t cap, size_t *n) {
  if (!m || !n) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_tokenize: %s is NULL", m ? "n" : "model");
  if (!text && len) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_tokenize: text is NULL");
  if (add_bos < -1 || add_bos > 1)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_tokenize: add_bos must be -1, 0 or 1 (got %d)", add_bos);
  return rlx_tokenizer_encode(m->tok, text ? text : "", len, add_bos, special != 0, ids, cap, n);
}

rlx_status rlx_llm_detokenize(const rlx_llm *m, const int32_t *ids, size_t n_ids, char *text, size_t cap,
                              size_t *len) {
  if (!m || !len) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_detokenize: %s is NULL", m ? "len" : "model");
  if (!ids && n_ids) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_detokenize: ids is NULL");
  /* The tokenizer's bytes, then whole UTF-8 as generation hands text out. */
  size_t raw_len = 0;
  rlx_status st = rlx_tokenizer_decode(m->tok, ids, n_ids, NULL, 0, &raw_len, 1);
  if (st != RLX_OK && raw_len == 0) return st;
  char *raw = rlx_malloc(raw_len + 1);
  if (!raw) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_detokenize: out of memory");
  st = rlx_tokenizer_decode(m->tok, ids, n_ids, raw, raw_len + 1, &raw_len, 1);
  if (st == RLX_OK) st = rlx_text_as_streamed(raw, raw_len, text, cap, len);
  rlx_free(raw, raw_len + 1);
  if (st == RLX_ERR_INVALID_ARG && *len > 0 && *len + 1 > cap)
    return rlx_error(st, "rlx_llm_detokenize: %zu bytes of text do not fit in %zu", *len, cap);
  return st;
}
