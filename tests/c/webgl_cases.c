/* webgl_cases.c - builds one op case for the CPU and for WebGL2 with the
 * same inputs and runs the CPU side (see webgl_cases.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webgl_cases.h"

static unsigned seed_of(const op_case *c, int32_t k) {
  unsigned h = 2166136261u;
  for (const char *p = c->name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  return h + 7919u * (unsigned)k;
}

static rlx_status fail(webgl_case *w, rlx_status st, const char *what) {
  w->status = st;
  snprintf(w->message, sizeof w->message, "%s: %s", what, rlx_last_error());
  return st;
}

static rlx_status set_input(rlx_session *s, const char *name, const float *data, size_t n, int i32) {
  return i32 ? rlx_session_set_input_i32(s, name, (const int32_t *)data, n) : rlx_session_set_input(s, name, data, n);
}

rlx_status webgl_case_prepare(webgl_case *w, const op_case *c) {
  memset(w, 0, sizeof *w);
  w->c = c;
  if (!(w->g = rlx_graph_new())) return fail(w, RLX_ERR_NO_MEMORY, "graph");
  rlx_node out = c->build(w->g, c);
  rlx_compile_options cpu_opt = {RLX_DEVICE_CPU, 1, 0, 0}, gl_opt = {RLX_DEVICE_WEBGL, 1, 1, 0};
  rlx_status st = rlx_compile(w->g, &out, 1, &cpu_opt, &w->cpu);
  if (st != RLX_OK) return fail(w, st, "compile for the CPU");
  if ((st = rlx_compile(w->g, &out, 1, &gl_opt, &w->gl)) != RLX_OK) {
    fail(w, st, "compile for WebGL2");
    /* refused by design: fused ops, the CPU-only language-model ops and
     * the variants that run on the CPU and WebGPU only (norm, rope) */
    const int by_design = strstr(w->message, "on the CPU and WebGPU only") != NULL;
    w->pending = st == RLX_ERR_UNSUPPORTED && (strstr(w->message, "has no WebGL2 lowering") != NULL || by_design);
    w->fused = w->pending && (strstr(w->message, "(fused_") != NULL || strstr(w->message, "a CPU-only op") != NULL || by_design);
    return st;
  }
  w->n_inputs = rlx_session_input_count(w->cpu);
  if (w->n_inputs > RLX_MAX_INPUTS) return fail(w, RLX_ERR_STATE, "too many inputs");
  for (int32_t k = 0; k < w->n_inputs; k++) {
    int32_t dims[RLX_MAX_RANK], rank = rlx_session_input_shape(w->cpu, k, dims);
    const char *name = rlx_session_input_name(w->cpu, k);
    size_t n = ref_numel(rank, dims);
    w->input_n[k] = n;
    w->input_i32[k] = rlx_session_input_dtype(w->cpu, k) == RLX_I32;
    if (!(w->inputs[k] = malloc((n ? n : 1) * sizeof(float)))) return fail(w, RLX_ERR_NO_MEMORY, "inputs");
    if (c->fill) {
      c->fill(c, k, w->inputs[k], n, seed_of(c, k));
    } else {
      float lo = c->lo == c->hi ? -1.0f : c->lo, hi = c->lo == c->hi ? 1.0f : c->hi;
      for (size_t i = 0; i < n; i++) w->inputs[k][i] = opcase_uniform(seed_of(c, k), i, lo, hi);
    }
    if ((st = set_input(w->cpu, name, w->inputs[k], n, w->input_i32[k])) != RLX_OK) return fail(w, st, "set_input (CPU)");
    if ((st = set_input(w->gl, name, w->inputs[k], n, w->input_i32[k])) != RLX_OK) return fail(w, st, "set_input (WebGL2)");
  }
  if ((st = rlx_session_run(w->cpu)) != RLX_OK) return fail(w, st, "run on the CPU");
  w->n_out = rlx_session_output_len(w->cpu, 0);
  if (!(w->cpu_out = malloc((w->n_out ? w->n_out : 1) * sizeof(float)))) return fail(w, RLX_ERR_NO_MEMORY, "outputs");
  rlx_session_read_output(w->cpu, 0, w->cpu_out, w->n_out);
  w->status = RLX_OK;
  return RLX_OK;
}

rlx_status webgl_case_refeed(webgl_case *w) {
  for (int32_t k = 0; k < w->n_inputs; k++) {
    rlx_status st = set_input(w->gl, rlx_session_input_name(w->cpu, k), w->inputs[k], w->input_n[k], w->input_i32[k]);
    if (st != RLX_OK) return st;
  }
  return RLX_OK;
}

void webgl_case_free(webgl_case *w) {
  for (int32_t k = 0; k < RLX_MAX_INPUTS; k++) free(w->inputs[k]);
  free(w->cpu_out);
  rlx_session_free(w->cpu);
  rlx_session_free(w->gl);
  rlx_graph_free(w->g);
  memset(w, 0, sizeof *w);
}

double webgl_case_tol(const op_case *c) { return c->tol > 1e-5 ? c->tol : 1e-5; }

double webgl_case_max_err(const float *got, const float *want, size_t n, size_t *worst) {
  double max_err = 0;
  if (worst) *worst = 0;
  for (size_t i = 0; i < n; i++) {
    double g = got[i], v = want[i];
    double err = (isnan(g) || isnan(v)) ? (isnan(g) && isnan(v) ? 0 : INFINITY)
                 : (isinf(v) || isinf(g)) ? (g == v ? 0 : INFINITY)
                 : fabs(g - v) / (1.0 + fabs(v));
    if (!(err <= max_err)) {
      max_err = err;
      if (worst) *worst = i;
    }
  }
  return max_err;
}
