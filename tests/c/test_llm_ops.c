/* test_llm_ops.c - the language-model ops beyond their op cases: a KV
 * cache and quantized weights bound once and shared by a prompt session and
 * a decode session (decoding token by token equals one run over the whole
 * sequence), rlx_session_bind_param's checks, bound memory read in place,
 * i32 params refused by set_param/get_param, the gradient refusals, shape
 * rule refusals, and run-time errors (pos < 0, bad ids). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rlx.h"
#include "rlx_gguf.h"

#include "assert_text.h"

#define E 32   /* model width */
#define HQ 4   /* query heads */
#define HKV 2  /* key/value heads */
#define HD 8   /* head dim */
#define CTX 16 /* cache positions */
#define SEQ 7  /* tokens of the reference run */
#define QT RLX_GGUF_TYPE_Q8_0

static float uniform(uint32_t *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

/* rows x cols random values quantized to QT; *words set to its i32 count. */
static int32_t *quantized(int32_t rows, int32_t cols, uint32_t seed, int32_t *words) {
  uint64_t row = 0;
  rlx_gguf_row_bytes(QT, cols, &row);
  *words = (int32_t)((row * (uint64_t)rows + 3) / 4);
  int32_t *w = calloc((size_t)*words, 4);
  float *v = malloc((size_t)rows * (size_t)cols * sizeof(float));
  for (int32_t i = 0; i < rows * cols; i++) v[i] = uniform(&seed) * 0.3f;
  assert_int_equal(rlx_gguf_quantize(QT, v, rows * cols, w, (size_t)*words * 4), RLX_OK);
  free(v);
  return w;
}

typedef struct {
  int32_t *wq, *wk, *wv, *wo;
  int32_t nq, nkv, no; /* words */
  float kc[HKV * CTX * HD], vc[HKV * CTX * HD];
} model;

/* One attention layer over S tokens: q, k, v projections (matmul_q), RoPE
 * with the position input as offset (adjacent pairs), attention_kv, output
 * projection.  x[S, E] -> y[S, E]. */
static rlx_graph *layer(int32_t S, const model *m) {
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){S, E}, RLX_F32);
  rlx_node pos = rlx_input(g, "pos", 1, (int32_t[]){1}, RLX_I32);
  rlx_node wq = rlx_param_dtype(g, "wq", 1, &m->nq, RLX_I32), wk = rlx_param_dtype(g, "wk", 1, &m->nkv, RLX_I32);
  rlx_node wv = rlx_param_dtype(g, "wv", 1, &m->nkv, RLX_I32), wo = rlx_param_dtype(g, "wo", 1, &m->no, RLX_I32);
  rlx_node kc = rlx_param(g, "k_cache", 3, (int32_t[]){HKV, CTX, HD});
  rlx_node vc = rlx_param(g, "v_cache", 3, (int32_t[]){HKV, CTX, HD});
  rlx_node heads[3];
  const rlx_node ws[3] = {wq, wk, wv};
  for (int i = 0; i < 3; i++) {
    int32_t h = i == 0 ? HQ : HKV;
    rlx_node p = rlx_matmul_q(g, x, ws[i], QT, h * HD, E, 0);
    p = rlx_transpose(g, rlx_reshape(g, p, 3, (int32_t[]){S, h, HD}), 0, 1); /* [h, S, HD] */
    heads[i] = i < 2 ? rlx_rope_ext(g, p, pos, 10000.0f, 0, 1) : p;
  }
  rlx_node a = rlx_attention_kv(g, heads[0], heads[1], heads[2], kc, vc, pos, 0.0f);
  rlx_node y = rlx_matmul_q(g, rlx_reshape(g, a, 2, (int32_t[]){S, HQ * HD}), wo, QT, E, HQ * HD, 0);
  (void)y;
  assert_int_equal(rlx_graph_status(g), RLX_OK);
  return g;
}

