/* test_transformer.c - the decoder-only transformer and the fusion passes:
 * logits shape and finiteness, bit-exact determinism (also across a cache
 * clear), causality of every partial model (no layers, attention only,
 * attention + RoPE, one layer, the full model; causal and sliding), fused
 * against unfused sessions, the attention block with sliding-window,
 * padding and bias masks against a naive reference, the matmul epilogue
 * fusion against skip_fusion, fusion refusing patterns whose intermediates
 * are needed elsewhere, and bad configurations. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ref_fused.h"
#include "rlx_models.h"
#include "../../src/models/cache.h"
#include "../../src/models/transformer.h"

#define D(...) ((const int32_t[]){__VA_ARGS__})

static const float tokens_a[5] = {3, 1, 4, 1, 5}, tokens_b[5] = {3, 1, 4, 1, 9};
enum { S_TINY = 5, V_TINY = 32 };

static rlx_transformer_config tiny(int32_t n_layers, int32_t window, int skip_fusion) {
  rlx_transformer_config c = {V_TINY, 32, n_layers, 4, 8, 64, 1234, window, skip_fusion};
  return c;
}

/* max |a - b| / (1 + |b|) */
static double rel_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)b[i]));
    if (!(d <= m)) m = d;
  }
  return m;
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - b[i]);
    if (!(d <= m)) m = d;
  }
  return m;
}

/* Logits of a (possibly partial) model through its own session; returns the
 * session's fused count. */
static int32_t variant_logits(const rlx_transformer_config *c, int flags, const float *tokens, float *out) {
  rlx_session *s = NULL;
  assert_int_equal(rlx_transformer_compile(c, S_TINY, flags, &s), RLX_OK);
  assert_int_equal(rlx_session_set_input(s, "tokens", tokens, S_TINY), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 0, out, (size_t)S_TINY * c->vocab), RLX_OK);
  int32_t fused = rlx_session_fused_count(s);
  rlx_session_free(s);
  return fused;
}

static void shape_and_finite(void **state) {
  (void)state;
  rlx_transformer_config c = tiny(2, 0, 0);
  float all[S_TINY * V_TINY], next[V_TINY];
  for (int t = 0; t < 2; t++) {
    const float *tok = t ? tokens_b : tokens_a;
    assert_int_equal(rlx_transformer_logits(&c, tok, S_TINY, all), RLX_OK);
    for (int i = 0; i < S_TINY * V_TINY; i++) assert_true(isfinite(all[i]));
    assert_int_equal(rlx_transformer_next_logits(&c, tok, S_TINY, next), RLX_OK);
    assert_memory_equal(next, all + (S_TINY - 1) * V_TINY, sizeof next);
  }
  /* logits are not all alike (the weights are not degenerate) */
  assert_true(max_abs_diff(all, all + V_TINY, V_TINY) > 1e-4);
}

static void deterministic(void **state) {
  (void)state;
  for (int skip = 0; skip <= 1; skip++) {
    rlx_transformer_config c = tiny(2, 0, skip);
    float a[S_TINY * V_TINY], b[S_TINY * V_TINY], fresh[S_TINY * V_TINY];
    assert_int_equal(rlx_transformer_logits(&c, tokens_a, S_TINY, a), RLX_OK);
    assert_int_equal(rlx_transformer_logits(&c, tokens_a, S_TINY, b), RLX_OK);
    assert_memory_equal(a, b, sizeof a);
    rlx_models_clear_cache();
    assert_int_equal(rlx_cache_size(), 0);
    assert_int_equal(rlx_transformer_fused_count(&c, S_TINY), -1);
    assert_int_equal(rlx_transformer_logits(&c, tokens_a, S_TINY, fresh), RLX_OK);
    assert_memory_equal(a, fresh, sizeof a);
  }
}

