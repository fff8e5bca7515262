/* plan.c - from a graph to a plan: verify, dead-code elimination, step
 * order, views, liveness and the arena layout.  Memory planning packs every
 * intermediate into one arena: values are placed largest first at the
 * lowest offset that does not overlap a value alive at the same time. */
#include "plan.h"

#include "fuse.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16 /* floats: 64 bytes (default; GPU plans ask for more) */

int rlx_plan_is_view(const rlx_node_t *n) { return n->op == RLX_OP_RESHAPE; }

void rlx_plan_free(rlx_plan *p) {
  if (!p) return;
  size_t n = (size_t)p->graph.n_nodes;
  for (int32_t i = 0; i < p->graph.n_nodes; i++) {
    rlx_node_t *nd = &p->graph.nodes[i];
    rlx_strfree(nd->name);
    if (nd->data) rlx_free(nd->data, rlx_shape_numel(&nd->shape) * sizeof(float));
  }
  rlx_free(p->graph.nodes, (size_t)p->graph.cap_nodes * sizeof(rlx_node_t)); /* compact may stop part way */
  rlx_name_set_free(&p->graph.names);
  rlx_free(p->loc, n * sizeof(rlx_loc));
  rlx_free(p->steps, n * sizeof(int32_t));
  rlx_free(p->first_step, n * sizeof(int32_t));
  rlx_free(p->last_step, n * sizeof(int32_t));
  rlx_free(p->inputs, n * sizeof(int32_t));
  rlx_free(p->input_needed, p->input_needed_len);
  rlx_free(p->params, n * sizeof(int32_t));
  rlx_free(p->outputs, (size_t)p->n_outputs * sizeof(int32_t));
  rlx_free(p->assign_param, (size_t)p->n_outputs * sizeof(int32_t));
  memset(p, 0, sizeof *p);
}

/* Copies the live nodes (and every input/param) into plan->graph, renumbered. */
static rlx_status compact(const rlx_graph *g, const rlx_node *outputs, int32_t n_out, rlx_plan *p, int32_t *remap) {
  uint8_t *live = rlx_calloc((size_t)g->n_nodes, 1);
  if (!live) return RLX_ERR_NO_MEMORY;
  /* live: 1 = an output depends on it, 2 = kept only to be settable */
  for (int32_t i = 0; i < n_out; i++) live[outputs[i]] = 1;
  for (int32_t id = g->n_nodes - 1; id >= 0; id--) {
    const rlx_node_t *n = &g->nodes[id];
    if (live[id] == 1)
      for (int32_t k = 0; k < n->n_inputs; k++) live[n->inputs[k]] = 1;
    else if (n->op == RLX_OP_INPUT || n->op == RLX_OP_PARAM)
      live[id] = 2;
  }
  int32_t count = 0, n_inputs = 0;
  for (int32_t id = 0; id < g->n_nodes; id++) {
    remap[id] = live[id] ? count++ : -1;
    if (g->nodes[id].op == RLX_OP_INPUT) n_inputs++;
  }
  p->input_needed_len = (size_t)n_inputs + 1;
  p->input_needed = rlx_calloc(p->input_needed_len, 1);
  for (int32_t id = 0, k = 0; id < g->n_nodes && p->input_needed; id++)
    if (g->nodes[id].op == RLX_OP_INPUT) p->input_needed[k++] = live[id] == 1;
  rlx_free(live, (size_t)g->n_nodes);
  if (!p->input_needed) return RLX_ERR_NO_MEMORY;
  p->graph.nodes = rlx_calloc((size_t)count, sizeof(rlx_node_t));
  if (!p->graph.nodes) return RLX_ERR_NO_MEMORY;
  p->graph.cap_nodes = count;
  for (int32_t id = 0; id < g->n_nodes; id++) {
    if (remap[id] < 0) continue;
    rlx_node_t *d = &p->graph.nodes[p->graph.n_nodes++];
    *d = g->nodes[id];
    d->name = NULL;
    d->data = NULL;
    for (int32_t k = 0; k < d->n_inputs; k++) d->inputs[k] = remap[d->inputs[k]];
    if (g->nodes[id].name && !(d->name = rlx_strdup(g->nodes[id].name))) return RLX_ERR_NO_MEMORY;
    if (g->nodes[id].data) {
      size_t bytes = rlx_shape_numel(&d->shape) * sizeof(float);
      if (!(d->data = rlx_malloc(bytes))) return RLX_ERR_NO_MEMORY;
      memcpy(d->data, g->nodes[id].data, bytes);
    }
  }
  return RLX_OK;
}

