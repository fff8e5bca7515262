/* transformer.c - the decoder-only transformer of rlx_models.h:
 *
 *   h = embed[tokens]
 *   per layer:  n = RMSNorm(h); h += Wo . Attn(RoPE(n Wq), RoPE(n Wk), n Wv)
 *               n2 = RMSNorm(h); h += (silu(n2 Wgate) * (n2 Wup)) Wdown
 *   logits = RMSNorm(h) . lm_head
 *
 * The projections use the packed layout qkv = n . concat(Wq, Wk, Wv), then
 * narrow x3 -> reshape [1, S, H, Dh] -> permute to [1, H, S, Dh], and back
 * after attention; the compiler's fusion passes turn that block into one
 * fused_attention node (skip_fusion keeps every op).  Weights are
 * synthesized per element from (seed, param name, index).  Compiled
 * sessions are cached by the full configuration and the token count, with
 * the weights set once when the session is made. */
#include "transformer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/core.h"
#include "cache.h"

#define RMS_EPS 1e-5f
#define ROPE_THETA 10000.0f
#define MAX_LAYERS 4096

static const char *const layer_params[] = {"attn_norm", "wq", "wk", "wv", "wo", "ffn_norm", "wgate", "wup", "wdown"};
#define N_LAYER_PARAMS 9

rlx_status rlx_transformer_check_config(const char *what, const rlx_transformer_config *cfg, int32_t n_tokens) {
  if (!cfg) return rlx_error(RLX_ERR_INVALID_ARG, "%s: the config is NULL", what);
  if (cfg->vocab <= 0 || cfg->dim <= 0 || cfg->n_heads <= 0 || cfg->head_dim <= 0 || cfg->ffn <= 0)
    return rlx_error(RLX_ERR_INVALID_ARG,
                     "%s: vocab, dim, n_heads, head_dim and ffn must be at least 1 (got %d, %d, %d, %d, %d)", what,
                     (int)cfg->vocab, (int)cfg->dim, (int)cfg->n_heads, (int)cfg->head_dim, (int)cfg->ffn);
  if (cfg->n_layers < 0 || cfg->n_layers > MAX_LAYERS)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: n_layers must be in [0, %d], got %d", what, MAX_LAYERS,
                     (int)cfg->n_layers);
  if ((int64_t)cfg->n_heads * cfg->head_dim != cfg->dim)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: dim (%d) must equal n_heads * head_dim (%d * %d = %lld)", what,
                     (int)cfg->dim, (int)cfg->n_heads, (int)cfg->head_dim,
                     (long long)cfg->n_heads * cfg->head_dim);
  if (cfg->head_dim % 2)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: head_dim must be even for RoPE (rotating halves), got %d", what,
                     (int)cfg->head_dim);
  if (cfg->window < 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: window must be 0 (causal) or a positive key count, got %d", what,
                     (int)cfg->window);
  if (n_tokens <= 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: no tokens (n_tokens is %d); at least one token is needed", what,
                     (int)n_tokens);
  /* every tensor of the graph within INT32_MAX elements */
  const int64_t big[6][2] = {{cfg->vocab, cfg->dim}, {cfg->dim, 3 * (int64_t)cfg->dim}, {cfg->dim, cfg->ffn},
                             {n_tokens, cfg->vocab}, {n_tokens, 3 * (int64_t)cfg->dim}, {n_tokens, cfg->ffn}};
  for (int i = 0; i < 6; i++)
    if (big[i][0] * big[i][1] > INT32_MAX)
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: the model is too large for this runtime (a %lld x %lld tensor)", what,
                       (long long)big[i][0], (long long)big[i][1]);
  return RLX_OK;
}

/* Ids must be whole numbers in [0, vocab) (they are stored as floats). */
static rlx_status check_tokens(const char *what, const rlx_transformer_config *cfg, const float *tokens, int32_t n) {
  for (int32_t i = 0; i < n; i++) {
    float t = tokens[i];
    if (!(t >= 0.0f && t < (float)cfg->vocab) || t != floorf(t))
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: token %d is %g; ids must be whole numbers in [0, %d)", what, (int)i,
                       (double)t, (int)cfg->vocab);
  }
  return RLX_OK;
}