/* The partial models of the causality tests. */
typedef struct {
  const char *name;
  int32_t n_layers;
  int flags;
} variant;
static const variant variants[] = {
    {"no layers", 0, 0},
    {"attention only", 2, RLX_TF_NO_ROPE | RLX_TF_NO_FFN},
    {"attention + rope", 2, RLX_TF_NO_FFN},
    {"one layer", 1, 0},
    {"full model", 2, 0},
};
#define N_VARIANTS (int)(sizeof variants / sizeof variants[0])

/* Changing the last token leaves earlier positions alone and moves the last. */
static void causal(void **state) {
  (void)state;
  for (int v = 0; v < N_VARIANTS; v++)
    for (int window = 0; window <= 2; window += 2)
      for (int skip = 0; skip <= 1; skip++) {
        rlx_transformer_config c = tiny(variants[v].n_layers, window, skip);
        float a[S_TINY * V_TINY], b[S_TINY * V_TINY];
        variant_logits(&c, variants[v].flags, tokens_a, a);
        variant_logits(&c, variants[v].flags, tokens_b, b);
        double early = max_abs_diff(a, b, (S_TINY - 1) * V_TINY);
        double last = max_abs_diff(a + (S_TINY - 1) * V_TINY, b + (S_TINY - 1) * V_TINY, V_TINY);
        if (early > 1e-4 || !(last > 1e-3))
          fail_msg("%s (window %d, %s): earlier rows moved by %g, the last by %g", variants[v].name, window,
                   skip ? "unfused" : "fused", early, last);
      }
}

/* Fused and unfused sessions agree; fusion fires exactly when asked. */
static void fused_matches_unfused(void **state) {
  (void)state;
  for (int v = 0; v < N_VARIANTS; v++)
    for (int window = 0; window <= 2; window += 2)
      for (int t = 0; t < 2; t++) {
        const float *tok = t ? tokens_b : tokens_a;
        rlx_transformer_config cf = tiny(variants[v].n_layers, window, 0), cu = tiny(variants[v].n_layers, window, 1);
        float f[S_TINY * V_TINY], u[S_TINY * V_TINY];
        int32_t nf = variant_logits(&cf, variants[v].flags, tok, f);
        int32_t nu = variant_logits(&cu, variants[v].flags, tok, u);
        double d = rel_diff(f, u, S_TINY * V_TINY);
        if (d > 1e-5) fail_msg("%s (window %d): fused and unfused differ by %g", variants[v].name, window, d);
        assert_int_equal(nu, 0);
        if (variants[v].n_layers > 0 && nf < variants[v].n_layers)
          fail_msg("%s: only %d fused nodes", variants[v].name, (int)nf);
      }
  /* through the public API: one attention block and two matmul epilogues
   * (SwiGLU gate, down projection + residual) per layer */
  rlx_transformer_config cf = tiny(2, 0, 0), cu = tiny(2, 0, 1);
  float f[S_TINY * V_TINY], u[S_TINY * V_TINY];
  assert_int_equal(rlx_transformer_logits(&cf, tokens_a, S_TINY, f), RLX_OK);
  assert_int_equal(rlx_transformer_logits(&cu, tokens_a, S_TINY, u), RLX_OK);
  assert_true(rel_diff(f, u, S_TINY * V_TINY) <= 1e-5);
  assert_int_equal(rlx_transformer_fused_count(&cf, S_TINY), 6);
  assert_int_equal(rlx_transformer_fused_count(&cu, S_TINY), 0);
  assert_int_equal(rlx_transformer_fused_count(&cf, 77), -1); /* never run with 77 tokens */
}

/* ---- the attention block on its own, against ref_fused.c ---------------- */

enum { LAYOUT_PACKED, LAYOUT_SPLIT, LAYOUT_PACKED_3D_PERMUTE };

typedef struct {
  const char *name;
  int32_t B, S, E, H, Dh, Eo, kind, window, rope, layout;
} block_case;

/* Head block t of proj [.., S, HD] (t = 0 for a split projection) as
 * [B, H, S, Dh], by one of two reshape/permute spellings. */
