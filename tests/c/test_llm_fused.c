/* test_llm_fused.c - the fused step graphs (llm_graph.c with fuse: the
 * rms_norms inside matmul_q / swiglu_q, the rotations inside attention_kv;
 * what the WebGPU steps run) on the CPU: the plain graph's logits over a
 * prompt step and decoded tokens, for llama (adjacent pairs, separate
 * output), qwen2 (NeoX halves, q/k/v biases) and qwen3 (per-head q/k
 * norms), with 4 L + 1 fewer ops: no rms_norm but qwen3's per-head ones,
 * no rope; and with a LoRA adapter on every target (its inputs normed for
 * it, gate and up as pieces), which WebGPU plans too. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/ir/graph.h"
#include "../../src/models/llm.h"
#include "lora_files.h"

#define N_CTX 64
#define PROMPT 16 /* a step size (rlx_llm_step_sizes) */
#define DECODED 3

static rlx_llm *open_or_fail(const char *path, const rlx_llm_lora *lora) {
  rlx_llm_options opt = {.n_ctx = N_CTX, .lora = lora, .n_lora = lora != NULL};
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, &opt, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  return m;
}

static int32_t count_op(const rlx_graph *g, rlx_op op) {
  int32_t n = 0;
  for (int32_t i = 0; i < g->n_nodes; i++) n += g->nodes[i].op == op;
  return n;
}

/* m's step of n tokens, fused or plain, compiled for the CPU and bound to
 * m's weights and cache; its rms_norm and rope counts in *norms, *ropes. */
static rlx_session *step(rlx_llm *m, int32_t n, int fuse, int32_t *norms, int32_t *ropes) {
  rlx_graph *g = NULL;
  rlx_node logits;
  assert_int_equal(rlx_llm_build_step(m, n, fuse, &g, &logits), RLX_OK);
  *norms = count_op(g, RLX_OP_RMS_NORM);
  *ropes = count_op(g, RLX_OP_ROPE);
  rlx_compile_options opt = {RLX_DEVICE_CPU, 0, 0, 0};
  rlx_session *s = NULL;
  rlx_status st = rlx_compile(g, &logits, 1, &opt, &s);
  rlx_graph_free(g);
  if (st != RLX_OK) fail_msg("compile: %s", rlx_last_error());
  if (rlx_llm_bind_params(m, s) != RLX_OK) fail_msg("bind: %s", rlx_last_error());
  return s;
}

static const float *run(rlx_session *s, const int32_t *ids, int32_t n, int32_t pos) {
  assert_int_equal(rlx_session_set_input_i32(s, "ids", ids, (size_t)n), RLX_OK);
  assert_int_equal(rlx_session_set_input_i32(s, "pos", &pos, 1), RLX_OK);
  assert_int_equal(rlx_session_run(s), RLX_OK);
  return rlx_session_output(s, 0);
}

static void fused_equals_plain(const char *path, const rlx_llm_lora *lora) {
  rlx_llm *fm = open_or_fail(path, lora), *pm = open_or_fail(path, lora); /* each its own cache */
  rlx_llm_info in;
  rlx_llm_get_info(fm, &in);
  const int32_t L = in.n_layer, per_head = in.arch && strcmp(in.arch, "qwen3") == 0 ? 2 * L : 0;
  const int32_t for_lora = lora ? 2 * L : 0; /* fused: x normed for the q/k/v and the gate/up adapters */
  int32_t fn, fr, pn, pr;
  rlx_session *fp = step(fm, PROMPT, 1, &fn, &fr), *pp = step(pm, PROMPT, 0, &pn, &pr);
  assert_int_equal(pn, 2 * L + 1 + per_head);
  assert_int_equal(pr, 2 * L);
  assert_int_equal(fn, per_head + for_lora);
  assert_int_equal(fr, 0);
  rlx_session *f1 = step(fm, 1, 1, &fn, &fr), *p1 = step(pm, 1, 0, &pn, &pr);
  assert_int_equal(pn - fn + pr - fr, 4 * L + 1 - for_lora);

  int32_t ids[PROMPT + DECODED];
  for (int32_t i = 0; i < PROMPT + DECODED; i++) ids[i] = (i * 53 + 7) % in.n_vocab;
  for (int32_t t = 0; t <= DECODED; t++) {
    const int32_t n = t == 0 ? PROMPT : 1, pos = t == 0 ? 0 : PROMPT + t - 1;
    const float *f = run(t == 0 ? fp : f1, ids + pos, n, pos), *p = run(t == 0 ? pp : p1, ids + pos, n, pos);
    double scale = 0, worst = 0;
    for (int32_t v = 0; v < in.n_vocab; v++) scale = fmax(scale, fabs(p[v]));
    for (int32_t v = 0; v < in.n_vocab; v++) worst = fmax(worst, fabs(f[v] - p[v]));
    if (!(worst <= 1e-4 * (1.0 + scale)))
      fail_msg("%s, step %d (pos %d): fused logits differ from the plain graph's by %g (scale %g)", path, (int)t,
               (int)pos, worst, scale);
  }
  rlx_session_free(fp);
  rlx_session_free(pp);
  rlx_session_free(f1);
  rlx_session_free(p1);
  rlx_llm_free(fm);
  rlx_llm_free(pm);
}

static void llama_pairs(void **state) {
  (void)state;
  fused_equals_plain("build/lm/llama-q8_0.gguf", NULL);
}

static void qwen2_neox_biases(void **state) {
  (void)state;
  fused_equals_plain("build/lm/qwen2-q4_0.gguf", NULL);
}

static void qwen3_head_norms(void **state) {
  (void)state;
  fused_equals_plain("build/lm/qwen3-q4_k.gguf", NULL);
}

/* Every target of every layer adapted (f32 on qwen2, f16 on qwen3). */
static void lora_every_target(void **state) {
  (void)state;
  const char *paths[] = {"build/lm/qwen2-f32.gguf", "build/lm/qwen3-q4_k.gguf"};
  for (int k = 0; k < 2; k++) {
    rlx_llm *m = open_or_fail(paths[k], NULL);
    rlx_llm_info in;
    rlx_llm_get_info(m, &in);
    lora_file f;
    lora_begin(&f, in.arch, "adapter", "lora");
    lora_alpha(&f, 2.0f);
    lora_pairs(&f, &in, LORA_ALL_TARGETS, 2, k ? RLX_GGUF_TYPE_F16 : RLX_GGUF_TYPE_F32, 0, 9);
    rlx_llm_free(m);
    size_t size;
    unsigned char *buf = lora_finish(&f, &size);
    rlx_llm_lora l = {NULL, buf, size, 1.0f};
    fused_equals_plain(paths[k], &l);
    /* WebGPU plans every op of it (the browser runs it: tests/node) */
    m = open_or_fail(paths[k], &l);
    rlx_session *s = NULL;
    if (rlx_llm_compile_step(m, 0, RLX_DEVICE_WEBGPU, 1, &s) != RLX_OK) fail_msg("WebGPU: %s", rlx_last_error());
    rlx_session_free(s);
    rlx_llm_free(m);
    free(buf);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(llama_pairs),
      cmocka_unit_test(qwen2_neox_biases),
      cmocka_unit_test(qwen3_head_norms),
      cmocka_unit_test(lora_every_target),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
