/* plan_gl.c - preparing a plan for RLX_DEVICE_WEBGL (backend.c; plans are
 * built without fusion): every step is lowered to render passes
 * (rlx_gl_lower_<op>), and every value gets a texture (gl_plan.h says how
 * textures are shared); only an add/sub of a product read by nothing else becomes one pass
 * (plan_layout.c).  Each lowering is checked here, at compile time: pass
 * count, inputs, temps, a known shader with a C twin, and no pass reading
 * its own output texture.  Textures are near square; values (choose_v4)
 * and temps that only flat-safe readers read, written through
 * common.glsl's main(), hold 4 floats per texel, which lets packed
 * matmuls write them directly and sets per-pass defines (plan_layout.c);
 * those a matmul reads as they lie get one matrix row per texture line
 * (rlx_gl_choose_lines); packed matmul temps are RGBA rows (gl_plan.h).
 * matmul_q / gather_q / swiglu_q weights get words textures
 * (choose_words) and attention_kv writes its cache leaves in place
 * (gl_plan.h). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../core/families.h"
#include "gl_plan.h"

typedef rlx_status (*gl_lower_fn)(const rlx_gl_ctx *c, rlx_gl_lowering *out);

static const gl_lower_fn lowerings[RLX_OP_COUNT] = {
#define RLX_OP(ID, name, min_in, max_in, rule, attrs) [RLX_OP_##ID] = RLX_IF_BUILT(rlx_gl_lower_##name),
#include "rlx_ops.def"
#undef RLX_OP
};

int rlx_gl_supports(rlx_op op) { return lowerings[op] != NULL; }

/* The smallest w with w * w >= n. */
static size_t ceil_sqrt(size_t n) {
  size_t w = (size_t)sqrt((double)n);
  while (w * w < n) w++;
  while (w > 1 && (w - 1) * (w - 1) >= n) w--;
  return w;
}

/* Near-square textures: a software rasterizer shares the rows of the
 * framebuffer among its threads and shades 2x2 quads, so a texture one or
 * two lines high runs on one thread with half its lanes idle. */
void rlx_gl_layout(size_t count, int32_t max_width, int32_t *width, int32_t *height) {
  size_t w = count == 0 ? 1 : ceil_sqrt(count);
  if (w > (size_t)max_width) w = (size_t)max_width;
  *width = (int32_t)w;
  *height = (int32_t)((count + w - 1) / w);
  if (*height == 0) *height = 1;
}

void rlx_gl_packed_layout(size_t rows, int32_t rt, int32_t max_width, int32_t *per, int32_t *width, int32_t *height) {
  int32_t most = rt > 0 && rt < max_width ? max_width / rt : 1;
  size_t side = ceil_sqrt(rows * (size_t)(rt > 0 ? rt : 1)); /* texels across a square */
  size_t pr = (side + (size_t)rt - 1) / (size_t)(rt > 0 ? rt : 1);
  if (pr < 1) pr = 1;
  if (pr > (size_t)most) pr = (size_t)most;
  size_t across = rows < pr ? (rows ? rows : 1) : pr;
  *per = (int32_t)pr;
  *width = (int32_t)across * rt;
  *height = (int32_t)((rows + pr - 1) / pr);
  if (*height == 0) *height = 1;
}

void rlx_gl_state_free(rlx_session *s) {
  rlx_gl_state *w = s ? rlx_gl_state_of(s) : NULL;
  if (!w) return;
  if (w->data)
    for (int32_t t = 0; t < w->n_tex; t++) rlx_free(w->data[t], w->tex[t].count * sizeof(float));
  rlx_free(w->data, (size_t)w->n_tex * sizeof(float *));
  rlx_free(w->tex, (size_t)w->cap_tex * sizeof(rlx_gl_texture));
  rlx_free(w->node_tex, ((size_t)s->plan.graph.n_nodes + 1) * sizeof(int32_t)); /* as allocated */
  rlx_free(w->passes, (size_t)w->cap_passes * sizeof(rlx_gl_planned_pass));
  rlx_text_free(&w->json);
  rlx_free(w, sizeof *w);
  s->state = NULL;
}

