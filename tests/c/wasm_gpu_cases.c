/* wasm_gpu_cases.c - exports for tests/node/webgpu_ops.test.mjs from
 * build/wasm-tests/opcases.wasm: every op case (op_case.h) compiled for the
 * CPU and for WebGPU from the same graph with the same inputs; the CPU run's
 * output is the expectation and the WebGPU session (inputs set as host
 * copies) is run by web/runtime/webgpu.js.  Also the training-step models
 * (the four vision models and the MLP) compiled for both devices with the
 * same initial params, and the transformer's training graph for the host
 * summary.
 *
 *   h = gpucase_prepare(i): then gpucase_cpu_status/_message/_out/_n_out,
 *   gpucase_gpu_status/_message/_session, gpucase_op(h); gpucase_free(h)
 *   t = gputrain_new(model, batch, lr): model 0..3 = rlx_vision_slug(i),
 *   4 = the MLP, 5 = the transformer (compile only), 6 = a scalar toy
 *   (loss = (w x + b - t)^2, elementwise ops only); gputrain_cpu_step(t,
 *   step) sets that step's batch and returns the CPU loss; the batch is then
 *   in gputrain_input_* for the GPU session; gputrain_free(t) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/compile/session.h"
#include "../../src/ir/graph.h"
#include "../../src/models/transformer.h"
#include "op_case.h"
#include "rlx_models.h"

#define EXPORT(name) __attribute__((export_name(#name)))

typedef struct {
  rlx_status cpu_status, gpu_status;
  char cpu_message[512], gpu_message[512];
  float *cpu_out;
  size_t n_out;
  rlx_session *gpu;
  rlx_op op; /* the op of the case's output node */
} gpu_case;

/* Same seeding as tests/c/harness.c (the values only need to be shared by
 * both devices here). */
static unsigned case_seed(const op_case *c, int32_t k) {
  unsigned h = 2166136261u;
  for (const char *p = c->name; *p; p++) h = (h ^ (unsigned char)*p) * 16777619u;
  return h + 7919u * (unsigned)k;
}

static void note(char *dst, const char *what) { snprintf(dst, 512, "%s: %s", what, rlx_last_error()); }

static rlx_status set_input(rlx_session *s, int32_t k, const float *data, size_t n) {
  const char *name = rlx_session_input_name(s, k);
  return rlx_session_input_dtype(s, k) == RLX_I32 ? rlx_session_set_input_i32(s, name, (const int32_t *)data, n)
                                                  : rlx_session_set_input(s, name, data, n);
}

static void prepare(const op_case *c, gpu_case *r) {
  rlx_graph *g = rlx_graph_new();
  rlx_session *cpu = NULL;
  float *inputs[RLX_MAX_INPUTS] = {0};
  rlx_node out = c->build(g, c);
  const rlx_node_t *on = rlx_graph_node(g, out);
  r->op = on ? on->op : RLX_OP_COUNT;
  rlx_compile_options copt = {RLX_DEVICE_CPU, 0, 0, 0}, gopt = {RLX_DEVICE_WEBGPU, 1, 0, 0};
  if ((r->cpu_status = rlx_compile(g, &out, 1, &copt, &cpu)) != RLX_OK) note(r->cpu_message, "compile");
  if ((r->gpu_status = rlx_compile(g, &out, 1, &gopt, &r->gpu)) != RLX_OK) note(r->gpu_message, "compile for WebGPU");
  if (r->cpu_status != RLX_OK) goto done;
  for (int32_t k = 0; k < rlx_session_input_count(cpu) && k < RLX_MAX_INPUTS; k++) {
    int32_t dims[RLX_MAX_RANK], rank = rlx_session_input_shape(cpu, k, dims);
    size_t n = ref_numel(rank, dims);
    inputs[k] = malloc((n ? n : 1) * sizeof(float));
    if (c->fill) {
      c->fill(c, k, inputs[k], n, case_seed(c, k));
    } else {
      float lo = c->lo == c->hi ? -1.0f : c->lo, hi = c->lo == c->hi ? 1.0f : c->hi;
      for (size_t i = 0; i < n; i++) inputs[k][i] = opcase_uniform(case_seed(c, k), i, lo, hi);
    }
    if ((r->cpu_status = set_input(cpu, k, inputs[k], n)) != RLX_OK) {
      note(r->cpu_message, "set_input");
      goto done;
    }
    if (r->gpu && (r->gpu_status = set_input(r->gpu, k, inputs[k], n)) != RLX_OK) note(r->gpu_message, "set_input");
  }
  if ((r->cpu_status = rlx_session_run(cpu)) != RLX_OK) {
    note(r->cpu_message, "run");
    goto done;
  }
  r->n_out = rlx_session_output_len(cpu, 0);
  r->cpu_out = malloc((r->n_out ? r->n_out : 1) * sizeof(float));
  rlx_session_read_output(cpu, 0, r->cpu_out, r->n_out);
done:
  for (int32_t k = 0; k < RLX_MAX_INPUTS; k++) free(inputs[k]);
  rlx_session_free(cpu);
  rlx_graph_free(g);
}

