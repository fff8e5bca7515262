/* llm_finetune.c - LoRA fine-tuning sessions of a language model
 * (include/rlx_llm_train.h): the options and their refusals, the adapter
 * pairs (PEFT's initialisation), and three sessions over the graph of
 * llm_train_graph.c, each compiled for a number of windows on first use:
 * a training step (rlx_compile_train), an evaluation (loss and logits) and
 * the gradients.  Every param of every session is bound, not copied: the
 * model's weights in place, the pairs and the optimizer state ("<param>.m",
 * "<param>.v", "rlx.step", made as a training session asks for them) in
 * this object's memory, so a session compiled again for another number of
 * windows goes on where the last one stopped. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llm_train.h"


typedef struct {
  char name[96];
  float *data;
  size_t len;
} ft_state;

struct rlx_llm_finetune {
  const rlx_llm *m;
  rlx_llm_finetune_options opt; /* targets not kept */
  int32_t n_pairs;
  llm_train_pair *pairs;
  int32_t *pair_at;   /* [n_layer * LLM_N_PROJ] */
  float *values;      /* every pair's A then B */
  size_t n_values;
  ft_state *state;
  int32_t n_state, cap_state;
  rlx_session *sessions[FT_N_SESSIONS];
  int32_t windows[FT_N_SESSIONS]; /* what each session was compiled for */
  int grad_ready;
  int32_t *targets;   /* the targets as fed (0 under a zero weight), then */
  float *mask;        /* the weights as fed (1 when none are given): one block */
  size_t cap_tokens;
};
#define TOKEN_BYTES (sizeof(int32_t) + sizeof(float))

rlx_llm_finetune_options rlx_llm_finetune_default_options(void) {
  rlx_llm_finetune_options o = {8, 16.0f, "attn_q,attn_v", 128, {RLX_OPT_ADAMW, 2e-4f, 0.0f, 0.9f, 0.999f, 1e-8f, 0.0f}, 0};
  return o;
}

/* ---- options ---------------------------------------------------------------- */
static rlx_status parse_targets(const char *s, uint32_t *bits) {
  *bits = 0;
  if (!s || !*s) s = rlx_llm_finetune_default_options().targets;
  while (1) {
    const char *end = strchr(s, ',');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    while (len && *s == ' ') s++, len--;
    while (len && s[len - 1] == ' ') len--;
    const int32_t t = rlx_llm_lora_target_find(s, len);
    if (t >= 0) {
      *bits |= 1u << t;
    } else if (len == 3 && !memcmp(s, "all", 3)) {
      *bits |= (1u << LLM_N_PROJ) - 1;
    } else {
      char names[128] = "";
      for (int32_t k = 0, at = 0; k < LLM_N_PROJ && at < (int)sizeof names; k++)
        at += snprintf(names + at, sizeof names - (size_t)at, "%s%s", k ? ", " : "", rlx_llm_lora_target(k));
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_finetune_new: unknown target '%.*s' in targets (%s or all)", (int)len, s,
                       names);
    }
    if (!end) return RLX_OK;
    s = end + 1;
  }
}

static rlx_status check_options(const rlx_llm_info *in, const rlx_llm_finetune_options *o) {
  const char *fn = "rlx_llm_finetune_new";
  const rlx_optimizer *p = &o->optimizer;
  if (o->rank < 1) return rlx_error(RLX_ERR_INVALID_ARG, "%s: rank must be at least 1 (got %d)", fn, (int)o->rank);
  if (!isfinite(o->alpha)) return rlx_error(RLX_ERR_NUMERIC, "%s: alpha must be finite", fn);
  if (o->seq < 2 || o->seq > in->n_ctx_train)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: seq must lie in 2 .. %d (the model's context), got %d", fn,
                     (int)in->n_ctx_train, (int)o->seq);
  if (p->kind < RLX_OPT_SGD || p->kind > RLX_OPT_ADAMW)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: unknown optimizer kind %d", fn, (int)p->kind);
  const struct { const char *name; float v; } nonneg[] = {
      {"lr", p->lr}, {"momentum", p->momentum}, {"eps", p->eps}, {"weight_decay", p->weight_decay}};
  for (size_t i = 0; i < sizeof nonneg / sizeof nonneg[0]; i++)
    if (!(nonneg[i].v >= 0.0f) || isinf(nonneg[i].v))
      return rlx_error(isnan(nonneg[i].v) || isinf(nonneg[i].v) ? RLX_ERR_NUMERIC : RLX_ERR_INVALID_ARG,
                       "%s: optimizer.%s must be finite and >= 0 (got %g)", fn, nonneg[i].name, (double)nonneg[i].v);
  if (!(p->beta1 >= 0.0f && p->beta1 < 1.0f) || !(p->beta2 >= 0.0f && p->beta2 < 1.0f))
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: optimizer.beta1 and beta2 must lie in [0, 1) (got %g, %g)", fn,
                     (double)p->beta1, (double)p->beta2);
  return RLX_OK;
}

