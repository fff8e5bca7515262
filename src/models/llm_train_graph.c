/* llm_train_graph.c - the LoRA training graph of a language model: the full
 * causal forward of W windows of S tokens (T = W S rows), no KV cache, as
 * llm_graph.c's step computes one window from position 0:
 *
 *   x = embed(ids)                                      [T, E]
 *   per layer: h = rms_norm(x) * attn_norm
 *     q = lin(h, Wq) (+ bq), k = lin(h, Wk) (+ bk), v = lin(h, Wv) (+ bv)
 *     heads [W, S, H, D] (qwen3: per-head rms_norm * q_norm / k_norm)
 *     -> [W, H, S, D]; q, k rotated at positions 0 .. S - 1 (adjacent
 *     pairs for llama, NeoX halves for qwen2/qwen3); k, v repeated to the
 *     Hq heads (GQA: kv head j serves q heads j G .. j G + G - 1)
 *     a = causal attention(q, k, v) -> [T, Hq D]
 *     x = x + lin(a, Wo)
 *     h = rms_norm(x) * ffn_norm
 *     x = x + lin(silu(lin(h, Wgate)) * lin(h, Wup), Wdown)
 *   logits = lin(rms_norm(x) * output_norm, Wout)       [T, V]
 *   loss = sum(mask * cross_entropy(logits, targets)) / max(1, sum(mask))
 *
 * lin(x, W) = x W^T + scale (x A^T) B^T where the layer's W has an adapter
 * pair (A [r, n_in], B [n_out, r], f32 params), else x W^T (matmul_q on
 * the frozen weight in its file type; gradients flow to x only).  The
 * gate and up products are one swiglu_q unless one of them has a pair or
 * their types differ. */
#include <math.h>
#include <string.h>

#include "llm_train.h"

typedef struct {
  rlx_graph *g;
  const rlx_llm *m;
  const llm_lora_set *lora;
  int32_t w, s; /* windows, tokens per window */
  llm_train_graph *out;
  int no_memory;
} train_builder;

/* The param of a model weight (i32 words for a 2-D one, f32 for 1-D),
 * recorded for binding; made once per name (the tied output reuses
 * token_embd). */
static rlx_node weight(train_builder *b, const llm_weight *w) {
  rlx_node found = rlx_graph_find(b->g, w->name);
  if (found != RLX_NO_NODE) return found;
  llm_train_graph *t = b->out;
  if (t->n_weights == t->cap_weights) {
    int32_t cap = t->cap_weights ? 2 * t->cap_weights : 32;
    const llm_weight **grown = rlx_realloc(t->weights, (size_t)t->cap_weights * sizeof *grown, (size_t)cap * sizeof *grown);
    if (!grown) {
      b->no_memory = 1;
      return RLX_NO_NODE;
    }
    t->weights = grown, t->cap_weights = cap;
  }
  t->weights[t->n_weights++] = w;
  int32_t d[1] = {w->matrix ? (int32_t)(w->bytes / 4) : w->cols};
  return w->matrix ? rlx_param_dtype(b->g, w->name, 1, d, RLX_I32) : rlx_param(b->g, w->name, 1, d);
}

static rlx_node norm(train_builder *b, rlx_node x, const llm_weight *w) {
  return rlx_rms_norm(b->g, x, weight(b, w), b->m->info.rms_eps);
}

/* The adapter pair on target t of layer l, or NULL. */
static const llm_train_pair *pair_of(const train_builder *b, int32_t l, int32_t t) {
  int32_t i = b->lora->pair_at[l * LLM_N_PROJ + t];
  return i < 0 ? NULL : &b->lora->pairs[i];
}

/* x[T, n_in] -> [T, n_out] = x W^T (+ scale (x A^T) B^T with target t's
 * pair in layer l) (+ r when r is not RLX_NO_NODE). */
