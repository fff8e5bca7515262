/* llm_lora_merge.c - rlx_llm_lora_merge and rlx_llm_lora_merge_memory
 * (include/rlx_llm.h): LoRA adapters folded into a copy of their base
 * model, as llama.cpp's llama-export-lora does.  The base is opened with
 * the adapters (rlx_llm_open_*, one position of context), so every check
 * of llm_lora.c applies unchanged; then a GGUF writer gets the base's
 * metadata entries and tensors in their order, each adapted weight
 * replaced by W + sum_i s_i B_i A_i (f32 arithmetic, the delta's rows
 * summed in double) stored in the merge type, the others borrowed from
 * the base's bytes as they are.  Nothing here parses an adapter. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gguf_common.h"
#include "llm.h"

#define FN "rlx_llm_lora_merge"
#define F16_MAX 65504.0f

typedef struct {
  rlx_llm *m;
  rlx_gguf_writer *w;
  int64_t n_tensors;
  int32_t *proj;      /* [n_tensors]: layer * LLM_N_PROJ + product + 1 of an adapted weight, 0 for others */
  void **out;         /* [n_tensors]: the merged weights' bytes (NULL for others) */
  uint64_t *out_bytes;
  int32_t *out_type;  /* [n_tensors]: the merged weights' types */
} merge;

static rlx_gguf_type out_type(rlx_llm_merge_type type, rlx_gguf_type base) {
  switch (type) {
    case RLX_LLM_MERGE_F32: return RLX_GGUF_TYPE_F32;
    case RLX_LLM_MERGE_F16: return RLX_GGUF_TYPE_F16;
    case RLX_LLM_MERGE_SAME: return base;
    default: return base == RLX_GGUF_TYPE_F32 ? RLX_GGUF_TYPE_F32 : RLX_GGUF_TYPE_F16;
  }
}

static void merge_free(merge *g) {
  for (int64_t t = 0; g->out && t < g->n_tensors; t++)
    if (g->out[t]) rlx_free(g->out[t], (size_t)g->out_bytes[t]);
  const size_t n = (size_t)g->n_tensors;
  rlx_free(g->proj, n * sizeof *g->proj);
  rlx_free(g->out, n * sizeof *g->out);
  rlx_free(g->out_bytes, n * sizeof *g->out_bytes);
  rlx_free(g->out_type, n * sizeof *g->out_type);
  rlx_gguf_writer_free(g->w);
  rlx_llm_free(g->m);
}

/* Which tensors are adapted (by any adapter), their types; *to_f16: some
 * weight becomes f16 that was not. */
static rlx_status find_adapted(merge *g, rlx_llm_merge_type type, int *to_f16) {
  const rlx_llm *m = g->m;
  for (int32_t l = 0; l < m->info.n_layer; l++)
    for (int p = 0; p < LLM_N_PROJ; p++) {
      int any = 0;
      for (int32_t i = 0; i < m->info.n_lora; i++) any |= rlx_llm_lora_pair(m, i, l, p) != NULL;
      if (!any) continue;
      char name[64];
      snprintf(name, sizeof name, "blk.%d.%s.weight", (int)l, rlx_llm_lora_target(p));
      const int64_t t = rlx_gguf_find_tensor(m->gguf, name);
      rlx_gguf_tensor_info ti;
      rlx_status st = rlx_gguf_tensor(m->gguf, t, &ti); /* the model has it: the adapter was checked against it */
      if (st != RLX_OK) return st;
      g->proj[t] = l * LLM_N_PROJ + p + 1;
      g->out_type[t] = (int32_t)out_type(type, ti.type);
      *to_f16 |= g->out_type[t] == RLX_GGUF_TYPE_F16 && ti.type != RLX_GGUF_TYPE_F16;
    }
  return RLX_OK;
}

/* The base's metadata, then its tensors (merged ones in buffers of their
 * own, still to be filled). */
static rlx_status lay_out(merge *g, int to_f16) {
  const rlx_gguf *f = g->m->gguf;
  rlx_status st = RLX_OK;
  for (int64_t i = 0; st == RLX_OK && i < rlx_gguf_kv_count(f); i++) {
    const char *key;
    rlx_gguf_kv(f, i, &key, NULL);
    const uint32_t mostly_f16 = 1;
    st = to_f16 && strcmp(key, "general.file_type") == 0
             ? rlx_gguf_writer_add(g->w, key, RLX_GGUF_VAL_U32, &mostly_f16)
             : rlx_gguf_writer_add_kv(g->w, f, i);
  }
  for (int64_t t = 0; st == RLX_OK && t < g->n_tensors; t++) {
    rlx_gguf_tensor_info ti;
    if ((st = rlx_gguf_tensor(f, t, &ti)) != RLX_OK) break;
    const void *data = ti.data;
    uint64_t bytes = ti.bytes;
    rlx_gguf_type type = ti.type;
    if (g->proj[t]) {
      type = (rlx_gguf_type)g->out_type[t];
      if ((st = rlx_gguf_row_bytes(type, ti.n_elements, &bytes)) != RLX_OK) break;
      if (!(g->out[t] = rlx_malloc((size_t)bytes))) {
        st = rlx_error(RLX_ERR_NO_MEMORY, FN ": out of memory for '%s' (%llu bytes)", ti.name, (unsigned long long)bytes);
        break;
      }
      g->out_bytes[t] = bytes;
      data = g->out[t];
    }
    st = rlx_gguf_writer_add_tensor(g->w, ti.name, type, ti.n_dims, ti.dims, data, bytes);
  }
  return st;
}