static uint64_t name_hash(const char *s) { /* FNV-1a, 64 bits */
  uint64_t h = 14695981039346656037ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static int is_norm(const char *name) {
  size_t n = strlen(name);
  return n >= 4 && strcmp(name + n - 4, "norm") == 0;
}

float rlx_transformer_weight(uint64_t seed, const char *name, uint64_t i) {
  uint64_t key = rlx_hash64(seed, name_hash(name));
  float u = 2.0f * rlx_uniform(key, i) - 1.0f; /* [-1, 1) */
  return is_norm(name) ? 1.0f + 0.02f * u : 0.04f * u;
}

/* Name of param p (0: embed, then layers, then final_norm, lm_head). */
static void param_name(int32_t p, int32_t n_layers, char *buf, size_t cap) {
  if (p == 0)
    snprintf(buf, cap, "embed");
  else if (p <= n_layers * N_LAYER_PARAMS)
    snprintf(buf, cap, "layers.%d.%s", (int)((p - 1) / N_LAYER_PARAMS), layer_params[(p - 1) % N_LAYER_PARAMS]);
  else
    snprintf(buf, cap, p == n_layers * N_LAYER_PARAMS + 1 ? "final_norm" : "lm_head");
}

/* Rank and dims of param p. */
static int32_t param_dims(const rlx_transformer_config *c, int32_t p, int32_t dims[2]) {
  if (p == 0) return dims[0] = c->vocab, dims[1] = c->dim, 2;
  if (p == c->n_layers * N_LAYER_PARAMS + 1) return dims[0] = c->dim, 1;
  if (p == c->n_layers * N_LAYER_PARAMS + 2) return dims[0] = c->dim, dims[1] = c->vocab, 2;
  switch ((p - 1) % N_LAYER_PARAMS) {
    case 0: case 5: return dims[0] = c->dim, 1;                    /* norms */
    case 6: case 7: return dims[0] = c->dim, dims[1] = c->ffn, 2;  /* wgate, wup */
    case 8: return dims[0] = c->ffn, dims[1] = c->dim, 2;          /* wdown */
    default: return dims[0] = c->dim, dims[1] = c->dim, 2;         /* wq, wk, wv, wo */
  }
}

/* Head h-block t (0 q, 1 k, 2 v) of qkv[S, 3 dim] as [1, H, S, Dh]. */
static rlx_node heads(rlx_graph *g, const rlx_transformer_config *c, int32_t S, rlx_node qkv, int32_t t) {
  rlx_node part = rlx_narrow(g, qkv, 1, t * c->dim, c->dim);
  rlx_node split = rlx_reshape(g, part, 4, (const int32_t[]){1, S, c->n_heads, c->head_dim});
  return rlx_permute(g, split, (const int32_t[]){0, 2, 1, 3});
}

static rlx_node attention_block(rlx_graph *g, const rlx_transformer_config *c, int32_t S, int flags, rlx_node h,
                                const rlx_node *p) {
  rlx_node n = rlx_rms_norm(g, h, p[0], RMS_EPS);
  rlx_node w[3] = {p[1], p[2], p[3]};
  rlx_node qkv = rlx_matmul(g, n, rlx_concat(g, w, 3, 1));
  rlx_node q = heads(g, c, S, qkv, 0), k = heads(g, c, S, qkv, 1), v = heads(g, c, S, qkv, 2);
  if (!(flags & RLX_TF_NO_ROPE)) {
    q = rlx_rope(g, q, ROPE_THETA, 0);
    k = rlx_rope(g, k, ROPE_THETA, 0);
  }
  rlx_mask_kind kind = c->window > 0 ? RLX_MASK_SLIDING : RLX_MASK_CAUSAL;
  rlx_node a = rlx_attention(g, q, k, v, kind, c->window, RLX_NO_NODE, 0.0f);
  rlx_node o = rlx_reshape(g, rlx_permute(g, a, (const int32_t[]){0, 2, 1, 3}), 2, (const int32_t[]){S, c->dim});
  return rlx_add(g, h, rlx_matmul(g, o, p[4]));
}

static rlx_node ffn_block(rlx_graph *g, rlx_node h, const rlx_node *p) {
  rlx_node n = rlx_rms_norm(g, h, p[5], RMS_EPS);
  rlx_node gate = rlx_silu(g, rlx_matmul(g, n, p[6]));
  rlx_node f = rlx_mul(g, gate, rlx_matmul(g, n, p[7]));
  return rlx_add(g, h, rlx_matmul(g, f, p[8]));
}

rlx_status rlx_transformer_build(rlx_graph *g, const rlx_transformer_config *cfg, int32_t n_tokens, int flags,
                                 rlx_node *logits) {
  rlx_status st = rlx_transformer_check_config("transformer", cfg, n_tokens);
  if (st != RLX_OK) return st;
  if (!g || !logits) return rlx_error(RLX_ERR_INVALID_ARG, "transformer: graph or logits pointer is NULL");
  const int32_t n_params = cfg->n_layers * N_LAYER_PARAMS + 3;
  rlx_node tokens = rlx_input(g, "tokens", 1, &n_tokens, RLX_F32);
  rlx_node *p = rlx_calloc((size_t)n_params, sizeof *p);
  if (!p) return rlx_error(RLX_ERR_NO_MEMORY, "transformer: out of memory");
  for (int32_t i = 0; i < n_params; i++) {
    char name[64];
    int32_t dims[2];
    param_name(i, cfg->n_layers, name, sizeof name);
    p[i] = rlx_param(g, name, param_dims(cfg, i, dims), dims);
  }
  rlx_node h = rlx_gather(g, p[0], tokens);
  for (int32_t l = 0; l < cfg->n_layers; l++) {
    const rlx_node *lp = p + 1 + l * N_LAYER_PARAMS;
    if (!(flags & RLX_TF_NO_ATTENTION)) h = attention_block(g, cfg, n_tokens, flags, h, lp);
    if (!(flags & RLX_TF_NO_FFN)) h = ffn_block(g, h, lp);
  }
  h = rlx_rms_norm(g, h, p[n_params - 2], RMS_EPS);
  *logits = rlx_matmul(g, h, p[n_params - 1]);
  rlx_free(p, (size_t)n_params * sizeof *p);
  if ((st = rlx_graph_status(g)) != RLX_OK) return rlx_error(st, "transformer: %s", rlx_graph_error(g));
  return RLX_OK;
}

/* Sets every param of s to its synthesized values. */
static rlx_status set_weights(rlx_session *s, const rlx_transformer_config *cfg) {
  const int32_t n_params = cfg->n_layers * N_LAYER_PARAMS + 3;
  int32_t widest = cfg->vocab > cfg->ffn ? cfg->vocab : cfg->ffn;
  if (cfg->dim > widest) widest = cfg->dim;
  size_t most = (size_t)cfg->dim * (size_t)widest; /* the largest param */
  float *buf = rlx_malloc(most * sizeof(float));
  if (!buf) return rlx_error(RLX_ERR_NO_MEMORY, "transformer: out of memory synthesizing weights");
  rlx_status st = RLX_OK;
  for (int32_t i = 0; i < n_params && st == RLX_OK; i++) {
    char name[64];
    int32_t dims[2];
    int32_t rank = param_dims(cfg, i, dims);
    size_t len = rank == 1 ? (size_t)dims[0] : (size_t)dims[0] * (size_t)dims[1];
    param_name(i, cfg->n_layers, name, sizeof name);
    for (size_t j = 0; j < len; j++) buf[j] = rlx_transformer_weight(cfg->seed, name, j);
    st = rlx_session_set_param(s, name, buf, len);
  }
  rlx_free(buf, most * sizeof(float));
  return st;
}

rlx_status rlx_transformer_compile(const rlx_transformer_config *cfg, int32_t n_tokens, int flags, rlx_session **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "transformer: the session out-pointer is NULL");
  *out = NULL;
  rlx_graph *g = rlx_graph_new();
  if (!g) return rlx_error(RLX_ERR_NO_MEMORY, "transformer: out of memory");
  rlx_node logits;
  rlx_status st = rlx_transformer_build(g, cfg, n_tokens, flags, &logits);
  if (st == RLX_OK) {
    rlx_compile_options opt = {RLX_DEVICE_CPU, cfg->skip_fusion != 0, 0, 0};
    st = rlx_compile(g, &logits, 1, &opt, out);
  }
  rlx_graph_free(g);
  if (st == RLX_OK && (st = set_weights(*out, cfg)) != RLX_OK) {
    rlx_session_free(*out);
    *out = NULL;
  }
  return st;
}