static rlx_session *compile_layer(int32_t S, model *m, float *kc, float *vc, int skip_fusion) {
  rlx_graph *g = layer(S, m);
  rlx_node out = rlx_graph_node_count(g) - 1;
  rlx_session *s = NULL;
  rlx_compile_options opt = {RLX_DEVICE_CPU, skip_fusion, 1, 0};
  assert_int_equal(rlx_compile(g, &out, 1, &opt, &s), RLX_OK);
  rlx_graph_free(g);
  assert_int_equal(rlx_session_bind_param(s, "wq", m->wq, (size_t)m->nq * 4), RLX_OK);
  assert_int_equal(rlx_session_bind_param(s, "wk", m->wk, (size_t)m->nkv * 4), RLX_OK);
  assert_int_equal(rlx_session_bind_param(s, "wv", m->wv, (size_t)m->nkv * 4), RLX_OK);
  assert_int_equal(rlx_session_bind_param(s, "wo", m->wo, (size_t)m->no * 4), RLX_OK);
  assert_int_equal(rlx_session_bind_param(s, "k_cache", kc, sizeof m->kc), RLX_OK);
  assert_int_equal(rlx_session_bind_param(s, "v_cache", vc, sizeof m->vc), RLX_OK);
  return s;
}

static void run_at(rlx_session *s, const float *x, int32_t S, int32_t pos, float *y) {
  assert_int_equal(rlx_session_set_input(s, "x", x, (size_t)S * E), RLX_OK);
  assert_int_equal(rlx_session_set_input_i32(s, "pos", &pos, 1), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 0, y, (size_t)S * E), RLX_OK);
}

static void assert_close(const float *got, const float *want, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++)
    if (!(fabsf(got[i] - want[i]) <= 1e-4f * (1.0f + fabsf(want[i])))) {
      print_error("%s: element %zu: %.9g vs %.9g\n", what, i, (double)got[i], (double)want[i]);
      fail();
    }
}

static model *model_new(void) {
  model *m = calloc(1, sizeof *m);
  m->wq = quantized(HQ * HD, E, 1, &m->nq);
  m->wk = quantized(HKV * HD, E, 2, &m->nkv);
  m->wv = quantized(HKV * HD, E, 3, &m->nkv);
  m->wo = quantized(E, HQ * HD, 4, &m->no);
  return m;
}

static void model_free(model *m) {
  free(m->wq), free(m->wk), free(m->wv), free(m->wo);
  free(m);
}

/* A prompt session then a decode session on one bound cache, and a decode
 * session alone token by token, match one run over all SEQ tokens. */
static void kv_cache_shared_between_sessions(void **state) {
  (void)state;
  model *m = model_new();
  static float kc_full[HKV * CTX * HD], vc_full[HKV * CTX * HD];
  float x[SEQ * E], want[SEQ * E], got[SEQ * E];
  uint32_t seed = 9;
  for (int i = 0; i < SEQ * E; i++) x[i] = uniform(&seed);
  rlx_session *full = compile_layer(SEQ, m, kc_full, vc_full, 0);
  run_at(full, x, SEQ, 0, want);

  const int32_t prompt = 4;
  rlx_session *pre = compile_layer(prompt, m, m->kc, m->vc, 0), *dec = compile_layer(1, m, m->kc, m->vc, 0);
  run_at(pre, x, prompt, 0, got);
  /* the prompt's keys sit in the caller's cache, the rest is untouched */
  assert_close(m->kc, kc_full, prompt * HD, "k cache");
  for (int i = prompt * HD; i < CTX * HD; i++) assert_true(m->kc[i] == 0.0f);
  for (int32_t t = prompt; t < SEQ; t++) run_at(dec, x + t * E, 1, t, got + t * E);
  assert_close(got, want, SEQ * E, "prompt then decode");
  assert_close(m->vc, vc_full, HKV * CTX * HD, "v cache");

  memset(m->kc, 0, sizeof m->kc), memset(m->vc, 0, sizeof m->vc);
  for (int32_t t = 0; t < SEQ; t++) run_at(dec, x + t * E, 1, t, got + t * E);
  assert_close(got, want, SEQ * E, "token by token");

  /* the same without fusion */
  rlx_session *plain = compile_layer(SEQ, m, kc_full, vc_full, 1);
  run_at(plain, x, SEQ, 0, got);
  assert_close(got, want, SEQ * E, "unfused");

  /* i32 params are bytes, not floats */
  float f[4];
  assert_int_equal(rlx_session_get_param(dec, "wo", f, (size_t)m->no), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "'wo' is an i32 param");
  assert_int_equal(rlx_session_set_param(dec, "wo", f, (size_t)m->no), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "rlx_session_bind_param");
  rlx_session_free(full), rlx_session_free(pre), rlx_session_free(dec), rlx_session_free(plain);
  model_free(m); /* the sessions never free bound memory (ASan checks) */
}