/* w[n_out, n_in] += s * b[n_out, r] a[r, n_in]. */
static rlx_status add_pair(const llm_lora_pair *pr, float *w, double *row) {
  const int32_t r = pr->a.rows, n_in = pr->a.cols, n_out = pr->b.rows;
  float *a = rlx_malloc((size_t)r * (size_t)n_in * sizeof *a), *b = rlx_malloc((size_t)n_out * (size_t)r * sizeof *b);
  rlx_status st = a && b ? RLX_OK : rlx_error(RLX_ERR_NO_MEMORY, FN ": out of memory");
  if (st == RLX_OK) st = rlx_gguf_dequantize((rlx_gguf_type)pr->a.qtype, pr->a.data, pr->a.bytes, a, (int64_t)r * n_in);
  if (st == RLX_OK) st = rlx_gguf_dequantize((rlx_gguf_type)pr->b.qtype, pr->b.data, pr->b.bytes, b, (int64_t)n_out * r);
  for (int32_t o = 0; st == RLX_OK && o < n_out; o++) {
    memset(row, 0, (size_t)n_in * sizeof *row);
    for (int32_t k = 0; k < r; k++) {
      const double c = b[(size_t)o * (size_t)r + (size_t)k];
      const float *ak = a + (size_t)k * (size_t)n_in;
      if (c != 0.0)
        for (int32_t j = 0; j < n_in; j++) row[j] += c * ak[j];
    }
    float *wo = w + (size_t)o * (size_t)n_in;
    for (int32_t j = 0; j < n_in; j++) wo[j] = (float)((double)wo[j] + (double)pr->scale * row[j]);
  }
  if (a) rlx_free(a, (size_t)r * (size_t)n_in * sizeof *a);
  if (b) rlx_free(b, (size_t)n_out * (size_t)r * sizeof *b);
  return st;
}

/* Tensor t: the base weight in f32, every adapter's term added (a scale of
 * 0 adds nothing, so an f32 weight keeps its bits), stored in its type. */
static rlx_status merge_tensor(merge *g, int64_t t) {
  const rlx_llm *m = g->m;
  rlx_gguf_tensor_info ti;
  rlx_status st = rlx_gguf_tensor(m->gguf, t, &ti);
  if (st != RLX_OK) return st;
  const int32_t l = (g->proj[t] - 1) / LLM_N_PROJ, p = (g->proj[t] - 1) % LLM_N_PROJ;
  const rlx_gguf_type type = (rlx_gguf_type)g->out_type[t];
  const size_t n = (size_t)ti.n_elements, n_in = (size_t)ti.dims[0];
  float *w = type == RLX_GGUF_TYPE_F32 ? g->out[t] : rlx_malloc(n * sizeof *w);
  double *row = rlx_malloc(n_in * sizeof *row);
  if (!w || !row) st = rlx_error(RLX_ERR_NO_MEMORY, FN ": out of memory for '%s'", ti.name);
  if (st == RLX_OK) st = rlx_gguf_dequantize(ti.type, ti.data, (size_t)ti.bytes, w, ti.n_elements);
  for (int32_t i = 0; st == RLX_OK && i < m->info.n_lora; i++) {
    const llm_lora_pair *pr = rlx_llm_lora_pair(m, i, l, p);
    if (pr && pr->scale != 0.0f) st = add_pair(pr, w, row);
  }
  for (size_t k = 0; st == RLX_OK && k < n; k++)
    if (!isfinite(w[k]) || (type == RLX_GGUF_TYPE_F16 && fabsf(w[k]) > F16_MAX))
      st = rlx_error(RLX_ERR_NUMERIC, FN ": '%s' merged holds %g at %zu, %s (adapters too large?)", ti.name, w[k], k,
                     isfinite(w[k]) ? "past f16's range" : "not a finite number");
  if (st == RLX_OK && type != RLX_GGUF_TYPE_F32 &&
      (st = rlx_gguf_quantize(type, w, ti.n_elements, g->out[t], (size_t)g->out_bytes[t])) != RLX_OK) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s", rlx_last_error());
    st = rlx_error(st, FN ": '%s' merged as %s: %s", ti.name, rlx_gguf_type_name(type), msg);
  }
  if (w && type != RLX_GGUF_TYPE_F32) rlx_free(w, n * sizeof *w);
  if (row) rlx_free(row, n_in * sizeof *row);
  return st;
}

