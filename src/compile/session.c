/* session.c - compile a graph into a session through its device's backend
 * (backend.h) and move data in and out of it: params by name (persistent),
 * inputs by name, outputs by index; what JS executors read (host copies,
 * the plan document, the host summary). */
#include "session.h"
#include "../core/pool.h"

#include <stdio.h>
#include <string.h>


static size_t node_numel(const rlx_session *s, int32_t id) { return rlx_shape_numel(&s->plan.graph.nodes[id].shape); }

float *rlx_session_value(const rlx_session *s, int32_t id) {
  const rlx_loc *l = &s->plan.loc[id];
  switch (l->kind) {
    case RLX_LOC_ARENA: return s->arena + l->offset;
    case RLX_LOC_INPUT: return s->input_data[l->index] + l->offset;
    case RLX_LOC_PARAM: return s->param_data[l->index] + l->offset;
    case RLX_LOC_CONST: return s->plan.graph.nodes[l->index].data + l->offset;
  }
  return NULL;
}

void rlx_session_free(rlx_session *s) {
  if (!s) return;
  rlx_plan *p = &s->plan;
  for (int32_t i = 0; i < p->n_inputs; i++)
    if (s->input_data) rlx_free(s->input_data[i], node_numel(s, p->inputs[i]) * sizeof(float));
  for (int32_t i = 0; i < p->n_params; i++)
    if (s->param_data && !(s->param_bound && s->param_bound[i]))
      rlx_free(s->param_data[i], node_numel(s, p->params[i]) * sizeof(float));
  rlx_free(s->param_bound, (size_t)p->n_params);
  rlx_free(s->input_data, (size_t)p->n_inputs * sizeof(float *));
  rlx_free(s->param_data, (size_t)p->n_params * sizeof(float *));
  rlx_free(s->input_set, (size_t)p->n_inputs);
  rlx_free(s->arena, p->arena_floats * sizeof(float));
  if (s->backend && s->backend->free_state) s->backend->free_state(s);
  rlx_plan_free(p);
  rlx_free(s, sizeof *s);
}

/* Host copies of inputs, and the arena of backends that run on the host
 * (GPU backends keep their arenas on the device).  A param's host copy is
 * made when first needed (param_storage): a param the caller binds to its
 * own memory never gets one, so a model whose weights are bound (rlx_llm)
 * does not hold a second, zeroed copy of them, even for a moment. */
static rlx_status alloc_buffers(rlx_session *s) {
  rlx_plan *p = &s->plan;
  if (p->n_inputs && !(s->input_data = rlx_calloc((size_t)p->n_inputs, sizeof(float *)))) return RLX_ERR_NO_MEMORY;
  if (p->n_inputs && !(s->input_set = rlx_calloc((size_t)p->n_inputs, 1))) return RLX_ERR_NO_MEMORY;
  if (p->n_params && !(s->param_data = rlx_calloc((size_t)p->n_params, sizeof(float *)))) return RLX_ERR_NO_MEMORY;
  if (p->n_params && !(s->param_bound = rlx_calloc((size_t)p->n_params, 1))) return RLX_ERR_NO_MEMORY;
  for (int32_t i = 0; i < p->n_inputs; i++)
    if (!(s->input_data[i] = rlx_calloc(node_numel(s, p->inputs[i]), sizeof(float)))) return RLX_ERR_NO_MEMORY;
  if (s->backend->host_arena && p->arena_floats && !(s->arena = rlx_calloc(p->arena_floats, sizeof(float))))
    return RLX_ERR_NO_MEMORY;
  return RLX_OK;
}

