/* test_llm_finetune.c - LoRA fine-tuning of the build/lm fixtures
 * (include/rlx_llm_train.h; make lm-fixtures): with B = 0 the training
 * graph's logits and loss are the inference step's (every arch, f32 and
 * q8_0, the tied output); the gradients of every A and B against central
 * differences of the loss; a batch of windows is the weighted sum of its
 * windows; an SGD step moves A by -lr dA; a short AdamW run learns a
 * sentence (teacher-forced argmax = the targets, and greedy generation of
 * the f32 model with the adapter merged into its weights continues the
 * sentence word for word); the refusals; allocation failures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlx_models.h"

#include "assert_text.h"
#include "check_alloc.h"

static const char *const MODELS[] = {"build/lm/llama-f32.gguf", "build/lm/llama-q8_0.gguf",
                                     "build/lm/qwen2-f32.gguf", "build/lm/qwen2-q8_0.gguf",
                                     "build/lm/qwen3-f32.gguf", "build/lm/qwen3-q8_0.gguf"};
#define N_MODELS (sizeof MODELS / sizeof MODELS[0])

/* The model at path (a 64-token cache), its info and the default
 * fine-tuning options (in and o may be NULL). */
static rlx_llm *open_or_fail(const char *path, rlx_llm_info *in, rlx_llm_finetune_options *o) {
  rlx_llm_options opt = {.n_ctx = 64};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  if (in) rlx_llm_get_info(m, in);
  if (o) *o = rlx_llm_finetune_default_options();
  return m;
}

static rlx_llm_finetune *new_or_fail(const rlx_llm *m, const rlx_llm_finetune_options *o) {
  rlx_llm_finetune *ft = NULL;
  if (rlx_llm_finetune_new(m, o, &ft) != RLX_OK) fail_msg("rlx_llm_finetune_new: %s", rlx_last_error());
  return ft;
}