/* ---- the pairs ---------------------------------------------------------------- */
/* Lays out the pairs of the targeted projections, layer by layer, and
 * their values: A uniform in [-1/sqrt(n_in), 1/sqrt(n_in)) (PEFT's
 * kaiming_uniform_ with a = sqrt(5)), B zero. */
static rlx_status make_pairs(rlx_llm_finetune *ft, uint32_t bits) {
  const rlx_llm_info *in = &ft->m->info;
  const int32_t r = ft->opt.rank, slots = in->n_layer * LLM_N_PROJ;
  for (int32_t l = 0; l < in->n_layer; l++)
    for (int32_t t = 0; t < LLM_N_PROJ; t++) {
      const llm_weight *w = rlx_llm_proj_weight(&ft->m->layers[l], t);
      if (!(bits >> t & 1)) continue;
      if (w->qtype < 0 || !w->matrix)
        return rlx_error(RLX_ERR_UNSUPPORTED, "rlx_llm_finetune_new: the model has no 2-D %s weight", w->name);
      if (r > w->rows || r > w->cols)
        return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_finetune_new: rank %d is above min(n_in, n_out) = %d of %s "
                         "[%d, %d]", (int)r, (int)(w->rows < w->cols ? w->rows : w->cols), w->name, (int)w->rows,
                         (int)w->cols);
      ft->n_pairs++;
      ft->n_values += (size_t)r * ((size_t)w->cols + (size_t)w->rows);
    }
  ft->pairs = rlx_calloc((size_t)ft->n_pairs, sizeof *ft->pairs);
  ft->pair_at = rlx_malloc((size_t)slots * sizeof *ft->pair_at);
  ft->values = rlx_calloc(ft->n_values, sizeof(float));
  if (!ft->pairs || !ft->pair_at || !ft->values)
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_finetune_new: out of memory for %zu adapter values", ft->n_values);
  float *v = ft->values;
  int32_t i = 0;
  for (int32_t l = 0; l < in->n_layer; l++)
    for (int32_t t = 0; t < LLM_N_PROJ; t++) {
      ft->pair_at[l * LLM_N_PROJ + t] = -1;
      if (!(bits >> t & 1)) continue;
      const llm_weight *w = rlx_llm_proj_weight(&ft->m->layers[l], t);
      llm_train_pair *p = &ft->pairs[i];
      snprintf(p->name, sizeof p->name, "%s", w->name);
      snprintf(p->a_name, sizeof p->a_name, "%s.lora_a", w->name);
      snprintf(p->b_name, sizeof p->b_name, "%s.lora_b", w->name);
      p->layer = l, p->target = t, p->n_in = w->cols, p->n_out = w->rows;
      p->a = v, v += (size_t)r * (size_t)p->n_in;
      p->b = v, v += (size_t)p->n_out * (size_t)r;
      const uint64_t stream = rlx_hash64(ft->opt.seed, (uint64_t)(l * LLM_N_PROJ + t));
      const float bound = 1.0f / sqrtf((float)p->n_in);
      for (size_t j = 0; j < (size_t)r * (size_t)p->n_in; j++) p->a[j] = (2.0f * rlx_uniform(stream, j) - 1.0f) * bound;
      ft->pair_at[l * LLM_N_PROJ + t] = i++;
    }
  return RLX_OK;
}