/* Planner state: the state being built plus the pool of free textures. */
typedef struct {
  rlx_gl_state *w;
  uint8_t *is_free; /* per texture */
  int32_t cap_free;
  uint8_t *v4;      /* per node: its texture may hold 4 floats per texel */
  int32_t *fused;   /* per node: an add/sub's fused mul, a fused mul's
                     * add/sub (rlx_gl_find_fusions), or -1 */
  int32_t *line;    /* per node: its v4 texture's line width, or 0 */
} planner;

static int32_t new_texture(planner *pl, size_t count, int32_t row_texels, int32_t v4, int32_t line,
                           int32_t layers, rlx_gl_tex_role role, int32_t node) {
  rlx_gl_state *w = pl->w;
  if (w->n_tex == w->cap_tex) {
    int32_t cap = w->cap_tex ? w->cap_tex * 2 : 16;
    rlx_gl_texture *t = rlx_realloc(w->tex, (size_t)w->cap_tex * sizeof *t, (size_t)cap * sizeof *t);
    if (!t) return -1;
    w->tex = t;
    w->cap_tex = cap;
  }
  if (w->n_tex == pl->cap_free) {
    int32_t cap = pl->cap_free ? pl->cap_free * 2 : 16;
    uint8_t *f = rlx_realloc(pl->is_free, (size_t)pl->cap_free, (size_t)cap);
    if (!f) return -1;
    pl->is_free = f;
    pl->cap_free = cap;
  }
  rlx_gl_texture *t = &w->tex[w->n_tex];
  t->role = role;
  t->node = node;
  t->row_texels = row_texels;
  t->rows = row_texels > 0 ? count : 0;
  t->v4 = v4;
  t->line = v4 ? line : 0;
  t->layers = row_texels > 0 && layers > 1 ? layers : 0;
  t->words = 0;
  if (t->layers) {
    t->width = row_texels;
    t->height = (int32_t)count;
    t->count = 4 * (size_t)t->width * (size_t)t->height * (size_t)t->layers;
  } else if (row_texels > 0) {
    int32_t per;
    rlx_gl_packed_layout(count, row_texels, w->max_width, &per, &t->width, &t->height);
    t->count = 4 * (size_t)t->width * (size_t)t->height;
  } else {
    t->count = count;
    rlx_gl_layout(v4 ? (count + 3) / 4 : count, w->max_width, &t->width, &t->height);
    if (t->line > 0) {
      t->width = t->line;
      t->height = (int32_t)(((count + 3) / 4 + (size_t)t->line - 1) / (size_t)t->line);
    }
  }
  pl->is_free[w->n_tex] = 0;
  return w->n_tex++;
}

/* A free texture of exactly count floats (packed: of the same rows and
 * row width), else a new one. */
static int32_t take_texture(planner *pl, size_t count, int32_t row_texels, int32_t v4, int32_t line,
                            int32_t layers, rlx_gl_tex_role role, int32_t node) {
  if (!v4) line = 0;
  if (row_texels <= 0 || layers <= 1) layers = 0;
  for (int32_t t = 0; t < pl->w->n_tex; t++) {
    const rlx_gl_texture *x = &pl->w->tex[t];
    if (pl->is_free[t] && x->row_texels == row_texels && x->v4 == v4 && x->line == line && x->layers == layers &&
        (row_texels > 0 ? x->rows == count : x->count == count)) {
      pl->is_free[t] = 0;
      return t;
    }
  }
  return new_texture(pl, count, row_texels, v4, line, layers, role, node);
}

static rlx_status add_pass(rlx_gl_state *w, const rlx_gl_planned_pass *pp) {
  if (w->n_passes == w->cap_passes) {
    int32_t cap = w->cap_passes ? w->cap_passes * 2 : 32;
    rlx_gl_planned_pass *np = rlx_realloc(w->passes, (size_t)w->cap_passes * sizeof *np, (size_t)cap * sizeof *np);
    if (!np) return rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory planning passes");
    w->passes = np;
    w->cap_passes = cap;
  }
  w->passes[w->n_passes++] = *pp;
  return RLX_OK;
}

/* Resolves a pass's texture reference; -1 when it names nothing. */
static int32_t resolve(const rlx_gl_tex *r, const rlx_gl_state *w, const rlx_plan *p, const rlx_node_t *n,
                       int32_t out_tex, const int32_t *temps, const rlx_gl_lowering *l) {
  switch (r->kind) {
    case RLX_GLT_INPUT:
      return (r->index >= 0 && r->index < n->n_inputs) ? w->node_tex[rlx_plan_root(p, n->inputs[r->index])] : -1;
    case RLX_GLT_OUTPUT: return out_tex;
    case RLX_GLT_TEMP: return (r->index >= 0 && r->index < l->n_temps) ? temps[r->index] : -1;
  }
  return -1;
}