static uint64_t mix(uint64_t z) {
  z = (z + 0x9E3779B97F4A7C15ull) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
/* In [-1, 1). */
static double unit(uint64_t seed, uint64_t i) { return (double)(mix(seed ^ mix(i)) >> 11) / 4503599627370496.0 - 1.0; }

static void random_ids(int32_t *ids, size_t n, int32_t n_vocab, uint64_t seed) {
  for (size_t i = 0; i < n; i++) ids[i] = (int32_t)((unit(seed, i) + 1.0) * 0.5 * n_vocab) % n_vocab;
}

/* ---- (3) B = 0: the base model ---------------------------------------------------- */
/* The training graph's logits of every position of two windows, and its
 * loss, against the inference step (attention over the KV cache) run token
 * by token over each window: equal up to float rounding (the logits, of
 * magnitude up to about 60, are sums of products in another order). */
static void base_equivalence(const char *path, const char *targets) {
  rlx_llm_info in;
  rlx_llm_finetune_options o;
  rlx_llm *m = open_or_fail(path, &in, &o);
  o.seq = 8, o.targets = targets, o.seed = 5;
  rlx_llm_finetune *ft = new_or_fail(m, &o);
  enum { W = 2, S = 8 };
  int32_t ids[W * S], tg[W * S];
  random_ids(ids, W * S, in.n_vocab, 11);
  random_ids(tg, W * S, in.n_vocab, 12);
  float mask[W * S];
  for (int i = 0; i < W * S; i++) mask[i] = (float)(i % 3); /* weights 0, 1 and 2 */
  const size_t V = (size_t)in.n_vocab;
  float *logits = malloc(W * S * V * sizeof(float)), *step = malloc(V * sizeof(float));
  float loss;
  assert_int_equal(rlx_llm_finetune_eval(ft, ids, tg, mask, W, &loss, logits), RLX_OK);
  double num = 0, den = 0;
  for (int w = 0; w < W; w++) {
    rlx_llm_reset(m);
    for (int s = 0; s < S; s++) {
      const int i = w * S + s;
      assert_int_equal(rlx_llm_eval(m, &ids[i], 1, step), RLX_OK);
      double mx = -INFINITY, sum = 0;
      for (size_t v = 0; v < V; v++) {
        const float got = logits[(size_t)i * V + v];
        if (fabsf(got - step[v]) > 5e-4f + 1e-5f * fabsf(step[v])) /* measured: at most 1.3e-4 */
          fail_msg("%s (%s): logit %zu of window %d position %d: %g, the inference step's %g", path,
                   targets ? targets : "default", v, w, s, (double)got, (double)step[v]);
        mx = step[v] > mx ? step[v] : mx;
      }
      for (size_t v = 0; v < V; v++) sum += exp(step[v] - mx);
      num += mask[i] * (log(sum) + mx - step[tg[i]]);
      den += mask[i];
    }
  }
  const double want = num / den;
  if (fabs(loss - want) > 5e-6 * fabs(want)) /* measured: at most 4e-7 relative */
    fail_msg("%s: loss %.7g, from the inference step %.7g", path, (double)loss, want);
  free(logits);
  free(step);
  rlx_llm_finetune_free(ft);
  rlx_llm_free(m);
}

static void zero_b_is_the_base_model(void **state) {
  (void)state;
  for (size_t k = 0; k < N_MODELS; k++) base_equivalence(MODELS[k], NULL);
  /* every target (the unfused feed-forward), and the tied output */
  base_equivalence("build/lm/qwen2-q8_0.gguf", "all");
  base_equivalence("build/lm/llama-tied-q8_0.gguf", "attn_k, ffn_up,attn_output");
}

/* ---- (1) gradients against central differences ------------------------------------ */
enum { GW = 2, GS = 6 };
typedef struct {
  rlx_llm_finetune *ft;
  int32_t ids[GW * GS], tg[GW * GS];
  float mask[GW * GS];
} grad_setup;

static double loss_at(grad_setup *g) {
  float loss;
  assert_int_equal(rlx_llm_finetune_eval(g->ft, g->ids, g->tg, g->mask, GW, &loss, NULL), RLX_OK);
  return loss;
}

/* Sets A (which 0) or B (1) of pair name to x. */
static void set_half(rlx_llm_finetune *ft, const char *name, int which, const float *x, size_t n) {
  assert_int_equal(which ? rlx_llm_finetune_set_pair(ft, name, NULL, 0, x, n) : rlx_llm_finetune_set_pair(ft, name, x, n, NULL, 0),
                   RLX_OK);
}

/* d loss along a direction of A (which 0) or B (1) of pair `name` by
 * central differences, against <gradient, d>: d is +-1 at random (kind 0)
 * or the gradient's signs (kind 1: the largest signal, sum |g|). */
static void check_direction(grad_setup *g, const char *name, int which, int kind, const float *grad, float *x,
                            size_t n, const char *path) {
  const double h = 1e-3;
  float *save = malloc(n * sizeof(float)), *d = malloc(n * sizeof(float));
  memcpy(save, x, n * sizeof(float));
  double dot = 0;
  for (size_t j = 0; j < n; j++) {
    d[j] = (kind ? grad[j] : unit(7 + (uint64_t)which, j)) < 0 ? -1.0f : 1.0f;
    dot += (double)grad[j] * d[j];
  }
  double fx[2];
  for (int side = 0; side < 2; side++) {
    for (size_t j = 0; j < n; j++) x[j] = save[j] + (float)((side ? -h : h) * d[j]);
    set_half(g->ft, name, which, x, n);
    fx[side] = loss_at(g);
  }
  memcpy(x, save, n * sizeof(float));
  set_half(g->ft, name, which, x, n);
  const double fd = (fx[0] - fx[1]) / (2 * h);
  /* The loss (about 45 here) is a float computed through a few hundred
   * reductions: each value is off by a few units of its last place, so 16
   * ulp over 2 h bounds the rounding of the difference (0.03 at 45); 1%
   * covers the curvature (O(h^2)) and the gradient's own f32 rounding.
   * Measured on the six models: random directions within 0.013, sign
   * directions (dot 100 to 600) within 0.3%. */
  const double ulp = ldexp(1.0, ilogb(fx[0]) - 23);
  const double tol = 16 * ulp / (2 * h) + 1e-2 * fabs(dot);
  if (!(fabs(fd - dot) <= tol))
    fail_msg("%s: %s %s: central difference %.6g, gradient %.6g (tolerance %.3g)", path, name, which ? "B" : "A", fd,
             dot, tol);
  free(save);
  free(d);
}

static void gradients_of(const char *path) {
  rlx_llm_info in;
  rlx_llm_finetune_options o;
  rlx_llm *m = open_or_fail(path, &in, &o);
  o.rank = 4, o.alpha = 8, o.seq = GS, o.targets = "all", o.seed = 3;
  grad_setup g = {new_or_fail(m, &o), {0}, {0}, {0}};
  random_ids(g.ids, GW * GS, in.n_vocab, 21);
  random_ids(g.tg, GW * GS, in.n_vocab, 22);
  for (int i = 0; i < GW * GS; i++) g.mask[i] = i % 4 == 1 ? 0.0f : i % 4 == 2 ? 0.5f : 1.0f;
  const int32_t n_pairs = rlx_llm_finetune_pair_count(g.ft);
  rlx_llm_finetune_pair_info last;
  assert_int_equal(rlx_llm_finetune_pair(g.ft, n_pairs - 1, &last), RLX_OK);
  char want[64];
  snprintf(want, sizeof want, "blk.%d.ffn_down.weight", (int)in.n_layer - 1);
  assert_string_equal(last.name, want);
  /* B away from zero, so that A has a gradient */
  for (int32_t p = 0; p < n_pairs; p++) {
    rlx_llm_finetune_pair_info pi;
    assert_int_equal(rlx_llm_finetune_pair(g.ft, p, &pi), RLX_OK);
    size_t nb = (size_t)pi.n_out * (size_t)pi.rank;
    float *b = malloc(nb * sizeof(float));
    for (size_t j = 0; j < nb; j++) b[j] = (float)(0.05 * unit(100 + (uint64_t)p, j));
    set_half(g.ft, pi.name, 1, b, nb);
    free(b);
  }
  float loss, loss_eval;
  assert_int_equal(rlx_llm_finetune_grad(g.ft, g.ids, g.tg, g.mask, GW, &loss), RLX_OK);
  loss_eval = (float)loss_at(&g);
  assert_float_equal(loss, loss_eval, 1e-5f * fabsf(loss));
  for (int32_t p = 0; p < n_pairs; p++) {
    rlx_llm_finetune_pair_info pi;
    rlx_llm_finetune_pair(g.ft, p, &pi);
    const size_t na = (size_t)pi.rank * (size_t)pi.n_in, nb = (size_t)pi.n_out * (size_t)pi.rank;
    float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float));
    float *da = malloc(na * sizeof(float)), *db = malloc(nb * sizeof(float));
    assert_int_equal(rlx_llm_finetune_get_pair(g.ft, pi.name, a, na, b, nb), RLX_OK);
    assert_int_equal(rlx_llm_finetune_get_grad(g.ft, pi.name, da, na, db, nb), RLX_OK);
    for (int kind = 0; kind < 2; kind++) {
      check_direction(&g, pi.name, 0, kind, da, a, na, path);
      check_direction(&g, pi.name, 1, kind, db, b, nb, path);
    }
    free(a), free(b), free(da), free(db);
  }
  rlx_llm_finetune_free(g.ft);
  rlx_llm_free(m);
}

