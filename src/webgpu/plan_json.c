/* plan_json.c - the WebGPU plan document: everything the generic executor
 * (web/runtime/webgpu.js) needs to create the GPU objects once and replay a
 * run, as one JSON object.  Sizes and offsets are in bytes.
 *
 *   format "rlx-webgpu-plan", version 1
 *   buffers      [{kind: "arena"|"input"|"param"|"constant"|"scratch"|"uniform",
 *                  index (input/param/constant index), size}]; in that order:
 *                  the arenas, one per input, per param, per constant, the
 *                  scratch (max over steps) and the uniform buffer
 *   inputs       [{name, buffer, size, dtype "f32"|"i32", shape, needed}]
 *   params       [{name, buffer, size, shape}]
 *   constants    [{buffer, size, node}]; data via rlx_session_constant_data
 *   shaders      {name: WGSL source} for the shaders the plan uses
 *   pipelines    [{key, shader, overrides {NAME: u32}, bindings ["read"|"write"...]}]:
 *                  storage bindings 0..n-1 ("read" = read-only-storage), then
 *                  the uniform at binding n; deduplicated by key
 *   uniform_binding_size  bytes bound per dispatch from the uniform buffer
 *   steps        [{op, node, pipeline, bindings [[buffer, offset, size]...],
 *                  uniform (byte offset), words [u32...], groups [x, y, z]}]
 *                  one per dispatch, in order; {op, node, host: true} marks a
 *                  step the host must run (never emitted today)
 *   outputs      [{value [buffer, offset, size], shape}] the session's outputs
 *   assign       [{param, buffer, from [buffer, offset, size]}] copies done
 *                  after the dispatches (training steps update their params)
 *   steps_total, host_steps, sync_points  as rlx_session_host_summary */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "webgpu_plan.h"

typedef struct {
  rlx_wgpu_state *w;
  int failed;
} writer;

static void grow(writer *o, size_t extra) {
  rlx_wgpu_state *w = o->w;
  if (o->failed || w->json_len + extra + 1 <= w->json_cap) return;
  size_t cap = w->json_cap ? w->json_cap : 4096;
  while (cap < w->json_len + extra + 1) cap *= 2;
  char *p = rlx_realloc(w->json, w->json_cap, cap);
  if (!p) {
    o->failed = 1;
    return;
  }
  w->json = p;
  w->json_cap = cap;
}

static void put(writer *o, const char *s, size_t n) {
  grow(o, n);
  if (o->failed) return;
  memcpy(o->w->json + o->w->json_len, s, n);
  o->w->json_len += n;
  o->w->json[o->w->json_len] = 0;
}

static void puts_(writer *o, const char *s) { put(o, s, strlen(s)); }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void putf(writer *o, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof buf) {
    o->failed = 1;
    return;
  }
  put(o, buf, (size_t)n);
}