/* The one compile path (backend.h): plan, bind to the device, buffers. */
rlx_status rlx_compile(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs,
                       const rlx_compile_options *opt, rlx_session **out) {
  rlx_compile_options defaults = {RLX_DEVICE_CPU, 0, 0, 0};
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "compile: the session out-pointer is NULL");
  *out = NULL;
  if (!opt) opt = &defaults;
  int known = 0;
  const rlx_backend *b = rlx_backend_for(opt->device, &known);
  if (!known) return rlx_error(RLX_ERR_INVALID_ARG, "compile: unknown device %d", (int)opt->device);
  if (!b) return rlx_error(RLX_ERR_UNSUPPORTED, "compile: this build has no backend for device %d", (int)opt->device);
  rlx_session *s = rlx_calloc(1, sizeof *s);
  if (!s) return rlx_error(RLX_ERR_NO_MEMORY, "compile: out of memory");
  rlx_status st = b->arena_align
                      ? rlx_plan_build_aligned(g, outputs, n_outputs, !b->fuses || opt->skip_fusion, b->arena_align,
                                               &s->plan)
                      : rlx_plan_build(g, outputs, n_outputs, !b->fuses || opt->skip_fusion, &s->plan);
  if (st != RLX_OK) {
    rlx_free(s, sizeof *s);
    return st; /* message set by the planner */
  }
  for (int32_t i = 0; b->supports_op && i < s->plan.graph.n_nodes; i++)
    if (!b->supports_op(s->plan.graph.nodes[i].op)) {
      rlx_op op = s->plan.graph.nodes[i].op;
      rlx_plan_free(&s->plan);
      rlx_free(s, sizeof *s);
      char where[64];
      snprintf(where, sizeof where, "this module's %s backend", b->name);
      return rlx_op_absent(op, "rlx_compile", where);
    }
  s->device = opt->device;
  s->backend = b;
  s->debug_poison = opt->debug_poison != 0;
  if ((st = rlx_threads_resolve(opt->threads, "compile", &s->threads)) != RLX_OK) {
    rlx_plan_free(&s->plan);
    rlx_free(s, sizeof *s);
    return st;
  }
  if (b->prepare && (st = b->prepare(s)) != RLX_OK) {
    char why[512];
    snprintf(why, sizeof why, "%s", rlx_last_error());
    rlx_session_free(s);
    return rlx_error(st, "compile for %s: %s", b->name, why);
  }
  if (alloc_buffers(s) != RLX_OK) {
    rlx_session_free(s);
    return rlx_error(RLX_ERR_NO_MEMORY, "compile: out of memory allocating session buffers");
  }
  *out = s;
  return RLX_OK;
}

/* Param i's host copy (zeros when made here); NULL when out of memory. */
static float *param_storage(rlx_session *s, int32_t i) {
  if (!s->param_data[i] && !(s->param_data[i] = rlx_calloc(node_numel(s, s->plan.params[i]), sizeof(float))))
    rlx_error(RLX_ERR_NO_MEMORY, "out of memory for the param '%s'", s->plan.graph.nodes[s->plan.params[i]].name);
  return s->param_data[i];
}

/* Index of the input (want_param 0) or param called name, or -1 (the
 * plan's graph indexes its names). */
static int32_t find_named(const rlx_session *s, int want_param, const char *name) {
  const rlx_node id = rlx_graph_find(&s->plan.graph, name);
  if (id == RLX_NO_NODE) return -1;
  const rlx_loc *l = &s->plan.loc[id];
  return l->kind == (want_param ? RLX_LOC_PARAM : RLX_LOC_INPUT) ? l->index : -1;
}

static rlx_status lookup(const rlx_session *s, const char *name, size_t len, int want_param, int32_t *index,
                         const char *what) {
  if (!s) return rlx_error(RLX_ERR_INVALID_ARG, "%s: session is NULL", what);
  if (!name) return rlx_error(RLX_ERR_INVALID_ARG, "%s: name is NULL", what);
  const int32_t *ids = want_param ? s->plan.params : s->plan.inputs;
  int32_t i = find_named(s, want_param, name);
  if (i < 0) return rlx_error(RLX_ERR_NOT_FOUND, "%s: no %s named '%s'", what, want_param ? "param" : "input", name);
  size_t want = node_numel(s, ids[i]);
  if (len != want)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: '%s' holds %zu values, got %zu", what, name, want, len);
  *index = i;
  return RLX_OK;
}

/* set_param and get_param move floats: an i32 param (raw bytes) is bound instead. */
static rlx_status refuse_i32_param(const rlx_session *s, int32_t i, const char *what) {
  if (s->plan.graph.nodes[s->plan.params[i]].dtype != RLX_I32) return RLX_OK;
  return rlx_error(RLX_ERR_INVALID_ARG, "%s: '%s' is an i32 param (raw bytes, not floats): give it memory with "
                   "rlx_session_bind_param", what, s->plan.graph.nodes[s->plan.params[i]].name);
}

rlx_status rlx_session_set_param(rlx_session *s, const char *name, const float *data, size_t len) {
  int32_t i;
  rlx_status st = lookup(s, name, len, 1, &i, "set_param");
  if (st != RLX_OK || (st = refuse_i32_param(s, i, "set_param")) != RLX_OK) return st;
  if (!data) return rlx_error(RLX_ERR_INVALID_ARG, "set_param: data is NULL");
  if (!param_storage(s, i)) return RLX_ERR_NO_MEMORY;
  memcpy(s->param_data[i], data, len * sizeof(float));
  return RLX_OK;
}

rlx_status rlx_session_get_param(const rlx_session *s, const char *name, float *data, size_t len) {
  int32_t i;
  rlx_status st = lookup(s, name, len, 1, &i, "get_param");
  if (st != RLX_OK || (st = refuse_i32_param(s, i, "get_param")) != RLX_OK) return st;
  if (!data) return rlx_error(RLX_ERR_INVALID_ARG, "get_param: data is NULL");
  if (s->param_data[i])
    memcpy(data, s->param_data[i], len * sizeof(float));
  else
    memset(data, 0, len * sizeof(float)); /* never set: zeros */
  return RLX_OK;
}

