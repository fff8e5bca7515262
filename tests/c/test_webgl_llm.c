/* test_webgl_llm.c - a language model's step graph (src/models/llm_graph.c)
 * compiled for WebGL2 and run through the C reference executor (the
 * shaders' C twins, poisoned pass outputs), natively: for small fixtures
 * of make lm-fixtures (build/lm: llama with adjacent-pair RoPE, qwen2 with
 * biases, qwen3 with per-head norms, a tied output read by gather_q and
 * matmul_q from one words texture; weight types q4_0, q8_0, q4_K, q5_1,
 * q6_K, f16), a 4-token prompt step and three 1-token steps whose sessions
 * share one KV cache (bound params written in place by attention_kv) give
 * the logits the CPU's rlx_llm_eval gives for the same tokens, and the same
 * greedy token wherever the CPU's top-2 margin is not a rounding.  The plan
 * keeps every 2-D weight as a words texture and writes the caches in place.
 * With a LoRA adapter on every target too (f32 and f16 tables, the scaled
 * intermediate, gate and up as pieces).  Needs build/lm (make
 * lm-fixtures). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/models/llm.h"
#include "../../src/webgl/gl_plan.h"
#include "lora_files.h"

#define N_CTX 32
#define TOL 1e-4 /* |gl - cpu| / (1 + max |cpu|) over the logits */

static rlx_llm *open_or_fail(const char *path, const rlx_llm_lora *lora) {
  rlx_llm_options opt = {.n_ctx = N_CTX, .lora = lora, .n_lora = lora != NULL};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  return m;
}

/* The step of n tokens compiled for WebGL2, bound to m's weights and cache. */
static rlx_session *webgl_step(rlx_llm *m, int32_t n) {
  rlx_graph *g = NULL;
  rlx_node logits;
  rlx_session *s = NULL;
  assert_int_equal(rlx_llm_build_step(m, n, 0, &g, &logits), RLX_OK);
  rlx_compile_options opt = {RLX_DEVICE_WEBGL, 0, 1, 0};
  rlx_status st = rlx_compile(g, &logits, 1, &opt, &s);
  rlx_graph_free(g);
  if (st != RLX_OK) fail_msg("compile for WebGL2: %s", rlx_last_error());
  if (rlx_llm_bind_params(m, s) != RLX_OK) fail_msg("bind: %s", rlx_last_error());
  return s;
}

/* Every i32 param is a words texture, and every pass writing a param
 * writes a cache in place. */
static void check_plan(rlx_session *s) {
  const rlx_gl_state *w = rlx_gl_state_of(s);
  const rlx_plan *p = &s->plan;
  int words = 0, in_place = 0;
  for (int32_t k = 0; k < p->n_params; k++) {
    const rlx_node_t *n = &p->graph.nodes[p->params[k]];
    const rlx_gl_texture *t = &w->tex[w->node_tex[p->params[k]]];
    assert_int_equal(t->words, n->dtype == RLX_I32);
    words += t->words;
  }
  for (int32_t i = 0; i < w->n_passes; i++) {
    const rlx_gl_planned_pass *pp = &w->passes[i];
    if (w->tex[pp->out_tex].role != RLX_GLK_PARAM) continue;
    assert_true(pp->in_place);
    assert_string_equal(pp->pass.shader, "llm_kv_write");
    assert_int_equal(strncmp(p->graph.nodes[w->tex[pp->out_tex].node].name, "cache.", 6), 0);
    in_place++;
  }
  assert_true(words >= 7);
  assert_true(in_place >= 4); /* k and v of at least two layers */
  const char *json = rlx_session_webgl_plan(s, NULL);
  assert_non_null(json);
  assert_non_null(strstr(json, "\"words\":1"));
}

static int32_t argmax(const float *x, int32_t n, float *margin) {
  int32_t best = 0;
  float second = -INFINITY;
  for (int32_t i = 1; i < n; i++) {
    if (x[i] > x[best]) {
      second = x[best];
      best = i;
    } else if (x[i] > second) {
      second = x[i];
    }
  }
  *margin = x[best] - second;
  return best;
}

/* state: a fixture's path, with "+lora-f32" or "+lora-f16" after it for
 * an adapter of that type on every target. */
