/* llm_finetune_lora.c - fine-tuning objects and the adapters a model was
 * opened with (include/rlx_llm_train.h): rlx_llm_finetune_load_lora
 * copies one adapter into a fine-tuning object's pairs (to train on from
 * it; every pair, rank and alpha checked first, nothing copied on a
 * refusal), rlx_llm_finetune_from_lora folds every adapter into the pairs
 * of a new object (A stacked by rows, s B by columns) so that its
 * evaluations are the adapted model's.  Both read the adapters back with
 * rlx_llm_lora_get_pair.  rlx_llm_finetune_write_lora(_memory) write an
 * object's pairs as an adapter file (rlx_llm_lora_write(_memory)). */
#include <stdio.h>
#include <string.h>

#include "llm_train.h"

/* The index of adapter i's pair on name, or -1. */
static int32_t adapter_pair(const rlx_llm *m, int32_t i, const char *name, rlx_llm_lora_pair_info *info) {
  for (int32_t k = 0; k < rlx_llm_lora_pair_count(m, i); k++)
    if (rlx_llm_lora_get_pair(m, i, k, info, NULL, 0, NULL, 0) == RLX_OK && !strcmp(info->name, name)) return k;
  return -1;
}

/* Every pair of adapter i is one of ft's with its rank and alpha, and
 * every pair of ft is in the adapter. */
static rlx_status check_match(const rlx_llm_finetune *ft, const rlx_llm *m, int32_t i) {
  const char *fn = "rlx_llm_finetune_load_lora";
  rlx_llm_finetune_pair_info fp;
  rlx_llm_lora_pair_info ap;
  for (int32_t k = 0; k < rlx_llm_lora_pair_count(m, i); k++) {
    rlx_status st = rlx_llm_lora_get_pair(m, i, k, &ap, NULL, 0, NULL, 0);
    if (st != RLX_OK) return st;
    int32_t p = 0;
    while (p < rlx_llm_finetune_pair_count(ft) && rlx_llm_finetune_pair(ft, p, &fp) == RLX_OK &&
           strcmp(fp.name, ap.name))
      p++;
    if (p == rlx_llm_finetune_pair_count(ft))
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: adapter %d adapts '%s', which this fine-tuning does not target", fn,
                       (int)i, ap.name);
    if (ap.rank != fp.rank)
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: adapter %d has rank %d on '%s'; this fine-tuning has rank %d", fn,
                       (int)i, (int)ap.rank, ap.name, (int)fp.rank);
    const float alpha = ap.alpha != 0.0f ? ap.alpha : (float)ap.rank;
    if (alpha != fp.alpha)
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: adapter %d has alpha %g; this fine-tuning has alpha %g", fn, (int)i,
                       (double)alpha, (double)fp.alpha);
  }
  for (int32_t p = 0; p < rlx_llm_finetune_pair_count(ft); p++) {
    rlx_llm_finetune_pair(ft, p, &fp);
    if (adapter_pair(m, i, fp.name, &ap) < 0)
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: adapter %d has no pair on '%s', which this fine-tuning targets", fn,
                       (int)i, fp.name);
  }
  return RLX_OK;
}

/* A [rank, n_in] and B [n_out, rank] of a pair: one block for both. */
typedef struct {
  float *a, *b;
  size_t na, nb;
} pair_buf;

static rlx_status pair_buf_new(pair_buf *pb, int32_t rank, int32_t n_in, int32_t n_out, const char *fn) {
  pb->na = (size_t)rank * (size_t)n_in, pb->nb = (size_t)n_out * (size_t)rank;
  if (!(pb->a = rlx_calloc(pb->na + pb->nb, sizeof(float))))
    return rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory", fn);
  pb->b = pb->a + pb->na;
  return RLX_OK;
}

static void pair_buf_free(pair_buf *pb) { rlx_free(pb->a, (pb->na + pb->nb) * sizeof(float)); }