EXPORT(gpucase_count) int32_t w_gpucase_count(void) { return opcase_gpu_count(); }
EXPORT(gpucase_name) const char *w_gpucase_name(int32_t i) {
  const op_case *c = (i >= 0 && i < opcase_gpu_count()) ? opcase_get(i) : NULL;
  return c ? c->name : "";
}
EXPORT(gpucase_prepare) gpu_case *w_gpucase_prepare(int32_t i) {
  if (i < 0 || i >= opcase_gpu_count()) return NULL;
  gpu_case *r = calloc(1, sizeof *r);
  if (r) prepare(opcase_get(i), r);
  return r;
}
EXPORT(gpucase_cpu_status) int32_t w_gpucase_cpu_status(const gpu_case *r) { return r->cpu_status; }
EXPORT(gpucase_cpu_message) const char *w_gpucase_cpu_message(const gpu_case *r) { return r->cpu_message; }
EXPORT(gpucase_cpu_out) const float *w_gpucase_cpu_out(const gpu_case *r) { return r->cpu_out; }
EXPORT(gpucase_n_out) size_t w_gpucase_n_out(const gpu_case *r) { return r->cpu_out ? r->n_out : 0; }
EXPORT(gpucase_gpu_status) int32_t w_gpucase_gpu_status(const gpu_case *r) { return r->gpu_status; }
EXPORT(gpucase_gpu_message) const char *w_gpucase_gpu_message(const gpu_case *r) { return r->gpu_message; }
EXPORT(gpucase_gpu_session) rlx_session *w_gpucase_gpu_session(const gpu_case *r) { return r->gpu; }
EXPORT(gpucase_op) const char *w_gpucase_op(const gpu_case *r) { return r->op < RLX_OP_COUNT ? rlx_op_name(r->op) : ""; }
EXPORT(gpucase_free) void w_gpucase_free(gpu_case *r) {
  if (!r) return;
  free(r->cpu_out);
  rlx_session_free(r->gpu);
  free(r);
}

/* ---- training parity ----------------------------------------------------- */

#define MAX_TRAIN_INPUTS 2
typedef struct {
  int32_t model, batch;
  rlx_session *cpu, *gpu;
  rlx_status gpu_status;
  char message[512];
  int32_t n_inputs;
  const char *names[MAX_TRAIN_INPUTS];
  float *data[MAX_TRAIN_INPUTS];
  size_t len[MAX_TRAIN_INPUTS];
  int is_i32[MAX_TRAIN_INPUTS];
} gpu_train;

/* The MLP of rlx_models.h (src/models/mlp.c): relu(x w1 + b1) w2 + b2,
 * loss = sum of squared errors; rows = batch. */