/* Bound memory is read where it is: changing it changes the next run. */
static void bound_param_read_in_place(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 1, (int32_t[]){4}, RLX_F32);
  rlx_node p = rlx_param(g, "p", 1, (int32_t[]){4});
  rlx_node y = rlx_mul(g, x, p);
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &y, 1, NULL, &s), RLX_OK);
  float buf[5] = {1, 2, 3, 4, 5}, ones[4] = {1, 1, 1, 1}, out[4];
  assert_int_equal(rlx_session_set_input(s, "x", ones, 4), RLX_OK);
  assert_int_equal(rlx_session_bind_param(s, "p", buf, sizeof buf), RLX_OK); /* larger is fine */
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 0, out, 4), RLX_OK);
  assert_true(out[3] == 4.0f);
  buf[3] = 40.0f;
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 0, out, 4), RLX_OK);
  assert_true(out[3] == 40.0f);
  const float twos[4] = {2, 2, 2, 2};
  assert_int_equal(rlx_session_set_param(s, "p", twos, 4), RLX_OK); /* writes the bound memory */
  assert_true(buf[0] == 2.0f && buf[4] == 5.0f);
  rlx_session_free(s);
  rlx_graph_free(g);
}

static void bind_param_refusals(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 1, (int32_t[]){4}, RLX_F32);
  rlx_node p = rlx_param(g, "weights", 1, (int32_t[]){4});
  rlx_node y = rlx_add(g, x, p);
  rlx_session *s = NULL;
  float buf[8];
  assert_int_equal(rlx_compile(g, &y, 1, NULL, &s), RLX_OK);
  assert_int_equal(rlx_session_bind_param(s, "weights", buf, 15), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "'weights' needs 16 bytes, got 15");
  assert_int_equal(rlx_session_bind_param(s, "weights", NULL, 16), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_session_bind_param(s, "weights", (char *)buf + 1, 16), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "aligned");
  assert_int_equal(rlx_session_bind_param(s, "nope", buf, 16), RLX_ERR_NOT_FOUND);
  assert_int_equal(rlx_session_bind_param(s, "x", buf, 16), RLX_ERR_NOT_FOUND); /* inputs are set, not bound */
  assert_int_equal(rlx_session_bind_param(NULL, "weights", buf, 16), RLX_ERR_INVALID_ARG);
  rlx_session_free(s);
  /* GPU sessions bind too (their executors upload the bound memory), with
   * the same checks. */
  for (int dev = RLX_DEVICE_WEBGPU; dev <= RLX_DEVICE_WEBGL; dev++) {
    rlx_compile_options opt = {(rlx_device)dev, 1, 0, 0};
    s = NULL;
    assert_int_equal(rlx_compile(g, &y, 1, &opt, &s), RLX_OK);
    assert_int_equal(rlx_session_bind_param(s, "weights", buf, 15), RLX_ERR_INVALID_ARG);
    assert_int_equal(rlx_session_bind_param(s, "weights", buf, 16), RLX_OK);
    rlx_session_free(s);
  }
  rlx_graph_free(g);
}

/* y = sum(op(...)) for the gradient checks. */
static rlx_node total(rlx_graph *g, rlx_node y) {
  int32_t dims[RLX_MAX_RANK], rank = rlx_node_shape(g, y, dims), axes[RLX_MAX_RANK];
  for (int32_t i = 0; i < rank; i++) axes[i] = i;
  return rlx_reduce_sum(g, y, axes, rank, 0);
}