/* Whether input k of n is a leaf (an input or param, not a view) that a
 * pass may write in place. */
static int writable_leaf(const rlx_plan *p, const rlx_node_t *n, int32_t k) {
  if (k < 0 || k >= n->n_inputs) return 0;
  const rlx_op op = p->graph.nodes[n->inputs[k]].op;
  return op == RLX_OP_INPUT || op == RLX_OP_PARAM;
}

/* Whether input k of op is GGUF-typed weights (a words texture, which the
 * op's passes read as such: matmul_q's w, gather_q's table, swiglu_q's
 * two tables). */
static int weight_input(rlx_op op, int32_t k) {
  return op == RLX_OP_MATMUL_Q ? k == 1 : op == RLX_OP_GATHER_Q ? k == 0 : op == RLX_OP_SWIGLU_Q && k >= 1;
}

/* Per node: 1 for an i32 input or param that a quantized op reads as
 * weights (it gets a words texture). */
static void choose_words(const rlx_plan *p, uint8_t *words) {
  for (int32_t id = 0; id < p->graph.n_nodes; id++) words[id] = 0;
  for (int32_t step = 0; step < p->n_steps; step++) {
    const rlx_node_t *n = &p->graph.nodes[p->steps[step]];
    for (int32_t k = 0; k < n->n_inputs; k++) {
      if (!weight_input(n->op, k)) continue;
      const int32_t r = rlx_plan_root(p, n->inputs[k]);
      const rlx_op op = p->graph.nodes[r].op;
      if ((op == RLX_OP_INPUT || op == RLX_OP_PARAM) && p->graph.nodes[r].dtype == RLX_I32) words[r] = 1;
    }
  }
}

/* Lowers step `step` (node id), places its output and temps and appends
 * its passes.  Textures of values read for the last time are freed after. */