enum { MLP_IN = 12, MLP_HID = 16, MLP_OUT = 4 };
static rlx_node build_mlp(rlx_graph *g, int32_t rows, rlx_node *p) {
  const int32_t axes[2] = {0, 1};
  rlx_node x = rlx_input(g, "x", 2, (const int32_t[]){rows, MLP_IN}, RLX_F32);
  rlx_node t = rlx_input(g, "t", 2, (const int32_t[]){rows, MLP_OUT}, RLX_F32);
  p[0] = rlx_param(g, "w1", 2, (const int32_t[]){MLP_IN, MLP_HID});
  p[1] = rlx_param(g, "b1", 1, (const int32_t[]){MLP_HID});
  p[2] = rlx_param(g, "w2", 2, (const int32_t[]){MLP_HID, MLP_OUT});
  p[3] = rlx_param(g, "b2", 1, (const int32_t[]){MLP_OUT});
  rlx_node h = rlx_relu(g, rlx_add(g, rlx_matmul(g, x, p[0]), p[1]));
  rlx_node y = rlx_add(g, rlx_matmul(g, h, p[2]), p[3]);
  rlx_node d = rlx_sub(g, y, t);
  return rlx_reduce_sum(g, rlx_mul(g, d, d), axes, 2, 0);
}

/* A scalar model with elementwise ops only: loss = (w x + b - t)^2. */
static rlx_node build_toy(rlx_graph *g, rlx_node *p) {
  rlx_node x = rlx_input(g, "x", 0, NULL, RLX_F32), t = rlx_input(g, "t", 0, NULL, RLX_F32);
  p[0] = rlx_param(g, "w", 0, NULL);
  p[1] = rlx_param(g, "b", 0, NULL);
  rlx_node d = rlx_sub(g, rlx_add(g, rlx_mul(g, p[0], x), p[1]), t);
  return rlx_mul(g, d, d);
}

/* The transformer's next-token training graph: mean cross-entropy of the
 * logits against "labels" [n_tokens]; every param is trained. */
static rlx_status build_transformer(rlx_graph *g, rlx_node *loss, rlx_node *params, int32_t *n_params, int32_t cap) {
  rlx_transformer_config cfg = {32, 16, 2, 2, 8, 32, 7, 0, 1};
  rlx_node logits;
  const int32_t n_tokens = 8, axes[1] = {0};
  rlx_status st = rlx_transformer_build(g, &cfg, n_tokens, 0, &logits);
  if (st != RLX_OK) return st;
  rlx_node labels = rlx_input(g, "labels", 1, &n_tokens, RLX_I32);
  *loss = rlx_reduce_mean(g, rlx_softmax_cross_entropy(g, logits, labels), axes, 1, 0);
  *n_params = 0;
  for (int32_t id = 0; id < g->n_nodes && *n_params < cap; id++)
    if (g->nodes[id].op == RLX_OP_PARAM) params[(*n_params)++] = id;
  return rlx_graph_status(g);
}

static void train_init_params(gpu_train *t, rlx_session *s) {
  if (t->model < 4) {
    rlx_vision_info info;
    const char *slug = rlx_vision_slug(t->model);
    rlx_vision_info_get(slug, &info);
    float *flat = malloc(info.param_flat_len * sizeof(float)), *at = flat;
    rlx_vision_init_params(slug, 42, flat, info.param_flat_len);
    for (int32_t k = 0; k < info.n_params; k++, at += info.param_sizes[k - 1])
      rlx_session_set_param(s, info.param_names[k], at, info.param_sizes[k]);
    free(flat);
  } else if (t->model == 6) {
    const float w = 0.5f, b = -0.25f;
    rlx_session_set_param(s, "w", &w, 1);
    rlx_session_set_param(s, "b", &b, 1);
  } else if (t->model == 4) {
    const char *names[4] = {"w1", "b1", "w2", "b2"};
    const size_t sizes[4] = {MLP_IN * MLP_HID, MLP_HID, MLP_HID * MLP_OUT, MLP_OUT};
    float buf[MLP_IN * MLP_HID];
    for (int k = 0; k < 4; k++) {
      for (size_t i = 0; i < sizes[k]; i++) buf[i] = opcase_uniform(100u + (unsigned)k, i, -0.4f, 0.4f);
      rlx_session_set_param(s, names[k], buf, sizes[k]);
    }
  }
}