static rlx_node split_heads(rlx_graph *g, const block_case *c, rlx_node proj, int32_t t, int packed) {
  int32_t HD = c->H * c->Dh, B = c->B ? c->B : 1, last = c->B ? 2 : 1;
  rlx_node part = packed ? rlx_narrow(g, proj, last, t * HD, HD) : proj;
  if (c->layout == LAYOUT_PACKED_3D_PERMUTE && !c->B) {
    rlx_node s3 = rlx_reshape(g, part, 3, D(c->S, c->H, c->Dh));
    return rlx_reshape(g, rlx_permute(g, s3, D(1, 0, 2)), 4, D(1, c->H, c->S, c->Dh));
  }
  return rlx_permute(g, rlx_reshape(g, part, 4, D(B, c->S, c->H, c->Dh)), D(0, 2, 1, 3));
}

/* Builds the block from separate ops; outputs[0] = y, and the attention and
 * q-rope nodes are returned for the "needed elsewhere" tests. */
static rlx_node build_block(rlx_graph *g, const block_case *c, rlx_node *att_out, rlx_node *q_out) {
  int32_t HD = c->H * c->Dh, B = c->B ? c->B : 1;
  rlx_node x = c->B ? rlx_input(g, "x", 3, D(c->B, c->S, c->E), RLX_F32) : rlx_input(g, "x", 2, D(c->S, c->E), RLX_F32);
  rlx_node w[3] = {rlx_input(g, "wq", 2, D(c->E, HD), RLX_F32), rlx_input(g, "wk", 2, D(c->E, HD), RLX_F32),
                   rlx_input(g, "wv", 2, D(c->E, HD), RLX_F32)};
  rlx_node wo = rlx_input(g, "wo", 2, D(HD, c->Eo), RLX_F32);
  rlx_node mask = RLX_NO_NODE;
  if (c->kind == RLX_MASK_PADDING) mask = rlx_input(g, "mask", 2, D(B, c->S), RLX_F32);
  if (c->kind == RLX_MASK_BIAS) mask = rlx_input(g, "mask", 2, D(c->S, c->S), RLX_F32);
  rlx_node qkv[3];
  if (c->layout == LAYOUT_SPLIT) {
    for (int t = 0; t < 3; t++) qkv[t] = split_heads(g, c, rlx_matmul(g, x, w[t]), 0, 0);
  } else {
    rlx_node proj = rlx_matmul(g, x, rlx_concat(g, w, 3, 1));
    for (int t = 0; t < 3; t++) qkv[t] = split_heads(g, c, proj, t, 1);
  }
  if (c->rope) {
    qkv[0] = rlx_rope(g, qkv[0], 10000.0f, 0);
    qkv[1] = rlx_rope(g, qkv[1], 10000.0f, 0);
  }
  rlx_node a = rlx_attention(g, qkv[0], qkv[1], qkv[2], (rlx_mask_kind)c->kind, c->window, mask, 0.0f);
  rlx_node o = c->B ? rlx_reshape(g, rlx_permute(g, a, D(0, 2, 1, 3)), 3, D(c->B, c->S, HD))
                    : rlx_reshape(g, rlx_permute(g, a, D(0, 2, 1, 3)), 2, D(c->S, HD));
  if (att_out) *att_out = a;
  if (q_out) *q_out = qkv[0];
  return rlx_matmul(g, o, wo);
}

static float test_value(unsigned seed, size_t i, float range) { return opcase_uniform(seed, i, -range, range); }

/* Fills the block's inputs (by name) and returns them for the reference. */
typedef struct {
  float *x, *w[3], *wo, *mask;
} block_data;

