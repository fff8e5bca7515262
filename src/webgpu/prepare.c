/* prepare.c - binds a plan to WebGPU at compile time: runs every step's
 * lowering once (so an op without a kernel, or a malformed dispatch, fails
 * the compile with a clear message), colours the values into arenas that
 * never alias an op's inputs and output, packs each arena (the planner's
 * packer, rlx_plan_pack), and indexes the constants.  See webgpu_plan.h
 * for why there are several arenas.  The lowerings table follows the op
 * families the build has (src/core/families.h). */
#include <string.h>

#include "../core/families.h"
#include "webgpu_plan.h"

static const rlx_wgpu_lower_fn lowerings[RLX_OP_COUNT] = {
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) [RLX_OP_##ID] = RLX_IF_BUILT(rlx_wgpu_lower_##name),
#include "rlx_ops.def"
#undef RLX_OP
};

int rlx_wgpu_supports(rlx_op op) { return lowerings[op] != NULL; }

/* One dispatch's sanity: a known shader, bindings in range, grid sizes,
 * and no buffer both read-only and writable (nor overlapping writable
 * ranges) within the dispatch, as WebGPU requires. */
static rlx_status check_dispatch(const rlx_plan *p, int32_t id, const rlx_wgpu_lowering *l, int32_t di) {
  const rlx_node_t *n = &p->graph.nodes[id];
  const rlx_wgpu_dispatch *d = &l->d[di];
  const char *op = rlx_op_name(n->op);
  if (!d->shader || !rlx_wgsl_source(d->shader))
    return rlx_error(RLX_ERR_STATE, "webgpu: %s (node %d): shader '%s' is not embedded in this build", op, (int)id,
                     d->shader ? d->shader : "(null)");
  if (d->n_bindings < 1 || d->n_bindings > RLX_WGPU_MAX_BINDINGS)
    return rlx_error(RLX_ERR_STATE, "webgpu: %s (node %d): dispatch %d has %d bindings", op, (int)id, (int)di,
                     (int)d->n_bindings);
  for (int32_t g = 0; g < 3; g++)
    if (d->groups[g] < 1 || d->groups[g] > 65535)
      return rlx_error(RLX_ERR_STATE, "webgpu: %s (node %d): dispatch %d has %u workgroups in dimension %d", op,
                       (int)id, (int)di, (unsigned)d->groups[g], (int)g);
  for (int32_t b = 0; b < d->n_bindings; b++) {
    const rlx_wgpu_binding *x = &d->bindings[b];
    /* Inputs are read-only, but for those an op writes in place (its side
     * effect, include/rlx_ops.def). */
    const int writes_input = rlx_op_writes_input(n->op, x->index);
    if (x->kind == RLX_WB_INPUT && (x->index < 0 || x->index >= n->n_inputs || (x->writable && !writes_input)))
      return rlx_error(RLX_ERR_STATE, "webgpu: %s (node %d): binding %d names input %d (of %d, read-only)", op,
                       (int)id, (int)b, (int)x->index, (int)n->n_inputs);
    if (x->kind == RLX_WB_OUTPUT && !x->writable)
      return rlx_error(RLX_ERR_STATE, "webgpu: %s (node %d): binding %d (the output) must be writable", op, (int)id,
                       (int)b);
    if (x->kind == RLX_WB_SCRATCH &&
        (x->offset % 256 != 0 || x->bytes == 0 || x->bytes % 4 != 0 || x->offset + x->bytes > l->scratch_bytes))
      return rlx_error(RLX_ERR_STATE,
                       "webgpu: %s (node %d): scratch binding %d [%zu, +%zu) is unaligned or outside the %zu "
                       "scratch bytes",
                       op, (int)id, (int)b, x->offset, x->bytes, l->scratch_bytes);
    /* Scratch regions share one buffer: all read-only or all writable, and
     * writable ones must not overlap. */
    for (int32_t c = 0; c < b && x->kind == RLX_WB_SCRATCH; c++) {
      const rlx_wgpu_binding *y = &d->bindings[c];
      if (y->kind != RLX_WB_SCRATCH) continue;
      if (x->writable != y->writable)
        return rlx_error(RLX_ERR_STATE,
                         "webgpu: %s (node %d): scratch bindings %d and %d mix read-only and writable access "
                         "in one dispatch (declare both read_write)",
                         op, (int)id, (int)c, (int)b);
      if (x->writable && x->offset < y->offset + y->bytes && y->offset < x->offset + x->bytes)
        return rlx_error(RLX_ERR_STATE, "webgpu: %s (node %d): writable scratch bindings %d and %d overlap", op,
                         (int)id, (int)c, (int)b);
    }
  }
  return RLX_OK;
}

rlx_status rlx_wgpu_lower_step(const rlx_plan *p, int32_t id, rlx_wgpu_lowering *out) {
  const rlx_node_t *n = &p->graph.nodes[id];
  rlx_wgpu_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  memset(out, 0, sizeof *out);
  ctx.node = n;
  for (int32_t k = 0; k < n->n_inputs; k++) ctx.in_node[k] = &p->graph.nodes[n->inputs[k]];
  ctx.max_workgroup_storage = 16384;
  rlx_status st = lowerings[n->op](&ctx, out);
  if (st != RLX_OK) return st; /* message set by the lowering */
  if (out->n < 0 || out->n > RLX_WGPU_MAX_DISPATCH)
    return rlx_error(RLX_ERR_STATE, "webgpu: %s (node %d): bad dispatch count %d", rlx_op_name(n->op), (int)id,
                     (int)out->n);
  out->scratch_bytes = (out->scratch_bytes + 255) / 256 * 256;
  for (int32_t di = 0; di < out->n; di++)
    if ((st = check_dispatch(p, id, out, di)) != RLX_OK) return st;
  return RLX_OK;
}