static void gradients_match_differences(void **state) {
  (void)state;
  for (size_t k = 0; k < N_MODELS; k++) gradients_of(MODELS[k]);
}

/* ---- batches and steps --------------------------------------------------------------- */
/* Two windows in one batch: the weighted mean of each window's loss; the
 * gradient session and sessions compiled again for another count agree. */
static void batch_is_the_weighted_windows(void **state) {
  (void)state;
  rlx_llm_info in;
  rlx_llm_finetune_options o;
  rlx_llm *m = open_or_fail("build/lm/qwen3-q8_0.gguf", &in, &o);
  o.seq = 5;
  rlx_llm_finetune *ft = new_or_fail(m, &o);
  int32_t ids[10], tg[10];
  random_ids(ids, 10, in.n_vocab, 31);
  random_ids(tg, 10, in.n_vocab, 32);
  float mask[10] = {1, 1, 0, 1, 1, 2, 2, 2, 0.5f, 0};
  tg[2] = -100; /* under a zero weight: never read */
  float both, one, two, g;
  assert_int_equal(rlx_llm_finetune_eval(ft, ids, tg, mask, 2, &both, NULL), RLX_OK);
  assert_int_equal(rlx_llm_finetune_eval(ft, ids, tg, mask, 1, &one, NULL), RLX_OK);
  assert_int_equal(rlx_llm_finetune_eval(ft, ids + 5, tg + 5, mask + 5, 1, &two, NULL), RLX_OK);
  assert_float_equal(both, (4 * one + 6.5f * two) / 10.5f, 1e-5f * both);
  assert_int_equal(rlx_llm_finetune_grad(ft, ids, tg, mask, 2, &g), RLX_OK);
  assert_float_equal(g, both, 1e-5f * both);
  /* all weights zero: the loss is 0 (divided by max(1, 0)) */
  float zeros[5] = {0};
  assert_int_equal(rlx_llm_finetune_eval(ft, ids, tg, zeros, 1, &one, NULL), RLX_OK);
  assert_true(one == 0.0f);
  rlx_llm_finetune_free(ft);
  rlx_llm_free(m);
}