static rlx_node lin(train_builder *b, rlx_node r, rlx_node x, int32_t l, int32_t t) {
  rlx_graph *g = b->g;
  const llm_weight *w = rlx_llm_proj_weight(&b->m->layers[l], t);
  rlx_node y = rlx_matmul_q(g, x, weight(b, w), w->qtype, w->rows, w->cols, 0);
  const llm_train_pair *p = pair_of(b, l, t);
  if (p) {
    const int32_t rank = b->lora->rank, i = (int32_t)(p - b->lora->pairs);
    int32_t da[2] = {rank, p->n_in}, db[2] = {p->n_out, rank};
    rlx_node a = rlx_param(g, p->a_name, 2, da), bb = rlx_param(g, p->b_name, 2, db);
    b->out->params[2 * i] = a, b->out->params[2 * i + 1] = bb;
    rlx_node xa = rlx_mul(g, rlx_matmul_t(g, x, a, 0, 1), rlx_scalar(g, b->lora->scale)); /* [T, r] */
    y = rlx_add(g, y, rlx_matmul_t(g, xa, bb, 0, 1));
  }
  return r == RLX_NO_NODE ? y : rlx_add(g, r, y);
}

/* lin plus the layer's bias when it has one (qwen2's q, k, v). */
static rlx_node lin_bias(train_builder *b, rlx_node x, int32_t l, int32_t t, const llm_weight *bias) {
  rlx_node y = lin(b, RLX_NO_NODE, x, l, t);
  return bias->qtype < 0 ? y : rlx_add(b->g, y, weight(b, bias));
}

/* x[T, H D] -> [W, H, S, D], normed per head when qk_norm is present,
 * rotated when rotate is set. */
static rlx_node heads(train_builder *b, rlx_node x, int32_t h, const llm_weight *qk_norm, int rotate) {
  const rlx_llm_info *in = &b->m->info;
  int32_t d4[4] = {b->w, b->s, h, in->head_dim}, perm[4] = {0, 2, 1, 3};
  rlx_node y = rlx_reshape(b->g, x, 4, d4);
  if (qk_norm && qk_norm->qtype >= 0) y = norm(b, y, qk_norm);
  y = rlx_permute(b->g, y, perm);
  return rotate ? rlx_rope_ext(b->g, y, RLX_NO_NODE, in->rope_theta, 0, in->rope_neox ? 0 : 1) : y;
}

/* [W, Hkv, S, D] -> [W, Hq, S, D]: each kv head repeated for its group. */
static rlx_node repeat_kv(train_builder *b, rlx_node x) {
  const rlx_llm_info *in = &b->m->info;
  const int32_t group = in->n_head / in->n_head_kv;
  if (group == 1) return x;
  int32_t d5[5] = {b->w, in->n_head_kv, 1, b->s, in->head_dim}, e5[5] = {b->w, in->n_head_kv, group, b->s, in->head_dim};
  int32_t d4[4] = {b->w, in->n_head, b->s, in->head_dim};
  return rlx_reshape(b->g, rlx_expand(b->g, rlx_reshape(b->g, x, 5, d5), 5, e5), 4, d4);
}

/* h (normed) -> silu(h Wgate^T) * (h Wup^T), [T, n_ff]. */
static rlx_node gate_up(train_builder *b, rlx_node h, int32_t l) {
  const llm_layer *L = &b->m->layers[l];
  if (!pair_of(b, l, LLM_P_GATE) && !pair_of(b, l, LLM_P_UP) && L->gate.qtype == L->up.qtype &&
      L->gate.rows == L->up.rows && L->gate.cols == L->up.cols)
    return rlx_swiglu_q(b->g, h, weight(b, &L->gate), weight(b, &L->up), L->gate.qtype, L->gate.rows, L->gate.cols);
  return rlx_mul(b->g, rlx_silu(b->g, lin(b, RLX_NO_NODE, h, l, LLM_P_GATE)),
                 lin(b, RLX_NO_NODE, h, l, LLM_P_UP));
}