static int lifetimes_overlap(const rlx_plan *p, int32_t a, int32_t b) {
  return p->first_step[a] <= p->last_step[b] && p->first_step[b] <= p->last_step[a];
}

/* One arena for the whole plan. */
static rlx_status place_values(rlx_plan *p) {
  size_t n = (size_t)p->graph.n_nodes;
  size_t *offset = rlx_calloc(n + 1, sizeof *offset);
  if (!offset) return RLX_ERR_NO_MEMORY;
  p->arena_floats = 0;
  rlx_status st = rlx_plan_pack(p, NULL, offset, &p->arena_floats);
  if (st == RLX_OK)
    for (size_t id = 0; id < n; id++)
      if (p->first_step[id] >= 0) p->loc[id] = (rlx_loc){RLX_LOC_ARENA, 0, offset[id]};
  rlx_free(offset, (n + 1) * sizeof *offset);
  return st;
}

int32_t rlx_plan_root(const rlx_plan *p, int32_t id) {
  while (rlx_plan_is_view(&p->graph.nodes[id])) id = p->graph.nodes[id].inputs[0];
  return id;
}

static rlx_status plan_memory(rlx_plan *p) {
  int32_t n = p->graph.n_nodes;
  for (int32_t id = 0; id < n; id++) {
    const rlx_node_t *nd = &p->graph.nodes[id];
    p->first_step[id] = -1;
    p->last_step[id] = -1;
    if (nd->op == RLX_OP_INPUT) {
      p->loc[id] = (rlx_loc){RLX_LOC_INPUT, p->n_inputs, 0};
      p->inputs[p->n_inputs++] = id;
    } else if (nd->op == RLX_OP_PARAM) {
      p->loc[id] = (rlx_loc){RLX_LOC_PARAM, p->n_params, 0};
      p->params[p->n_params++] = id;
    } else if (nd->op == RLX_OP_CONSTANT) {
      p->loc[id] = (rlx_loc){RLX_LOC_CONST, id, 0};
    } else if (!rlx_plan_is_view(nd)) {
      p->first_step[id] = p->n_steps;
      p->last_step[id] = p->n_steps;
      p->steps[p->n_steps++] = id;
    }
  }
  for (int32_t s = 0; s < p->n_steps; s++) {
    const rlx_node_t *nd = &p->graph.nodes[p->steps[s]];
    for (int32_t k = 0; k < nd->n_inputs; k++) {
      int32_t r = rlx_plan_root(p, nd->inputs[k]);
      if (p->first_step[r] >= 0 && p->last_step[r] < s) p->last_step[r] = s;
    }
  }
  for (int32_t i = 0; i < p->n_outputs; i++) {
    int32_t r = rlx_plan_root(p, p->outputs[i]);
    if (p->first_step[r] >= 0) p->last_step[r] = p->n_steps;
  }
  rlx_status st = place_values(p);
  if (st != RLX_OK) return st;
  for (int32_t id = 0; id < n; id++) /* views share their root's location */
    if (rlx_plan_is_view(&p->graph.nodes[id])) p->loc[id] = p->loc[rlx_plan_root(p, id)];
  return RLX_OK;
}

static rlx_status plan_from(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, rlx_plan *p);

/* A deep copy of g for the fusion passes to rewrite. */
static rlx_graph *graph_copy(const rlx_graph *g) {
  rlx_graph *c = rlx_graph_new();
  if (!c) return NULL;
  c->nodes = rlx_calloc((size_t)g->n_nodes + 1, sizeof(rlx_node_t));
  if (!c->nodes) {
    rlx_graph_free(c);
    return NULL;
  }
  c->cap_nodes = g->n_nodes + 1;
  for (int32_t id = 0; id < g->n_nodes; id++, c->n_nodes++) {
    rlx_node_t *d = &c->nodes[id];
    *d = g->nodes[id];
    d->name = NULL;
    d->data = NULL;
    if (g->nodes[id].name && !(d->name = rlx_strdup(g->nodes[id].name))) break;
    if (g->nodes[id].data) {
      size_t bytes = rlx_shape_numel(&d->shape) * sizeof(float);
      if (!(d->data = rlx_malloc(bytes))) break;
      memcpy(d->data, g->nodes[id].data, bytes);
    }
  }
  if (c->n_nodes != g->n_nodes || rlx_graph_index(c) != RLX_OK) {
    if (c->n_nodes != g->n_nodes) c->n_nodes++; /* free the partly copied node too */
    rlx_graph_free(c);
    return NULL;
  }
  return c;
}