/* One SGD step moves every A and B by -lr times its gradient. */
static void sgd_step_follows_the_gradient(void **state) {
  (void)state;
  rlx_llm_info in;
  rlx_llm_finetune_options o;
  rlx_llm *m = open_or_fail("build/lm/qwen2-f32.gguf", &in, &o);
  o.seq = 6, o.targets = "attn_v,ffn_down";
  o.optimizer = (rlx_optimizer){RLX_OPT_SGD, 1e-3f, 0, 0, 0, 0, 0};
  rlx_llm_finetune *ft = new_or_fail(m, &o);
  int32_t ids[6], tg[6];
  random_ids(ids, 6, in.n_vocab, 41);
  random_ids(tg, 6, in.n_vocab, 42);
  rlx_llm_finetune_pair_info pi;
  assert_int_equal(rlx_llm_finetune_pair(ft, 1, &pi), RLX_OK);
  assert_string_equal(pi.name, "blk.0.ffn_down.weight");
  assert_true(pi.n_in == in.n_ff && pi.n_out == in.n_embd && pi.rank == 8 && pi.scale == 2.0f);
  const size_t na = (size_t)pi.rank * (size_t)pi.n_in, nb = (size_t)pi.n_out * (size_t)pi.rank;
  float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float)), *da = malloc(na * sizeof(float));
  float *db = malloc(nb * sizeof(float)), *a2 = malloc(na * sizeof(float)), *b2 = malloc(nb * sizeof(float));
  assert_int_equal(rlx_llm_finetune_get_pair(ft, pi.name, a, na, b, nb), RLX_OK);
  /* A as PEFT starts it: within 1/sqrt(n_in), B zero */
  double amax = 0;
  for (size_t j = 0; j < na; j++) amax = fmax(amax, fabs(a[j]));
  assert_true(amax <= 1.0 / sqrt(pi.n_in) && amax > 0.9 / sqrt(pi.n_in));
  for (size_t j = 0; j < nb; j++) assert_true(b[j] == 0.0f);
  for (size_t j = 0; j < nb; j++) b[j] = (float)(0.02 * unit(43, j));
  assert_int_equal(rlx_llm_finetune_set_pair(ft, pi.name, NULL, 0, b, nb), RLX_OK);
  float lg, ls;
  assert_int_equal(rlx_llm_finetune_grad(ft, ids, tg, NULL, 1, &lg), RLX_OK);
  assert_int_equal(rlx_llm_finetune_get_grad(ft, pi.name, da, na, db, nb), RLX_OK);
  assert_int_equal(rlx_llm_finetune_step(ft, ids, tg, NULL, 1, &ls), RLX_OK);
  assert_float_equal(ls, lg, 1e-5f * lg);
  assert_int_equal(rlx_llm_finetune_get_pair(ft, pi.name, a2, na, b2, nb), RLX_OK);
  for (size_t j = 0; j < na; j++) assert_float_equal(a2[j], a[j] - 1e-3f * da[j], 1e-6f);
  for (size_t j = 0; j < nb; j++) assert_float_equal(b2[j], b[j] - 1e-3f * db[j], 1e-6f);
  /* the step lowered the loss; a zero learning rate changes nothing */
  float after;
  assert_int_equal(rlx_llm_finetune_eval(ft, ids, tg, NULL, 1, &after, NULL), RLX_OK);
  assert_true(after < ls);
  assert_int_equal(rlx_llm_finetune_set_lr(ft, 0.0f), RLX_OK);
  assert_int_equal(rlx_llm_finetune_step(ft, ids, tg, NULL, 1, &ls), RLX_OK);
  assert_float_equal(ls, after, 1e-6f * after);
  assert_int_equal(rlx_llm_finetune_get_pair(ft, pi.name, a, na, NULL, 0), RLX_OK);
  assert_memory_equal(a, a2, na * sizeof(float));
  free(a), free(b), free(da), free(db), free(a2), free(b2);
  rlx_llm_finetune_free(ft);
  rlx_llm_free(m);
}