static void cache_key(const rlx_transformer_config *c, int32_t n_tokens, char *key, size_t cap) {
  snprintf(key, cap, "transformer/v%d/d%d/l%d/h%dx%d/f%d/seed%llu/w%d/n%d/%s", (int)c->vocab, (int)c->dim,
           (int)c->n_layers, (int)c->n_heads, (int)c->head_dim, (int)c->ffn, (unsigned long long)c->seed,
           (int)c->window, (int)n_tokens, c->skip_fusion ? "unfused" : "fused");
}

/* Runs the cached (or new) session on tokens; *s is left pointing at it. */
static rlx_status run_tokens(const char *what, const rlx_transformer_config *cfg, const float *tokens,
                             int32_t n_tokens, const float *logits, rlx_session **s) {
  rlx_status st = rlx_transformer_check_config(what, cfg, n_tokens);
  if (st != RLX_OK) return st;
  if (!tokens || !logits) return rlx_error(RLX_ERR_INVALID_ARG, "%s: tokens or logits is NULL", what);
  if ((st = check_tokens(what, cfg, tokens, n_tokens)) != RLX_OK) return st;
  char key[192];
  cache_key(cfg, n_tokens, key, sizeof key);
  *s = rlx_cache_get(key);
  if (!*s) {
    if ((st = rlx_transformer_compile(cfg, n_tokens, 0, s)) != RLX_OK) return st;
    if ((st = rlx_cache_put(key, *s)) != RLX_OK) return st;
  }
  if ((st = rlx_session_set_input(*s, "tokens", tokens, (size_t)n_tokens)) != RLX_OK) return st;
  return rlx_session_run(*s);
}