static void gradients_refused(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  int32_t words = 17; /* 2 rows of 32 q8_0 values: 68 bytes */
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){3, 32}, RLX_F32);
  rlx_node w = rlx_input(g, "w", 1, &words, RLX_I32);
  rlx_node loss = total(g, rlx_matmul_q(g, x, w, QT, 2, 32, 0));
  rlx_node grads[2];
  assert_int_equal(rlx_grad(g, loss, &w, 1, grads), RLX_ERR_GRAPH);
  assert_contains(rlx_last_error(), "matmul_q: quantized weights have no gradient");
  assert_int_equal(rlx_grad(g, loss, &x, 1, grads), RLX_OK);
  rlx_node ids = rlx_input(g, "ids", 1, (int32_t[]){3}, RLX_I32);
  rlx_node loss2 = total(g, rlx_gather_q(g, w, ids, QT, 2, 32));
  assert_int_equal(rlx_grad(g, loss2, &w, 1, grads), RLX_ERR_GRAPH);
  assert_contains(rlx_last_error(), "gather_q: quantized weights have no gradient");
  rlx_node up = rlx_input(g, "up", 1, &words, RLX_I32);
  rlx_node loss3 = total(g, rlx_swiglu_q(g, x, w, up, QT, 2, 32));
  assert_int_equal(rlx_grad(g, loss3, &up, 1, grads), RLX_ERR_GRAPH);
  assert_contains(rlx_last_error(), "swiglu_q: quantized weights have no gradient");
  assert_int_equal(rlx_grad(g, loss3, &x, 1, grads), RLX_OK);
  rlx_graph_free(g);

  g = rlx_graph_new();
  rlx_node q = rlx_input(g, "q", 3, (int32_t[]){2, 3, 4}, RLX_F32);
  rlx_node kv = rlx_input(g, "kv", 3, (int32_t[]){2, 3, 4}, RLX_F32);
  rlx_node kc = rlx_param(g, "kc", 3, (int32_t[]){2, 8, 4}), vc = rlx_param(g, "vc", 3, (int32_t[]){2, 8, 4});
  rlx_node pos = rlx_input(g, "pos", 1, (int32_t[]){1}, RLX_I32);
  rlx_node scale = rlx_param(g, "scale", 0, NULL);
  rlx_node a = rlx_attention_kv(g, q, kv, kv, kc, vc, pos, 0.0f);
  rlx_node l = total(g, rlx_mul(g, a, scale));
  assert_int_equal(rlx_grad(g, l, &q, 1, grads), RLX_ERR_GRAPH);
  assert_contains(rlx_last_error(), "attention_kv) has no gradient");
  assert_int_equal(rlx_grad(g, l, &kc, 1, grads), RLX_ERR_GRAPH);
  assert_int_equal(rlx_grad(g, l, &scale, 1, grads), RLX_OK); /* a gradient that does not cross it */
  rlx_graph_free(g);

  /* x rounded to 8 bits (xq8) is a step function: no gradient to x */
  g = rlx_graph_new();
  x = rlx_input(g, "x", 2, (int32_t[]){3, 32}, RLX_F32);
  w = rlx_input(g, "w", 1, &words, RLX_I32);
  up = rlx_input(g, "up", 1, &words, RLX_I32);
  rlx_node in2[2] = {x, w}, in3[3] = {x, w, up};
  l = total(g, rlx_op_node(g, RLX_OP_MATMUL_Q, in2, 2, (int32_t[]){QT, 2, 32, 0, 1}, 5, NULL, 0));
  assert_int_equal(rlx_grad(g, l, &x, 1, grads), RLX_ERR_GRAPH);
  assert_contains(rlx_last_error(), "matmul_q with xq8) has no gradient");
  l = total(g, rlx_op_node(g, RLX_OP_SWIGLU_Q, in3, 3, (int32_t[]){QT, 2, 32, 1}, 4, NULL, 0));
  assert_int_equal(rlx_grad(g, l, &x, 1, grads), RLX_ERR_GRAPH);
  assert_contains(rlx_last_error(), "swiglu_q with xq8) has no gradient");
  rlx_graph_free(g);
}

/* xq8: a block of x holding NaN or an infinity makes the products it
 * reaches NaN; a block of zeros adds nothing; other blocks as rounded. */
