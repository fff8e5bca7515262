/* test_alloc_sweep.c - allocation failures everywhere: for every n, the
 * n-th allocation of a whole job fails (once, then allocations succeed
 * again) and the job must end with RLX_ERR_NO_MEMORY, never another status
 * or a crash, and leave no block live (tests/c/check_alloc.c).  Jobs: the
 * mnist-cnn training step (build, grad, optimizer, compile, run), the same
 * step compiled for WebGL2 (run by the reference executor) and WebGPU with
 * their plan documents, and the transformer forward through its cached
 * entry point.
 * Usage: test_alloc_sweep [stride] (default 1: every n). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "check_alloc.h"
#include "rlx_models.h"
#include "../../src/webgl/gl_plan.h"
#include "../../src/webgpu/webgpu_plan.h"

static long stride = 1;

enum { BATCH = 2 };

static rlx_status cnn_train_step_on(rlx_device device) {
  rlx_vision_info info;
  rlx_status st = rlx_vision_info_get("mnist-cnn", &info);
  if (st != RLX_OK) return st;
  rlx_graph *g = rlx_graph_new();
  if (!g) return RLX_ERR_NO_MEMORY;
  rlx_node logits, loss, params[RLX_VISION_MAX_PARAMS];
  st = rlx_vision_build(g, "mnist-cnn", BATCH, &logits, &loss);
  for (int32_t i = 0; st == RLX_OK && i < info.n_params; i++) params[i] = rlx_graph_find(g, info.param_names[i]);
  rlx_session *s = NULL;
  rlx_optimizer opt = {RLX_OPT_ADAM, 0.01f, 0, 0, 0, 0, 0};
  rlx_compile_options copt = {device, device != RLX_DEVICE_CPU, 0, 0};
  if (st == RLX_OK) st = rlx_compile_train(g, loss, params, info.n_params, &opt, &copt, &s);
  rlx_graph_free(g);
  static float x[BATCH * 784], flat[6000];
  int32_t labels[BATCH];
  if (st == RLX_OK) st = rlx_vision_synthetic_batch("mnist-cnn", 1, BATCH, x, BATCH * info.input_len, labels, BATCH);
  if (st == RLX_OK) st = rlx_vision_init_params("mnist-cnn", 1, flat, info.param_flat_len);
  for (int32_t i = 0, at = 0; st == RLX_OK && i < info.n_params; at += (int32_t)info.param_sizes[i++])
    st = rlx_session_set_param(s, info.param_names[i], flat + at, info.param_sizes[i]);
  if (st == RLX_OK) st = rlx_session_set_input(s, "x", x, BATCH * info.input_len);
  if (st == RLX_OK) st = rlx_session_set_input_i32(s, "labels", labels, BATCH);
  if (device == RLX_DEVICE_WEBGPU) {
    if (st == RLX_OK && !rlx_session_webgpu_plan(s, NULL)) st = RLX_ERR_NO_MEMORY;
  } else {
    if (st == RLX_OK) st = rlx_session_run(s);
    if (st == RLX_OK) st = rlx_session_run(s);
  }
  if (device == RLX_DEVICE_WEBGL && st == RLX_OK && !rlx_session_webgl_plan(s, NULL)) st = RLX_ERR_NO_MEMORY;
  rlx_session_free(s);
  return st;
}

static rlx_status cnn_train_step(void) { return cnn_train_step_on(RLX_DEVICE_CPU); }
static rlx_status cnn_train_step_webgl(void) { return cnn_train_step_on(RLX_DEVICE_WEBGL); }
static rlx_status cnn_train_step_webgpu(void) { return cnn_train_step_on(RLX_DEVICE_WEBGPU); }

static rlx_status transformer_forward(void) {
  rlx_transformer_config cfg = {16, 8, 1, 2, 4, 16, 7, 0, 0};
  float tokens[3] = {1, 5, 9}, logits[16];
  rlx_status st = rlx_transformer_next_logits(&cfg, tokens, 3, logits);
  rlx_models_clear_cache();
  return st;
}

/* Counts the job's allocations, then fails each in turn: that one only
 * (sticky 0) or that one and every later one (sticky 1). */
static void sweep(const char *name, rlx_status (*job)(void)) {
  if (!check_alloc_active()) skip();
  size_t live = check_alloc_live_blocks();
  check_alloc_fail_at(-1, 0);
  assert_int_equal(job(), RLX_OK);
  long total = check_alloc_count();
  assert_int_equal(check_alloc_live_blocks(), live);
  assert_true(total > 0);
  long runs = 0, mismatches = check_alloc_mismatches();
  for (long k = 0; k <= 2 * total + 1; k += stride, runs++) {
    long n = k % (total + 1);
    int sticky = k > total;
    check_alloc_fail_at(n, sticky);
    rlx_status st = job();
    long refused = check_alloc_refused();
    check_alloc_fail_at(-1, 0);
    if (refused ? st != RLX_ERR_NO_MEMORY : st != RLX_OK) {
      print_error("%s: allocation %ld of %ld failed (sticky %d, %ld refused): status %d (%s): %s\n", name, n, total,
                  sticky, refused, (int)st, rlx_status_name(st), rlx_last_error());
      fail();
    }
    if (check_alloc_live_blocks() != live) {
      print_error("%s: allocation %ld of %ld failed: %zu block(s) leaked\n", name, n, total,
                  check_alloc_live_blocks() - live);
      fail();
    }
  }
  assert_int_equal(check_alloc_mismatches(), mismatches); /* every osize right */
  printf("%s: %ld allocations, %ld failure runs (stride %ld)\n", name, total, runs, stride);
}

static void cnn_training_step_sweep(void **state) {
  (void)state;
  sweep("mnist-cnn train step", cnn_train_step);
}

static void cnn_training_step_gpu_plans_sweep(void **state) {
  (void)state;
  sweep("mnist-cnn train step, WebGL2", cnn_train_step_webgl);
  sweep("mnist-cnn train step, WebGPU", cnn_train_step_webgpu);
}

static void transformer_forward_sweep(void **state) {
  (void)state;
  sweep("transformer forward", transformer_forward);
}

int main(int argc, char **argv) {
  if (argc > 1) stride = atol(argv[1]) > 0 ? atol(argv[1]) : 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(cnn_training_step_sweep),
      cmocka_unit_test(cnn_training_step_gpu_plans_sweep),
      cmocka_unit_test(transformer_forward_sweep),
  };
  return cmocka_run_group_tests_name("allocation failure sweep", tests, NULL, NULL);
}
