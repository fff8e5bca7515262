/* llm_lora.c - LoRA adapters at generation (rlx_llm_lora in
 * include/rlx_llm.h): each adapter file is parsed with the GGUF reader and
 * checked as llama.cpp checks it (general.type "adapter", adapter.type
 * "lora", the base's architecture, tensors in pairs "<weight>.lora_a" with
 * dims [n_in, r] and "<weight>.lora_b" with dims [r, n_out] whose weight
 * the model has, "*_norm.weight" tensors skipped); the pairs' data stays in
 * the file's buffer (read once, or the caller's) and llm_graph.c adds
 * their products.  Refusals name the adapter and what is wrong.  The
 * pairs can be read back as f32 (rlx_llm_lora_get_pair). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "llm.h"

static const char *const TARGETS[LLM_N_PROJ] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up",
                                                "ffn_down"};

const char *rlx_llm_lora_target(int32_t i) { return i >= 0 && i < LLM_N_PROJ ? TARGETS[i] : NULL; }

int32_t rlx_llm_lora_target_find(const char *name, size_t len) {
  for (int32_t i = 0; i < LLM_N_PROJ; i++)
    if (strlen(TARGETS[i]) == len && memcmp(name, TARGETS[i], len) == 0) return i;
  return -1;
}

const llm_weight *rlx_llm_proj_weight(const llm_layer *L, int p) {
  const llm_weight *w[LLM_N_PROJ] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->gate, &L->up, &L->down};
  return w[p];
}

static const llm_weight *base_weight(const rlx_llm *m, int32_t l, int p) { return rlx_llm_proj_weight(&m->layers[l], p); }

/* "rlx_llm_open: LoRA adapter i (what): <message>". */
static rlx_status lfail(const char *what, int32_t i, rlx_status code, const char *fmt, ...) {
  char msg[384];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return rlx_error(code, "rlx_llm_open: LoRA adapter %d (%s): %s", (int)i, what, msg);
}