rlx_status rlx_session_bind_param(rlx_session *s, const char *name, void *data, size_t bytes) {
  if (!s) return rlx_error(RLX_ERR_INVALID_ARG, "bind_param: session is NULL");
  if (!name) return rlx_error(RLX_ERR_INVALID_ARG, "bind_param: name is NULL");
  int32_t i = find_named(s, 1, name);
  if (i < 0) return rlx_error(RLX_ERR_NOT_FOUND, "bind_param: no param named '%s'", name);
  size_t need = node_numel(s, s->plan.params[i]) * sizeof(float);
  if (!data) return rlx_error(RLX_ERR_INVALID_ARG, "bind_param: data for '%s' is NULL", name);
  if ((uintptr_t)data % sizeof(float))
    return rlx_error(RLX_ERR_INVALID_ARG, "bind_param: memory for '%s' must be 4-byte aligned", name);
  if (bytes < need)
    return rlx_error(RLX_ERR_INVALID_ARG, "bind_param: '%s' needs %zu bytes, got %zu", name, need, bytes);
  if (!s->param_bound[i]) rlx_free(s->param_data[i], need);
  s->param_data[i] = data;
  s->param_bound[i] = 1;
  return RLX_OK;
}

rlx_status rlx_session_set_input(rlx_session *s, const char *name, const float *data, size_t len) {
  int32_t i;
  rlx_status st = lookup(s, name, len, 0, &i, "set_input");
  if (st != RLX_OK) return st;
  if (!data) return rlx_error(RLX_ERR_INVALID_ARG, "set_input: data is NULL");
  if (s->plan.graph.nodes[s->plan.inputs[i]].dtype == RLX_I32) {
    int32_t *dst = (int32_t *)s->input_data[i];
    for (size_t j = 0; j < len; j++) {
      float v = data[j];
      dst[j] = (v > -2147483648.0f && v < 2147483648.0f) ? (int32_t)v : -1;
    }
  } else {
    memcpy(s->input_data[i], data, len * sizeof(float));
  }
  s->input_set[i] = 1;
  return RLX_OK;
}

rlx_status rlx_session_set_input_i32(rlx_session *s, const char *name, const int32_t *data, size_t len) {
  int32_t i;
  rlx_status st = lookup(s, name, len, 0, &i, "set_input_i32");
  if (st != RLX_OK) return st;
  if (!data) return rlx_error(RLX_ERR_INVALID_ARG, "set_input_i32: data is NULL");
  if (s->plan.graph.nodes[s->plan.inputs[i]].dtype == RLX_I32) {
    memcpy(s->input_data[i], data, len * sizeof(int32_t));
  } else {
    for (size_t j = 0; j < len; j++) s->input_data[i][j] = (float)data[j];
  }
  s->input_set[i] = 1;
  return RLX_OK;
}

rlx_status rlx_session_run(rlx_session *s) {
  if (!s) return rlx_error(RLX_ERR_INVALID_ARG, "run: session is NULL");
  if (!s->backend->run)
    return rlx_error(RLX_ERR_UNSUPPORTED, "run: run %s sessions through %s", s->backend->name,
                     s->backend->runner ? s->backend->runner : "their executor");
  for (int32_t i = 0; i < s->plan.n_inputs; i++)
    if (!s->input_set[i] && s->plan.input_needed[i])
      return rlx_error(RLX_ERR_STATE, "run: input '%s' has not been set", s->plan.graph.nodes[s->plan.inputs[i]].name);
  for (int32_t i = 0; i < s->plan.n_params; i++)
    if (!param_storage(s, i)) return RLX_ERR_NO_MEMORY;
  s->ran = 0;
  rlx_status st = s->backend->run(s);
  if (st == RLX_OK) s->ran = 1;
  return st;
}

int32_t rlx_session_output_count(const rlx_session *s) { return s ? s->plan.n_user_outputs : 0; }

int32_t rlx_session_output_shape(const rlx_session *s, int32_t i, int32_t *dims) {
  if (!s || i < 0 || i >= s->plan.n_user_outputs) return -1;
  const rlx_shape *sh = &s->plan.graph.nodes[s->plan.outputs[i]].shape;
  if (dims) memcpy(dims, sh->dims, (size_t)sh->rank * sizeof(int32_t));
  return sh->rank;
}

size_t rlx_session_output_len(const rlx_session *s, int32_t i) {
  if (!s || i < 0 || i >= s->plan.n_user_outputs) return 0;
  return node_numel(s, s->plan.outputs[i]);
}