static block_data block_inputs(const block_case *c) {
  int32_t HD = c->H * c->Dh, B = c->B ? c->B : 1;
  block_data d;
  size_t nx = (size_t)B * c->S * c->E, nw = (size_t)c->E * HD, no = (size_t)HD * c->Eo;
  d.x = malloc(nx * sizeof(float));
  for (size_t i = 0; i < nx; i++) d.x[i] = test_value(1, i, 1.0f);
  for (int t = 0; t < 3; t++) {
    d.w[t] = malloc(nw * sizeof(float));
    for (size_t i = 0; i < nw; i++) d.w[t][i] = test_value(2 + t, i, 0.5f);
  }
  d.wo = malloc(no * sizeof(float));
  for (size_t i = 0; i < no; i++) d.wo[i] = test_value(5, i, 0.5f);
  size_t nm = c->kind == RLX_MASK_BIAS ? (size_t)c->S * c->S : (size_t)B * c->S;
  d.mask = malloc(nm * sizeof(float));
  for (size_t i = 0; i < nm; i++) {
    if (c->kind == RLX_MASK_BIAS) {
      d.mask[i] = test_value(6, i, 2.0f);
    } else { /* batch 0 drops keys j % 3 == 1, batch 1 all but the first, batch 2 none */
      size_t b = i / (size_t)c->S, j = i % (size_t)c->S;
      d.mask[i] = (b == 0 && j % 3 == 1) || (b == 1 && j > 0) ? 0.0f : 1.0f;
    }
  }
  return d;
}

static void block_data_free(block_data *d) {
  free(d->x), free(d->w[0]), free(d->w[1]), free(d->w[2]), free(d->wo), free(d->mask);
}

static void feed_block(rlx_session *s, const block_case *c, const block_data *d) {
  int32_t HD = c->H * c->Dh, B = c->B ? c->B : 1;
  const char *names[3] = {"wq", "wk", "wv"};
  assert_int_equal(rlx_session_set_input(s, "x", d->x, (size_t)B * c->S * c->E), RLX_OK);
  for (int t = 0; t < 3; t++) assert_int_equal(rlx_session_set_input(s, names[t], d->w[t], (size_t)c->E * HD), RLX_OK);
  assert_int_equal(rlx_session_set_input(s, "wo", d->wo, (size_t)HD * c->Eo), RLX_OK);
  if (c->kind == RLX_MASK_PADDING) assert_int_equal(rlx_session_set_input(s, "mask", d->mask, (size_t)B * c->S), RLX_OK);
  if (c->kind == RLX_MASK_BIAS)
    assert_int_equal(rlx_session_set_input(s, "mask", d->mask, (size_t)c->S * c->S), RLX_OK);
}

static const block_case block_cases[] = {
    {"sliding 3, packed, rope", 0, 9, 12, 3, 4, 10, RLX_MASK_SLIDING, 3, 1, LAYOUT_PACKED},
    {"sliding 2, split weights", 0, 7, 8, 2, 4, 8, RLX_MASK_SLIDING, 2, 1, LAYOUT_SPLIT},
    {"sliding 4, [S, H, Dh] permute", 0, 10, 8, 4, 2, 6, RLX_MASK_SLIDING, 4, 1, LAYOUT_PACKED_3D_PERMUTE},
    {"causal, [S, H, Dh] permute", 0, 6, 8, 2, 4, 5, RLX_MASK_CAUSAL, 0, 1, LAYOUT_PACKED_3D_PERMUTE},
    {"padding, batch 3, rope", 3, 6, 8, 2, 4, 8, RLX_MASK_PADDING, 0, 1, LAYOUT_PACKED},
    {"padding, batch 2, split weights", 2, 5, 6, 3, 2, 4, RLX_MASK_PADDING, 0, 0, LAYOUT_SPLIT},
    {"bias [S, S]", 0, 6, 8, 2, 4, 8, RLX_MASK_BIAS, 0, 1, LAYOUT_PACKED},
};