static void xq8_blocks(void **state) {
  (void)state;
  enum { N = 3, K = 64 };
  float v[N * K], x[K], y[N];
  for (int i = 0; i < N * K; i++) v[i] = (float)((i * 37) % 19) / 19.0f - 0.5f;
  int32_t words = N * (K / 32) * 34 / 4;
  int32_t wbuf[N * (K / 32) * 34 / 4];
  assert_int_equal(rlx_gguf_quantize(QT, v, N * K, wbuf, sizeof wbuf), RLX_OK);
  for (int variant = 0; variant < 3; variant++) {
    rlx_graph *g = rlx_graph_new();
    rlx_node in[2] = {rlx_input(g, "x", 2, (int32_t[]){1, K}, RLX_F32), rlx_input(g, "w", 1, &words, RLX_I32)};
    rlx_node y_node = rlx_op_node(g, RLX_OP_MATMUL_Q, in, 2, (int32_t[]){QT, N, K, 0, 1}, 5, NULL, 0);
    rlx_session *s;
    assert_int_equal(rlx_compile(g, &y_node, 1, NULL, &s), RLX_OK);
    for (int i = 0; i < K; i++) x[i] = i < 32 ? 0.0f : (float)(i % 7) - 3.0f;
    if (variant == 1) x[40] = NAN;
    if (variant == 2) x[33] = -INFINITY;
    assert_int_equal(rlx_session_set_input(s, "x", x, K), RLX_OK);
    assert_int_equal(rlx_session_set_input_i32(s, "w", wbuf, (size_t)words), RLX_OK);
    assert_int_equal(rlx_session_run(s), RLX_OK);
    assert_int_equal(rlx_session_read_output(s, 0, y, N), RLX_OK);
    for (int n = 0; n < N; n++) {
      if (variant) {
        assert_true(isnan(y[n]));
        continue;
      }
      /* the second block's values are integers -3 .. 3 (a = 3): q = round(x 127 / 3), x' = q 3 / 127,
       * times the table's dequantized row */
      float deq[K];
      assert_int_equal(rlx_gguf_dequantize(QT, (const uint8_t *)wbuf + (size_t)n * (K / 32) * 34, (K / 32) * 34, deq, K), RLX_OK);
      double exact = 0;
      for (int i = 32; i < K; i++) exact += (double)(rintf(x[i] * (127.0f / 3.0f)) * (3.0f / 127.0f)) * deq[i];
      assert_true(fabs(y[n] - exact) <= 1e-5 * (1 + fabs(exact)));
    }
    rlx_session_free(s);
    rlx_graph_free(g);
  }
}

/* Builds one node on a fresh graph and expects the shape rule to refuse it. */
static void expect_refusal(rlx_node (*build)(rlx_graph *g, int variant), int variant, rlx_status code,
                           const char *phrase) {
  rlx_graph *g = rlx_graph_new();
  assert_int_equal(build(g, variant), RLX_NO_NODE);
  assert_int_equal(rlx_graph_status(g), code);
  assert_contains(rlx_graph_error(g), phrase);
  rlx_graph_free(g);
}

static rlx_node bad_matmul_q(rlx_graph *g, int v) {
  int32_t words = 17;
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){3, 32}, RLX_F32);
  rlx_node w = rlx_input(g, "w", 1, &words, v == 4 ? RLX_F32 : RLX_I32);
  switch (v) {
    case 0: return rlx_matmul_q(g, x, w, 10, 2, 32, 0);  /* q2_K: known, not supported */
    case 1: return rlx_matmul_q(g, x, w, 99, 2, 32, 0);
    case 2: return rlx_matmul_q(g, x, w, QT, 3, 32, 0);  /* 3 rows need 102 bytes */
    case 3: return rlx_matmul_q(g, x, w, RLX_GGUF_TYPE_Q4_K, 1, 32, 0);
    case 4: return rlx_matmul_q(g, x, w, QT, 2, 32, 0);
    case 5: return rlx_matmul_q(g, x, w, QT, 2, 32, 1);  /* trans wants x[..., 2] */
    case 7: return rlx_op_node(g, RLX_OP_MATMUL_Q, (rlx_node[]){x, w}, 2, (int32_t[]){QT, 2, 32, 0, 2}, 5, NULL, 0);
    case 8: { /* trans 1 with xq8 */
      rlx_node xt = rlx_input(g, "xt", 2, (int32_t[]){3, 2}, RLX_F32);
      return rlx_op_node(g, RLX_OP_MATMUL_Q, (rlx_node[]){xt, w}, 2, (int32_t[]){QT, 2, 32, 1, 1}, 5, NULL, 0);
    }
    case 9: { /* f16 rows of 48: not whole blocks of 32 */
      rlx_node xf = rlx_input(g, "xf", 2, (int32_t[]){3, 48}, RLX_F32), wf = rlx_input(g, "wf", 1, (int32_t[]){48}, RLX_I32);
      return rlx_op_node(g, RLX_OP_MATMUL_Q, (rlx_node[]){xf, wf}, 2, (int32_t[]){RLX_GGUF_TYPE_F16, 2, 48, 0, 1}, 5,
                         NULL, 0);
    }
    default: return rlx_gather_q(g, x, w, QT, 2, 32);    /* an f32 table */
  }
}