static rlx_status plan_step(planner *pl, const rlx_plan *p, int32_t step) {
  rlx_gl_state *w = pl->w;
  int32_t id = p->steps[step];
  const rlx_node_t *n = &p->graph.nodes[id];
  rlx_node_t joined; /* a fused add/sub: inputs {a, b, c} of a op (b * c) */
  const int32_t fm = pl->fused[id];
  if (fm >= 0 && p->graph.nodes[fm].op == RLX_OP_MUL && n->op != RLX_OP_MUL) {
    joined = *n;
    joined.n_inputs = 3;
    joined.inputs[1] = p->graph.nodes[fm].inputs[0];
    joined.inputs[2] = p->graph.nodes[fm].inputs[1];
    n = &joined;
  } else if (fm >= 0) {
    return RLX_OK; /* a mul computed by its add/sub's pass; its inputs stay */
  }
  rlx_gl_ctx ctx;
  rlx_gl_lowering l;
  memset(&ctx, 0, sizeof ctx);
  memset(&l, 0, sizeof l);
  ctx.node = n;
  ctx.max_width = w->max_width;
  for (int32_t k = 0; k < n->n_inputs; k++) ctx.in_node[k] = &p->graph.nodes[n->inputs[k]];
  rlx_status st = n == &joined ? rlx_gl_lower_mul_into(&ctx, &l, n->op == RLX_OP_SUB) : lowerings[n->op](&ctx, &l);
  if (st != RLX_OK) return st;
  if (n->op == RLX_OP_MATMUL) {
    int32_t in_line[RLX_MAX_INPUTS] = {0};
    for (int32_t k = 0; k < n->n_inputs && k < RLX_MAX_INPUTS; k++) {
      const int32_t t = w->node_tex[rlx_plan_root(p, n->inputs[k])];
      in_line[k] = t >= 0 && w->tex[t].v4 ? w->tex[t].line : 0;
    }
    if (pl->v4[id]) rlx_gl_packed_direct(&l);
    if (!rlx_gl_block_gemm(&l, in_line)) rlx_gl_direct_operands(&l, in_line);
  } else if (pl->v4[id]) {
    rlx_gl_packed_direct(&l);
  }
  if (l.n <= 0 || l.n > RLX_GL_MAX_PASSES || l.n_temps < 0 || l.n_temps > RLX_GL_MAX_PASSES)
    return rlx_error(RLX_ERR_STATE, "webgl: the lowering of %s gave %d passes and %d temps", rlx_op_name(n->op),
                     (int)l.n, (int)l.n_temps);
  int32_t temps[RLX_GL_MAX_PASSES], wrote_output = 0;
  for (int32_t t = 0; t < l.n_temps; t++) {
    if (l.temp_count[t] == 0)
      return rlx_error(RLX_ERR_STATE, "webgl: the lowering of %s asked for an empty temp", rlx_op_name(n->op));
    temps[t] = take_texture(pl, l.temp_count[t], l.temp_row_texels[t], rlx_gl_temp_v4(&l, t), 0, l.temp_layers[t],
                            RLX_GLK_TEMP, -1);
    if (temps[t] < 0)
      return rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory planning textures");
  }
  int32_t out_tex = take_texture(pl, rlx_shape_numel(&n->shape), 0, pl->v4[id], pl->line[id], 0, RLX_GLK_VALUE, id);
  if (out_tex < 0) return rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory planning textures");
  w->node_tex[id] = out_tex;
  for (int32_t i = 0; i < l.n; i++) {
    rlx_gl_planned_pass pp;
    memset(&pp, 0, sizeof pp);
    pp.pass = l.p[i];
    pp.node = id;
    const rlx_gl_pass *ps = &pp.pass;
    if (!ps->shader || !rlx_glsl_source(ps->shader) || !(pp.twin = rlx_glref_find(ps->shader)))
      return rlx_error(RLX_ERR_STATE, "webgl: the lowering of %s names shader '%s', which has no .frag or C twin",
                       rlx_op_name(n->op), ps->shader ? ps->shader : "(null)");
    pp.out_tex = resolve(&ps->output, w, p, n, out_tex, temps, &l);
    if (pp.out_tex < 0 || (ps->output.kind == RLX_GLT_INPUT && !writable_leaf(p, n, ps->output.index)))
      return rlx_error(RLX_ERR_STATE, "webgl: pass %d of %s writes no output, temp or input leaf", (int)i,
                       rlx_op_name(n->op));
    if (w->tex[pp.out_tex].words || (pp.in_place && w->tex[pp.out_tex].v4))
      return rlx_error(RLX_ERR_STATE, "webgl: pass %d of %s writes a texture of the wrong layout", (int)i,
                       rlx_op_name(n->op));
    wrote_output |= ps->output.kind == RLX_GLT_OUTPUT;
    pp.in_place = ps->output.kind == RLX_GLT_INPUT;
    if (w->tex[pp.out_tex].v4) rlx_gl_define(&pp.pass, "RLX_V4", 1);
    for (int32_t k = 0; k < ps->n_inputs; k++) {
      pp.in_tex[k] = resolve(&ps->inputs[k], w, p, n, out_tex, temps, &l);
      if (pp.in_tex[k] < 0)
        return rlx_error(RLX_ERR_STATE, "webgl: pass %d of %s reads a texture it does not have", (int)i,
                         rlx_op_name(n->op));
      if (pp.in_tex[k] == pp.out_tex)
        return rlx_error(RLX_ERR_STATE, "webgl: pass %d of %s reads the texture it writes", (int)i,
                         rlx_op_name(n->op));
      const int weights = ps->inputs[k].kind == RLX_GLT_INPUT && weight_input(n->op, ps->inputs[k].index);
      if (w->tex[pp.in_tex[k]].words != weights)
        return rlx_error(RLX_ERR_UNSUPPORTED, w->tex[pp.in_tex[k]].words
                         ? "webgl: %s reads an i32 tensor that matmul_q or gather_q reads as weights (WebGL2 "
                           "keeps those as raw words)"
                         : "webgl: %s reads its weights from a computed value; on WebGL2 they must be an i32 "
                           "input or param", rlx_op_name(n->op));
    }
    rlx_gl_add_v4_defines(&pp, w);
    if ((st = add_pass(w, &pp)) != RLX_OK) return st;
  }
  if (!wrote_output) return rlx_error(RLX_ERR_STATE, "webgl: no pass of %s writes its output", rlx_op_name(n->op));
  for (int32_t t = 0; t < l.n_temps; t++) pl->is_free[temps[t]] = 1;
  for (int32_t k = 0; k < n->n_inputs; k++) {
    int32_t r = rlx_plan_root(p, n->inputs[k]);
    /* <=: a fused mul's inputs were last read at the mul's step */
    if (p->first_step[r] >= 0 && p->last_step[r] <= step) pl->is_free[w->node_tex[r]] = 1;
  }
  if (p->last_step[id] == step) pl->is_free[out_tex] = 1; /* never read */
  return RLX_OK;
}