static rlx_status check_args(const rlx_llm_lora *adapters, int32_t n, rlx_llm_merge_type type) {
  if (n < 1 || !adapters)
    return rlx_error(RLX_ERR_INVALID_ARG, FN ": %d adapters at %p (at least one is needed)", (int)n,
                     (const void *)adapters);
  if ((int)type < RLX_LLM_MERGE_AUTO || (int)type > RLX_LLM_MERGE_SAME)
    return rlx_error(RLX_ERR_INVALID_ARG, FN ": type %d is not an rlx_llm_merge_type", (int)type);
  return RLX_OK;
}

/* Opens the base with the adapters (path, or data[0, size)) and lays the
 * merged file out; *total: its bytes. */
static rlx_status prepare(merge *g, const char *path, const void *data, size_t size, const rlx_llm_lora *adapters,
                          int32_t n, rlx_llm_merge_type type, uint64_t *total) {
  const rlx_llm_options opt = {.n_ctx = 1, .lora = adapters, .n_lora = n};
  rlx_status st = path ? rlx_llm_open_file(path, &opt, &g->m) : rlx_llm_open_memory(data, size, &opt, &g->m);
  if (st != RLX_OK) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", rlx_last_error());
    return rlx_error(st, FN ": %s", msg);
  }
  g->n_tensors = rlx_gguf_tensor_count(g->m->gguf);
  const size_t nt = (size_t)g->n_tensors;
  g->proj = rlx_calloc(nt ? nt : 1, sizeof *g->proj);
  g->out = rlx_calloc(nt ? nt : 1, sizeof *g->out);
  g->out_bytes = rlx_calloc(nt ? nt : 1, sizeof *g->out_bytes);
  g->out_type = rlx_calloc(nt ? nt : 1, sizeof *g->out_type);
  if (!g->proj || !g->out || !g->out_bytes || !g->out_type) return rlx_error(RLX_ERR_NO_MEMORY, FN ": out of memory");
  int to_f16 = 0;
  if ((st = find_adapted(g, type, &to_f16)) != RLX_OK || (st = rlx_gguf_writer_new(&g->w)) != RLX_OK ||
      (st = lay_out(g, to_f16)) != RLX_OK)
    return st;
  return rlx_gguf_writer_size(g->w, total);
}

static rlx_status merge_all(merge *g) {
  rlx_status st = RLX_OK;
  for (int64_t t = 0; st == RLX_OK && t < g->n_tensors; t++)
    if (g->proj[t]) st = merge_tensor(g, t);
  return st;
}

rlx_status rlx_llm_lora_merge(const char *base_path, const rlx_llm_lora *adapters, int32_t n, const char *out_path,
                              rlx_llm_merge_type type) {
  if (!base_path || !out_path)
    return rlx_error(RLX_ERR_INVALID_ARG, FN ": %s is NULL", base_path ? "out_path" : "base_path");
  rlx_status st = check_args(adapters, n, type);
  if (st != RLX_OK) return st;
  merge g = {0};
  uint64_t total;
  if ((st = prepare(&g, base_path, NULL, 0, adapters, n, type, &total)) == RLX_OK && (st = merge_all(&g)) == RLX_OK)
    st = rlx_gguf_write_file_whole(g.w, out_path, FN);
  merge_free(&g);
  return st;
}

rlx_status rlx_llm_lora_merge_memory(const void *base, size_t base_size, const rlx_llm_lora *adapters, int32_t n,
                                     rlx_llm_merge_type type, void *out, size_t cap, size_t *size) {
  const char *fn = FN "_memory";
  if (!base || !size) return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s is NULL", fn, base ? "size" : "base");
  *size = 0;
  if (!out && cap) return rlx_error(RLX_ERR_INVALID_ARG, "%s: out is NULL with cap %zu", fn, cap);
  rlx_status st = check_args(adapters, n, type);
  if (st != RLX_OK) return st;
  merge g = {0};
  uint64_t total = 0;
  if ((st = prepare(&g, NULL, base, base_size, adapters, n, type, &total)) == RLX_OK) {
    if (total > SIZE_MAX) st = rlx_error(RLX_ERR_NO_MEMORY, "%s: the merged file (%llu bytes) does not fit in memory",
                                         fn, (unsigned long long)total);
    else if ((*size = (size_t)total) > cap)
      st = rlx_error(RLX_ERR_INVALID_ARG, "%s: the merged file has %zu bytes, out has %zu", fn, *size, cap);
    else if ((st = merge_all(&g)) == RLX_OK)
      st = rlx_gguf_writer_write_memory(g.w, out, cap);
    if (st != RLX_OK && *size <= cap) *size = 0;
  }
  merge_free(&g);
  return st;
}
