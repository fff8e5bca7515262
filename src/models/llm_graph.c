/* llm_graph.c - the graph of one decoding step of n tokens for the llama,
 * qwen2 and qwen3 architectures, as llama.cpp computes them:
 *
 *   x = embed(ids)                                     [n, E]
 *   per layer: h = rms_norm(x) * attn_norm
 *     q = h Wq^T (+ bq), k = h Wk^T (+ bk), v = h Wv^T (+ bv)
 *     qwen3: q, k per head rms_norm * q_norm / k_norm
 *     q, k rotated (RoPE at positions pos .. pos + n - 1: adjacent pairs
 *     for llama, NeoX halves for qwen2/qwen3)
 *     a = causal attention of q over the KV cache after appending k, v
 *     x = x + a Wo^T                    (the add in matmul_q: its acc input)
 *     h = rms_norm(x) * ffn_norm
 *     x = x + (silu(h Wgate^T) * (h Wup^T)) Wdown^T   (swiglu_q, then matmul_q)
 *   logits = rms_norm(x[n - 1]) * output_norm . Wout^T   [1, V]
 *
 * LoRA adapters (llm_lora.c): each adapted product y = h W^T gets, per
 * adapter, y += s ((h A^T) B^T): h[n, n_in] A^T -> t[n, r] (matmul_q of
 * the F32 / F16 table A [r, n_in]), t * s, then t B^T [n, n_out] added by
 * matmul_q's acc input (B [n_out, r]).  h is the product's own (normed)
 * input; a layer with a gate or up adapter runs silu(gate) * up as its
 * pieces, the adapters' terms added to each before the product.
 *
 * Every 2-D weight is an i32 param in its file type (matmul_q, gather_q);
 * 1-D ones are f32 params; the caches are f32 params "cache.k.<l>",
 * "cache.v.<l>" [Hkv, C, D]; llm_run.c binds them all.
 *
 * Fused (the WebGPU steps, where each op is a dispatch and dispatches are
 * what a decoded token costs): the rms_norms ride in the products that
 * read them (matmul_q's and swiglu_q's norm: Wq, Wk, Wv, the gate and up,
 * the output) and the rotations in attention_kv (its rope), where the
 * kernels can: 49 fewer ops per token for a 12-layer model. */
#include <math.h>
#include <stdio.h>

#include "../ir/attrs.h"
#include "../webgpu/wgpu.h" /* RLX_WGPU_ROPE_FREQS: the heads WebGPU's attention_kv rotates */
#include "llm.h"

typedef struct {
  rlx_graph *g;
  const rlx_llm *m;
  int32_t n;
  rlx_node pos;
  int fuse_norm, fuse_rope;
} step_builder;

/* The param node of a weight: i32 words for a 2-D one, f32 for 1-D. */
static rlx_node param_of(step_builder *b, const llm_weight *w) {
  rlx_node found = rlx_graph_find(b->g, w->name);
  if (found != RLX_NO_NODE) return found; /* the tied output reuses token_embd */
  if (!w->matrix) {
    int32_t d[1] = {w->cols};
    return rlx_param(b->g, w->name, 1, d);
  }
  int32_t d[1] = {(int32_t)(w->bytes / 4)};
  return rlx_param_dtype(b->g, w->name, 1, d, RLX_I32);
}

/* Whether products with w round x to 8 bits: the model's xq8, for the
 * Q8_0 and Q4_0 weights, the types with int8 kernels (rlx_llm.h). */
static int32_t xq8_for(const step_builder *b, const llm_weight *w) {
  return b->m->info.xq8 && (w->qtype == RLX_GGUF_TYPE_Q8_0 || w->qtype == RLX_GGUF_TYPE_Q4_0);
}

/* r[..., rows] + x W^T (matmul_q's acc input: a residual in one op), or
 * x W^T alone when r is RLX_NO_NODE. */
static rlx_node linear_plus(step_builder *b, rlx_node r, rlx_node x, const llm_weight *w) {
  rlx_node in[3] = {x, param_of(b, w), r};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = w->qtype, [RLX_IATTR_QTABLE_ROWS] = w->rows,
                  [RLX_IATTR_QTABLE_COLS] = w->cols, [RLX_IATTR_QMATMUL_TRANS] = 0,
                  [RLX_IATTR_QMATMUL_XQ8] = xq8_for(b, w)};
  return rlx_op_node(b->g, RLX_OP_MATMUL_Q, in, r == RLX_NO_NODE ? 2 : 3, at, RLX_LEN(at), NULL, 0);
}

/* x[..., cols] -> [..., rows] = x W^T. */
static rlx_node linear(step_builder *b, rlx_node x, const llm_weight *w) { return linear_plus(b, RLX_NO_NODE, x, w); }

static rlx_node norm(step_builder *b, rlx_node x, const llm_weight *w) {
  return rlx_rms_norm(b->g, x, param_of(b, w), b->m->info.rms_eps);
}