rlx_status rlx_llm_finetune_load_lora(rlx_llm_finetune *ft, int32_t i) {
  const char *fn = "rlx_llm_finetune_load_lora";
  if (!ft) return rlx_error(RLX_ERR_INVALID_ARG, "%s: the fine-tuning object is NULL", fn);
  const rlx_llm *m = llm_finetune_model(ft);
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  if (i < 0 || i >= in.n_lora)
    return rlx_error(RLX_ERR_NOT_FOUND, "%s: the model has no adapter %d (it was opened with %d)", fn, (int)i,
                     (int)in.n_lora);
  rlx_status st = check_match(ft, m, i);
  for (int32_t k = 0; st == RLX_OK && k < rlx_llm_lora_pair_count(m, i); k++) {
    rlx_llm_lora_pair_info ap;
    pair_buf pb = {NULL, NULL, 0, 0};
    if ((st = rlx_llm_lora_get_pair(m, i, k, &ap, NULL, 0, NULL, 0)) != RLX_OK ||
        (st = pair_buf_new(&pb, ap.rank, ap.n_in, ap.n_out, fn)) != RLX_OK)
      break;
    st = rlx_llm_lora_get_pair(m, i, k, &ap, pb.a, pb.na, pb.b, pb.nb);
    if (st == RLX_OK) st = rlx_llm_finetune_set_pair(ft, ap.name, pb.a, pb.na, pb.b, pb.nb);
    pair_buf_free(&pb);
  }
  return st;
}

/* ---- every adapter folded into one object ------------------------------------------ */
/* The largest rank of adapter i's pairs (0 without pairs); the targets it
 * adapts or'ed into *bits. */
static int32_t adapter_rank(const rlx_llm *m, int32_t i, uint32_t *bits) {
  int32_t r = 0;
  rlx_llm_lora_pair_info ap;
  for (int32_t k = 0; k < rlx_llm_lora_pair_count(m, i); k++)
    if (rlx_llm_lora_get_pair(m, i, k, &ap, NULL, 0, NULL, 0) == RLX_OK) {
      r = ap.rank > r ? ap.rank : r;
      *bits |= 1u << ap.target;
    }
  return r;
}

/* ft's pair p: each adapter's A in rows from its offset on, s B in the
 * same columns. */
static rlx_status fold_pair(rlx_llm_finetune *ft, const rlx_llm *m, int32_t n_lora, int32_t p) {
  const char *fn = "rlx_llm_finetune_from_lora";
  rlx_llm_finetune_pair_info fp;
  rlx_status st = rlx_llm_finetune_pair(ft, p, &fp);
  pair_buf all = {NULL, NULL, 0, 0}, one = {NULL, NULL, 0, 0};
  if (st != RLX_OK || (st = pair_buf_new(&all, fp.rank, fp.n_in, fp.n_out, fn)) != RLX_OK) return st;
  for (int32_t i = 0, offset = 0; st == RLX_OK && i < n_lora; i++) {
    uint32_t unused = 0;
    const int32_t r = adapter_rank(m, i, &unused);
    rlx_llm_lora_pair_info ap;
    const int32_t k = adapter_pair(m, i, fp.name, &ap);
    if (k >= 0 && (st = pair_buf_new(&one, ap.rank, ap.n_in, ap.n_out, fn)) == RLX_OK) {
      st = rlx_llm_lora_get_pair(m, i, k, &ap, one.a, one.na, one.b, one.nb);
      if (st == RLX_OK) memcpy(all.a + (size_t)offset * (size_t)fp.n_in, one.a, one.na * sizeof(float));
      for (int32_t o = 0; st == RLX_OK && o < fp.n_out; o++)
        for (int32_t j = 0; j < ap.rank; j++)
          all.b[(size_t)o * (size_t)fp.rank + (size_t)(offset + j)] =
              ap.scale * one.b[(size_t)o * (size_t)ap.rank + (size_t)j];
      pair_buf_free(&one);
    }
    offset += r;
  }
  if (st == RLX_OK) st = rlx_llm_finetune_set_pair(ft, fp.name, all.a, all.na, all.b, all.nb);
  pair_buf_free(&all);
  return st;
}