static int plain_char(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\'; }

static void put_string(writer *o, const char *s) {
  puts_(o, "\"");
  while (*s) {
    size_t run = 0;
    while (s[run] && plain_char((unsigned char)s[run])) run++;
    put(o, s, run);
    s += run;
    if (!*s) break;
    unsigned char c = (unsigned char)*s++;
    if (c == '\n') puts_(o, "\\n");
    else if (c == '"') puts_(o, "\\\"");
    else if (c == '\\') puts_(o, "\\\\");
    else putf(o, "\\u%04x", c);
  }
  puts_(o, "\"");
}

static void put_shape(writer *o, const rlx_shape *s) {
  puts_(o, "[");
  for (int32_t i = 0; i < s->rank; i++) putf(o, "%s%d", i ? "," : "", (int)s->dims[i]);
  puts_(o, "]");
}

/* Buffer indexes of the document. */
typedef struct {
  int32_t input0, param0, const0, scratch, uniform;
} buffer_ids;

/* [buffer, offset, size] of node id's storage. */
static void put_value(writer *o, const rlx_session *s, const buffer_ids *b, int32_t id) {
  const rlx_plan *p = &s->plan;
  const rlx_wgpu_state *w = s->webgpu;
  const rlx_loc *l = &p->loc[id];
  size_t bytes = rlx_shape_numel(&p->graph.nodes[id].shape) * sizeof(float);
  int32_t buf = 0;
  size_t off = l->offset;
  switch (l->kind) {
    case RLX_LOC_ARENA: {
      int32_t a = 0;
      while (a + 1 < w->n_arenas && off >= w->arena_base[a + 1]) a++;
      buf = a;
      off -= w->arena_base[a];
      break;
    }
    case RLX_LOC_INPUT: buf = b->input0 + l->index; break;
    case RLX_LOC_PARAM: buf = b->param0 + l->index; break;
    case RLX_LOC_CONST: buf = b->const0 + w->const_index[l->index]; break;
  }
  putf(o, "[%d,%zu,%zu]", (int)buf, off * sizeof(float), bytes);
}

/* The pipeline key: shader, overrides and binding access. */
static void pipeline_key(const rlx_wgpu_dispatch *d, char *key, size_t cap) {
  size_t n = (size_t)snprintf(key, cap, "%s", d->shader);
  for (int32_t i = 0; i < d->n_overrides && n < cap; i++)
    n += (size_t)snprintf(key + n, cap - n, "|%s=%u", d->override_names[i], (unsigned)d->override_values[i]);
  if (n < cap) n += (size_t)snprintf(key + n, cap - n, "|");
  for (int32_t i = 0; i < d->n_bindings && n < cap; i++)
    n += (size_t)snprintf(key + n, cap - n, "%c", d->bindings[i].writable ? 'w' : 'r');
}

#define MAX_PIPELINES 512
#define KEY_CAP 256

typedef struct {
  char (*keys)[KEY_CAP];
  int32_t n;
  const char *shaders[MAX_PIPELINES];
  int32_t n_shaders;
} pipeline_set;

static void steps_and_pipelines(writer *o, rlx_session *s, const buffer_ids *b, rlx_wgpu_lowering *l,
                                pipeline_set *ps, size_t *uniform_bytes, rlx_status *st) {
  const rlx_plan *p = &s->plan;
  size_t uoff = 0;
  puts_(o, ",\"steps\":[");
  int first = 1;
  for (int32_t i = 0; i < p->n_steps && *st == RLX_OK; i++) {
    int32_t id = p->steps[i];
    const rlx_node_t *n = &p->graph.nodes[id];
    if ((*st = rlx_wgpu_lower_step(p, id, l)) != RLX_OK) return;
    if (l->n == 0) {
      putf(o, "%s{\"op\":\"%s\",\"node\":%d,\"host\":true}", first ? "" : ",", rlx_op_name(n->op), (int)id);
      first = 0;
    }
    for (int32_t di = 0; di < l->n; di++) {
      const rlx_wgpu_dispatch *d = &l->d[di];
      char key[KEY_CAP];
      pipeline_key(d, key, sizeof key);
      int32_t pi = 0;
      while (pi < ps->n && strcmp(ps->keys[pi], key) != 0) pi++;
      if (pi == ps->n) {
        if (ps->n == MAX_PIPELINES) {
          *st = rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: more than %d distinct pipelines", MAX_PIPELINES);
          return;
        }
        memcpy(ps->keys[ps->n++], key, KEY_CAP);
      }
      putf(o, "%s\n{\"op\":\"%s\",\"node\":%d,\"pipeline\":%d,\"bindings\":[", first ? "" : ",", rlx_op_name(n->op),
           (int)id, (int)pi);
      first = 0;
      for (int32_t k = 0; k < d->n_bindings; k++) {
        const rlx_wgpu_binding *x = &d->bindings[k];
        if (k) puts_(o, ",");
        if (x->kind == RLX_WB_INPUT) put_value(o, s, b, n->inputs[x->index]);
        else if (x->kind == RLX_WB_OUTPUT) put_value(o, s, b, id);
        else putf(o, "[%d,%zu,%zu]", (int)b->scratch, x->offset, x->bytes);
      }
      putf(o, "],\"uniform\":%zu,\"words\":[", uoff);
      for (int32_t k = 0; k < d->n_uniform; k++) putf(o, "%s%u", k ? "," : "", (unsigned)d->uniform[k]);
      putf(o, "],\"groups\":[%u,%u,%u]}", (unsigned)d->groups[0], (unsigned)d->groups[1], (unsigned)d->groups[2]);
      uoff += (size_t)d->n_uniform * 4 <= 256 ? 256 : 512;
    }
  }
  puts_(o, "]");
  *uniform_bytes = uoff + RLX_WGPU_UNIFORM_BINDING;
}

/* Second pass for the pipeline list: the first dispatch with each key. */
static void put_pipelines(writer *o, rlx_session *s, rlx_wgpu_lowering *l, pipeline_set *ps, rlx_status *st) {
  const rlx_plan *p = &s->plan;
  int32_t done = 0;
  puts_(o, ",\"pipelines\":[");
  for (int32_t i = 0; i < p->n_steps && done < ps->n && *st == RLX_OK; i++) {
    if ((*st = rlx_wgpu_lower_step(p, p->steps[i], l)) != RLX_OK) return;
    for (int32_t di = 0; di < l->n; di++) {
      const rlx_wgpu_dispatch *d = &l->d[di];
      char key[KEY_CAP];
      pipeline_key(d, key, sizeof key);
      if (done >= ps->n || strcmp(ps->keys[done], key) != 0) continue;
      putf(o, "%s\n{\"key\":", done ? "," : "");
      put_string(o, key);
      puts_(o, ",\"shader\":");
      put_string(o, d->shader);
      puts_(o, ",\"overrides\":{");
      for (int32_t k = 0; k < d->n_overrides; k++) {
        if (k) puts_(o, ",");
        put_string(o, d->override_names[k]);
        putf(o, ":%u", (unsigned)d->override_values[k]);
      }
      puts_(o, "},\"bindings\":[");
      for (int32_t k = 0; k < d->n_bindings; k++) putf(o, "%s\"%s\"", k ? "," : "", d->bindings[k].writable ? "write" : "read");
      puts_(o, "]}");
      int32_t sh = 0;
      while (sh < ps->n_shaders && strcmp(ps->shaders[sh], d->shader) != 0) sh++;
      if (sh == ps->n_shaders) ps->shaders[ps->n_shaders++] = d->shader;
      done++;
    }
  }
  puts_(o, "]");
}

static rlx_status build(rlx_session *s) {
  rlx_plan *p = &s->plan;
  rlx_wgpu_state *w = s->webgpu;
  writer o = {w, 0};
  w->json_len = 0;
  buffer_ids b;
  b.input0 = w->n_arenas;
  b.param0 = b.input0 + p->n_inputs;
  b.const0 = b.param0 + p->n_params;
  b.scratch = b.const0 + w->n_consts;
  b.uniform = b.scratch + 1;
  rlx_wgpu_lowering *l = rlx_malloc(sizeof *l);
  pipeline_set *ps = rlx_calloc(1, sizeof *ps);
  if (ps) ps->keys = rlx_malloc(MAX_PIPELINES * KEY_CAP);
  if (!l || !ps || !ps->keys) {
    rlx_free(l, sizeof *l);
    if (ps) rlx_free(ps->keys, MAX_PIPELINES * KEY_CAP);
    rlx_free(ps, sizeof *ps);
    return rlx_error(RLX_ERR_NO_MEMORY, "webgpu: out of memory writing the plan");
  }
  rlx_status st = RLX_OK;
  putf(&o, "{\"format\":\"rlx-webgpu-plan\",\"version\":1,\"steps_total\":%d,\"host_steps\":%d,\"sync_points\":%d",
       (int)p->n_steps, (int)w->host_steps, (int)w->sync_points);
  putf(&o, ",\"uniform_binding_size\":%zu", RLX_WGPU_UNIFORM_BINDING);
  /* inputs, params, constants */
  puts_(&o, ",\"inputs\":[");
  for (int32_t i = 0; i < p->n_inputs; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->inputs[i]];
    puts_(&o, i ? ",{\"name\":" : "{\"name\":");
    put_string(&o, n->name);
    putf(&o, ",\"buffer\":%d,\"size\":%zu,\"dtype\":\"%s\",\"needed\":%s,\"shape\":", (int)(b.input0 + i),
         rlx_shape_numel(&n->shape) * sizeof(float), n->dtype == RLX_I32 ? "i32" : "f32",
         p->input_needed[i] ? "true" : "false");
    put_shape(&o, &n->shape);
    puts_(&o, "}");
  }
  puts_(&o, "],\"params\":[");
  for (int32_t i = 0; i < p->n_params; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->params[i]];
    puts_(&o, i ? ",{\"name\":" : "{\"name\":");
    put_string(&o, n->name);
    putf(&o, ",\"buffer\":%d,\"size\":%zu,\"shape\":", (int)(b.param0 + i), rlx_shape_numel(&n->shape) * sizeof(float));
    put_shape(&o, &n->shape);
    puts_(&o, "}");
  }
  puts_(&o, "],\"constants\":[");
  for (int32_t i = 0; i < w->n_consts; i++)
    putf(&o, "%s{\"buffer\":%d,\"size\":%zu,\"node\":%d}", i ? "," : "", (int)(b.const0 + i),
         rlx_shape_numel(&p->graph.nodes[w->const_nodes[i]].shape) * sizeof(float), (int)w->const_nodes[i]);
  puts_(&o, "]");
  size_t uniform_bytes = 0;
  steps_and_pipelines(&o, s, &b, l, ps, &uniform_bytes, &st);
  if (st == RLX_OK) put_pipelines(&o, s, l, ps, &st);
  if (st == RLX_OK) {
    puts_(&o, ",\"shaders\":{");
    for (int32_t i = 0; i < ps->n_shaders; i++) {
      if (i) puts_(&o, ",\n");
      put_string(&o, ps->shaders[i]);
      puts_(&o, ":");
      put_string(&o, rlx_wgsl_source(ps->shaders[i]));
    }
    puts_(&o, "}");
    /* buffers */
    puts_(&o, ",\"buffers\":[");
    for (int32_t a = 0; a < w->n_arenas; a++)
      putf(&o, "%s{\"kind\":\"arena\",\"index\":%d,\"size\":%zu}", a ? "," : "", (int)a, w->arena_floats[a] * sizeof(float));
    for (int32_t i = 0; i < p->n_inputs; i++)
      putf(&o, "%s{\"kind\":\"input\",\"index\":%d,\"size\":%zu}", (w->n_arenas + i) ? "," : "", (int)i,
           rlx_shape_numel(&p->graph.nodes[p->inputs[i]].shape) * sizeof(float));
    for (int32_t i = 0; i < p->n_params; i++)
      putf(&o, "%s{\"kind\":\"param\",\"index\":%d,\"size\":%zu}", (b.param0 + i) ? "," : "", (int)i,
           rlx_shape_numel(&p->graph.nodes[p->params[i]].shape) * sizeof(float));
    for (int32_t i = 0; i < w->n_consts; i++)
      putf(&o, "%s{\"kind\":\"constant\",\"index\":%d,\"size\":%zu}", (b.const0 + i) ? "," : "", (int)i,
           rlx_shape_numel(&p->graph.nodes[w->const_nodes[i]].shape) * sizeof(float));
    putf(&o, "%s{\"kind\":\"scratch\",\"size\":%zu}", b.scratch ? "," : "", w->scratch_bytes ? w->scratch_bytes : 256);
    putf(&o, ",{\"kind\":\"uniform\",\"size\":%zu}]", uniform_bytes);
    /* outputs and assignments */
    puts_(&o, ",\"outputs\":[");
    for (int32_t i = 0; i < p->n_user_outputs; i++) {
      const rlx_node_t *n = &p->graph.nodes[p->outputs[i]];
      puts_(&o, i ? ",{\"value\":" : "{\"value\":");
      put_value(&o, s, &b, p->outputs[i]);
      puts_(&o, ",\"shape\":");
      put_shape(&o, &n->shape);
      puts_(&o, "}");
    }
    puts_(&o, "],\"assign\":[");
    int first = 1;
    for (int32_t i = 0; i < p->n_outputs; i++) {
      if (p->assign_param[i] < 0) continue;
      putf(&o, "%s{\"param\":%d,\"buffer\":%d,\"from\":", first ? "" : ",", (int)p->assign_param[i],
           (int)(b.param0 + p->assign_param[i]));
      put_value(&o, s, &b, p->outputs[i]);
      puts_(&o, "}");
      first = 0;
    }
    puts_(&o, "]}\n");
  }
  rlx_free(l, sizeof *l);
  rlx_free(ps->keys, MAX_PIPELINES * KEY_CAP);
  rlx_free(ps, sizeof *ps);
  if (st != RLX_OK) return st;
  if (o.failed) return rlx_error(RLX_ERR_NO_MEMORY, "webgpu: out of memory writing the plan");
  return RLX_OK;
}