EXPORT(gputrain_new) gpu_train *w_gputrain_new(int32_t model, int32_t batch, float lr) {
  if (model < 0 || model > 6) return NULL;
  gpu_train *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->model = model;
  t->batch = batch;
  rlx_optimizer sgd = {RLX_OPT_SGD, lr, 0, 0, 0, 0, 0};
  rlx_compile_options copt = {RLX_DEVICE_CPU, 0, 0, 0}, gopt = {RLX_DEVICE_WEBGPU, 1, 0, 0};
  for (int dev = 0; dev < 2; dev++) {
    rlx_graph *g = rlx_graph_new();
    rlx_node loss = RLX_NO_NODE, logits, params[64];
    int32_t n_params = 0;
    rlx_status st;
    if (model < 4) {
      rlx_vision_info info;
      st = rlx_vision_build(g, rlx_vision_slug(model), batch, &logits, &loss);
      if (st == RLX_OK) st = rlx_vision_info_get(rlx_vision_slug(model), &info);
      for (int32_t id = 0; st == RLX_OK && id < g->n_nodes && n_params < 64; id++)
        if (g->nodes[id].op == RLX_OP_PARAM) params[n_params++] = id;
    } else if (model == 4) {
      loss = build_mlp(g, batch, params);
      n_params = 4;
      st = rlx_graph_status(g);
    } else if (model == 5) {
      st = build_transformer(g, &loss, params, &n_params, 64);
    } else {
      loss = build_toy(g, params);
      n_params = 2;
      st = rlx_graph_status(g);
    }
    rlx_session **dst = dev == 0 ? &t->cpu : &t->gpu;
    if (st == RLX_OK) st = rlx_compile_train(g, loss, params, n_params, &sgd, dev == 0 ? &copt : &gopt, dst);
    if (st != RLX_OK && dev == 1) {
      t->gpu_status = st;
      note(t->message, "compile_train for WebGPU");
    } else if (st != RLX_OK) {
      snprintf(t->message, sizeof t->message, "compile_train for the CPU: %s", rlx_last_error());
    }
    rlx_graph_free(g);
    if (st == RLX_OK && model != 5) train_init_params(t, *dst);
  }
  /* The batch buffers. */
  if (model < 4) {
    rlx_vision_info info;
    rlx_vision_info_get(rlx_vision_slug(model), &info);
    t->n_inputs = 2;
    t->names[0] = "x", t->len[0] = (size_t)batch * info.input_len;
    t->names[1] = "labels", t->len[1] = (size_t)batch, t->is_i32[1] = 1;
  } else if (model == 4) {
    t->n_inputs = 2;
    t->names[0] = "x", t->len[0] = (size_t)batch * MLP_IN;
    t->names[1] = "t", t->len[1] = (size_t)batch * MLP_OUT;
  } else if (model == 6) {
    t->n_inputs = 2;
    t->names[0] = "x", t->len[0] = 1;
    t->names[1] = "t", t->len[1] = 1;
  }
  for (int32_t k = 0; k < t->n_inputs; k++) t->data[k] = calloc(t->len[k], sizeof(float));
  return t;
}

/* Sets the batch of `step` on the CPU session, runs it, returns the loss
 * (NaN on failure; see gputrain_message).  The vision models and the MLP
 * see one fixed batch every step (so the loss falls); the toy a new pair. */
