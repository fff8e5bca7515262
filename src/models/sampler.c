/* sampler.c - the token sampler (sampler.h): penalties, top-k, top-p,
 * min-p, temperature and the draw, on a candidate list kept in the sampler
 * between calls so sampling allocates only when the vocab grows.  The
 * candidates' logits are doubles: a penalty or a temperature applied to
 * any finite float logit stays finite (no inf - inf = NaN in the draw). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_llm.h" /* RLX_LLM_MIN_TEMPERATURE */
#include "sampler.h"
#include "../core/core.h"

typedef struct {
  double logit;
  int32_t id;
} cand;

struct rlx_sampler {
  rlx_sampler_params p;
  uint64_t draws;
  cand *c;
  uint8_t *seen;
  size_t cap; /* entries of c and seen */
};

rlx_sampler_params rlx_sampler_default_params(void) {
  rlx_sampler_params p = {0.8f, 40, 0.95f, 0.05f, 1.0f, 64, 0};
  return p;
}

rlx_status rlx_sampler_new(const rlx_sampler_params *p, rlx_sampler **out) {
  if (out) *out = NULL;
  if (!p || !out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_new: null argument");
  if (!(p->temperature >= 0.0f) || isinf(p->temperature))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_new: temperature must be finite and >= 0 (is %g)",
                     (double)p->temperature);
  if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_new: top_p must be in [0, 1] (is %g)", (double)p->top_p);
  if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_new: min_p must be in [0, 1] (is %g)", (double)p->min_p);
  if (!(p->repeat_penalty > 0.0f) || isinf(p->repeat_penalty))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_new: repeat_penalty must be finite and > 0 (is %g)",
                     (double)p->repeat_penalty);
  if (p->repeat_last_n < -1)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_new: repeat_last_n must be >= -1 (is %d)", p->repeat_last_n);
  rlx_sampler *s = rlx_calloc(1, sizeof *s);
  if (!s) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_sampler_new: out of memory");
  s->p = *p;
  *out = s;
  return RLX_OK;
}

void rlx_sampler_free(rlx_sampler *s) {
  if (!s) return;
  rlx_free(s->c, s->cap * sizeof *s->c);
  rlx_free(s->seen, s->cap);
  rlx_free(s, sizeof *s);
}

void rlx_sampler_reset(rlx_sampler *s, uint64_t seed) {
  if (!s) return;
  s->p.seed = seed;
  s->draws = 0;
}

/* Higher logit first, lower id on ties. */
static int better(const cand *a, const cand *b) { return a->logit > b->logit || (a->logit == b->logit && a->id < b->id); }
static int cmp_cand(const void *x, const void *y) {
  const cand *a = x, *b = y;
  return better(a, b) ? -1 : better(b, a) ? 1 : 0;
}

/* The k best of c[0, n) sorted into c[0, k): a min-heap of the best so far. */
static void top_k(cand *c, size_t n, size_t k) {
  for (size_t i = 0; i < n; i++) {
    cand x = c[i];
    size_t j;
    if (i < k) { /* sift up into the heap c[0, i] (worst at the root) */
      for (j = i; j > 0 && better(&c[(j - 1) / 2], &x); j = (j - 1) / 2) c[j] = c[(j - 1) / 2];
      c[j] = x;
    } else if (better(&x, &c[0])) { /* replace the worst, sift down */
      for (j = 0;;) {
        size_t ch = 2 * j + 1;
        if (ch >= k) break;
        if (ch + 1 < k && better(&c[ch], &c[ch + 1])) ch++;
        if (!better(&x, &c[ch])) break;
        c[j] = c[ch];
        j = ch;
      }
      c[j] = x;
    }
  }
  qsort(c, k, sizeof *c, cmp_cand);
}

