/* reference.c - the C reference executor of WebGL2 plans: every texture is
 * a float array of its element count, every pass calls the C twin of its
 * shader (rlx_glref_<shader>, the same formulas and index math), in the
 * order web/runtime/webgl.js draws them.  rlx_session_run uses it for
 * sessions compiled for RLX_DEVICE_WEBGL, so each lowering and the planner
 * are tested natively against the CPU executor.  With debug_poison, every
 * pass output starts as NaN, so a pass that leaves elements unwritten
 * shows up. */
#include <math.h>
#include <string.h>

#include "gl_plan.h"

static rlx_status ensure_data(rlx_gl_state *w) {
  if (w->data) return RLX_OK;
  float **data = rlx_calloc((size_t)w->n_tex, sizeof(float *));
  int ok = data != NULL;
  for (int32_t t = 0; ok && t < w->n_tex; t++) ok = (data[t] = rlx_calloc(w->tex[t].count, sizeof(float))) != NULL;
  if (!ok) {
    for (int32_t t = 0; data && t < w->n_tex; t++) rlx_free(data[t], w->tex[t].count * sizeof(float));
    rlx_free(data, (size_t)w->n_tex * sizeof(float *));
    return rlx_error(RLX_ERR_NO_MEMORY, "run: out of memory for the WebGL2 reference textures");
  }
  w->data = data;
  return RLX_OK;
}

/* What the JS executor uploads: inputs (i32 ids as float values; the
 * words of an i32 input read as GGUF-typed weights bit for bit), params
 * and constants. */
static void upload(const rlx_session *s, rlx_gl_state *w) {
  const rlx_plan *p = &s->plan;
  for (int32_t i = 0; i < p->n_inputs; i++) {
    const rlx_node_t *n = &p->graph.nodes[p->inputs[i]];
    float *dst = w->data[w->node_tex[p->inputs[i]]];
    size_t count = rlx_shape_numel(&n->shape);
    if (n->dtype == RLX_I32 && !w->tex[w->node_tex[p->inputs[i]]].words) {
      const int32_t *src = (const int32_t *)s->input_data[i];
      for (size_t j = 0; j < count; j++) dst[j] = (float)src[j];
    } else {
      memcpy(dst, s->input_data[i], count * sizeof(float));
    }
  }
  for (int32_t i = 0; i < p->n_params; i++)
    memcpy(w->data[w->node_tex[p->params[i]]], s->param_data[i],
           rlx_shape_numel(&p->graph.nodes[p->params[i]].shape) * sizeof(float));
  for (int32_t id = 0; id < p->graph.n_nodes; id++)
    if (p->graph.nodes[id].op == RLX_OP_CONSTANT)
      memcpy(w->data[w->node_tex[id]], p->graph.nodes[id].data, rlx_shape_numel(&p->graph.nodes[id].shape) * sizeof(float));
}

static void run_pass(const rlx_session *s, rlx_gl_state *w, const rlx_gl_planned_pass *pp) {
  rlx_glref_args a;
  memset(&a, 0, sizeof a);
  a.pass = &pp->pass;
  for (int32_t k = 0; k < pp->pass.n_inputs; k++) {
    a.in[k] = w->data[pp->in_tex[k]];
    a.in_n[k] = w->tex[pp->in_tex[k]].count;
  }
  a.out = w->data[pp->out_tex];
  a.out_n = w->tex[pp->out_tex].count;
  if (s->debug_poison && !pp->in_place)
    for (size_t i = 0; i < a.out_n; i++) a.out[i] = NAN;
  pp->twin(&a);
}

rlx_status rlx_gl_execute(rlx_session *s) {
  rlx_gl_state *w = rlx_gl_state_of(s);
  const rlx_plan *p = &s->plan;
  if (!w) return rlx_error(RLX_ERR_STATE, "run: the session has no WebGL2 plan");
  rlx_status st = ensure_data(w);
  if (st != RLX_OK) return st;
  upload(s, w);
  for (int32_t i = 0; i < w->n_passes; i++) run_pass(s, w, &w->passes[i]);
  rlx_gl_planned_pass *assign = NULL;
  size_t assign_bytes = ((size_t)p->n_outputs + 1) * sizeof *assign;
  if (!(assign = rlx_malloc(assign_bytes))) return rlx_error(RLX_ERR_NO_MEMORY, "run: out of memory");
  int32_t n_assign = rlx_gl_assignment_passes(s, assign);
  for (int32_t i = 0; i < n_assign; i++) run_pass(s, w, &assign[i]);
  rlx_free(assign, assign_bytes);
  /* Outputs in the arena get their textures; outputs that are (views of)
   * inputs, params or constants already read the session's own copies. */
  for (int32_t i = 0; i < p->n_outputs; i++) {
    int32_t id = p->outputs[i];
    if (p->loc[id].kind == RLX_LOC_ARENA)
      memcpy(rlx_session_value(s, id), w->data[w->node_tex[id]], rlx_shape_numel(&p->graph.nodes[id].shape) * sizeof(float));
  }
  /* Leaves written in place (attention_kv's caches) go back to the
   * session's memory, as the CPU executor leaves them. */
  for (int32_t i = 0; i < w->n_passes; i++) {
    const int32_t t = w->passes[i].out_tex;
    if (!w->passes[i].in_place) continue;
    for (int32_t k = 0; k < p->n_inputs; k++)
      if (w->node_tex[p->inputs[k]] == t) memcpy(s->input_data[k], w->data[t], w->tex[t].count * sizeof(float));
    for (int32_t k = 0; k < p->n_params; k++)
      if (w->node_tex[p->params[k]] == t) memcpy(s->param_data[k], w->data[t], w->tex[t].count * sizeof(float));
  }
  for (int32_t i = 0; i < p->n_outputs; i++) {
    int32_t k = p->assign_param[i];
    if (k >= 0)
      memcpy(s->param_data[k], w->data[w->node_tex[p->params[k]]],
             rlx_shape_numel(&p->graph.nodes[p->params[k]].shape) * sizeof(float));
  }
  return RLX_OK;
}
