/* wasm_webgl.c - exports the op cases prepared for WebGL2 (webgl_cases.h)
 * from build/wasm-tests/webgl_cases.wasm, for tests/browser/webgl.test.mjs:
 * each case's WebGL session (its plan goes to web/runtime/webgl.js through
 * src/web/exports_webgl.c, linked in too), its inputs and the CPU output.
 *
 *   h = webgl_case_prepare(i, max_width);  status, pending, message, session,
 *   n_inputs, input_name/ptr/len/i32 (k), n_out, cpu_out;  webgl_case_free(h)
 *   s = webgl_big_session(n, max_width): x[n] -> neg(x) for WebGL2, x set
 *   to 0, 1, ..., n-1 (texture layout and limits tests); webgl_session_free
 *   s = webgl_train_session(device): loss = sum of (w x + b - t)^2 over 5
 *   values (adds of narrowed values, no reduce op), Adam lr 0.05; x, t, w set */
#include <stdlib.h>
#include <string.h>

#include "../../src/webgl/gl_plan.h"
#include "webgl_cases.h"

#define EXPORT(name) __attribute__((export_name(#name)))

EXPORT(webgl_case_count) int32_t w_count(void) { return opcase_gpu_count(); }
EXPORT(webgl_case_name) const char *w_name(int32_t i) {
  return (i >= 0 && i < opcase_gpu_count()) ? opcase_get(i)->name : "";
}
EXPORT(webgl_case_tol) double w_tol(int32_t i) { return (i >= 0 && i < opcase_gpu_count()) ? opcase_get(i)->tol : 0; }

/* Case i, its WebGL textures at most max_width wide (0: the default). */
EXPORT(webgl_case_prepare) webgl_case *w_prepare(int32_t i, int32_t max_width) {
  if (i < 0 || i >= opcase_gpu_count()) return NULL;
  webgl_case *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  if (webgl_case_prepare(w, opcase_get(i)) == RLX_OK && max_width > 0) {
    rlx_status st = rlx_gl_prepare(w->gl, max_width);
    if (st != RLX_OK) {
      w->status = st;
      strncpy(w->message, rlx_last_error(), sizeof w->message - 1);
    }
  }
  return w;
}
EXPORT(webgl_case_status) int32_t w_status(const webgl_case *w) { return w->status; }
/* 0, 1 (no lowering yet) or 2 (a fused op, never lowered). */
EXPORT(webgl_case_pending) int32_t w_pending(const webgl_case *w) { return w->fused ? 2 : w->pending ? 1 : 0; }
EXPORT(webgl_case_message) const char *w_message(const webgl_case *w) { return w->message; }
EXPORT(webgl_case_session) rlx_session *w_session(const webgl_case *w) { return w->gl; }
EXPORT(webgl_case_n_inputs) int32_t w_n_inputs(const webgl_case *w) { return w->n_inputs; }
EXPORT(webgl_case_input_name) const char *w_input_name(const webgl_case *w, int32_t k) {
  return rlx_session_input_name(w->gl, k);
}
EXPORT(webgl_case_input_ptr) const float *w_input_ptr(const webgl_case *w, int32_t k) { return w->inputs[k]; }
EXPORT(webgl_case_input_len) size_t w_input_len(const webgl_case *w, int32_t k) { return w->input_n[k]; }
EXPORT(webgl_case_input_i32) int32_t w_input_i32(const webgl_case *w, int32_t k) { return w->input_i32[k]; }
EXPORT(webgl_case_n_out) size_t w_n_out(const webgl_case *w) { return w->n_out; }
EXPORT(webgl_case_cpu_out) const float *w_cpu_out(const webgl_case *w) { return w->cpu_out; }
EXPORT(webgl_case_free) void w_free(webgl_case *w) {
  if (!w) return;
  webgl_case_free(w);
  free(w);
}

EXPORT(webgl_big_session) rlx_session *w_big_session(int32_t n, int32_t max_width) {
  rlx_graph *g = rlx_graph_new();
  rlx_node x = rlx_input(g, "x", 1, &n, RLX_F32), y = rlx_neg(g, x);
  rlx_compile_options opt = {RLX_DEVICE_WEBGL, 0, 0, 0};
  rlx_session *s = NULL;
  if (rlx_compile(g, &y, 1, &opt, &s) == RLX_OK && rlx_gl_prepare(s, max_width) == RLX_OK) {
    float *xs = malloc((size_t)n * sizeof(float));
    for (int32_t i = 0; xs && i < n; i++) xs[i] = (float)i;
    if (xs) rlx_session_set_input(s, "x", xs, (size_t)n);
    free(xs);
  }
  rlx_graph_free(g);
  return s;
}
EXPORT(webgl_session_free) void w_session_free(rlx_session *s) { rlx_session_free(s); }

/* A training step with elementwise ops only (no reduction: the loss is the
 * sum of 5 squared errors written as adds of narrowed values). */
EXPORT(webgl_train_session) rlx_session *w_train_session(int32_t device) {
  rlx_graph *g = rlx_graph_new();
  int32_t n = 5;
  rlx_node x = rlx_input(g, "x", 1, &n, RLX_F32), t = rlx_input(g, "t", 1, &n, RLX_F32);
  rlx_node w = rlx_param(g, "w", 1, &n), b = rlx_param(g, "b", 1, &n); /* no broadcast: its gradient would need reduce_sum */
  rlx_node d = rlx_sub(g, rlx_add(g, rlx_mul(g, w, x), b), t), sq = rlx_mul(g, d, d);
  rlx_node loss = rlx_narrow(g, sq, 0, 0, 1);
  for (int32_t i = 1; i < n; i++) loss = rlx_add(g, loss, rlx_narrow(g, sq, 0, i, 1));
  rlx_node params[2] = {w, b};
  rlx_optimizer opt = {RLX_OPT_ADAM, 0.05f, 0, 0, 0, 0, 0};
  rlx_compile_options copt = {device ? RLX_DEVICE_WEBGL : RLX_DEVICE_CPU, 0, 0, 0};
  rlx_session *s = NULL;
  if (rlx_compile_train(g, loss, params, 2, &opt, &copt, &s) == RLX_OK) {
    float xs[5] = {1, -2, 0.5f, 3, -1}, ts[5] = {2, -3, 1, 4, 0}, ws[5] = {0.1f, 0.2f, -0.3f, 0.4f, 0.5f};
    rlx_session_set_input(s, "x", xs, 5);
    rlx_session_set_input(s, "t", ts, 5);
    rlx_session_set_param(s, "w", ws, 5);
  }
  rlx_graph_free(g);
  return s;
}
EXPORT(webgl_session_run) int32_t w_session_run(rlx_session *s) { return rlx_session_run(s); }
EXPORT(webgl_session_output) const float *w_session_output(const rlx_session *s, int32_t i) {
  return rlx_session_output(s, i);
}