/* Both tables are checked, and x against cols. */
static rlx_node bad_swiglu_q(rlx_graph *g, int v) {
  int32_t words = 17, few = 16;
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){3, v == 2 ? 64 : 32}, RLX_F32);
  rlx_node gate = rlx_input(g, "gate", 1, &words, RLX_I32);
  rlx_node up = rlx_input(g, "up", 1, v == 0 ? &few : &words, v == 1 ? RLX_F32 : RLX_I32);
  return rlx_swiglu_q(g, x, gate, up, QT, 2, 32);
}

static rlx_node bad_attention_kv(rlx_graph *g, int v) {
  rlx_node q = rlx_input(g, "q", 3, (int32_t[]){v == 0 ? 3 : 4, 2, 4}, RLX_F32);
  rlx_node k = rlx_input(g, "k", 3, (int32_t[]){2, 2, 4}, RLX_F32);
  rlx_node kc = rlx_param(g, "kc", 3, (int32_t[]){2, 8, 4}), vc = rlx_param(g, "vc", 3, (int32_t[]){2, 8, 4});
  rlx_node pos = rlx_input(g, "pos", 1, (int32_t[]){1}, v == 3 ? RLX_F32 : RLX_I32);
  if (v == 1) kc = rlx_neg(g, kc);
  if (v == 2) vc = kc;
  return rlx_attention_kv(g, q, k, k, kc, vc, pos, 0.0f);
}

/* norm on matmul_q (variants 0-4) and swiglu_q (5): its flag, eps, the
 * weight's place and shape, trans. */
static rlx_node bad_norm(rlx_graph *g, int v) {
  int32_t words = 17;
  rlx_node x = rlx_input(g, "x", 2, (int32_t[]){3, v == 0 ? 2 : 32}, RLX_F32);
  rlx_node w = rlx_input(g, "w", 1, &words, RLX_I32);
  rlx_node gw = rlx_input(g, "g", 1, (int32_t[]){v == 1 ? 16 : 32}, RLX_F32);
  float eps[1] = {v == 4 ? -1.0f : 1e-5f};
  if (v == 5)
    return rlx_op_node(g, RLX_OP_SWIGLU_Q, (rlx_node[]){x, w, w, gw}, 4, (int32_t[]){QT, 2, 32, 0, 0}, 5, eps, 1);
  const int32_t trans = v == 0, norm = v == 3 ? 2 : 1;
  return rlx_op_node(g, RLX_OP_MATMUL_Q, (rlx_node[]){x, w, gw}, v == 2 ? 2 : 3, (int32_t[]){QT, 2, 32, trans, 0, norm},
                     6, eps, 1);
}

/* rope on attention_kv: its value (0), theta (1), an odd D (2). */
static rlx_node bad_rope(rlx_graph *g, int v) {
  const int32_t D = v == 2 ? 5 : 4;
  rlx_node q = rlx_input(g, "q", 3, (int32_t[]){2, 1, D}, RLX_F32), k = rlx_input(g, "k", 3, (int32_t[]){2, 1, D}, RLX_F32);
  rlx_node kc = rlx_param(g, "kc", 3, (int32_t[]){2, 8, D}), vc = rlx_param(g, "vc", 3, (int32_t[]){2, 8, D});
  rlx_node pos = rlx_input(g, "pos", 1, (int32_t[]){1}, RLX_I32);
  float f[2] = {0.0f, v == 1 ? 0.0f : 10000.0f};
  return rlx_op_node(g, RLX_OP_ATTENTION_KV, (rlx_node[]){q, k, k, kc, vc, pos}, 6, (int32_t[]){v == 0 ? 3 : 1}, 1, f, 2);
}