/* Which values may take 4 floats per texel: every pass that writes or reads
 * them (through any view) is flat-safe.  Lowers every step once for this;
 * lowerings are pure functions of the node and max_width.  Inputs, params
 * and constants qualify too (webgl.js uploads and reads either layout). */
static void choose_v4(const rlx_plan *p, int32_t max_width, uint8_t *v4) {
  for (int32_t id = 0; id < p->graph.n_nodes; id++) v4[id] = 1;
  for (int32_t step = 0; step < p->n_steps; step++) {
    const int32_t id = p->steps[step];
    const rlx_node_t *n = &p->graph.nodes[id];
    rlx_gl_ctx ctx;
    rlx_gl_lowering l;
    memset(&ctx, 0, sizeof ctx);
    memset(&l, 0, sizeof l);
    ctx.node = n;
    ctx.max_width = max_width;
    for (int32_t k = 0; k < n->n_inputs; k++) ctx.in_node[k] = &p->graph.nodes[n->inputs[k]];
    if (lowerings[n->op](&ctx, &l) != RLX_OK || l.n <= 0 || l.n > RLX_GL_MAX_PASSES) {
      v4[id] = 0;
      for (int32_t k = 0; k < n->n_inputs; k++) v4[rlx_plan_root(p, n->inputs[k])] = 0;
      continue;
    }
    for (int32_t i = 0; i < l.n; i++) {
      const rlx_gl_pass *ps = &l.p[i];
      if (ps->output.kind == RLX_GLT_OUTPUT && (!ps->shader || !rlx_gl_writes_flat_safe(ps->shader))) v4[id] = 0;
      if (ps->output.kind == RLX_GLT_INPUT && ps->output.index >= 0 && ps->output.index < n->n_inputs)
        v4[rlx_plan_root(p, n->inputs[ps->output.index])] = 0; /* written in place: one float per texel */
      for (int32_t k = 0; k < ps->n_inputs; k++) {
        const rlx_gl_tex *r = &ps->inputs[k];
        if (r->kind == RLX_GLT_INPUT && r->index >= 0 && r->index < n->n_inputs &&
            (!ps->shader || !rlx_gl_reads_flat_safe(ps->shader)))
          v4[rlx_plan_root(p, n->inputs[r->index])] = 0;
      }
    }
  }
  /* A param and the value assigned to it keep one layout (webgl.js swaps them). */
  for (int32_t i = 0; i < p->n_outputs; i++) {
    if (p->assign_param[i] < 0) continue;
    const int32_t from = rlx_plan_root(p, p->outputs[i]), to = p->params[p->assign_param[i]];
    if (!v4[from] || !v4[to]) v4[from] = v4[to] = 0;
  }
}