static int ends_with(const char *s, size_t len, const char *suffix) {
  const size_t n = strlen(suffix);
  return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* "blk.<l>.<target>.weight" -> l, p; 0 when base is no such name. */
static int parse_target(const rlx_llm *m, const char *base, int32_t *l, int *p) {
  if (strncmp(base, "blk.", 4) != 0 || base[4] < '0' || base[4] > '9') return 0;
  const char *end = base + 4;
  int64_t layer = 0;
  while (*end >= '0' && *end <= '9' && layer < INT32_MAX) layer = layer * 10 + (*end++ - '0');
  if (*end != '.' || layer >= m->info.n_layer) return 0;
  for (int k = 0; k < LLM_N_PROJ; k++) {
    const size_t n = strlen(TARGETS[k]);
    if (strncmp(end + 1, TARGETS[k], n) == 0 && strcmp(end + 1 + n, ".weight") == 0) {
      *l = (int32_t)layer;
      *p = k;
      return 1;
    }
  }
  return 0;
}

static rlx_status check_string(const rlx_gguf *g, const char *what, int32_t i, const char *key, const char *want) {
  const char *s;
  uint64_t len;
  if (rlx_gguf_get_string(g, key, &s, &len) != RLX_OK)
    return lfail(what, i, RLX_ERR_INVALID_ARG, "the file has no '%s' string (want '%s': not a LoRA adapter)", key,
                 want);
  if (len != strlen(want) || memcmp(s, want, len) != 0)
    return lfail(what, i, RLX_ERR_INVALID_ARG, "'%s' is '%.40s'; a LoRA adapter for this model has '%s'", key, s,
                 want);
  return RLX_OK;
}

/* One tensor of the file: its half of a pair, or skipped (a norm). */
static rlx_status add_tensor(rlx_llm *m, const rlx_gguf_tensor_info *t, const unsigned char *buf, size_t size,
                             const char *what, int32_t i, llm_lora_pair *pairs) {
  const size_t len = strlen(t->name);
  const int is_a = ends_with(t->name, len, ".lora_a"), is_b = ends_with(t->name, len, ".lora_b");
  if (!is_a && !is_b) {
    if (ends_with(t->name, len, "_norm.weight")) return RLX_OK; /* llama.cpp skips these too */
    return lfail(what, i, RLX_ERR_INVALID_ARG, "tensor '%s' is neither a '.lora_a' nor a '.lora_b' half", t->name);
  }
  char base[RLX_GGUF_MAX_NAME + 1];
  snprintf(base, sizeof base, "%.*s", (int)(len - 7), t->name);
  int32_t l;
  int p;
  if (!parse_target(m, base, &l, &p)) {
    if (rlx_gguf_find_tensor(m->gguf, base) >= 0) {
      char list[128] = "";
      for (int k = 0; k < LLM_N_PROJ; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? ", " : "", TARGETS[k]);
      return lfail(what, i, RLX_ERR_UNSUPPORTED, "adapts '%s'; LoRA applies to the layers' weights %s only", base,
                   list);
    }
    return lfail(what, i, RLX_ERR_INVALID_ARG, "adapts '%s', which the model does not have (an adapter for another "
                 "model?)", base);
  }
  if (t->type != RLX_GGUF_TYPE_F32 && t->type != RLX_GGUF_TYPE_F16) {
    const char *tn = rlx_gguf_type_name(t->type);
    return lfail(what, i, RLX_ERR_UNSUPPORTED, "tensor '%s' is %s; LoRA tensors must be f32 or f16", t->name,
                 tn ? tn : "of an unknown type");
  }
  if (t->n_dims != 2 || t->dims[0] < 1 || t->dims[1] < 1 || t->dims[0] > INT32_MAX || t->dims[1] > INT32_MAX)
    return lfail(what, i, RLX_ERR_SHAPE, "tensor '%s' is not a matrix", t->name);
  llm_weight *w = is_a ? &pairs[l * LLM_N_PROJ + p].a : &pairs[l * LLM_N_PROJ + p].b;
  snprintf(w->name, sizeof w->name, "lora.%d.%s", (int)i, t->name);
  w->matrix = 1;
  w->cols = (int32_t)t->dims[0];
  w->rows = (int32_t)t->dims[1];
  return rlx_llm_matrix_data(m, t, buf, size, w);
}

/* Every pair whole and shaped for its weight; the scales. */
static rlx_status check_pairs(rlx_llm *m, const char *what, int32_t i, float scale, float alpha, llm_lora_pair *pairs) {
  rlx_llm_info *in = &m->info;
  for (int32_t l = 0; l < in->n_layer; l++)
    for (int p = 0; p < LLM_N_PROJ; p++) {
      llm_lora_pair *pr = &pairs[l * LLM_N_PROJ + p];
      if (pr->a.qtype < 0 && pr->b.qtype < 0) continue;
      char base[64];
      snprintf(base, sizeof base, "blk.%d.%s.weight", (int)l, TARGETS[p]);
      if (pr->a.qtype < 0 || pr->b.qtype < 0)
        return lfail(what, i, RLX_ERR_INVALID_ARG, "'%s.%s' is missing (its other half is there)", base,
                     pr->a.qtype < 0 ? "lora_a" : "lora_b");
      const llm_weight *w = base_weight(m, l, p);
      if (pr->a.cols != w->cols || pr->b.rows != w->rows || pr->a.rows != pr->b.cols)
        return lfail(what, i, RLX_ERR_SHAPE, "'%s' has lora_a dims [%d, %d] and lora_b dims [%d, %d]; the weight "
                     "(dims [%d, %d]) needs [%d, r] and [r, %d]", base, (int)pr->a.cols, (int)pr->a.rows,
                     (int)pr->b.cols, (int)pr->b.rows, (int)w->cols, (int)w->rows, (int)w->cols, (int)w->rows);
      pr->scale = alpha != 0.0f ? scale * alpha / (float)pr->a.rows : scale;
      in->n_lora_pairs++;
      in->lora_bytes += pr->a.bytes + pr->b.bytes;
    }
  return RLX_OK;
}

static rlx_status open_adapter(rlx_llm *m, const rlx_llm_lora *src, int32_t i, uint64_t budget) {
  llm_adapter *ad = &m->lora[i];
  const char *what = src->path ? src->path : "in memory";
  if (!isfinite(src->scale)) return lfail(what, i, RLX_ERR_INVALID_ARG, "scale %g is not a finite number", src->scale);
  const unsigned char *buf = src->data;
  size_t size = src->size;
  rlx_status st;
  if (src->path) {
#if defined(__wasm__) /* the web modules read no files (and leave the file code out): JS passes the bytes */
    return lfail(what, i, RLX_ERR_UNSUPPORTED, "no files here: give the adapter's bytes (data, size)");
#else
    if ((st = rlx_llm_read_gguf("rlx_llm_open", src->path, budget, &ad->owned, &ad->size)) != RLX_OK)
      return lfail(what, i, st, "%s", rlx_last_error());
    buf = ad->owned, size = ad->size;
#endif
  } else if (!buf || !size) {
    return lfail(what, i, RLX_ERR_INVALID_ARG, "neither a path nor data");
  }
  const size_t n_pairs = (size_t)m->info.n_layer * LLM_N_PROJ;
  if (!(ad->pairs = rlx_calloc(n_pairs, sizeof *ad->pairs))) return lfail(what, i, RLX_ERR_NO_MEMORY, "out of memory");
  for (size_t k = 0; k < n_pairs; k++) ad->pairs[k].a.qtype = ad->pairs[k].b.qtype = -1;
  rlx_gguf *g;
  if ((st = rlx_gguf_open_memory(buf, size, budget, &g)) != RLX_OK) return lfail(what, i, st, "%s", rlx_last_error());
  float alpha = 0.0f;
  rlx_gguf_value v;
  if ((st = check_string(g, what, i, "general.type", "adapter")) == RLX_OK &&
      (st = check_string(g, what, i, "adapter.type", "lora")) == RLX_OK &&
      (st = check_string(g, what, i, "general.architecture", m->arch_name)) == RLX_OK &&
      rlx_gguf_get(g, "adapter.lora.alpha", &v) == RLX_OK) {
    if (v.type != RLX_GGUF_VAL_F32) /* llama.cpp reads it as one */
      st = lfail(what, i, RLX_ERR_INVALID_ARG, "adapter.lora.alpha is a %s; it must be a float32",
                 rlx_gguf_vtype_name(v.type));
    else if (!isfinite(v.f64))
      st = lfail(what, i, RLX_ERR_INVALID_ARG, "adapter.lora.alpha is %g", v.f64);
    alpha = (float)v.f64;
  }
  for (int64_t t = 0; st == RLX_OK && t < rlx_gguf_tensor_count(g); t++) {
    rlx_gguf_tensor_info ti;
    if ((st = rlx_gguf_tensor(g, t, &ti)) == RLX_OK) st = add_tensor(m, &ti, buf, size, what, i, ad->pairs);
  }
  rlx_gguf_free(g);
  ad->alpha = alpha;
  return st != RLX_OK ? st : check_pairs(m, what, i, src->scale, alpha, ad->pairs);
}

rlx_status rlx_llm_lora_open(rlx_llm *m, const rlx_llm_options *opt, uint64_t budget) {
  if (!opt || (!opt->lora && !opt->n_lora)) return RLX_OK;
  if (opt->n_lora < 0 || !opt->lora)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_open: %d LoRA adapters at %p", (int)opt->n_lora,
                     (const void *)opt->lora);
  if (!opt->n_lora) return RLX_OK;
  if (!(m->lora = rlx_calloc((size_t)opt->n_lora, sizeof *m->lora)))
    return rlx_error(RLX_ERR_NO_MEMORY, "rlx_llm_open: out of memory");
  m->info.n_lora = opt->n_lora;
  for (int32_t i = 0; i < opt->n_lora; i++) {
    rlx_status st = open_adapter(m, &opt->lora[i], i, budget);
    if (st != RLX_OK) return st;
  }
  return RLX_OK;
}