static void shape_rules_refuse(void **state) {
  (void)state;
  expect_refusal(bad_matmul_q, 0, RLX_ERR_INVALID_ARG, "qtype 10 (q2_K) is not a supported GGUF weight type");
  expect_refusal(bad_matmul_q, 1, RLX_ERR_INVALID_ARG, "qtype 99");
  expect_refusal(bad_matmul_q, 2, RLX_ERR_SHAPE, "take 102 bytes; input 1 holds 68");
  expect_refusal(bad_matmul_q, 3, RLX_ERR_SHAPE, "not a multiple of the q4_K block");
  expect_refusal(bad_matmul_q, 4, RLX_ERR_INVALID_ARG, "must be an i32 tensor");
  expect_refusal(bad_matmul_q, 5, RLX_ERR_SHAPE, "x's last dim is 32");
  expect_refusal(bad_matmul_q, 6, RLX_ERR_INVALID_ARG, "must be an i32 tensor");
  expect_refusal(bad_matmul_q, 7, RLX_ERR_INVALID_ARG, "xq8 must be 0 or 1, got 2");
  expect_refusal(bad_matmul_q, 8, RLX_ERR_INVALID_ARG, "it needs trans 0 and K a multiple of 32 (K 32, trans 1)");
  expect_refusal(bad_matmul_q, 9, RLX_ERR_INVALID_ARG, "it needs trans 0 and K a multiple of 32 (K 48)");
  expect_refusal(bad_swiglu_q, 0, RLX_ERR_SHAPE, "take 68 bytes; input 2 holds 64");
  expect_refusal(bad_swiglu_q, 1, RLX_ERR_INVALID_ARG, "input 2 (the q8_0 weights) must be an i32 tensor");
  expect_refusal(bad_swiglu_q, 2, RLX_ERR_SHAPE, "x must be [..., cols] (cols 32)");
  expect_refusal(bad_attention_kv, 0, RLX_ERR_SHAPE, "not a multiple of the 2 key/value heads");
  expect_refusal(bad_attention_kv, 1, RLX_ERR_GRAPH, "k_cache must be an input or param");
  expect_refusal(bad_attention_kv, 2, RLX_ERR_GRAPH, "k_cache is also given as v_cache");
  expect_refusal(bad_attention_kv, 3, RLX_ERR_INVALID_ARG, "pos");
  expect_refusal(bad_norm, 0, RLX_ERR_INVALID_ARG, "norm normalizes x[..., cols]: it needs trans 0");
  expect_refusal(bad_norm, 1, RLX_ERR_SHAPE, "norm's weight (input 2) must be f32 [32]");
  expect_refusal(bad_norm, 2, RLX_ERR_INVALID_ARG, "norm takes its weight g[32] as input 2, the last (2 inputs given)");
  expect_refusal(bad_norm, 3, RLX_ERR_INVALID_ARG, "norm must be 0 or 1, got 2");
  expect_refusal(bad_norm, 4, RLX_ERR_INVALID_ARG, "eps must be finite and >= 0");
  expect_refusal(bad_norm, 5, RLX_ERR_INVALID_ARG, "input 3 (a norm's weight) needs norm 1");
  expect_refusal(bad_rope, 0, RLX_ERR_INVALID_ARG, "rope must be 0 (none), 1 (NeoX halves) or 2 (pairs), got 3");
  expect_refusal(bad_rope, 1, RLX_ERR_INVALID_ARG, "rope needs theta > 0");
  expect_refusal(bad_rope, 2, RLX_ERR_SHAPE, "D (5) must be even");
  /* WebGPU's attention kernel rotates heads up to 128 wide: wider ones are
   * refused at compile, by name */
  rlx_graph *g = rlx_graph_new();
  const int32_t D = 256;
  rlx_node q = rlx_input(g, "q", 3, (int32_t[]){1, 1, D}, RLX_F32), k = rlx_input(g, "k", 3, (int32_t[]){1, 1, D}, RLX_F32);
  rlx_node kc = rlx_param(g, "kc", 3, (int32_t[]){1, 8, D}), vc = rlx_param(g, "vc", 3, (int32_t[]){1, 8, D});
  rlx_node pos = rlx_input(g, "pos", 1, (int32_t[]){1}, RLX_I32);
  rlx_node y = rlx_op_node(g, RLX_OP_ATTENTION_KV, (rlx_node[]){q, k, k, kc, vc, pos}, 6, (int32_t[]){2}, 1,
                           (float[]){0.0f, 10000.0f}, 2);
  rlx_compile_options opt = {RLX_DEVICE_WEBGPU, 1, 0, 0};
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &y, 1, &opt, &s), RLX_ERR_UNSUPPORTED);
  assert_contains(rlx_last_error(), "attention_kv with rope rotates heads of up to 128 values in its kernel (D = 256)");
  rlx_graph_free(g);
}