void rlx_wgpu_state_free(rlx_session *s) {
  rlx_wgpu_state *w = rlx_wgpu_state_of(s);
  if (!w) return;
  size_t n = (size_t)s->plan.graph.n_nodes;
  rlx_free(w->arena_of, n);
  rlx_free(w->const_index, n * sizeof(int32_t));
  rlx_free(w->const_nodes, n * sizeof(int32_t));
  rlx_text_free(&w->json);
  rlx_free(w, sizeof *w);
  s->state = NULL;
}

/* Colours every step's output, then packs each arena by lifetime
 * (rlx_plan_pack, one group per arena) and rewrites the plan's arena
 * offsets into one virtual arena. */
static rlx_status place_arenas(rlx_plan *p, rlx_wgpu_state *w) {
  int32_t n = p->graph.n_nodes;
  for (int32_t s = 0; s < p->n_steps; s++) {
    int32_t id = p->steps[s];
    const rlx_node_t *nd = &p->graph.nodes[id];
    unsigned used = 0;
    for (int32_t k = 0; k < nd->n_inputs; k++) {
      int32_t r = rlx_plan_root(p, nd->inputs[k]);
      if (w->arena_of[r] >= 0) used |= 1u << w->arena_of[r];
    }
    int32_t c = 0;
    while (used & (1u << c)) c++;
    w->arena_of[id] = (int8_t)c;
    if (c + 1 > w->n_arenas) w->n_arenas = c + 1;
  }
  size_t *off = rlx_calloc((size_t)n + 1, sizeof *off);
  if (!off || rlx_plan_pack(p, w->arena_of, off, w->arena_floats) != RLX_OK) {
    rlx_free(off, ((size_t)n + 1) * sizeof *off);
    return rlx_error(RLX_ERR_NO_MEMORY, "webgpu: out of memory placing the arenas");
  }
  size_t base = 0;
  for (int32_t c = 0; c < w->n_arenas; c++) {
    w->arena_base[c] = base;
    base += w->arena_floats[c];
  }
  for (int32_t id = 0; id < n; id++)
    if (w->arena_of[id] >= 0) p->loc[id] = (rlx_loc){RLX_LOC_ARENA, 0, w->arena_base[w->arena_of[id]] + off[id]};
  p->arena_floats = base;
  for (int32_t id = 0; id < n; id++) /* views share their root's location */
    if (rlx_plan_is_view(&p->graph.nodes[id])) p->loc[id] = p->loc[rlx_plan_root(p, id)];
  rlx_free(off, ((size_t)n + 1) * sizeof *off);
  return RLX_OK;
}

rlx_status rlx_wgpu_prepare(rlx_session *s) {
  rlx_plan *p = &s->plan;
  size_t n = (size_t)p->graph.n_nodes;
  rlx_wgpu_state *w = rlx_calloc(1, sizeof *w);
  if (!w) return rlx_error(RLX_ERR_NO_MEMORY, "webgpu: out of memory");
  s->state = w;
  w->arena_of = rlx_malloc(n);
  w->const_index = rlx_malloc(n * sizeof(int32_t));
  w->const_nodes = rlx_malloc(n * sizeof(int32_t));
  rlx_wgpu_lowering *l = rlx_malloc(sizeof *l);
  if (!w->arena_of || !w->const_index || !w->const_nodes || !l) {
    rlx_free(l, sizeof *l);
    return rlx_error(RLX_ERR_NO_MEMORY, "webgpu: out of memory");
  }
  memset(w->arena_of, 0xff, n);
  for (size_t id = 0; id < n; id++) {
    w->const_index[id] = -1;
    if (p->graph.nodes[id].op == RLX_OP_CONSTANT) {
      w->const_index[id] = w->n_consts;
      w->const_nodes[w->n_consts++] = (int32_t)id;
    }
  }
  rlx_status st = RLX_OK;
  int prev_host = 0;
  for (int32_t i = 0; i < p->n_steps && st == RLX_OK; i++) {
    if ((st = rlx_wgpu_lower_step(p, p->steps[i], l)) != RLX_OK) break;
    int host = l->n == 0;
    w->host_steps += host;
    w->sync_points += host && !prev_host;
    prev_host = host;
    if (l->scratch_bytes > w->scratch_bytes) w->scratch_bytes = l->scratch_bytes;
  }
  rlx_free(l, sizeof *l);
  if (st != RLX_OK) return st;
  /* Views whose offset the GPU cannot bind (storage offsets are 256-byte aligned). */
  for (size_t id = 0; id < n; id++)
    if (rlx_plan_is_view(&p->graph.nodes[id]) && p->loc[id].kind != RLX_LOC_ARENA &&
        p->loc[id].offset % RLX_WGPU_ALIGN_FLOATS != 0)
      return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: node %d is a view at an unaligned offset", (int)id);
  if ((st = place_arenas(p, w)) != RLX_OK) return st;
#if defined(__wasm__)
  if (w->host_steps > 0)
    return rlx_error(RLX_ERR_UNSUPPORTED,
                     "compile: %d step(s) of this plan need host execution, which the browser's WebGPU executor "
                     "does not do",
                     (int)w->host_steps);
#endif
  return RLX_OK;
}