/* ---- (2) learning a sentence ---------------------------------------------------------- */
/* A copy of the f32 file at path with every pair merged into its base
 * weight, W + scale B A (for generation with the adapter applied). */
static unsigned char *merged_copy(const char *path, const rlx_llm_finetune *ft, size_t *size) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  fseek(f, 0, SEEK_END);
  *size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *buf = aligned_alloc(64, (*size + 63) / 64 * 64);
  assert_int_equal(fread(buf, 1, *size, f), *size);
  fclose(f);
  rlx_gguf *g;
  assert_int_equal(rlx_gguf_open_memory(buf, *size, RLX_GGUF_NO_BUDGET, &g), RLX_OK);
  for (int32_t p = 0; p < rlx_llm_finetune_pair_count(ft); p++) {
    rlx_llm_finetune_pair_info pi;
    rlx_gguf_tensor_info ti;
    rlx_llm_finetune_pair(ft, p, &pi);
    assert_int_equal(rlx_gguf_tensor(g, rlx_gguf_find_tensor(g, pi.name), &ti), RLX_OK);
    assert_true(ti.type == RLX_GGUF_TYPE_F32 && ti.dims[0] == pi.n_in && ti.dims[1] == pi.n_out);
    const size_t r = (size_t)pi.rank, na = r * (size_t)pi.n_in, nb = (size_t)pi.n_out * r;
    float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float)), *w = (float *)(buf + ti.file_offset);
    assert_int_equal(rlx_llm_finetune_get_pair(ft, pi.name, a, na, b, nb), RLX_OK);
    for (int32_t o = 0; o < pi.n_out; o++)
      for (int32_t i = 0; i < pi.n_in; i++) {
        double acc = 0;
        for (size_t k = 0; k < r; k++) acc += (double)b[(size_t)o * r + k] * a[k * (size_t)pi.n_in + (size_t)i];
        w[(size_t)o * (size_t)pi.n_in + (size_t)i] += (float)(pi.scale * acc);
      }
    free(a), free(b);
  }
  rlx_gguf_free(g);
  return buf;
}