static rlx_node layer(train_builder *b, rlx_node x, int32_t l) {
  const rlx_llm_info *in = &b->m->info;
  const llm_layer *L = &b->m->layers[l];
  rlx_graph *g = b->g;
  rlx_node h = norm(b, x, &L->attn_norm);
  rlx_node q = heads(b, lin_bias(b, h, l, LLM_P_Q, &L->bq), in->n_head, &L->q_norm, 1);
  rlx_node k = heads(b, lin_bias(b, h, l, LLM_P_K, &L->bk), in->n_head_kv, &L->k_norm, 1);
  rlx_node v = heads(b, lin_bias(b, h, l, LLM_P_V, &L->bv), in->n_head_kv, NULL, 0);
  rlx_node a = rlx_attention(g, q, repeat_kv(b, k), repeat_kv(b, v), RLX_MASK_CAUSAL, 0, RLX_NO_NODE,
                             1.0f / sqrtf((float)in->head_dim)); /* [W, Hq, S, D] */
  int32_t perm[4] = {0, 2, 1, 3}, d2[2] = {b->w * b->s, in->n_head * in->head_dim};
  a = rlx_reshape(g, rlx_permute(g, a, perm), 2, d2);
  x = lin(b, x, a, l, LLM_P_O);
  return lin(b, x, gate_up(b, norm(b, x, &L->ffn_norm), l), l, LLM_P_DOWN);
}

rlx_status llm_train_graph_build(const rlx_llm *m, const llm_lora_set *lora, int32_t n_pairs, int32_t n_windows,
                                 int32_t seq, llm_train_graph *out) {
  const rlx_llm_info *in = &m->info;
  memset(out, 0, sizeof *out);
  out->g = rlx_graph_new();
  out->n_params = 2 * n_pairs;
  out->params = rlx_malloc((size_t)(n_pairs > 0 ? out->n_params : 1) * sizeof(rlx_node));
  train_builder b = {out->g, m, lora, n_windows, seq, out, 0};
  rlx_status st = RLX_OK;
  if (!out->g || !out->params) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_finetune: out of memory building the training graph");
    goto fail;
  }
  rlx_graph *g = out->g;
  int32_t dt[1] = {n_windows * seq};
  rlx_node ids = rlx_input(g, "ids", 1, dt, RLX_I32), targets = rlx_input(g, "targets", 1, dt, RLX_I32);
  rlx_node mask = rlx_input(g, "mask", 1, dt, RLX_F32);
  const llm_weight *e = &m->token_embd, *o = in->tied_output ? &m->token_embd : &m->output;
  rlx_node x = rlx_gather_q(g, weight(&b, e), ids, e->qtype, e->rows, e->cols);
  for (int32_t l = 0; l < in->n_layer; l++) x = layer(&b, x, l);
  x = norm(&b, x, &m->output_norm);
  out->logits = rlx_matmul_q(g, x, weight(&b, o), o->qtype, o->rows, o->cols, 0);
  int32_t axis[1] = {0};
  rlx_node scored = rlx_reduce_sum(g, rlx_mul(g, rlx_softmax_cross_entropy(g, out->logits, targets), mask), axis, 1, 0);
  rlx_node weight_sum = rlx_max(g, rlx_reduce_sum(g, mask, axis, 1, 0), rlx_scalar(g, 1.0f));
  out->loss = rlx_div(g, scored, weight_sum);
  if (b.no_memory) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_finetune: out of memory building the training graph");
    goto fail;
  }
  if ((st = rlx_graph_status(g)) != RLX_OK) {
    rlx_error(st, "rlx_llm_finetune: building the training graph of %d x %d tokens: %s", (int)n_windows, (int)seq,
              rlx_graph_error(g));
    goto fail;
  }
  return RLX_OK;
fail:
  llm_train_graph_free(out);
  return st;
}

void llm_train_graph_free(llm_train_graph *t) {
  if (!t) return;
  rlx_graph_free(t->g);
  rlx_free(t->params, (size_t)(t->n_params > 0 ? t->n_params : 1) * sizeof(rlx_node));
  rlx_free(t->weights, (size_t)t->cap_weights * sizeof *t->weights);
  memset(t, 0, sizeof *t);
}