static void attention_block_masks(void **state) {
  (void)state;
  for (size_t k = 0; k < sizeof block_cases / sizeof block_cases[0]; k++) {
    const block_case *c = &block_cases[k];
    int32_t HD = c->H * c->Dh, B = c->B ? c->B : 1;
    size_t n_out = (size_t)B * c->S * c->Eo;
    block_data d = block_inputs(c);
    ref_attn_block p;
    memset(&p, 0, sizeof p);
    p.B = B, p.S = c->S, p.E = c->E, p.H = c->H, p.Dh = c->Dh, p.Eo = c->Eo;
    p.kind = c->kind, p.window = c->window, p.rope = c->rope, p.theta = 10000.0;
    p.bias_rank = 2, p.bias_dims[0] = c->S, p.bias_dims[1] = c->S;
    double *want = malloc(n_out * sizeof(double));
    ref_attention_block(&p, d.x, d.w[0], d.w[1], d.w[2], HD, d.wo, d.mask, want);
    for (int skip = 0; skip <= 1; skip++) {
      rlx_graph *g = rlx_graph_new();
      rlx_node y = build_block(g, c, NULL, NULL);
      rlx_session *s = NULL;
      rlx_compile_options opt = {RLX_DEVICE_CPU, skip, 0, 0};
      assert_int_equal(rlx_compile(g, &y, 1, &opt, &s), RLX_OK);
      if (!skip && (rlx_session_fused_count(s) != 1 || rlx_session_step_count(s) != 1))
        fail_msg("%s: %d fused nodes, %d steps (want one fused_attention)", c->name, (int)rlx_session_fused_count(s),
                 (int)rlx_session_step_count(s));
      if (skip) assert_int_equal(rlx_session_fused_count(s), 0);
      feed_block(s, c, &d);
      assert_int_equal(rlx_session_run(s), RLX_OK);
      const float *got = rlx_session_output(s, 0);
      double worst = 0;
      for (size_t i = 0; i < n_out; i++) {
        double e = fabs(got[i] - want[i]) / (1.0 + fabs(want[i]));
        if (!(e <= worst)) worst = e;
      }
      if (worst > 1e-5) fail_msg("%s (%s): off the reference by %g", c->name, skip ? "unfused" : "fused", worst);
      rlx_session_free(s);
      rlx_graph_free(g);
    }
    free(want);
    block_data_free(&d);
  }
}

/* The attention block is left alone when one of its intermediates is an
 * output too (the attention result, or the rotated q). */
static void attention_block_needed_elsewhere(void **state) {
  (void)state;
  const block_case *c = &block_cases[0];
  block_data d = block_inputs(c);
  for (int which = 0; which < 2; which++) {
    float *res[2][2];
    size_t len[2];
    for (int skip = 0; skip <= 1; skip++) {
      rlx_graph *g = rlx_graph_new();
      rlx_node att, q;
      rlx_node outs[2];
      outs[0] = build_block(g, c, &att, &q);
      outs[1] = which ? q : att;
      rlx_session *s = NULL;
      rlx_compile_options opt = {RLX_DEVICE_CPU, skip, 0, 0};
      assert_int_equal(rlx_compile(g, outs, 2, &opt, &s), RLX_OK);
      assert_int_equal(rlx_session_fused_count(s), 0);
      feed_block(s, c, &d);
      assert_int_equal(rlx_session_run(s), RLX_OK);
      for (int o = 0; o < 2; o++) {
        len[o] = rlx_session_output_len(s, o);
        res[skip][o] = malloc(len[o] * sizeof(float));
        assert_int_equal(rlx_session_read_output(s, o, res[skip][o], len[o]), RLX_OK);
      }
      rlx_session_free(s);
      rlx_graph_free(g);
    }
    for (int o = 0; o < 2; o++) {
      assert_memory_equal(res[0][o], res[1][o], len[o] * sizeof(float));
      free(res[0][o]), free(res[1][o]);
    }
  }
  block_data_free(&d);
}

/* ---- matmul epilogues ---------------------------------------------------- */