static void learns_a_sentence(void **state) {
  (void)state;
  const char *path = "build/lm/llama-f32.gguf";
  rlx_llm_info in;
  rlx_llm_finetune_options o;
  rlx_llm *m = open_or_fail(path, &in, &o);
  enum { S = 24 };
  const char *text = "The small river ran past the old mill. The small river ran past the old mill. "
                     "The small river ran past the old mill.";
  int32_t toks[64];
  size_t n = 0;
  assert_int_equal(rlx_llm_tokenize(m, text, strlen(text), -1, 0, toks, 64, &n), RLX_OK);
  assert_true(n > S);
  o.seq = S, o.seed = 1; /* attn_q and attn_v, rank 8, alpha 16, AdamW */
  o.optimizer.lr = 3e-3f, o.optimizer.weight_decay = 0.01f;
  rlx_llm_finetune *ft = new_or_fail(m, &o);
  float first = 0, loss = 0;
  const int steps = 40; /* the loss falls from 48 to about 1e-4 */
  for (int k = 0; k < steps; k++) {
    assert_int_equal(rlx_llm_finetune_step(ft, toks, toks + 1, NULL, 1, &loss), RLX_OK);
    if (k == 0) first = loss;
  }
  assert_int_equal(rlx_llm_finetune_eval(ft, toks, toks + 1, NULL, 1, &loss, NULL), RLX_OK);
  if (!(loss * 5 < first)) fail_msg("the loss went from %g to %g in %d steps", (double)first, (double)loss, steps);
  /* teacher-forced: the argmax at every position is the next token */
  float *logits = malloc((size_t)S * (size_t)in.n_vocab * sizeof(float));
  assert_int_equal(rlx_llm_finetune_eval(ft, toks, toks + 1, NULL, 1, &loss, logits), RLX_OK);
  for (int s = 0; s < S; s++) {
    const float *row = logits + (size_t)s * (size_t)in.n_vocab;
    int32_t best = 0;
    for (int32_t v = 1; v < in.n_vocab; v++) best = row[v] > row[best] ? v : best;
    assert_int_equal(best, toks[s + 1]);
  }
  free(logits);
  /* greedy generation with the adapter merged into the weights continues
   * the sentence from its first 6 tokens, token for token */
  size_t size;
  unsigned char *buf = merged_copy(path, ft, &size);
  rlx_llm *tuned;
  rlx_llm_options lo = {.n_ctx = 64};
  assert_int_equal(rlx_llm_open_memory(buf, size, &lo, &tuned), RLX_OK);
  rlx_llm_sampling sp = rlx_llm_sampling_default();
  sp.max_tokens = S - 6;
  int32_t got[S];
  int32_t n_got = 0;
  rlx_llm_generator *gen;
  assert_int_equal(rlx_llm_generator_new(tuned, toks, 6, &sp, &gen), RLX_OK);
  for (int done = 0; !done;) {
    int32_t id;
    const char *piece;
    size_t len;
    assert_int_equal(rlx_llm_generator_next(gen, &id, &piece, &len, &done), RLX_OK);
    if (id >= 0 && n_got < S) got[n_got++] = id;
  }
  rlx_llm_generator_free(gen);
  assert_int_equal(n_got, S - 6);
  for (int32_t i = 0; i < n_got; i++) assert_int_equal(got[i], toks[6 + i]);
  rlx_llm_free(tuned);
  free(buf);
  rlx_llm_finetune_free(ft);
  rlx_llm_free(m);
}

/* ---- (4) refusals ----------------------------------------------------------------------- */
static void refuse_new(const rlx_llm *m, const rlx_llm_finetune_options *o, rlx_status want, const char *phrase) {
  rlx_llm_finetune *ft = (rlx_llm_finetune *)1;
  assert_int_equal(rlx_llm_finetune_new(m, o, &ft), want);
  assert_null(ft);
  assert_contains(rlx_last_error(), phrase);
}

