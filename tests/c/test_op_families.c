/* test_op_families.c - a build that leaves an op family out
 * (src/core/families.h) refuses that family's ops by name at compile time.
 * The Makefile links this test with src/webgpu/prepare.c built without the
 * vision ops (RLX_WITHOUT_VISION_OPS) ahead of the library: the WebGPU
 * backend then has no conv2d lowering while the CPU keeps its kernel, so
 * compiling a conv2d graph for WebGPU fails before any lowering runs, naming
 * the op, the backend and the module that has it; the CPU compiles it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "rlx.h"
#include "assert_text.h"

static rlx_graph *conv_graph(rlx_node *y) {
  rlx_graph *g = rlx_graph_new();
  const int32_t xd[4] = {1, 1, 4, 4}, wd[4] = {1, 1, 3, 3};
  rlx_node x = rlx_input(g, "x", 4, xd, RLX_F32), w = rlx_param(g, "w", 4, wd);
  rlx_conv2d_params p = {1, 1, 0, 0, 1, 1, 1};
  *y = rlx_relu(g, rlx_conv2d(g, x, w, &p));
  return g;
}

static void conv2d_refused_by_name_on_webgpu(void **state) {
  (void)state;
  rlx_node y;
  rlx_graph *g = conv_graph(&y);
  assert_true(y != RLX_NO_NODE);
  rlx_compile_options opt = {RLX_DEVICE_WEBGPU, 0, 0, 0};
  rlx_session *s = (rlx_session *)1;
  assert_int_equal(rlx_compile(g, &y, 1, &opt, &s), RLX_ERR_UNSUPPORTED);
  assert_null(s);
  assert_contains(rlx_last_error(), "rlx_compile: op conv2d is not in this module's WebGPU backend");
  assert_contains(rlx_last_error(), "(a vision op: those are in rlx_web.wasm)");
  rlx_graph_free(g);
}

static void conv2d_compiles_on_the_cpu(void **state) {
  (void)state;
  rlx_node y;
  rlx_graph *g = conv_graph(&y);
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &y, 1, NULL, &s), RLX_OK);
  rlx_session_free(s);
  rlx_graph_free(g);
}

/* Ops of the families it has still compile for WebGPU. */
static void relu_compiles_on_webgpu(void **state) {
  (void)state;
  rlx_graph *g = rlx_graph_new();
  const int32_t d[2] = {2, 3};
  rlx_node y = rlx_relu(g, rlx_input(g, "x", 2, d, RLX_F32));
  rlx_compile_options opt = {RLX_DEVICE_WEBGPU, 0, 0, 0};
  rlx_session *s = NULL;
  assert_int_equal(rlx_compile(g, &y, 1, &opt, &s), RLX_OK);
  rlx_session_free(s);
  rlx_graph_free(g);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(conv2d_refused_by_name_on_webgpu),
      cmocka_unit_test(conv2d_compiles_on_the_cpu),
      cmocka_unit_test(relu_compiles_on_webgpu),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