enum { EPI_BIAS_RELU, EPI_BIAS_GELU, EPI_SILU, EPI_RESIDUAL, EPI_SWIGLU };

/* x[7, 5] . w[5, 9] with an epilogue; *add and *mm return inner nodes. */
static rlx_node build_epilogue(rlx_graph *g, int kind, rlx_node *add, rlx_node *mm) {
  rlx_node x = rlx_input(g, "x", 2, D(7, 5), RLX_F32), w = rlx_input(g, "w", 2, D(5, 9), RLX_F32);
  rlx_node b = rlx_input(g, "b", 1, D(9), RLX_F32), r = rlx_input(g, "r", 2, D(7, 9), RLX_F32);
  rlx_node w2 = rlx_input(g, "w2", 2, D(5, 9), RLX_F32);
  *mm = rlx_matmul(g, x, w);
  *add = rlx_add(g, *mm, b);
  switch (kind) {
    case EPI_BIAS_RELU: return rlx_relu(g, *add);
    case EPI_BIAS_GELU: return rlx_gelu(g, rlx_add(g, b, *mm)); /* bias first */
    case EPI_SILU: return rlx_silu(g, *mm);
    case EPI_RESIDUAL: return rlx_add(g, r, *mm);
    default: return rlx_mul(g, rlx_matmul(g, x, w2), rlx_silu(g, *mm)); /* up * silu(gate) */
  }
}

/* Runs outs of an epilogue graph; returns the session (caller frees). */
static rlx_session *run_epilogue(rlx_graph *g, const rlx_node *outs, int32_t n, int skip) {
  rlx_session *s = NULL;
  rlx_compile_options opt = {RLX_DEVICE_CPU, skip, 0, 0};
  assert_int_equal(rlx_compile(g, outs, n, &opt, &s), RLX_OK);
  const char *names[5] = {"x", "w", "b", "r", "w2"};
  for (int k = 0; k < 5; k++) {
    size_t len = 0;
    for (int32_t i = 0; i < rlx_session_input_count(s); i++)
      if (strcmp(rlx_session_input_name(s, i), names[k]) == 0) {
        int32_t dims[8], rank = rlx_session_input_shape(s, i, dims);
        len = 1;
        for (int32_t j = 0; j < rank; j++) len *= (size_t)dims[j];
      }
    float *v = malloc(len * sizeof(float));
    for (size_t i = 0; i < len; i++) v[i] = test_value(10 + k, i, 2.0f);
    assert_int_equal(rlx_session_set_input(s, names[k], v, len), RLX_OK);
    free(v);
  }
  assert_int_equal(rlx_session_run(s), RLX_OK);
  return s;
}

static void matmul_epilogue(void **state) {
  (void)state;
  for (int kind = EPI_BIAS_RELU; kind <= EPI_SWIGLU; kind++) {
    rlx_graph *g = rlx_graph_new();
    rlx_node add, mm, y = build_epilogue(g, kind, &add, &mm);
    rlx_session *f = run_epilogue(g, &y, 1, 0), *u = run_epilogue(g, &y, 1, 1);
    assert_int_equal(rlx_session_fused_count(f), 1);
    assert_int_equal(rlx_session_fused_count(u), 0);
    /* SwiGLU keeps the up projection as its own matmul */
    assert_int_equal(rlx_session_step_count(f), kind == EPI_SWIGLU ? 2 : 1);
    assert_memory_equal(rlx_session_output(f, 0), rlx_session_output(u, 0), 7 * 9 * sizeof(float));
    rlx_session_free(f);
    rlx_session_free(u);
    rlx_graph_free(g);
  }
}

/* relu(x.w + b) with the product or the sum also an output: the product
 * output blocks all fusion; the sum output still lets add fuse with the
 * product (relu then runs on its own).  Numbers as unfused. */