static void refusals(void **state) {
  (void)state;
  rlx_llm_info in;
  rlx_llm_finetune_options d;
  rlx_llm *m = open_or_fail("build/lm/llama-q8_0.gguf", &in, &d);
  rlx_llm_finetune_options o = d;
  assert_int_equal(rlx_llm_finetune_new(m, &o, NULL), RLX_ERR_INVALID_ARG);
  refuse_new(NULL, &o, RLX_ERR_INVALID_ARG, "model is NULL");
  o.rank = 0;
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "rank must be at least 1");
  o.rank = in.n_head_kv * in.head_dim + 1; /* above attn_v's n_out */
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "above min(n_in, n_out)");
  assert_contains(rlx_last_error(), "blk.0.attn_v.weight");
  o = d, o.targets = "attn_q, attn_z";
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "unknown target 'attn_z'");
  o.targets = "attn_q,,attn_v";
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "unknown target ''");
  o = d, o.seq = 1;
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "seq must lie in 2 ..");
  o.seq = in.n_ctx_train + 1;
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "the model's context");
  o = d, o.optimizer.lr = NAN;
  refuse_new(m, &o, RLX_ERR_NUMERIC, "optimizer.lr");
  o.optimizer.lr = -1e-3f;
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "optimizer.lr must be finite and >= 0");
  o = d, o.optimizer.weight_decay = -0.1f;
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "optimizer.weight_decay");
  o = d, o.optimizer.eps = INFINITY;
  refuse_new(m, &o, RLX_ERR_NUMERIC, "optimizer.eps");
  o = d, o.optimizer.beta1 = 1.0f;
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "beta1");
  o = d, o.optimizer.kind = (rlx_optimizer_kind)9;
  refuse_new(m, &o, RLX_ERR_INVALID_ARG, "unknown optimizer");
  o = d, o.alpha = NAN;
  refuse_new(m, &o, RLX_ERR_NUMERIC, "alpha");

  o = d, o.seq = 4;
  rlx_llm_finetune *ft = new_or_fail(m, &o);
  int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8}, tg[8] = {2, 3, 4, 5, 6, 7, 8, 9};
  float mask[8] = {1, 1, 1, 1, 1, 1, 1, 1}, loss;
  assert_int_equal(rlx_llm_finetune_step(NULL, ids, tg, mask, 1, &loss), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_finetune_step(ft, NULL, tg, mask, 1, &loss), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "ids is NULL");
  assert_int_equal(rlx_llm_finetune_eval(ft, ids, NULL, mask, 1, &loss, NULL), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "targets is NULL");
  assert_int_equal(rlx_llm_finetune_step(ft, ids, tg, mask, 0, &loss), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "n_windows");
  ids[3] = in.n_vocab;
  assert_int_equal(rlx_llm_finetune_step(ft, ids, tg, mask, 1, &loss), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "ids[3]");
  assert_int_equal(rlx_llm_finetune_get_grad(ft, "blk.0.attn_q.weight", NULL, 0, NULL, 0), RLX_ERR_STATE);
  assert_contains(rlx_last_error(), "no gradients yet");
  ids[3] = 4, tg[5] = -1;
  assert_int_equal(rlx_llm_finetune_grad(ft, ids, tg, mask, 2, &loss), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "targets[5]");
  mask[5] = 0; /* not scored: any target */
  assert_int_equal(rlx_llm_finetune_grad(ft, ids, tg, mask, 2, &loss), RLX_OK);
  mask[6] = -1;
  assert_int_equal(rlx_llm_finetune_step(ft, ids, tg, mask, 2, &loss), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "mask[6]");
  mask[6] = NAN;
  assert_int_equal(rlx_llm_finetune_step(ft, ids, tg, mask, 2, &loss), RLX_ERR_NUMERIC);
  mask[6] = 1;
  assert_int_equal(rlx_llm_finetune_set_lr(ft, NAN), RLX_ERR_NUMERIC);
  assert_int_equal(rlx_llm_finetune_set_lr(ft, -1.0f), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_finetune_set_lr(NULL, 1.0f), RLX_ERR_INVALID_ARG);

  rlx_llm_finetune_pair_info pi;
  assert_int_equal(rlx_llm_finetune_pair_count(ft), 2 * in.n_layer);
  assert_int_equal(rlx_llm_finetune_pair_count(NULL), 0);
  assert_int_equal(rlx_llm_finetune_pair(ft, 2 * in.n_layer, &pi), RLX_ERR_NOT_FOUND);
  assert_int_equal(rlx_llm_finetune_pair(ft, 0, NULL), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_finetune_pair(ft, 1, &pi), RLX_OK);
  assert_string_equal(pi.name, "blk.0.attn_v.weight");
  const size_t na = (size_t)pi.rank * (size_t)pi.n_in, nb = (size_t)pi.n_out * (size_t)pi.rank;
  float *a = malloc(na * sizeof(float)), *b = malloc(nb * sizeof(float));
  assert_int_equal(rlx_llm_finetune_get_pair(ft, "blk.0.attn_k.weight", a, na, NULL, 0), RLX_ERR_NOT_FOUND);
  assert_contains(rlx_last_error(), "no adapter pair on 'blk.0.attn_k.weight'");
  assert_int_equal(rlx_llm_finetune_get_pair(ft, pi.name, a, na - 1, NULL, 0), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "A of 'blk.0.attn_v.weight'");
  assert_int_equal(rlx_llm_finetune_get_pair(ft, NULL, a, na, NULL, 0), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_finetune_get_pair(ft, pi.name, a, na, b, nb), RLX_OK);
  b[7] = INFINITY;
  assert_int_equal(rlx_llm_finetune_set_pair(ft, pi.name, NULL, 0, b, nb), RLX_ERR_NUMERIC);
  assert_contains(rlx_last_error(), "B[7]");
  assert_int_equal(rlx_llm_finetune_set_pair(ft, pi.name, NULL, 0, b, nb + 1), RLX_ERR_INVALID_ARG);
  /* gradients: only after rlx_llm_finetune_grad succeeded */
  assert_int_equal(rlx_llm_finetune_get_grad(ft, pi.name, a, na, NULL, 0), RLX_OK);
  assert_int_equal(rlx_llm_finetune_grad(ft, ids, tg, mask, -1, &loss), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_finetune_get_grad(ft, pi.name, a, na, NULL, 0), RLX_ERR_STATE);
  free(a), free(b);
  rlx_llm_finetune_free(ft);
  rlx_llm_finetune_free(NULL);
  rlx_llm_free(m);
}

