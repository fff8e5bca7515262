/* webgl_cases.h - one op case (tests/c/op_case.h) compiled twice, for the
 * CPU and for RLX_DEVICE_WEBGL, with the same seeded inputs set on both and
 * the CPU run done: the native test (test_webgl_plan.c) then runs the WebGL
 * plan through the C reference executor, the browser test
 * (tests/browser/webgl.test.mjs, through tests/c/wasm_webgl.c) through
 * web/runtime/webgl.js, and both compare with the CPU output. */
#ifndef RLX_TEST_WEBGL_CASES_H
#define RLX_TEST_WEBGL_CASES_H

#include "op_case.h"

typedef struct {
  const op_case *c;
  rlx_graph *g;
  rlx_session *cpu, *gl;
  rlx_status status;   /* RLX_OK when both sessions are ready and the CPU ran */
  int pending;         /* the WebGL compile refused an op that has no lowering yet */
  int fused;           /* ... a fused op (never lowered: WebGL plans skip fusion) or a CPU-only op */
  char message[512];
  int32_t n_inputs;
  float *inputs[RLX_MAX_INPUTS]; /* as filled; i32 inputs hold int32 bits */
  size_t input_n[RLX_MAX_INPUTS];
  int input_i32[RLX_MAX_INPUTS];
  float *cpu_out;
  size_t n_out;
} webgl_case;

/* Prepares w for case c (WebGL session compiled with debug_poison). */
rlx_status webgl_case_prepare(webgl_case *w, const op_case *c);
void webgl_case_free(webgl_case *w);
/* Sets the WebGL2 session's inputs again as prepared (an op with a side
 * effect, such as adam_update, has written some of them). */
rlx_status webgl_case_refeed(webgl_case *w);

/* The tolerance a WebGL result must meet against the CPU: 1e-5 relative,
 * or the case's own tolerance when larger (a case loosens it where the CPU
 * kernels use fast approximations, which the GLSL twins do not). */
double webgl_case_tol(const op_case *c);
/* max |got - want| / (1 + |want|) (NaN matches NaN, equal infinities
 * match), its index in *worst. */
double webgl_case_max_err(const float *got, const float *want, size_t n, size_t *worst);

#endif