EXPORT(gputrain_cpu_step) float w_gputrain_cpu_step(gpu_train *t, int32_t step) {
  if (!t->cpu) return NAN;
  if (t->model < 4) {
    rlx_vision_synthetic_batch(rlx_vision_slug(t->model), 1000u, t->batch, t->data[0], t->len[0],
                               (int32_t *)t->data[1], t->len[1]);
  } else if (t->model == 6) {
    t->data[0][0] = opcase_uniform(900u, (size_t)step, -1.0f, 1.0f);
    t->data[1][0] = 2.0f * t->data[0][0] - 0.5f; /* the model can learn t = 2x - 0.5 */
  } else {
    for (int32_t k = 0; k < 2; k++)
      for (size_t i = 0; i < t->len[k]; i++) t->data[k][i] = opcase_uniform(500u + (unsigned)k, i, -1.0f, 1.0f);
  }
  for (int32_t k = 0; k < t->n_inputs; k++) {
    rlx_status st = t->is_i32[k] ? rlx_session_set_input_i32(t->cpu, t->names[k], (const int32_t *)t->data[k], t->len[k])
                                 : rlx_session_set_input(t->cpu, t->names[k], t->data[k], t->len[k]);
    if (st != RLX_OK) {
      note(t->message, "set_input");
      return NAN;
    }
  }
  if (rlx_session_run(t->cpu) != RLX_OK) {
    note(t->message, "run");
    return NAN;
  }
  return rlx_session_output(t->cpu, 0)[0];
}

EXPORT(gputrain_cpu_status) int32_t w_gputrain_cpu_status(const gpu_train *t) { return t->cpu ? RLX_OK : RLX_ERR_STATE; }
EXPORT(gputrain_gpu_status) int32_t w_gputrain_gpu_status(const gpu_train *t) { return t->gpu ? RLX_OK : t->gpu_status; }
EXPORT(gputrain_message) const char *w_gputrain_message(const gpu_train *t) { return t->message; }
EXPORT(gputrain_gpu_session) rlx_session *w_gputrain_gpu_session(const gpu_train *t) { return t->gpu; }
EXPORT(gputrain_cpu_session) rlx_session *w_gputrain_cpu_session(const gpu_train *t) { return t->cpu; }
EXPORT(gputrain_input_count) int32_t w_gputrain_input_count(const gpu_train *t) { return t->n_inputs; }
EXPORT(gputrain_input_name) const char *w_gputrain_input_name(const gpu_train *t, int32_t k) { return t->names[k]; }
EXPORT(gputrain_input_data) const float *w_gputrain_input_data(const gpu_train *t, int32_t k) { return t->data[k]; }
EXPORT(gputrain_input_len) size_t w_gputrain_input_len(const gpu_train *t, int32_t k) { return t->len[k]; }
EXPORT(gputrain_input_i32) int32_t w_gputrain_input_i32(const gpu_train *t, int32_t k) { return t->is_i32[k]; }
/* rlx_session_host_summary of the GPU session: which = 0 steps_total, 1
 * host_steps, 2 sync_points, -1 its status. */
EXPORT(gputrain_host_summary) int32_t w_gputrain_host_summary(const gpu_train *t, int32_t which) {
  int32_t v[3] = {0, 0, 0};
  rlx_status st = rlx_session_host_summary(t->gpu, &v[0], &v[1], &v[2]);
  return which < 0 ? st : which < 3 ? v[which] : 0;
}
EXPORT(gputrain_model_name) const char *w_gputrain_model_name(int32_t model) {
  return model < 4 ? rlx_vision_slug(model) : model == 4 ? "mlp" : model == 5 ? "transformer" : "toy";
}
EXPORT(gputrain_free) void w_gputrain_free(gpu_train *t) {
  if (!t) return;
  rlx_session_free(t->cpu);
  rlx_session_free(t->gpu);
  for (int32_t k = 0; k < t->n_inputs; k++) free(t->data[k]);
  free(t);
}