typedef struct {
  const rlx_llm *m;
  rlx_llm_finetune_options o;
} life_args;

/* A fine-tuning object's life: made, two steps (one window, then two:
 * compiled again), an evaluation, the gradients, freed. */
static int life(void *user) {
  const life_args *la = user;
  const rlx_llm *m = la->m;
  const rlx_llm_finetune_options *o = &la->o;
  int32_t ids[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}; /* targets: ids + 1 */
  float loss;
  rlx_llm_finetune *ft = NULL;
  rlx_status st = rlx_llm_finetune_new(m, o, &ft);
  if (st == RLX_OK) st = rlx_llm_finetune_step(ft, ids, ids + 1, NULL, 1, &loss);
  if (st == RLX_OK) st = rlx_llm_finetune_step(ft, ids, ids + 1, NULL, 2, &loss);
  if (st == RLX_OK) st = rlx_llm_finetune_eval(ft, ids, ids + 1, NULL, 1, &loss, NULL);
  if (st == RLX_OK) st = rlx_llm_finetune_grad(ft, ids, ids + 1, NULL, 1, &loss);
  rlx_llm_finetune_free(ft);
  return st;
}

/* Any allocation of that life may fail: a status, no leak (the checking
 * allocator counts live bytes). */
static void allocation_failures(void **state) {
  (void)state;
  if (!check_alloc_active()) skip();
  rlx_llm_finetune_options o;
  rlx_llm *m = open_or_fail("build/lm/qwen3-q8_0.gguf", NULL, &o);
  o.seq = 4, o.targets = "attn_q,ffn_up";
  life_args la = {m, o};
  const char *why = check_alloc_sweep(life, &la, 150);
  if (why) fail_msg("%s", why);
  rlx_llm_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(zero_b_is_the_base_model),
      cmocka_unit_test(gradients_match_differences),
      cmocka_unit_test(batch_is_the_weighted_windows),
      cmocka_unit_test(sgd_step_follows_the_gradient),
      cmocka_unit_test(learns_a_sentence),
      cmocka_unit_test(refusals),
      cmocka_unit_test(allocation_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