rlx_status rlx_gl_prepare(rlx_session *s, int32_t max_width) {
  rlx_gl_state_free(s);
  const rlx_plan *p = &s->plan;
  planner pl = {NULL, NULL, 0, NULL, NULL, NULL};
  uint8_t *words = NULL;
  rlx_status st = RLX_OK;
  if (!(pl.w = rlx_calloc(1, sizeof *pl.w))) return rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory");
  s->state = pl.w;
  pl.w->max_width = max_width > 0 ? max_width : RLX_GL_DEFAULT_MAX_WIDTH;
  if (!(pl.v4 = rlx_malloc((size_t)p->graph.n_nodes + 1))) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory");
    goto done;
  }
  choose_v4(p, pl.w->max_width, pl.v4);
  if (!(words = rlx_malloc((size_t)p->graph.n_nodes + 1))) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory");
    goto done;
  }
  choose_words(p, words);
  for (int32_t id = 0; id < p->graph.n_nodes; id++)
    if (words[id]) pl.v4[id] = 0;
  if (!(pl.fused = rlx_malloc(((size_t)p->graph.n_nodes + 1) * sizeof(int32_t)))) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory");
    goto done;
  }
  if ((st = rlx_gl_find_fusions(p, pl.fused)) != RLX_OK) goto done;
  if (!(pl.line = rlx_malloc(((size_t)p->graph.n_nodes + 1) * sizeof(int32_t)))) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory");
    goto done;
  }
  rlx_gl_choose_lines(p, pl.v4, pl.fused, pl.w->max_width, pl.line);
  if (!(pl.w->node_tex = rlx_malloc(((size_t)p->graph.n_nodes + 1) * sizeof(int32_t)))) {
    st = rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory");
    goto done;
  }
  for (int32_t id = 0; id < p->graph.n_nodes; id++) {
    const rlx_node_t *n = &p->graph.nodes[id];
    size_t count = rlx_shape_numel(&n->shape);
    pl.w->node_tex[id] = -1;
    if (count > (size_t)INT32_MAX) {
      st = rlx_error(RLX_ERR_UNSUPPORTED, "webgl: node %d holds %zu values, more than a shader can index", (int)id,
                     count);
      goto done;
    }
    rlx_gl_tex_role role = n->op == RLX_OP_INPUT ? RLX_GLK_INPUT : n->op == RLX_OP_PARAM ? RLX_GLK_PARAM : RLX_GLK_CONST;
    if (n->op != RLX_OP_INPUT && n->op != RLX_OP_PARAM && n->op != RLX_OP_CONSTANT) continue;
    if ((pl.w->node_tex[id] = new_texture(&pl, count, 0, pl.v4[id], pl.line[id], 0, role, id)) < 0) {
      st = rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory planning textures");
      goto done;
    }
    if (words[id]) {
      rlx_gl_texture *t = &pl.w->tex[pl.w->node_tex[id]];
      t->words = 1;
      rlx_gl_layout((count + 3) / 4, pl.w->max_width, &t->width, &t->height);
    }
  }
  for (int32_t step = 0; step < p->n_steps && st == RLX_OK; step++) {
    if ((st = plan_step(&pl, p, step)) != RLX_OK) {
      char why[400];
      int32_t id = p->steps[step];
      snprintf(why, sizeof why, "%s", rlx_last_error());
      st = rlx_error(st, "node %d (%s): %s", (int)id, rlx_op_name(p->graph.nodes[id].op), why);
    }
  }
  for (int32_t id = 0; id < p->graph.n_nodes && st == RLX_OK; id++)
    if (rlx_plan_is_view(&p->graph.nodes[id])) pl.w->node_tex[id] = pl.w->node_tex[rlx_plan_root(p, id)];
done:
  rlx_free(pl.is_free, (size_t)pl.cap_free);
  rlx_free(pl.v4, (size_t)p->graph.n_nodes + 1);
  rlx_free(words, (size_t)p->graph.n_nodes + 1);
  rlx_free(pl.fused, ((size_t)p->graph.n_nodes + 1) * sizeof(int32_t));
  rlx_free(pl.line, ((size_t)p->graph.n_nodes + 1) * sizeof(int32_t));
  if (st != RLX_OK) rlx_gl_state_free(s);
  return st;
}

int32_t rlx_gl_assignment_passes(const rlx_session *s, rlx_gl_planned_pass *out) {
  const rlx_plan *p = &s->plan;
  const rlx_gl_state *w = rlx_gl_state_of(s);
  int32_t n = 0;
  for (int32_t i = 0; i < p->n_outputs; i++) {
    if (p->assign_param[i] < 0) continue;
    int32_t from = w->node_tex[p->outputs[i]], to = w->node_tex[p->params[p->assign_param[i]]];
    if (from == to) continue;
    rlx_gl_planned_pass *pp = &out[n++];
    memset(pp, 0, sizeof *pp);
    pp->pass.shader = "copy";
    pp->pass.n_inputs = 1;
    pp->pass.inputs[0] = (rlx_gl_tex){RLX_GLT_INPUT, 0};
    pp->pass.output = (rlx_gl_tex){RLX_GLT_OUTPUT, 0};
    pp->in_tex[0] = from;
    pp->out_tex = to;
    pp->node = -1;
    pp->twin = rlx_glref_find("copy");
    if (w->tex[to].v4) rlx_gl_define(&pp->pass, "RLX_V4", 1);
  }
  return n;
}