rlx_status rlx_llm_finetune_new(const rlx_llm *m, const rlx_llm_finetune_options *opt, rlx_llm_finetune **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_finetune_new: out is NULL");
  *out = NULL;
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_finetune_new: model is NULL");
  rlx_llm_finetune_options o = opt ? *opt : rlx_llm_finetune_default_options();
  uint32_t bits;
  rlx_status st = check_options(&m->info, &o);
  if (st != RLX_OK || (st = parse_targets(o.targets, &bits)) != RLX_OK) return st;
  rlx_llm_finetune *ft = rlx_calloc(1, sizeof *ft);
  if (!ft) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_finetune_new: out of memory");
  ft->m = m;
  ft->opt = o;
  ft->opt.targets = NULL;
  if ((st = make_pairs(ft, bits)) != RLX_OK) {
    rlx_llm_finetune_free(ft);
    return st;
  }
  *out = ft;
  return RLX_OK;
}

void rlx_llm_finetune_free(rlx_llm_finetune *ft) {
  if (!ft) return;
  for (int32_t k = 0; k < FT_N_SESSIONS; k++) rlx_session_free(ft->sessions[k]);
  for (int32_t i = 0; i < ft->n_state; i++) rlx_free(ft->state[i].data, ft->state[i].len * sizeof(float));
  rlx_free(ft->state, (size_t)ft->cap_state * sizeof *ft->state);
  rlx_free(ft->pairs, (size_t)ft->n_pairs * sizeof *ft->pairs);
  rlx_free(ft->pair_at, (size_t)ft->m->info.n_layer * LLM_N_PROJ * sizeof *ft->pair_at);
  rlx_free(ft->values, ft->n_values * sizeof(float));
  rlx_free(ft->targets, ft->cap_tokens * TOKEN_BYTES);
  rlx_free(ft, sizeof *ft);
}

/* ---- sessions ----------------------------------------------------------------- */
/* The optimizer state param called name (zeros of len values), made on
 * first use. */
static float *state_param(rlx_llm_finetune *ft, const char *name, size_t len) {
  for (int32_t i = 0; i < ft->n_state; i++)
    if (!strcmp(ft->state[i].name, name)) return ft->state[i].len == len ? ft->state[i].data : NULL;
  if (ft->n_state == ft->cap_state) {
    int32_t cap = ft->cap_state ? 2 * ft->cap_state : 16;
    ft_state *grown = rlx_realloc(ft->state, (size_t)ft->cap_state * sizeof *grown, (size_t)cap * sizeof *grown);
    if (!grown) return NULL;
    ft->state = grown, ft->cap_state = cap;
  }
  ft_state *s = &ft->state[ft->n_state];
  if (strlen(name) >= sizeof s->name || !(s->data = rlx_calloc(len, sizeof(float)))) return NULL;
  snprintf(s->name, sizeof s->name, "%s", name);
  s->len = len;
  ft->n_state++;
  return s->data;
}

/* Binds every param of s: the model weights t stands on, the pairs, the
 * optimizer state. */
static rlx_status bind_all(rlx_llm_finetune *ft, rlx_session *s, const llm_train_graph *t) {
  const int32_t r = ft->opt.rank;
  for (int32_t i = 0; i < rlx_session_param_count(s); i++) {
    const char *name = rlx_session_param_name(s, i);
    const size_t len = rlx_session_param_len(s, i);
    void *data = NULL;
    size_t bytes = len * sizeof(float);
    for (int32_t k = 0; k < t->n_weights && !data; k++)
      if (!strcmp(t->weights[k]->name, name)) data = t->weights[k]->data, bytes = t->weights[k]->bytes;
    for (int32_t k = 0; k < ft->n_pairs && !data; k++) {
      const llm_train_pair *p = &ft->pairs[k];
      if (!strcmp(p->a_name, name)) data = p->a, bytes = (size_t)r * (size_t)p->n_in * sizeof(float);
      if (!strcmp(p->b_name, name)) data = p->b, bytes = (size_t)p->n_out * (size_t)r * sizeof(float);
    }
    if (!data && !(data = state_param(ft, name, len)))
      return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_finetune: out of memory for the optimizer state '%s'", name);
    rlx_status st = rlx_session_bind_param(s, name, data, bytes);
    if (st != RLX_OK) return st;
  }
  return RLX_OK;
}