void rlx_llm_lora_free(rlx_llm *m) {
  if (!m->lora) return;
  for (int32_t i = 0; i < m->info.n_lora; i++) {
    llm_adapter *ad = &m->lora[i];
    if (ad->owned) rlx_free(ad->owned, ad->size);
    rlx_free(ad->pairs, (size_t)m->info.n_layer * LLM_N_PROJ * sizeof *ad->pairs);
  }
  rlx_free(m->lora, (size_t)m->info.n_lora * sizeof *m->lora);
  m->lora = NULL;
}

const llm_lora_pair *rlx_llm_lora_pair(const rlx_llm *m, int32_t i, int32_t l, int p) {
  const llm_lora_pair *pr = &m->lora[i].pairs[l * LLM_N_PROJ + p];
  return pr->a.qtype >= 0 ? pr : NULL;
}

int32_t rlx_llm_lora_pair_count(const rlx_llm *m, int32_t i) {
  if (!m || i < 0 || i >= m->info.n_lora) return 0;
  int32_t n = 0;
  for (int32_t k = 0; k < m->info.n_layer * LLM_N_PROJ; k++) n += m->lora[i].pairs[k].a.qtype >= 0;
  return n;
}

/* One half as f32: n values of w (F32 or F16). */
static rlx_status half_f32(const llm_weight *w, float *dst, size_t len, const char *what, const char *name) {
  const size_t n = (size_t)w->rows * (size_t)w->cols;
  if (len != n)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_llm_lora_get_pair: %s of '%s' holds %zu values, not %zu", what, name, n,
                     len);
  return rlx_gguf_dequantize((rlx_gguf_type)w->qtype, w->data, w->bytes, dst, (int64_t)n);
}