rlx_status rlx_llm_finetune_from_lora(const rlx_llm *m, int32_t seq, rlx_llm_finetune **out) {
  const char *fn = "rlx_llm_finetune_from_lora";
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "%s: out is NULL", fn);
  *out = NULL;
  if (!m) return rlx_error(RLX_ERR_INVALID_ARG, "%s: model is NULL", fn);
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  uint32_t bits = 0;
  int32_t rank = 0;
  for (int32_t i = 0; i < in.n_lora; i++) rank += adapter_rank(m, i, &bits);
  if (!rank) rank = 1, bits = 1u; /* the base model: B zero on attn_q */
  char targets[128] = "";
  for (int32_t t = 0; rlx_llm_lora_target(t); t++)
    if (bits >> t & 1)
      snprintf(targets + strlen(targets), sizeof targets - strlen(targets), "%s%s", targets[0] ? "," : "",
               rlx_llm_lora_target(t));
  rlx_llm_finetune_options o = rlx_llm_finetune_default_options();
  o.rank = rank, o.alpha = (float)rank, o.targets = targets, o.seq = seq;
  rlx_llm_finetune *ft;
  rlx_status st = rlx_llm_finetune_new(m, &o, &ft);
  if (st != RLX_OK) {
    char why[384];
    snprintf(why, sizeof why, "%s", rlx_last_error());
    return rlx_error(st, "%s: %d adapters of ranks adding up to %d: %s", fn, (int)in.n_lora, (int)rank, why);
  }
  for (int32_t p = 0; st == RLX_OK && p < rlx_llm_finetune_pair_count(ft); p++) st = fold_pair(ft, m, in.n_lora, p);
  if (st != RLX_OK) {
    rlx_llm_finetune_free(ft);
    return st;
  }
  *out = ft;
  return RLX_OK;
}

/* ---- writing the pairs ---------------------------------------------------------- */
/* ft's pairs as rlx_llm_lora_tensor rows (A and B of each in one block
 * copied out of ft), freed by free_tensors; alpha the pairs'. */
static void free_tensors(rlx_llm_lora_tensor *t, int32_t n) {
  for (int32_t p = 0; t && p < n; p++)
    if (t[p].a) rlx_free((void *)t[p].a, ((size_t)t[p].rank * (size_t)(t[p].n_in + t[p].n_out)) * sizeof(float));
  if (t) rlx_free(t, (size_t)(n ? n : 1) * sizeof *t);
}

static rlx_status pair_tensors(const rlx_llm_finetune *ft, const char *fn, rlx_llm_lora_tensor **out, int32_t *n_out,
                               float *alpha) {
  *out = NULL;
  if (!ft) return rlx_error(RLX_ERR_INVALID_ARG, "%s: ft is NULL", fn);
  const int32_t n = rlx_llm_finetune_pair_count(ft);
  rlx_llm_lora_tensor *t = rlx_calloc((size_t)(n ? n : 1), sizeof *t);
  if (!t) return rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory", fn);
  rlx_status st = RLX_OK;
  *alpha = 0.0f;
  for (int32_t p = 0; st == RLX_OK && p < n; p++) {
    rlx_llm_finetune_pair_info pi;
    if ((st = rlx_llm_finetune_pair(ft, p, &pi)) != RLX_OK) break;
    *alpha = pi.alpha;
    const size_t na = (size_t)pi.rank * (size_t)pi.n_in, nb = (size_t)pi.n_out * (size_t)pi.rank;
    float *ab = rlx_malloc((na + nb) * sizeof *ab);
    if (!ab) {
      st = rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory", fn);
      break;
    }
    t[p] = (rlx_llm_lora_tensor){pi.name, pi.rank, pi.n_in, pi.n_out, ab, ab + na};
    st = rlx_llm_finetune_get_pair(ft, pi.name, ab, na, ab + na, nb);
  }
  if (st != RLX_OK) return free_tensors(t, n), st;
  *out = t, *n_out = n;
  return RLX_OK;
}

rlx_status rlx_llm_finetune_write_lora(const rlx_llm_finetune *ft, const char *arch, const char *path) {
  rlx_llm_lora_tensor *t;
  int32_t n = 0;
  float alpha;
  rlx_status st = pair_tensors(ft, "rlx_llm_finetune_write_lora", &t, &n, &alpha);
  if (st != RLX_OK) return st;
  st = rlx_llm_lora_write(path, arch, alpha, RLX_GGUF_TYPE_F32, t, n);
  free_tensors(t, n);
  return st;
}

rlx_status rlx_llm_finetune_write_lora_memory(const rlx_llm_finetune *ft, const char *arch, void *buf, size_t cap,
                                              size_t *size) {
  rlx_llm_lora_tensor *t;
  int32_t n = 0;
  float alpha;
  rlx_status st = pair_tensors(ft, "rlx_llm_finetune_write_lora_memory", &t, &n, &alpha);
  if (st != RLX_OK) return st;
  st = rlx_llm_lora_write_memory(arch, alpha, RLX_GGUF_TYPE_F32, t, n, buf, cap, size);
  free_tensors(t, n);
  return st;
}
