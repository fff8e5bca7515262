/* test_llm_finetune_device.c - a fine-tuning object's sessions compiled for
 * the GPUs (rlx_llm_finetune_compile, src/models/llm_finetune_device.c),
 * natively: for WebGPU every step of the training plan runs on the device
 * (0 host steps) for every arch and weight type tried; for WebGL2 the plan
 * runs through the C reference executor (the shaders' C twins) and three
 * training steps (AdamW and SGD; llama, qwen2, qwen3; f32 and q8_0) give
 * the losses and adapters the CPU's rlx_llm_finetune_step gives, within
 * 1e-4 relative; the loss-only session gives the CPU's evaluation; the
 * refusals.  (WebGPU's numbers are checked under Dawn and in Chromium:
 * tests/node/llm_finetune_webgpu.test.mjs.)  Needs build/lm (make
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

#include "rlx_models.h"
#include "../../src/compile/session.h" /* rlx_session_host_summary */

#define SEQ 8
#define WINDOWS 2
#define N (SEQ * WINDOWS)
#define TOL 1e-4 /* |gpu - cpu| / max |cpu| over a pair; |gpu - cpu| / |cpu| for a loss */

static rlx_llm *open_or_fail(const char *path) {
  rlx_llm *m = NULL;
  if (rlx_llm_open_file(path, NULL, &m) != RLX_OK) fail_msg("%s: %s (run make lm-fixtures)", path, rlx_last_error());
  return m;
}

static rlx_llm_finetune_options options(rlx_optimizer_kind kind) {
  rlx_llm_finetune_options o = rlx_llm_finetune_default_options();
  o.seq = SEQ, o.rank = 2, o.targets = "attn_q,attn_v,ffn_up", o.seed = 7;
  o.optimizer.kind = kind, o.optimizer.lr = kind == RLX_OPT_SGD ? 1e-2f : 1e-3f;
  return o;
}

/* Two windows with an unscored target (weight 0, target out of range). */
static void windows(int32_t n_vocab, int32_t *ids, int32_t *targets, float *mask) {
  for (int i = 0; i < N; i++) {
    ids[i] = (i * 7 + 3) % n_vocab, targets[i] = (i * 5 + 1) % n_vocab, mask[i] = i % 5 ? 1.0f : 0.0f;
    if (i == 5) targets[i] = -100;
  }
}

/* max over every pair of max |a - b| / max |a|. */
static double pair_error(const rlx_llm_finetune *a, const rlx_llm_finetune *b) {
  double worst = 0;
  for (int32_t i = 0; i < rlx_llm_finetune_pair_count(a); i++) {
    rlx_llm_finetune_pair_info p;
    assert_int_equal(rlx_llm_finetune_pair(a, i, &p), RLX_OK);
    const size_t na = (size_t)p.rank * (size_t)p.n_in, nb = (size_t)p.n_out * (size_t)p.rank;
    float *x = malloc(2 * (na + nb) * sizeof(float)), *y = x + na + nb;
    assert_non_null(x);
    assert_int_equal(rlx_llm_finetune_get_pair(a, p.name, x, na, x + na, nb), RLX_OK);
    assert_int_equal(rlx_llm_finetune_get_pair(b, p.name, y, na, y + na, nb), RLX_OK);
    double top = 0, d = 0;
    for (size_t j = 0; j < na + nb; j++) top = fmax(top, fabs(x[j])), d = fmax(d, fabs(x[j] - y[j]));
    worst = fmax(worst, d / fmax(top, 1e-30));
    free(x);
  }
  return worst;
}

static void feed(rlx_session *s, const int32_t *ids, const int32_t *targets, const float *mask) {
  int32_t fed[N];
  for (int i = 0; i < N; i++) fed[i] = mask[i] != 0.0f ? targets[i] : 0; /* as rlx_llm_finetune_compile asks */
  assert_int_equal(rlx_session_set_input_i32(s, "ids", ids, N), RLX_OK);
  assert_int_equal(rlx_session_set_input_i32(s, "targets", fed, N), RLX_OK);
  assert_int_equal(rlx_session_set_input(s, "mask", mask, N), RLX_OK);
}