rlx_status rlx_llm_lora_get_pair(const rlx_llm *m, int32_t i, int32_t k, rlx_llm_lora_pair_info *info, float *a,
                                 size_t a_len, float *b, size_t b_len) {
  const char *fn = "rlx_llm_lora_get_pair";
  if (!m || !info) return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s is NULL", fn, m ? "info" : "model");
  if (i < 0 || i >= m->info.n_lora)
    return rlx_error(RLX_ERR_NOT_FOUND, "%s: no adapter %d (the model has %d)", fn, (int)i, (int)m->info.n_lora);
  const llm_adapter *ad = &m->lora[i];
  for (int32_t s = 0, seen = 0; s < m->info.n_layer * LLM_N_PROJ; s++) {
    const llm_lora_pair *pr = &ad->pairs[s];
    if (pr->a.qtype < 0 || seen++ != k) continue;
    memset(info, 0, sizeof *info);
    info->layer = s / LLM_N_PROJ, info->target = s % LLM_N_PROJ;
    snprintf(info->name, sizeof info->name, "blk.%d.%s.weight", (int)info->layer, TARGETS[info->target]);
    info->rank = pr->a.rows, info->n_in = pr->a.cols, info->n_out = pr->b.rows;
    info->alpha = ad->alpha, info->scale = pr->scale;
    rlx_status st = a ? half_f32(&pr->a, a, a_len, "A", info->name) : RLX_OK;
    return st == RLX_OK && b ? half_f32(&pr->b, b, b_len, "B", info->name) : st;
  }
  return rlx_error(RLX_ERR_NOT_FOUND, "%s: adapter %d has no pair %d (it has %d)", fn, (int)i, (int)k,
                   (int)rlx_llm_lora_pair_count(m, i));
}