const char *rlx_wgpu_plan_json(rlx_session *s, size_t *len) {
  if (!s->webgpu->json || s->webgpu->json_len == 0) {
    if (build(s) != RLX_OK) {
      s->webgpu->json_len = 0;
      return NULL;
    }
  }
  if (len) *len = s->webgpu->json_len;
  return s->webgpu->json;
}

/* ---- public API (include/rlx.h) ------------------------------------------ */

const char *rlx_session_webgpu_plan(const rlx_session *s, size_t *len) {
  if (len) *len = 0;
  if (!s || s->device != RLX_DEVICE_WEBGPU || !s->webgpu) return NULL;
  /* The document is made on first request (training sessions record their
   * assignments after compiling) and cached in the session. */
  return rlx_wgpu_plan_json((rlx_session *)s, len);
}

int rlx_session_requires_host_execution(const rlx_session *s) {
  return (s && s->webgpu && s->webgpu->host_steps > 0) ? 1 : 0;
}

rlx_status rlx_session_host_summary(const rlx_session *s, int32_t *steps_total, int32_t *host_steps,
                                    int32_t *sync_points) {
  if (!s) return rlx_error(RLX_ERR_INVALID_ARG, "host_summary: session is NULL");
  /* A CPU session runs everything on the host, with no GPU round trips. */
  int gpu = s->webgpu != NULL;
  if (steps_total) *steps_total = s->plan.n_steps;
  if (host_steps) *host_steps = gpu ? s->webgpu->host_steps : s->plan.n_steps;
  if (sync_points) *sync_points = gpu ? s->webgpu->sync_points : 0;
  return RLX_OK;
}

const float *rlx_session_constant_data(const rlx_session *s, int32_t i, size_t *len) {
  if (len) *len = 0;
  if (!s || !s->webgpu || i < 0 || i >= s->webgpu->n_consts) return NULL;
  const rlx_node_t *n = &s->plan.graph.nodes[s->webgpu->const_nodes[i]];
  if (len) *len = rlx_shape_numel(&n->shape);
  return n->data;
}

const float *rlx_session_input_data(const rlx_session *s, int32_t i) {
  if (!s || i < 0 || i >= s->plan.n_inputs || !s->input_set || !s->input_set[i]) return NULL;
  return s->input_data[i];
}

const float *rlx_session_param_data(const rlx_session *s, int32_t i) {
  if (!s || i < 0 || i >= s->plan.n_params || !s->param_data) return NULL;
  return s->param_data[i];
}