static void epilogue_needed_elsewhere(void **state) {
  (void)state;
  for (int which = 0; which < 2; which++) {
    rlx_graph *g = rlx_graph_new();
    rlx_node add, mm, outs[2];
    outs[0] = build_epilogue(g, EPI_BIAS_RELU, &add, &mm);
    outs[1] = which ? add : mm;
    rlx_session *f = run_epilogue(g, outs, 2, 0), *u = run_epilogue(g, outs, 2, 1);
    assert_int_equal(rlx_session_fused_count(f), which ? 1 : 0);
    assert_int_equal(rlx_session_step_count(f), which ? 2 : 3);
    for (int o = 0; o < 2; o++)
      assert_memory_equal(rlx_session_output(f, o), rlx_session_output(u, o), 7 * 9 * sizeof(float));
    rlx_session_free(f);
    rlx_session_free(u);
    rlx_graph_free(g);
  }
}

/* ---- bad configurations --------------------------------------------------- */

/* Both entry points refuse (c, tokens) with a message containing part. */
static void expect_error(const rlx_transformer_config *c, const float *tokens, int32_t n, const char *part) {
  float out[4096];
  rlx_status st = rlx_transformer_logits(c, tokens, n, out);
  if (st != RLX_ERR_INVALID_ARG || !strstr(rlx_last_error(), part))
    fail_msg("want an invalid-argument error mentioning '%s', got %d: %s", part, (int)st, rlx_last_error());
  st = rlx_transformer_next_logits(c, tokens, n, out);
  assert_int_equal(st, RLX_ERR_INVALID_ARG);
}

/* ... and a bad configuration leaves no cached session behind. */
static void expect_config_error(const rlx_transformer_config *c, const char *part) {
  expect_error(c, tokens_a, S_TINY, part);
  assert_int_equal(rlx_transformer_fused_count(c, S_TINY), -1);
}

static void bad_configs(void **state) {
  (void)state;
  rlx_transformer_config c;
  c = tiny(2, 0, 0), c.dim = 30;
  expect_config_error(&c, "dim (30) must equal n_heads * head_dim (4 * 8 = 32)");
  expect_config_error(&(rlx_transformer_config){32, 28, 1, 4, 7, 64, 1, 0, 0}, "head_dim must be even");
  c = tiny(2, 0, 0), c.vocab = 0;
  expect_config_error(&c, "must be at least 1");
  c = tiny(2, 0, 0), c.ffn = -3;
  expect_config_error(&c, "must be at least 1");
  c = tiny(2, 0, 0), c.n_heads = 0, c.dim = 0;
  expect_config_error(&c, "must be at least 1");
  c = tiny(-1, 0, 0);
  expect_config_error(&c, "n_layers");
  c = tiny(2, -2, 0);
  expect_config_error(&c, "window");
  expect_config_error(NULL, "config is NULL");
  c = tiny(2, 0, 0);
  expect_error(&c, tokens_a, 0, "no tokens");
  expect_error(&c, tokens_a, -3, "no tokens");
  const float bad[5][3] = {{1, 32, 2}, {1, -1, 2}, {1, 1.5f, 2}, {1, NAN, 2}, {1, INFINITY, 2}};
  for (int i = 0; i < 5; i++) expect_error(&c, bad[i], 3, "token 1 is");
  expect_error(&c, NULL, S_TINY, "NULL");
  assert_int_equal(rlx_transformer_logits(&c, tokens_a, S_TINY, NULL), RLX_ERR_INVALID_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(shape_and_finite),
      cmocka_unit_test(deterministic),
      cmocka_unit_test(causal),
      cmocka_unit_test(fused_matches_unfused),
      cmocka_unit_test(attention_block_masks),
      cmocka_unit_test(attention_block_needed_elsewhere),
      cmocka_unit_test(matmul_epilogue),
      cmocka_unit_test(epilogue_needed_elsewhere),
      cmocka_unit_test(bad_configs),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  rlx_models_clear_cache();
  return failed;
}