static void step_matches_cpu(void **state) {
  char path[64];
  snprintf(path, sizeof path, "%s", (const char *)*state);
  char *plus = strchr(path, '+');
  unsigned char *adapter = NULL;
  rlx_llm_lora l = {0};
  if (plus) {
    *plus = 0;
    rlx_llm *m = open_or_fail(path, NULL);
    lora_file f;
    lora_begin(&f, m->info.arch, "adapter", "lora");
    lora_pairs(&f, &m->info, LORA_ALL_TARGETS, 4, strstr(plus + 1, "f16") ? RLX_GGUF_TYPE_F16 : RLX_GGUF_TYPE_F32, 0, 3);
    rlx_llm_free(m);
    adapter = lora_finish(&f, &l.size);
    l.data = adapter;
    l.scale = 1.0f;
  }
  rlx_llm *cpu = open_or_fail(path, plus ? &l : NULL), *gl = open_or_fail(path, plus ? &l : NULL);
  const int32_t vocab = gl->info.n_vocab;
  float *want = malloc((size_t)vocab * sizeof(float));
  rlx_session *s4 = webgl_step(gl, 4), *s1 = webgl_step(gl, 1);
  check_plan(s4);
  int32_t ids[7];
  for (int32_t i = 0; i < 7; i++) ids[i] = (int32_t)((37u * (unsigned)i + 11u) % (unsigned)vocab);
  double worst = 0;
  for (int32_t step = 0; step < 4; step++) {
    const int32_t n = step == 0 ? 4 : 1, pos = step == 0 ? 0 : 3 + step;
    rlx_session *s = step == 0 ? s4 : s1;
    assert_int_equal(rlx_llm_eval(cpu, ids + pos, (size_t)n, want), RLX_OK);
    assert_int_equal(rlx_session_set_input_i32(s, "ids", ids + pos, (size_t)n), RLX_OK);
    assert_int_equal(rlx_session_set_input_i32(s, "pos", &pos, 1), RLX_OK);
    if (rlx_session_run(s) != RLX_OK) fail_msg("%s step %d: %s", path, (int)step, rlx_last_error());
    assert_int_equal(rlx_session_output_len(s, 0), (size_t)vocab);
    const float *got = rlx_session_output(s, 0);
    double scale = 0, err = 0;
    for (int32_t i = 0; i < vocab; i++) scale = fmax(scale, fabs(want[i]));
    for (int32_t i = 0; i < vocab; i++) err = fmax(err, fabs((double)got[i] - want[i]) / (1 + scale));
    if (!(err <= TOL)) fail_msg("%s step %d: logits differ by %.3g (scale %.3g)", path, (int)step, err, scale);
    worst = fmax(worst, err);
    float margin, unused;
    int32_t top = argmax(want, vocab, &margin);
    if (margin > 1e-2f) assert_int_equal(argmax(got, vocab, &unused), top);
  }
  printf("  %s: 4 steps, worst logit difference %.2e\n", (const char *)*state, worst);
  rlx_session_free(s4);
  rlx_session_free(s1);
  free(want);
  rlx_llm_free(cpu);
  rlx_llm_free(gl);
  free(adapter);
}

int main(void) {
  static const char *const models[] = {"build/lm/llama-q4_0.gguf", "build/lm/qwen2-q8_0.gguf",
                                       "build/lm/qwen3-q4_k.gguf", "build/lm/llama-tied-q8_0.gguf",
                                       "build/lm/qwen2-q5_1.gguf", "build/lm/qwen3-q6_k.gguf",
                                       "build/lm/llama-f16.gguf", "build/lm/qwen2-q8_0.gguf+lora-f32",
                                       "build/lm/qwen3-q4_k.gguf+lora-f16"};
  struct CMUnitTest tests[sizeof models / sizeof models[0]];
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    tests[i].name = models[i];
    tests[i].test_func = step_matches_cpu;
    tests[i].setup_func = tests[i].teardown_func = NULL;
    tests[i].initial_state = (void *)models[i];
  }
  return cmocka_run_group_tests_name("LM steps on WebGL2 (C reference executor) vs the CPU", tests, NULL, NULL);
}