rlx_status llm_finetune_compile(rlx_llm_finetune *ft, int kind, int32_t n, rlx_device device, rlx_session **out) {
  llm_lora_set set = {ft->pairs, ft->pair_at, ft->opt.rank, ft->opt.alpha / (float)ft->opt.rank};
  llm_train_graph t;
  rlx_status st = llm_train_graph_build(ft->m, &set, ft->n_pairs, n, ft->opt.seq, &t);
  if (st != RLX_OK) return st;
  rlx_compile_options copt = {device, 0, 0, ft->m->info.threads};
  rlx_session *s = NULL;
  if (kind == FT_TRAIN) {
    st = rlx_compile_train(t.g, t.loss, t.params, t.n_params, &ft->opt.optimizer, &copt, &s);
  } else if (kind == FT_EVAL) {
    rlx_node outs[2] = {t.loss, t.logits};
    st = rlx_compile(t.g, outs, 2, &copt, &s);
  } else if (kind == FT_LOSS) {
    st = rlx_compile(t.g, &t.loss, 1, &copt, &s);
  } else {
    rlx_node *outs = rlx_malloc(((size_t)t.n_params + 1) * sizeof *outs);
    st = outs ? rlx_grad_with_loss(t.g, t.loss, t.params, t.n_params, outs)
              : rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_finetune: out of memory");
    if (st == RLX_OK) st = rlx_compile(t.g, outs, t.n_params + 1, &copt, &s);
    const float one = 1.0f;
    if (st == RLX_OK) st = rlx_session_set_input(s, "d_output", &one, 1);
    rlx_free(outs, ((size_t)t.n_params + 1) * sizeof *outs);
  }
  if (st == RLX_OK) st = bind_all(ft, s, &t);
  llm_train_graph_free(&t);
  if (st != RLX_OK) {
    rlx_session_free(s);
    return st;
  }
  *out = s;
  return RLX_OK;
}

/* Session `kind` for n windows on the CPU (compiled when missing or made
 * for another count). */
static rlx_status session_for(rlx_llm_finetune *ft, int kind, int32_t n, rlx_session **out) {
  if (ft->sessions[kind] && ft->windows[kind] == n) {
    *out = ft->sessions[kind];
    return RLX_OK;
  }
  rlx_session_free(ft->sessions[kind]);
  ft->sessions[kind] = NULL;
  if (kind == FT_GRAD) ft->grad_ready = 0;
  rlx_status st = llm_finetune_compile(ft, kind, n, RLX_DEVICE_CPU, &ft->sessions[kind]);
  if (st != RLX_OK) return st;
  ft->windows[kind] = n;
  *out = ft->sessions[kind];
  return RLX_OK;
}

int32_t llm_finetune_seq(const rlx_llm_finetune *ft) { return ft->opt.seq; }

rlx_status llm_finetune_check_windows(const rlx_llm_finetune *ft, const char *fn, const int32_t *ids,
                                      const int32_t *targets, const float *mask, int32_t n_windows,
                                      int32_t *fed_targets, float *fed_mask) {
  if (!ft) return rlx_error(RLX_ERR_INVALID_ARG, "%s: the fine-tuning object is NULL", fn);
  if (!ids || !targets) return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s is NULL", fn, ids ? "targets" : "ids");
  const int32_t seq = ft->opt.seq, n_vocab = ft->m->info.n_vocab;
  if (n_windows < 1 || n_windows > INT32_MAX / seq)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: n_windows must lie in 1 .. %d, got %d", fn, (int)(INT32_MAX / seq),
                     (int)n_windows);
  const size_t n = (size_t)n_windows * (size_t)seq;
  for (size_t i = 0; i < n; i++) {
    const float w = mask ? mask[i] : 1.0f;
    if (!(w >= 0.0f) || isinf(w))
      return rlx_error(isnan(w) || isinf(w) ? RLX_ERR_NUMERIC : RLX_ERR_INVALID_ARG,
                       "%s: mask[%zu] = %g (weights are finite and >= 0)", fn, i, (double)w);
    if (ids[i] < 0 || ids[i] >= n_vocab)
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: ids[%zu] = %d is outside the vocabulary (0 .. %d)", fn, i,
                       (int)ids[i], (int)n_vocab - 1);
    if (w != 0.0f && (targets[i] < 0 || targets[i] >= n_vocab))
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: targets[%zu] = %d is outside the vocabulary (0 .. %d)", fn, i,
                       (int)targets[i], (int)n_vocab - 1);
    fed_targets[i] = w != 0.0f ? targets[i] : 0;
    fed_mask[i] = w;
  }
  return RLX_OK;
}