/* x (normed by the weight nw) W^T: one matmul_q with its norm when fused. */
static rlx_node linear_normed(step_builder *b, rlx_node x, const llm_weight *nw, const llm_weight *w) {
  if (!b->fuse_norm) return linear(b, x, w);
  rlx_node in[3] = {x, param_of(b, w), param_of(b, nw)};
  int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = w->qtype, [RLX_IATTR_QTABLE_ROWS] = w->rows,
                  [RLX_IATTR_QTABLE_COLS] = w->cols, [RLX_IATTR_QMATMUL_TRANS] = 0,
                  [RLX_IATTR_QMATMUL_XQ8] = xq8_for(b, w), [RLX_IATTR_QMATMUL_NORM] = 1};
  float eps[] = {[RLX_FATTR_QMATMUL_EPS] = b->m->info.rms_eps};
  return rlx_op_node(b->g, RLX_OP_MATMUL_Q, in, 3, at, RLX_LEN(at), eps, RLX_LEN(eps));
}

static int has_lora(const step_builder *b, int32_t l, int p) {
  for (int32_t i = 0; i < b->m->info.n_lora; i++)
    if (rlx_llm_lora_pair(b->m, i, l, p)) return 1;
  return 0;
}

/* y[n, n_out] plus each adapter's s (h A^T) B^T for layer l's product p,
 * h[n, n_in] the product's (normed) input. */
static rlx_node lora(step_builder *b, rlx_node y, rlx_node h, int32_t l, int p) {
  for (int32_t i = 0; i < b->m->info.n_lora; i++) {
    const llm_lora_pair *pr = rlx_llm_lora_pair(b->m, i, l, p);
    if (!pr) continue;
    rlx_node t = rlx_mul(b->g, linear(b, h, &pr->a), rlx_scalar(b->g, pr->scale)); /* [n, r] */
    y = linear_plus(b, y, t, &pr->b);
  }
  return y;
}

/* Layer l's product p of x (normed by nw; hn: x normed, for the adapters)
 * with its adapters' terms and its bias. */
static rlx_node linear_bias(step_builder *b, rlx_node x, rlx_node hn, const llm_weight *nw, const llm_weight *w,
                            const llm_weight *bias, int32_t l, int p) {
  rlx_node y = lora(b, linear_normed(b, x, nw, w), hn, l, p);
  return bias->qtype < 0 ? y : rlx_add(b->g, y, param_of(b, bias));
}

/* y[n, H, D] -> [H, n, D]; for one token a reshape (a view: no copy). */
static rlx_node head_major(step_builder *b, rlx_node y, int32_t h) {
  int32_t d3[3] = {h, 1, b->m->info.head_dim}, perm[3] = {1, 0, 2};
  return b->n == 1 ? rlx_reshape(b->g, y, 3, d3) : rlx_permute(b->g, y, perm);
}

/* x[n, H * D] -> [H, n, D], normed per head when qk_norm is present,
 * rotated (unless attention_kv rotates it). */
static rlx_node heads(step_builder *b, rlx_node x, int32_t h, const llm_weight *qk_norm) {
  const rlx_llm_info *in = &b->m->info;
  int32_t d3[3] = {b->n, h, in->head_dim};
  rlx_node y = rlx_reshape(b->g, x, 3, d3);
  if (qk_norm && qk_norm->qtype >= 0) y = norm(b, y, qk_norm);
  y = head_major(b, y, h);
  return b->fuse_rope ? y : rlx_rope_ext(b->g, y, b->pos, in->rope_theta, 0, in->rope_neox ? 0 : 1);
}

/* x normed by nw, then silu(h Wgate^T) * (h Wup^T): one swiglu_q (with its
 * norm when fused) when the two weights share their type and shape (as
 * they usually do) and no adapter changes either, else its pieces. */
static rlx_node gate_up(step_builder *b, rlx_node x, const llm_weight *nw, const llm_weight *gate,
                        const llm_weight *up, int32_t l) {
  const int adapted = has_lora(b, l, LLM_P_GATE) || has_lora(b, l, LLM_P_UP);
  if (!adapted && gate->qtype == up->qtype && gate->rows == up->rows && gate->cols == up->cols) {
    const int fused = b->fuse_norm;
    rlx_node in[4] = {fused ? x : norm(b, x, nw), param_of(b, gate), param_of(b, up), fused ? param_of(b, nw) : RLX_NO_NODE};
    int32_t at[] = {[RLX_IATTR_QTABLE_QTYPE] = gate->qtype, [RLX_IATTR_QTABLE_ROWS] = gate->rows,
                    [RLX_IATTR_QTABLE_COLS] = gate->cols, [RLX_IATTR_QSWIGLU_XQ8] = xq8_for(b, gate),
                    [RLX_IATTR_QSWIGLU_NORM] = fused};
    float eps[] = {[RLX_FATTR_QSWIGLU_EPS] = b->m->info.rms_eps};
    return rlx_op_node(b->g, RLX_OP_SWIGLU_Q, in, fused ? 4 : 3, at, RLX_LEN(at), eps, RLX_LEN(eps));
  }
  rlx_node h = norm(b, x, nw);
  return rlx_mul(b->g, rlx_silu(b->g, lora(b, linear(b, h, gate), h, l, LLM_P_GATE)),
                 lora(b, linear(b, h, up), h, l, LLM_P_UP));
}