rlx_status rlx_sampler_sample(rlx_sampler *s, const float *logits, int32_t n_vocab, const int32_t *history,
                              size_t n_history, int32_t *id) {
  if (id) *id = -1;
  if (!s || !logits || !id || (!history && n_history))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_sample: null argument");
  if (n_vocab <= 0) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_sample: n_vocab must be > 0 (is %d)", n_vocab);
  size_t n = (size_t)n_vocab;
  int any = 0;
  for (size_t i = 0; i < n; i++) {
    if (isnan(logits[i]) || logits[i] == INFINITY)
      return rlx_error(RLX_ERR_NUMERIC, "rlx_sampler_sample: logits[%zu] is %s", i, isnan(logits[i]) ? "NaN" : "+inf");
    any |= logits[i] > -INFINITY;
  }
  if (!any) return rlx_error(RLX_ERR_NUMERIC, "rlx_sampler_sample: every logit is -inf");
  for (size_t i = 0; i < n_history; i++)
    if (history[i] < 0 || history[i] >= n_vocab)
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_sampler_sample: history[%zu] = %d outside the vocab (%d)", i,
                       history[i], n_vocab);
  if (n > s->cap) {
    cand *c = rlx_malloc(n * sizeof *c);
    uint8_t *seen = rlx_calloc(n, 1);
    if (!c || !seen) {
      rlx_free(c, n * sizeof *c);
      rlx_free(seen, n);
      return rlx_error(RLX_ERR_NO_MEMORY, "rlx_sampler_sample: out of memory for %zu candidates", n);
    }
    rlx_free(s->c, s->cap * sizeof *s->c);
    rlx_free(s->seen, s->cap);
    s->c = c;
    s->seen = seen;
    s->cap = n;
  }
  cand *c = s->c;
  for (size_t i = 0; i < n; i++) c[i] = (cand){logits[i], (int32_t)i};

  /* penalties: each distinct id of the window once */
  const rlx_sampler_params *p = &s->p;
  if (p->repeat_penalty != 1.0f && p->repeat_last_n != 0) {
    size_t w = p->repeat_last_n < 0 || (size_t)p->repeat_last_n > n_history ? n_history : (size_t)p->repeat_last_n;
    const int32_t *h = history + (n_history - w);
    for (size_t i = 0; i < w; i++) {
      cand *x = &c[h[i]];
      if (s->seen[h[i]]) continue;
      s->seen[h[i]] = 1;
      x->logit = x->logit <= 0.0 ? x->logit * p->repeat_penalty : x->logit / p->repeat_penalty;
    }
    for (size_t i = 0; i < w; i++) s->seen[h[i]] = 0;
  }

  if (p->temperature < RLX_LLM_MIN_TEMPERATURE) { /* greedy */
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
      if (c[i].logit > c[best].logit) best = i;
    *id = c[best].id;
    return RLX_OK;
  }

  size_t m = n;
  int sorted = 0;
  if (p->top_k > 0 && (size_t)p->top_k < m) {
    m = (size_t)p->top_k;
    top_k(c, n, m);
    sorted = 1;
  }
  if ((p->top_p < 1.0f || p->min_p > 0.0f) && !sorted) {
    qsort(c, m, sizeof *c, cmp_cand);
    sorted = 1;
  }
  if (p->top_p < 1.0f) { /* the smallest prefix whose probability reaches top_p */
    double mx = c[0].logit, sum = 0.0, cum = 0.0;
    for (size_t i = 0; i < m; i++) sum += exp(c[i].logit - mx);
    size_t keep = m;
    for (size_t i = 0; i < m; i++) {
      cum += exp(c[i].logit - mx) / sum;
      if (cum >= p->top_p) {
        keep = i + 1;
        break;
      }
    }
    m = keep;
  }
  if (p->min_p > 0.0f) { /* logit >= max + log(min_p) */
    double floor_logit = c[0].logit + log(p->min_p);
    size_t keep = 1;
    while (keep < m && c[keep].logit >= floor_logit) keep++;
    m = keep;
  }
  double mx = -INFINITY, sum = 0.0;
  for (size_t i = 0; i < m; i++)
    if (c[i].logit / p->temperature > mx) mx = c[i].logit / p->temperature;
  /* -inf logits (a grammar's mask) add exactly 0: skipped, not exp'd */
  for (size_t i = 0; i < m; i++)
    if (c[i].logit > -INFINITY) sum += exp(c[i].logit / p->temperature - mx);
  double u = (double)(rlx_hash64(p->seed, s->draws++) >> 11) * (1.0 / 9007199254740992.0) * sum, cum = 0.0;
  size_t pick = 0;
  for (size_t i = 0; i < m; i++) {
    if (c[i].logit == -INFINITY) continue;
    double e = exp(c[i].logit / p->temperature - mx);
    if (e <= 0.0) continue;
    pick = i;
    cum += e;
    if (u < cum) break;
  }
  *id = c[pick].id;
  return RLX_OK;
}