/* Checks the windows, feeds them to session `kind` and runs it. */
static rlx_status run(rlx_llm_finetune *ft, int kind, const char *fn, const int32_t *ids, const int32_t *targets,
                      const float *mask, int32_t n_windows, float *loss, rlx_session **ran) {
  if (!ft) return rlx_error(RLX_ERR_INVALID_ARG, "%s: the fine-tuning object is NULL", fn);
  const int32_t seq = ft->opt.seq;
  const size_t n = n_windows > 0 && n_windows <= INT32_MAX / seq ? (size_t)n_windows * (size_t)seq : 0;
  if (n > ft->cap_tokens) {
    int32_t *fed = rlx_malloc(n * TOKEN_BYTES);
    if (!fed) return rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory for %zu tokens", fn, n);
    rlx_free(ft->targets, ft->cap_tokens * TOKEN_BYTES);
    ft->targets = fed, ft->mask = (float *)(fed + n), ft->cap_tokens = n;
  }
  rlx_status st = llm_finetune_check_windows(ft, fn, ids, targets, mask, n_windows, ft->targets, ft->mask);
  if (st != RLX_OK) return st;
  rlx_session *s = NULL;
  st = session_for(ft, kind, n_windows, &s);
  if (st == RLX_OK) st = rlx_session_set_input_i32(s, "ids", ids, n);
  if (st == RLX_OK) st = rlx_session_set_input_i32(s, "targets", ft->targets, n);
  if (st == RLX_OK) st = rlx_session_set_input(s, "mask", ft->mask, n);
  if (st == RLX_OK) st = rlx_session_run(s);
  if (st != RLX_OK) return st;
  if (loss) *loss = rlx_session_output(s, 0)[0];
  *ran = s;
  return RLX_OK;
}

rlx_status rlx_llm_finetune_step(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask,
                                 int32_t n_windows, float *loss) {
  rlx_session *s;
  return run(ft, FT_TRAIN, "rlx_llm_finetune_step", ids, targets, mask, n_windows, loss, &s);
}

rlx_status rlx_llm_finetune_eval(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask,
                                 int32_t n_windows, float *loss, float *logits) {
  rlx_session *s;
  rlx_status st = run(ft, FT_EVAL, "rlx_llm_finetune_eval", ids, targets, mask, n_windows, loss, &s);
  if (st == RLX_OK && logits) memcpy(logits, rlx_session_output(s, 1), rlx_session_output_len(s, 1) * sizeof(float));
  return st;
}

rlx_status rlx_llm_finetune_grad(rlx_llm_finetune *ft, const int32_t *ids, const int32_t *targets, const float *mask,
                                 int32_t n_windows, float *loss) {
  rlx_session *s;
  if (ft) ft->grad_ready = 0;
  rlx_status st = run(ft, FT_GRAD, "rlx_llm_finetune_grad", ids, targets, mask, n_windows, loss, &s);
  if (st == RLX_OK) ft->grad_ready = 1;
  return st;
}

rlx_status rlx_llm_finetune_set_lr(rlx_llm_finetune *ft, float lr) {
  if (!ft) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_finetune_set_lr: the fine-tuning object is NULL");
  if (!(lr >= 0.0f) || isinf(lr))
    return rlx_error(isnan(lr) || isinf(lr) ? RLX_ERR_NUMERIC : RLX_ERR_INVALID_ARG,
                     "rlx_llm_finetune_set_lr: lr must be finite and >= 0 (got %g)", (double)lr);
  ft->opt.optimizer.lr = lr;
  return ft->sessions[FT_TRAIN] ? rlx_session_set_lr(ft->sessions[FT_TRAIN], lr) : RLX_OK;
}

/* ---- the pairs' values ------------------------------------------------------------ */
const rlx_llm *llm_finetune_model(const rlx_llm_finetune *ft) { return ft->m; }

int32_t rlx_llm_finetune_pair_count(const rlx_llm_finetune *ft) { return ft ? ft->n_pairs : 0; }