static rlx_node cache_param(step_builder *b, const char *kind, int32_t l) {
  const rlx_llm_info *in = &b->m->info;
  char name[32];
  snprintf(name, sizeof name, "cache.%s.%d", kind, (int)l);
  int32_t d[3] = {in->n_head_kv, in->n_ctx, in->head_dim};
  return rlx_param(b->g, name, 3, d);
}

static rlx_node layer(step_builder *b, rlx_node x, int32_t l) {
  const rlx_llm_info *in = &b->m->info;
  const llm_layer *L = &b->m->layers[l];
  rlx_graph *g = b->g;
  rlx_node h = b->fuse_norm ? x : norm(b, x, &L->attn_norm); /* fused: each product normalizes x */
  /* the adapters' input: x normed (fused, normed for them alone) */
  const int qkv_lora = has_lora(b, l, LLM_P_Q) || has_lora(b, l, LLM_P_K) || has_lora(b, l, LLM_P_V);
  rlx_node hn = b->fuse_norm && qkv_lora ? norm(b, x, &L->attn_norm) : h;
  rlx_node q = heads(b, linear_bias(b, h, hn, &L->attn_norm, &L->wq, &L->bq, l, LLM_P_Q), in->n_head, &L->q_norm);
  rlx_node k = heads(b, linear_bias(b, h, hn, &L->attn_norm, &L->wk, &L->bk, l, LLM_P_K), in->n_head_kv, &L->k_norm);
  int32_t d3[3] = {b->n, in->n_head_kv, in->head_dim};
  rlx_node v = linear_bias(b, h, hn, &L->attn_norm, &L->wv, &L->bv, l, LLM_P_V);
  v = head_major(b, rlx_reshape(g, v, 3, d3), in->n_head_kv);
  rlx_node kv_in[6] = {q, k, v, cache_param(b, "k", l), cache_param(b, "v", l), b->pos};
  int32_t at[] = {[RLX_IATTR_ATTENTION_KV_ROPE] = b->fuse_rope ? (in->rope_neox ? 1 : 2) : 0};
  float f[] = {[RLX_FATTR_ATTENTION_KV_SCALE] = 1.0f / sqrtf((float)in->head_dim),
               [RLX_FATTR_ATTENTION_KV_THETA] = in->rope_theta};
  rlx_node a = rlx_op_node(g, RLX_OP_ATTENTION_KV, kv_in, 6, at, RLX_LEN(at), f, RLX_LEN(f));
  int32_t d2[2] = {b->n, in->n_head * in->head_dim};
  a = rlx_reshape(g, a, 2, d2);
  if (l == in->n_layer - 1 && b->n > 1) { /* only the last token's row reaches the logits: the rest of the
                                            * last layer runs on it alone (its keys and values are cached) */
    a = rlx_narrow(g, a, 0, b->n - 1, 1);
    x = rlx_narrow(g, x, 0, b->n - 1, 1);
  }
  x = lora(b, linear_plus(b, x, a, &L->wo), a, l, LLM_P_O);
  rlx_node ff = gate_up(b, x, &L->ffn_norm, &L->gate, &L->up, l);
  return lora(b, linear_plus(b, x, ff, &L->down), ff, l, LLM_P_DOWN);
}

rlx_status rlx_llm_build_step(const rlx_llm *m, int32_t n, int fuse, rlx_graph **out, rlx_node *logits) {
  const rlx_llm_info *in = &m->info;
  step_builder b = {rlx_graph_new(), m, n, RLX_NO_NODE, fuse, fuse && in->head_dim <= 2 * (int32_t)RLX_WGPU_ROPE_FREQS};
  *out = NULL;
  if (!b.g) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm: out of memory building a step");
  int32_t dn[1] = {n}, d1[1] = {1};
  rlx_node ids = rlx_input(b.g, "ids", 1, dn, RLX_I32);
  b.pos = rlx_input(b.g, "pos", 1, d1, RLX_I32);
  const llm_weight *e = &m->token_embd;
  rlx_node x = rlx_gather_q(b.g, param_of(&b, e), ids, e->qtype, e->rows, e->cols);
  for (int32_t l = 0; l < in->n_layer; l++) x = layer(&b, x, l);
  /* the last token's row (layer() narrowed the last layer), normed */
  *logits = linear_normed(&b, b.fuse_norm ? x : norm(&b, x, &m->output_norm), &m->output_norm,
                          in->tied_output ? &m->token_embd : &m->output);
  rlx_status st = rlx_graph_status(b.g);
  if (st != RLX_OK) {
    rlx_error(st, "rlx_llm: building a step of %d tokens: %s", (int)n, rlx_graph_error(b.g));
    rlx_graph_free(b.g);
    return st;
  }
  *out = b.g;
  return RLX_OK;
}
