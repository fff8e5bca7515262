/* fuzz_graph.c - libFuzzer target: bytes -> graph (graph_decode.c), then
 * compile and run it on the CPU (with or without fusion and poisoning),
 * compile it for WebGL2 (run by the reference executor) and WebGPU and
 * make their plan documents, append the backward pass and run it, and
 * compile a training step (fresh graph, optimizer from the bytes) and run
 * it twice.  Errors are fine; crashes, sanitizer reports, leaks and errors
 * without a message are not. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "graph_decode.h"
#include "../../src/webgl/gl_plan.h"
#include "../../src/webgpu/webgpu_plan.h"

static void run_session(rlx_session *s, uint32_t seed, int runs) {
  rlx_status st = fz_fill_session(s, seed);
  fz_check_status(st, "set input/param");
  for (int r = 0; st == RLX_OK && r < runs; r++) {
    st = rlx_session_run(s);
    fz_check_status(st, "run");
  }
  if (st != RLX_OK) return;
  volatile float sink = 0;
  for (int32_t i = 0; i < rlx_session_output_count(s); i++) {
    const float *y = rlx_session_output(s, i);
    size_t n = rlx_session_output_len(s, i);
    if (!y && n) abort();
    for (size_t k = 0; k < n; k++) sink += y[k];
  }
  (void)sink;
}

static void compile_for(const rlx_graph *g, const rlx_node *outs, int32_t n_out, rlx_device dev, uint8_t flags) {
  rlx_compile_options o = {dev, flags & 1, (flags >> 1) & 1};
  rlx_session *s = NULL;
  rlx_status st = rlx_compile(g, outs, n_out, &o, &s);
  fz_check_status(st, "compile");
  if (st != RLX_OK) return;
  if (dev == RLX_DEVICE_WEBGPU) {
    size_t len = 0;
    if (!rlx_session_webgpu_plan(s, &len)) fz_check_status(RLX_ERR_STATE, "webgpu plan");
  } else {
    run_session(s, flags, 1);
    if (dev == RLX_DEVICE_WEBGL && !rlx_session_webgl_plan(s, NULL)) fz_check_status(RLX_ERR_STATE, "webgl plan");
  }
  rlx_session_free(s);
}

/* A scalar loss from node y: itself, or its mean over every axis. */
static rlx_node scalar_loss(rlx_graph *g, rlx_node y) {
  int32_t rank;
  size_t n = fz_numel(g, y, &rank);
  if (n == 1 && rank == 0) return y;
  int32_t axes[RLX_MAX_RANK];
  for (int32_t i = 0; i < rank; i++) axes[i] = i;
  return rlx_reduce_mean(g, y, axes, rank, 0);
}

static int32_t pick_f32(fz_graph *f, fz_bytes *b) {
  for (int tries = 0; tries < 4; tries++) {
    int32_t k = fz_byte(b) % f->n;
    if (f->kind[k] != FZ_INPUT_I32) return k;
  }
  for (int32_t k = f->n - 1; k >= 0; k--)
    if (f->kind[k] != FZ_INPUT_I32) return k;
  return -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_graph f;
  fz_build(data, size, &f);
  if (!f.g) return 0;
  if (rlx_graph_status(f.g) == RLX_OK && f.n > 0) {
    fz_bytes b = f.rest;
    rlx_node outs[3];
    int32_t n_out = 1 + fz_byte(&b) % 3;
    for (int32_t i = 0; i < n_out; i++) outs[i] = f.nodes[f.n - 1 - fz_byte(&b) % f.n];
    compile_for(f.g, outs, n_out, RLX_DEVICE_CPU, f.flags);
    if (f.flags & 4) compile_for(f.g, outs, n_out, RLX_DEVICE_WEBGL, f.flags);
    if (f.flags & 8) compile_for(f.g, outs, n_out, RLX_DEVICE_WEBGPU, f.flags);
    /* Backward: d loss / d (params and f32 inputs up to the loss). */
    int32_t at = pick_f32(&f, &b);
    if (at >= 0) {
      rlx_node loss = scalar_loss(f.g, f.nodes[at]), wrt[FZ_MAX_NODES], grads[FZ_MAX_NODES + 1];
      int32_t n_wrt = 0;
      for (int32_t k = 0; k <= at; k++)
        if (f.kind[k] == FZ_PARAM || f.kind[k] == FZ_INPUT_F32) wrt[n_wrt++] = f.nodes[k];
      if (n_wrt > 0 && loss != RLX_NO_NODE) {
        rlx_status st = rlx_grad_with_loss(f.g, loss, wrt, n_wrt, grads);
        fz_check_status(st, "grad");
        if (st == RLX_OK) {
          compile_for(f.g, grads, n_wrt + 1, RLX_DEVICE_CPU, f.flags);
          if (f.flags & 16) compile_for(f.g, grads, n_wrt + 1, RLX_DEVICE_WEBGL, f.flags);
          if (f.flags & 32) compile_for(f.g, grads, n_wrt + 1, RLX_DEVICE_WEBGPU, f.flags);
        }
      }
    }
  }
  rlx_graph_free(f.g);

  /* A training step over a fresh copy of the graph. */
  fz_build(data, size, &f);
  if (!f.g) return 0;
  if (rlx_graph_status(f.g) == RLX_OK && f.n > 0 && f.n_params > 0) {
    fz_bytes b = f.rest; /* the bytes the first pass read: outputs, then the loss node */
    for (int32_t i = 1 + fz_byte(&b) % 3; i > 0; i--) fz_byte(&b);
    int32_t at = pick_f32(&f, &b);
    rlx_node loss = at >= 0 ? scalar_loss(f.g, f.nodes[at]) : RLX_NO_NODE;
    uint8_t o = fz_byte(&b);
    rlx_optimizer opt = {(rlx_optimizer_kind)(o & 3), 0.01f, 0.9f, 0, 0, 0, (o & 4) ? 0.01f : 0};
    rlx_device dev = (o >> 3) % 3 == 1 ? RLX_DEVICE_WEBGL : (o >> 3) % 3 == 2 ? RLX_DEVICE_WEBGPU : RLX_DEVICE_CPU;
    rlx_compile_options copt = {dev, (f.flags & 1) || dev != RLX_DEVICE_CPU, 0};
    rlx_session *s = NULL;
    if (loss != RLX_NO_NODE) {
      rlx_status st = rlx_compile_train(f.g, loss, f.params, f.n_params, &opt, &copt, &s);
      fz_check_status(st, "compile_train");
      if (st == RLX_OK && dev != RLX_DEVICE_WEBGPU) run_session(s, o, 2);
      if (st == RLX_OK && dev == RLX_DEVICE_WEBGPU && !rlx_session_webgpu_plan(s, NULL))
        fz_check_status(RLX_ERR_STATE, "webgpu plan");
      rlx_session_free(s);
    }
  }
  rlx_graph_free(f.g);
  return 0;
}