rlx_status rlx_llm_finetune_pair(const rlx_llm_finetune *ft, int32_t i, rlx_llm_finetune_pair_info *info) {
  if (!ft || !info)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_finetune_pair: %s is NULL", ft ? "info" : "the fine-tuning object");
  if (i < 0 || i >= ft->n_pairs)
    return rlx_error(RLX_ERR_NOT_FOUND, "rlx_llm_finetune_pair: pair %d does not exist (0 .. %d)", (int)i,
                     (int)ft->n_pairs - 1);
  const llm_train_pair *p = &ft->pairs[i];
  info->name = p->name;
  info->layer = p->layer;
  info->n_in = p->n_in, info->n_out = p->n_out, info->rank = ft->opt.rank;
  info->alpha = ft->opt.alpha, info->scale = ft->opt.alpha / (float)ft->opt.rank;
  return RLX_OK;
}

/* The pair called name, after checking the lengths of the A and B the
 * caller passes (a NULL one is skipped); *na, *nb: their sizes. */
static rlx_status pair_for(const rlx_llm_finetune *ft, const char *fn, const char *name, const void *a, size_t a_len,
                           const void *b, size_t b_len, const llm_train_pair **out, size_t *na, size_t *nb) {
  if (!ft || !name) return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s is NULL", fn, ft ? "name" : "the fine-tuning object");
  int32_t i = 0;
  while (i < ft->n_pairs && strcmp(ft->pairs[i].name, name)) i++;
  if (i == ft->n_pairs) return rlx_error(RLX_ERR_NOT_FOUND, "%s: no adapter pair on '%s'", fn, name);
  *out = &ft->pairs[i];
  *na = (size_t)ft->opt.rank * (size_t)ft->pairs[i].n_in, *nb = (size_t)ft->pairs[i].n_out * (size_t)ft->opt.rank;
  if (a && a_len != *na)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: A of '%s' holds %zu values, not %zu", fn, name, *na, a_len);
  if (b && b_len != *nb)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: B of '%s' holds %zu values, not %zu", fn, name, *nb, b_len);
  return RLX_OK;
}

rlx_status rlx_llm_finetune_get_pair(const rlx_llm_finetune *ft, const char *name, float *a, size_t a_len, float *b,
                                     size_t b_len) {
  const llm_train_pair *p;
  size_t na, nb;
  rlx_status st = pair_for(ft, "rlx_llm_finetune_get_pair", name, a, a_len, b, b_len, &p, &na, &nb);
  if (st != RLX_OK) return st;
  if (a) memcpy(a, p->a, na * sizeof(float));
  if (b) memcpy(b, p->b, nb * sizeof(float));
  return RLX_OK;
}

rlx_status rlx_llm_finetune_set_pair(rlx_llm_finetune *ft, const char *name, const float *a, size_t a_len,
                                     const float *b, size_t b_len) {
  const char *fn = "rlx_llm_finetune_set_pair";
  const llm_train_pair *p;
  size_t na, nb;
  rlx_status st = pair_for(ft, fn, name, a, a_len, b, b_len, &p, &na, &nb);
  if (st != RLX_OK) return st;
  for (size_t j = 0; a && j < na; j++)
    if (!isfinite(a[j])) return rlx_error(RLX_ERR_NUMERIC, "%s: A[%zu] of '%s' is not finite", fn, j, name);
  for (size_t j = 0; b && j < nb; j++)
    if (!isfinite(b[j])) return rlx_error(RLX_ERR_NUMERIC, "%s: B[%zu] of '%s' is not finite", fn, j, name);
  if (a) memcpy(p->a, a, na * sizeof(float));
  if (b) memcpy(p->b, b, nb * sizeof(float));
  return RLX_OK;
}

rlx_status rlx_llm_finetune_get_grad(const rlx_llm_finetune *ft, const char *name, float *da, size_t a_len, float *db,
                                     size_t b_len) {
  const char *fn = "rlx_llm_finetune_get_grad";
  const llm_train_pair *p;
  size_t na, nb;
  rlx_status st = pair_for(ft, fn, name, da, a_len, db, b_len, &p, &na, &nb);
  if (st != RLX_OK) return st;
  if (!ft->grad_ready) return rlx_error(RLX_ERR_STATE, "%s: no gradients yet (run rlx_llm_finetune_grad)", fn);
  const rlx_session *s = ft->sessions[FT_GRAD];
  const int32_t i = (int32_t)(p - ft->pairs);
  if (da) memcpy(da, rlx_session_output(s, 1 + 2 * i), na * sizeof(float));
  if (db) memcpy(db, rlx_session_output(s, 2 + 2 * i), nb * sizeof(float));
  return RLX_OK;
}