/* pos < 0 fails the run with the node named; two identical attention_kv
 * nodes both run (nothing merges them). */
static void attention_kv_runtime(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  rlx_node q = rlx_input(g, "q", 3, (int32_t[]){2, 2, 4}, RLX_F32);
  rlx_node kc = rlx_param(g, "kc", 3, (int32_t[]){2, 8, 4}), vc = rlx_param(g, "vc", 3, (int32_t[]){2, 8, 4});
  rlx_node pos = rlx_input(g, "pos", 1, (int32_t[]){1}, RLX_I32);
  rlx_node outs[2] = {rlx_attention_kv(g, q, q, q, kc, vc, pos, 0.0f), rlx_attention_kv(g, q, q, q, kc, vc, pos, 0.0f)};
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, outs, 2, NULL, &s), RLX_OK);
  assert_int_equal(rlx_session_step_count(s), 2);
  float qv[16], a[16], b[16];
  for (int i = 0; i < 16; i++) qv[i] = (float)i / 16.0f;
  int32_t p = -1;
  assert_int_equal(rlx_session_set_input(s, "q", qv, 16), RLX_OK);
  assert_int_equal(rlx_session_set_input_i32(s, "pos", &p, 1), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "(attention_kv) failed: attention_kv: pos is -1");
  p = 3;
  assert_int_equal(rlx_session_set_input_i32(s, "pos", &p, 1), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 0, a, 16), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 1, b, 16), RLX_OK);
  assert_memory_equal(a, b, sizeof a);
  float cache[64];
  assert_int_equal(rlx_session_get_param(s, "kc", cache, 64), RLX_OK);
  assert_true(cache[3 * 4 + 1] == qv[1] && cache[4 * 4 + 1] == qv[5] && cache[0] == 0.0f); /* rows at 3, 4 */
  rlx_session_free(s);
  rlx_graph_free(g);
}

static void gather_q_bad_id_fails_the_run(void **state) {
  (void)state;
  int32_t words;
  int32_t *t = quantized(3, 32, 5, &words);
  rlx_graph *g = rlx_graph_new();
  rlx_node table = rlx_param_dtype(g, "table", 1, &words, RLX_I32);
  rlx_node ids = rlx_input(g, "ids", 1, (int32_t[]){2}, RLX_I32);
  rlx_node y = rlx_gather_q(g, table, ids, QT, 3, 32);
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &y, 1, NULL, &s), RLX_OK);
  assert_int_equal(rlx_session_bind_param(s, "table", t, (size_t)words * 4), RLX_OK);
  int32_t good[2] = {2, 0}, bad[2] = {1, 3};
  float out[64], row[32];
  assert_int_equal(rlx_session_set_input_i32(s, "ids", good, 2), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  assert_int_equal(rlx_session_read_output(s, 0, out, 64), RLX_OK);
  assert_int_equal(rlx_gguf_dequantize(QT, (const char *)t + 2 * 34, 34, row, 32), RLX_OK);
  assert_memory_equal(out, row, sizeof row);
  assert_int_equal(rlx_session_set_input_i32(s, "ids", bad, 2), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_ERR_INVALID_ARG);
  assert_contains(rlx_last_error(), "outside its range");
  rlx_session_free(s);
  rlx_graph_free(g);
  free(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(kv_cache_shared_between_sessions), cmocka_unit_test(bound_param_read_in_place),
      cmocka_unit_test(bind_param_refusals),              cmocka_unit_test(gradients_refused),
      cmocka_unit_test(shape_rules_refuse),               cmocka_unit_test(attention_kv_runtime),
      cmocka_unit_test(gather_q_bad_id_fails_the_run),    cmocka_unit_test(xq8_blocks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