rlx_status rlx_plan_build(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, int skip_fusion,
                          rlx_plan *p) {
  return rlx_plan_build_aligned(g, outputs, n_outputs, skip_fusion, ARENA_ALIGN, p);
}

rlx_status rlx_plan_build_aligned(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, int skip_fusion,
                                  size_t align_floats, rlx_plan *p) {
  memset(p, 0, sizeof *p);
  p->arena_align = align_floats < ARENA_ALIGN ? ARENA_ALIGN : align_floats;
  rlx_status st = rlx_graph_verify(g, outputs, n_outputs);
  if (st != RLX_OK) return st;
  rlx_graph *fused = NULL;
  int32_t n_fused = 0;
  if (!skip_fusion) {
    if (!(fused = graph_copy(g))) return rlx_error(RLX_ERR_NO_MEMORY, "compile: out of memory");
    if ((st = rlx_fuse(fused, outputs, n_outputs, &n_fused)) != RLX_OK) {
      rlx_graph_free(fused);
      return st;
    }
    g = fused;
  }
  st = plan_from(g, outputs, n_outputs, p);
  p->n_fused = n_fused;
  rlx_graph_free(fused);
  return st;
}

/* Compacts and plans an already verified (and fused) graph. */
static rlx_status plan_from(const rlx_graph *g, const rlx_node *outputs, int32_t n_outputs, rlx_plan *p) {
  rlx_status st;
  int32_t *remap = rlx_calloc((size_t)g->n_nodes, sizeof(int32_t));
  if (!remap) return rlx_error(RLX_ERR_NO_MEMORY, "compile: out of memory");
  st = compact(g, outputs, n_outputs, p, remap);
  if (st == RLX_OK) st = rlx_graph_index(&p->graph); /* inputs and params found by name */
  size_t n = (size_t)p->graph.n_nodes;
  if (st == RLX_OK) {
    p->loc = rlx_calloc(n, sizeof(rlx_loc));
    p->steps = rlx_calloc(n, sizeof(int32_t));
    p->first_step = rlx_calloc(n, sizeof(int32_t));
    p->last_step = rlx_calloc(n, sizeof(int32_t));
    p->inputs = rlx_calloc(n, sizeof(int32_t));
    p->params = rlx_calloc(n, sizeof(int32_t));
    p->n_outputs = p->n_user_outputs = n_outputs; /* the size rlx_plan_free passes */
    p->outputs = rlx_calloc((size_t)n_outputs, sizeof(int32_t));
    p->assign_param = rlx_calloc((size_t)n_outputs, sizeof(int32_t));
    if (!p->loc || !p->steps || !p->first_step || !p->last_step || !p->inputs || !p->params || !p->outputs ||
        !p->assign_param)
      st = RLX_ERR_NO_MEMORY;
  }
  if (st == RLX_OK) {
    for (int32_t i = 0; i < n_outputs; i++) p->outputs[i] = remap[outputs[i]], p->assign_param[i] = -1;
    st = plan_memory(p);
  }
  rlx_free(remap, (size_t)g->n_nodes * sizeof(int32_t));
  if (st != RLX_OK) {
    rlx_plan_free(p);
    return rlx_error(st, "compile: out of memory while planning");
  }
  return RLX_OK;
}

rlx_status rlx_plan_check(const rlx_plan *p) {
  for (int32_t a = 0; a < p->graph.n_nodes; a++) {
    if (p->first_step[a] < 0) continue;
    size_t a0 = p->loc[a].offset, a1 = a0 + rlx_shape_numel(&p->graph.nodes[a].shape);
    if (p->loc[a].kind != RLX_LOC_ARENA || a1 > p->arena_floats)
      return rlx_error(RLX_ERR_STATE, "plan: node %d lies outside the arena", (int)a);
    for (int32_t b = a + 1; b < p->graph.n_nodes; b++) {
      if (p->first_step[b] < 0 || !lifetimes_overlap(p, a, b)) continue;
      size_t b0 = p->loc[b].offset, b1 = b0 + rlx_shape_numel(&p->graph.nodes[b].shape);
      if (a0 < b1 && b0 < a1)
        return rlx_error(RLX_ERR_STATE, "plan: live nodes %d and %d share arena memory", (int)a, (int)b);
    }
  }
  return RLX_OK;
}