/* Three steps on the CPU and through WebGL2's plan from the same start. */
static void steps_match(const char *path, rlx_optimizer_kind kind) {
  rlx_llm *m = open_or_fail(path);
  rlx_llm_info in;
  rlx_llm_get_info(m, &in);
  rlx_llm_finetune_options o = options(kind);
  rlx_llm_finetune *cpu = NULL, *gl = NULL;
  assert_int_equal(rlx_llm_finetune_new(m, &o, &cpu), RLX_OK);
  assert_int_equal(rlx_llm_finetune_new(m, &o, &gl), RLX_OK);
  rlx_session *train = NULL, *loss = NULL;
  if (rlx_llm_finetune_compile(gl, WINDOWS, RLX_DEVICE_WEBGL, RLX_LLM_PLAN_STEP, &train) != RLX_OK ||
      rlx_llm_finetune_compile(gl, WINDOWS, RLX_DEVICE_WEBGL, RLX_LLM_PLAN_LOSS, &loss) != RLX_OK)
    fail_msg("%s: compile for WebGL2: %s", path, rlx_last_error());
  int32_t ids[N], targets[N];
  float mask[N];
  windows(in.n_vocab, ids, targets, mask);
  for (int step = 0; step < 3; step++) {
    float lc = 0, le = 0;
    assert_int_equal(rlx_llm_finetune_step(cpu, ids, targets, mask, WINDOWS, &lc), RLX_OK);
    feed(loss, ids, targets, mask);
    assert_int_equal(rlx_session_run(loss), RLX_OK); /* before the step: the loss the step reports */
    le = rlx_session_output(loss, 0)[0];
    feed(train, ids, targets, mask);
    assert_int_equal(rlx_session_run(train), RLX_OK);
    const float lg = rlx_session_output(train, 0)[0];
    const double err = pair_error(cpu, gl);
    if (fabs(lg - lc) > TOL * fabs(lc) || fabs(le - lc) > TOL * fabs(lc) || err > TOL)
      fail_msg("%s (%s) step %d: loss cpu %.7g webgl %.7g (loss-only %.7g), pairs differ by %.3g relative", path,
               kind == RLX_OPT_SGD ? "sgd" : "adamw", step, (double)lc, (double)lg, (double)le, err);
  }
  rlx_session_free(train);
  rlx_session_free(loss);
  rlx_llm_finetune_free(cpu);
  rlx_llm_finetune_free(gl);
  rlx_llm_free(m);
}

static void webgl_steps_equal_cpu(void **state) {
  (void)state;
  const char *models[] = {"build/lm/llama-f32.gguf", "build/lm/qwen2-q8_0.gguf", "build/lm/qwen3-q8_0.gguf",
                          "build/lm/llama-q4_k.gguf"};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) steps_match(models[i], i % 2 ? RLX_OPT_SGD : RLX_OPT_ADAMW);
  steps_match("build/lm/qwen3-f32.gguf", RLX_OPT_SGD);
  steps_match("build/lm/qwen2-f32.gguf", RLX_OPT_ADAMW);
}

/* Every step of the WebGPU plans on the device: training, loss and gradients alike. */
static void webgpu_plans_have_no_host_steps(void **state) {
  (void)state;
  const char *models[] = {"build/lm/llama-f32.gguf", "build/lm/llama-tied-q8_0.gguf", "build/lm/qwen2-q4_0.gguf",
                          "build/lm/qwen3-q6_k.gguf", "build/lm/qwen3-q5_1.gguf"};
  for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
    rlx_llm *m = open_or_fail(models[i]);
    rlx_llm_finetune_options o = options(RLX_OPT_ADAMW);
    o.targets = "all";
    rlx_llm_finetune *ft = NULL;
    assert_int_equal(rlx_llm_finetune_new(m, &o, &ft), RLX_OK);
    for (int32_t train = RLX_LLM_PLAN_LOSS; train <= RLX_LLM_PLAN_GRADS; train++) {
      rlx_session *s = NULL;
      if (rlx_llm_finetune_compile(ft, WINDOWS, RLX_DEVICE_WEBGPU, train, &s) != RLX_OK)
        fail_msg("%s: compile for WebGPU: %s", models[i], rlx_last_error());
      int32_t total = 0, host = -1, sync = -1;
      assert_int_equal(rlx_session_host_summary(s, &total, &host, &sync), RLX_OK);
      if (host != 0 || total < 10) fail_msg("%s: %d of %d steps on the host", models[i], (int)host, (int)total);
      rlx_session_free(s);
    }
    rlx_llm_finetune_free(ft);
    rlx_llm_free(m);
  }
}

static void refusals(void **state) {
  (void)state;
  rlx_llm *m = open_or_fail("build/lm/llama-f32.gguf");
  rlx_llm_finetune_options o = options(RLX_OPT_ADAMW);
  rlx_llm_finetune *ft = NULL;
  assert_int_equal(rlx_llm_finetune_new(m, &o, &ft), RLX_OK);
  rlx_session *s = (rlx_session *)&o;
  assert_int_equal(rlx_llm_finetune_compile(ft, 0, RLX_DEVICE_WEBGPU, 1, &s), RLX_ERR_INVALID_ARG);
  assert_null(s);
  assert_non_null(strstr(rlx_last_error(), "n_windows must lie in 1 .."));
  assert_int_equal(rlx_llm_finetune_compile(ft, 1, (rlx_device)9, 1, &s), RLX_ERR_INVALID_ARG);
  assert_non_null(strstr(rlx_last_error(), "unknown device 9"));
  assert_int_equal(rlx_llm_finetune_compile(ft, 1, RLX_DEVICE_WEBGPU, 3, &s), RLX_ERR_INVALID_ARG);
  assert_non_null(strstr(rlx_last_error(), "train must be 0, 1 or 2, got 3"));
  assert_int_equal(rlx_llm_finetune_compile(NULL, 1, RLX_DEVICE_WEBGPU, 1, &s), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_llm_finetune_compile(ft, 1, RLX_DEVICE_WEBGPU, 1, NULL), RLX_ERR_INVALID_ARG);
  rlx_llm_finetune_free(ft);
  rlx_llm_free(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(webgl_steps_equal_cpu),
      cmocka_unit_test(webgpu_plans_have_no_host_steps),
      cmocka_unit_test(refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