const float *rlx_session_output(const rlx_session *s, int32_t i) {
  if (!s || i < 0 || i >= s->plan.n_user_outputs || !s->ran) return NULL;
  return rlx_session_value(s, s->plan.outputs[i]);
}

rlx_status rlx_session_read_output(const rlx_session *s, int32_t i, float *dst, size_t len) {
  if (!s) return rlx_error(RLX_ERR_INVALID_ARG, "read_output: session is NULL");
  if (i < 0 || i >= s->plan.n_user_outputs)
    return rlx_error(RLX_ERR_NOT_FOUND, "read_output: output %d does not exist (%d outputs)", (int)i, (int)s->plan.n_user_outputs);
  if (!s->ran) return rlx_error(RLX_ERR_STATE, "read_output: the session has not run successfully");
  size_t n = node_numel(s, s->plan.outputs[i]);
  if (!dst || len != n) return rlx_error(RLX_ERR_INVALID_ARG, "read_output: output %d holds %zu values, got a buffer of %zu", (int)i, n, len);
  memcpy(dst, rlx_session_value(s, s->plan.outputs[i]), n * sizeof(float));
  return RLX_OK;
}

size_t rlx_session_arena_bytes(const rlx_session *s) { return s ? s->plan.arena_floats * sizeof(float) : 0; }
int32_t rlx_session_step_count(const rlx_session *s) { return s ? s->plan.n_steps : 0; }
int32_t rlx_session_fused_count(const rlx_session *s) { return s ? s->plan.n_fused : 0; }
int32_t rlx_session_input_count(const rlx_session *s) { return s ? s->plan.n_inputs : 0; }
int32_t rlx_session_param_count(const rlx_session *s) { return s ? s->plan.n_params : 0; }
const char *rlx_session_input_name(const rlx_session *s, int32_t i) {
  return (s && i >= 0 && i < s->plan.n_inputs) ? s->plan.graph.nodes[s->plan.inputs[i]].name : NULL;
}
int32_t rlx_session_input_shape(const rlx_session *s, int32_t i, int32_t *dims) {
  if (!s || i < 0 || i >= s->plan.n_inputs) return -1;
  const rlx_shape *sh = &s->plan.graph.nodes[s->plan.inputs[i]].shape;
  if (dims) memcpy(dims, sh->dims, (size_t)sh->rank * sizeof(int32_t));
  return sh->rank;
}
rlx_dtype rlx_session_input_dtype(const rlx_session *s, int32_t i) {
  return (s && i >= 0 && i < s->plan.n_inputs) ? s->plan.graph.nodes[s->plan.inputs[i]].dtype : RLX_F32;
}
const char *rlx_session_param_name(const rlx_session *s, int32_t i) {
  return (s && i >= 0 && i < s->plan.n_params) ? s->plan.graph.nodes[s->plan.params[i]].name : NULL;
}
size_t rlx_session_param_len(const rlx_session *s, int32_t i) {
  return (s && i >= 0 && i < s->plan.n_params) ? node_numel(s, s->plan.params[i]) : 0;
}

/* ---- what JS executors read (include/rlx.h) ---------------------------- */

const char *rlx_session_plan_json(const rlx_session *s, size_t *len) {
  if (len) *len = 0;
  if (!s) {
    rlx_error(RLX_ERR_INVALID_ARG, "plan: session is NULL");
    return NULL;
  }
  if (!s->backend->plan_json) {
    rlx_error(RLX_ERR_INVALID_ARG, "plan: %s sessions have no plan document", s->backend->name);
    return NULL;
  }
  return s->backend->plan_json((rlx_session *)s, len);
}

int rlx_session_requires_host_execution(const rlx_session *s) {
  int32_t host = 0;
  if (s && s->backend->host_summary) s->backend->host_summary(s, &host, NULL);
  return host > 0;
}

rlx_status rlx_session_host_summary(const rlx_session *s, int32_t *steps_total, int32_t *host_steps,
                                    int32_t *sync_points) {
  if (!s) return rlx_error(RLX_ERR_INVALID_ARG, "host_summary: session is NULL");
  int32_t host = s->plan.n_steps, sync = 0; /* on the host: everything, no GPU round trips */
  if (s->backend->host_summary) s->backend->host_summary(s, &host, &sync);
  if (steps_total) *steps_total = s->plan.n_steps;
  if (host_steps) *host_steps = host;
  if (sync_points) *sync_points = sync;
  return RLX_OK;
}

const float *rlx_session_input_data(const rlx_session *s, int32_t i) {
  if (!s || i < 0 || i >= s->plan.n_inputs || !s->input_set || !s->input_set[i]) return NULL;
  return s->input_data[i];
}

const float *rlx_session_param_data(rlx_session *s, int32_t i) {
  if (!s || i < 0 || i >= s->plan.n_params || !s->param_data) return NULL;
  return param_storage(s, i);
}
