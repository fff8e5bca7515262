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
#include <stdio.h>
#include <string.h>

#include "webgpu_plan.h"

/* Buffer indexes of the document. */
typedef struct {
  int32_t input0, param0, const0, scratch, uniform;
} buffer_ids;

/* [buffer, offset, size] of node id's storage. */
static void put_value(rlx_text *o, const rlx_session *s, const buffer_ids *b, int32_t id) {
  const rlx_plan *p = &s->plan;
  const rlx_wgpu_state *w = rlx_wgpu_state_of(s);
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
  rlx_text_printf(o, "[%d,%zu,%zu]", (int)buf, off * sizeof(float), bytes);
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

static void steps_and_pipelines(rlx_text *o, rlx_session *s, const buffer_ids *b, rlx_wgpu_lowering *l,
                                pipeline_set *ps, size_t *uniform_bytes, rlx_status *st) {
  const rlx_plan *p = &s->plan;
  size_t uoff = 0;
  rlx_text_puts(o, ",\"steps\":[");
  int first = 1;
  for (int32_t i = 0; i < p->n_steps && *st == RLX_OK; i++) {
    int32_t id = p->steps[i];
    const rlx_node_t *n = &p->graph.nodes[id];
    if ((*st = rlx_wgpu_lower_step(p, id, l)) != RLX_OK) return;
    if (l->n == 0) {
      rlx_text_printf(o, "%s{\"op\":\"%s\",\"node\":%d,\"host\":true}", first ? "" : ",", rlx_op_name(n->op), (int)id);
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
      rlx_text_printf(o, "%s\n{\"op\":\"%s\",\"node\":%d,\"pipeline\":%d,\"bindings\":[", first ? "" : ",", rlx_op_name(n->op),
           (int)id, (int)pi);
      first = 0;
      for (int32_t k = 0; k < d->n_bindings; k++) {
        const rlx_wgpu_binding *x = &d->bindings[k];
        if (k) rlx_text_puts(o, ",");
        if (x->kind == RLX_WB_INPUT) put_value(o, s, b, n->inputs[x->index]);
        else if (x->kind == RLX_WB_OUTPUT) put_value(o, s, b, id);
        else rlx_text_printf(o, "[%d,%zu,%zu]", (int)b->scratch, x->offset, x->bytes);
      }
      rlx_text_printf(o, "],\"uniform\":%zu,\"words\":[", uoff);
      for (int32_t k = 0; k < d->n_uniform; k++) rlx_text_printf(o, "%s%u", k ? "," : "", (unsigned)d->uniform[k]);
      rlx_text_printf(o, "],\"groups\":[%u,%u,%u]}", (unsigned)d->groups[0], (unsigned)d->groups[1], (unsigned)d->groups[2]);
      /* a 256-byte slot per dispatch (the offset alignment), more for the
       * few with more words; each binds RLX_WGPU_UNIFORM_BINDING bytes from
       * its slot, so the buffer ends that far past the last slot */
      uoff += (size_t)d->n_uniform * 4 <= 256 ? 256 : ((size_t)d->n_uniform * 4 + 255) / 256 * 256;
    }
  }
  rlx_text_puts(o, "]");
  *uniform_bytes = uoff + RLX_WGPU_UNIFORM_BINDING;
}

/* Second pass for the pipeline list: the first dispatch with each key. */
static void put_pipelines(rlx_text *o, rlx_session *s, rlx_wgpu_lowering *l, pipeline_set *ps, rlx_status *st) {
  const rlx_plan *p = &s->plan;
  int32_t done = 0;
  rlx_text_puts(o, ",\"pipelines\":[");
  for (int32_t i = 0; i < p->n_steps && done < ps->n && *st == RLX_OK; i++) {
    if ((*st = rlx_wgpu_lower_step(p, p->steps[i], l)) != RLX_OK) return;
    for (int32_t di = 0; di < l->n; di++) {
      const rlx_wgpu_dispatch *d = &l->d[di];
      char key[KEY_CAP];
      pipeline_key(d, key, sizeof key);
      if (done >= ps->n || strcmp(ps->keys[done], key) != 0) continue;
      rlx_text_printf(o, "%s\n{\"key\":", done ? "," : "");
      rlx_json_string(o, key);
      rlx_text_puts(o, ",\"shader\":");
      rlx_json_string(o, d->shader);
      rlx_text_puts(o, ",\"overrides\":{");
      for (int32_t k = 0; k < d->n_overrides; k++) {
        if (k) rlx_text_puts(o, ",");
        rlx_json_string(o, d->override_names[k]);
        rlx_text_printf(o, ":%u", (unsigned)d->override_values[k]);
      }
      rlx_text_puts(o, "},\"bindings\":[");
      for (int32_t k = 0; k < d->n_bindings; k++) rlx_text_printf(o, "%s\"%s\"", k ? "," : "", d->bindings[k].writable ? "write" : "read");
      rlx_text_puts(o, "]}");
      int32_t sh = 0;
      while (sh < ps->n_shaders && strcmp(ps->shaders[sh], d->shader) != 0) sh++;
      if (sh == ps->n_shaders) ps->shaders[ps->n_shaders++] = d->shader;
      done++;
    }
  }
  rlx_text_puts(o, "]");
}

static rlx_status build(rlx_session *s) {
  rlx_plan *p = &s->plan;
  rlx_wgpu_state *w = rlx_wgpu_state_of(s);
  rlx_text *o = &w->json;
  o->len = 0;
  o->failed = 0;
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
  rlx_text_printf(o, "{\"format\":\"rlx-webgpu-plan\",\"version\":1,\"steps_total\":%d,\"host_steps\":%d,\"sync_points\":%d",
       (int)p->n_steps, (int)w->host_steps, (int)w->sync_points);
  rlx_text_printf(o, ",\"uniform_binding_size\":%zu", RLX_WGPU_UNIFORM_BINDING);
  /* inputs, params, constants */
  rlx_text_puts(o, ",\"inputs\":[");
  for (int32_t i = 0; i < p->n_inputs; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->inputs[i]];
    rlx_text_puts(o, i ? ",{\"name\":" : "{\"name\":");
    rlx_json_string(o, n->name);
    rlx_text_printf(o, ",\"buffer\":%d,\"size\":%zu,\"dtype\":\"%s\",\"needed\":%s,\"shape\":", (int)(b.input0 + i),
         rlx_shape_numel(&n->shape) * sizeof(float), n->dtype == RLX_I32 ? "i32" : "f32",
         p->input_needed[i] ? "true" : "false");
    rlx_json_ints(o, n->shape.dims, n->shape.rank);
    rlx_text_puts(o, "}");
  }
  rlx_text_puts(o, "],\"params\":[");
  for (int32_t i = 0; i < p->n_params; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->params[i]];
    rlx_text_puts(o, i ? ",{\"name\":" : "{\"name\":");
    rlx_json_string(o, n->name);
    rlx_text_printf(o, ",\"buffer\":%d,\"size\":%zu,\"shape\":", (int)(b.param0 + i), rlx_shape_numel(&n->shape) * sizeof(float));
    rlx_json_ints(o, n->shape.dims, n->shape.rank);
    rlx_text_puts(o, "}");
  }
  rlx_text_puts(o, "],\"constants\":[");
  for (int32_t i = 0; i < w->n_consts; i++)
    rlx_text_printf(o, "%s{\"buffer\":%d,\"size\":%zu,\"node\":%d}", i ? "," : "", (int)(b.const0 + i),
         rlx_shape_numel(&p->graph.nodes[w->const_nodes[i]].shape) * sizeof(float), (int)w->const_nodes[i]);
  rlx_text_puts(o, "]");
  size_t uniform_bytes = 0;
  steps_and_pipelines(o, s, &b, l, ps, &uniform_bytes, &st);
  if (st == RLX_OK) put_pipelines(o, s, l, ps, &st);
  if (st == RLX_OK) {
    rlx_text_puts(o, ",\"shaders\":{");
    for (int32_t i = 0; i < ps->n_shaders; i++) {
      if (i) rlx_text_puts(o, ",\n");
      rlx_json_string(o, ps->shaders[i]);
      rlx_text_puts(o, ":");
      rlx_json_string(o, rlx_wgsl_source(ps->shaders[i]));
    }
    rlx_text_puts(o, "}");
    /* buffers */
    rlx_text_puts(o, ",\"buffers\":[");
    for (int32_t a = 0; a < w->n_arenas; a++)
      rlx_text_printf(o, "%s{\"kind\":\"arena\",\"index\":%d,\"size\":%zu}", a ? "," : "", (int)a, w->arena_floats[a] * sizeof(float));
    for (int32_t i = 0; i < p->n_inputs; i++)
      rlx_text_printf(o, "%s{\"kind\":\"input\",\"index\":%d,\"size\":%zu}", (w->n_arenas + i) ? "," : "", (int)i,
           rlx_shape_numel(&p->graph.nodes[p->inputs[i]].shape) * sizeof(float));
    for (int32_t i = 0; i < p->n_params; i++)
      rlx_text_printf(o, "%s{\"kind\":\"param\",\"index\":%d,\"size\":%zu}", (b.param0 + i) ? "," : "", (int)i,
           rlx_shape_numel(&p->graph.nodes[p->params[i]].shape) * sizeof(float));
    for (int32_t i = 0; i < w->n_consts; i++)
      rlx_text_printf(o, "%s{\"kind\":\"constant\",\"index\":%d,\"size\":%zu}", (b.const0 + i) ? "," : "", (int)i,
           rlx_shape_numel(&p->graph.nodes[w->const_nodes[i]].shape) * sizeof(float));
    rlx_text_printf(o, "%s{\"kind\":\"scratch\",\"size\":%zu}", b.scratch ? "," : "", w->scratch_bytes ? w->scratch_bytes : 256);
    rlx_text_printf(o, ",{\"kind\":\"uniform\",\"size\":%zu}]", uniform_bytes);
    /* outputs and assignments */
    rlx_text_puts(o, ",\"outputs\":[");
    for (int32_t i = 0; i < p->n_user_outputs; i++) {
      const rlx_node_t *n = &p->graph.nodes[p->outputs[i]];
      rlx_text_puts(o, i ? ",{\"value\":" : "{\"value\":");
      put_value(o, s, &b, p->outputs[i]);
      rlx_text_puts(o, ",\"shape\":");
      rlx_json_ints(o, n->shape.dims, n->shape.rank);
      rlx_text_puts(o, "}");
    }
    rlx_text_puts(o, "],\"assign\":[");
    int first = 1;
    for (int32_t i = 0; i < p->n_outputs; i++) {
      if (p->assign_param[i] < 0) continue;
      rlx_text_printf(o, "%s{\"param\":%d,\"buffer\":%d,\"from\":", first ? "" : ",", (int)p->assign_param[i],
           (int)(b.param0 + p->assign_param[i]));
      put_value(o, s, &b, p->outputs[i]);
      rlx_text_puts(o, "}");
      first = 0;
    }
    rlx_text_puts(o, "]}\n");
  }
  rlx_free(l, sizeof *l);
  rlx_free(ps->keys, MAX_PIPELINES * KEY_CAP);
  rlx_free(ps, sizeof *ps);
  if (st != RLX_OK) return st;
  if (o->failed) return rlx_error(RLX_ERR_NO_MEMORY, "webgpu: out of memory writing the plan");
  return RLX_OK;
}

const char *rlx_wgpu_plan_json(rlx_session *s, size_t *len) {
  rlx_text *t = &rlx_wgpu_state_of(s)->json;
  if (!t->buf || t->len == 0) {
    if (build(s) != RLX_OK) {
      t->len = 0;
      return NULL;
    }
  }
  if (len) *len = t->len;
  return t->buf;
}