rlx_status rlx_transformer_logits(const rlx_transformer_config *cfg, const float *tokens, int32_t n_tokens,
                                  float *logits) {
  rlx_session *s;
  rlx_status st = run_tokens("transformer_logits", cfg, tokens, n_tokens, logits, &s);
  if (st != RLX_OK) return st;
  return rlx_session_read_output(s, 0, logits, (size_t)n_tokens * (size_t)cfg->vocab);
}

rlx_status rlx_transformer_next_logits(const rlx_transformer_config *cfg, const float *tokens, int32_t n_tokens,
                                       float *logits) {
  rlx_session *s;
  rlx_status st = run_tokens("transformer_next_logits", cfg, tokens, n_tokens, logits, &s);
  if (st != RLX_OK) return st;
  const float *all = rlx_session_output(s, 0);
  if (!all) return rlx_error(RLX_ERR_STATE, "transformer_next_logits: no output after the run");
  memcpy(logits, all + (size_t)(n_tokens - 1) * (size_t)cfg->vocab, (size_t)cfg->vocab * sizeof(float));
  return RLX_OK;
}

int32_t rlx_transformer_fused_count(const rlx_transformer_config *cfg, int32_t n_tokens) {
  if (!cfg || n_tokens <= 0) return -1;
  char key[192];
  cache_key(cfg, n_tokens, key, sizeof key);
  rlx_session *s = rlx_cache_get(key);
  return s ? rlx_session_fused_count(s) : -1;
}
