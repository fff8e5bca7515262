/* plan_layout.c - the WebGL2 planner's layout decisions (plan_gl.c):
 * which shaders read and write either texture layout (flat R32F or 4
 * floats per texel), which temps may hold 4 floats per texel, the
 * per-pass defines those layouts allow (4 elements per fragment, one-texel
 * fetches), and the add/sub-of-a-product fusion. */
#include <string.h>

#include "gl_plan.h"

/* Shaders that read their inputs only through rlx_fetch (or pack4's
 * pack_fetch) and write through common.glsl's main(): they work on
 * textures of either layout (glsl/common.glsl); reads_flat_safe adds the
 * readers whose outputs have other constraints. */
static int flat_safe(const char *shader) {
  static const char *const names[] = {"binary", "unary", "copy", "where", "strided", "pad", "gather", "concat",
                                      "scatter_add", "pointwise_grad", "rope", "unpack4", "adam_update", NULL};
  for (int32_t k = 0; names[k]; k++)
    if (strcmp(names[k], shader) == 0) return 1;
  return 0;
}

int rlx_gl_reads_flat_safe(const char *shader) {
  return flat_safe(shader) || strcmp(shader, "pack4") == 0 || strcmp(shader, "pool") == 0 ||
         strcmp(shader, "pool_grad") == 0 || strcmp(shader, "reduce") == 0;
}

/* Shaders whose output goes through common.glsl's main() (rlx_value), which
 * writes either layout: all but those with their own main(). */
int rlx_gl_writes_flat_safe(const char *shader) {
  const char *src = rlx_glsl_source(shader);
  return src && !strstr(src, "RLX_CUSTOM_MAIN");
}

static void add_run4_defines(rlx_gl_planned_pass *pp, const rlx_gl_state *w);

/* Whether an iteration block keeps output elements 4t..4t+3 on one line of
 * its innermost axis. */
static int run4(const int32_t *u) { return u[0] >= 1 && u[0] <= RLX_MAX_RANK && (u[0] == 1 || u[1] % 4 == 0); }

/* pack4.frag's PACK_TEXEL: the source holds 4 floats per texel and each
 * packed texel is one of its texels (rows along k from 4-aligned offsets);
 * PACK_COLS: the source holds 4 floats per texel and k steps a multiple of
 * 4 (a column of a matrix: one component of texels s0 / 4 apart). */
static void add_pack_defines(rlx_gl_planned_pass *pp, const rlx_gl_state *w) {
  rlx_gl_pass *ps = &pp->pass;
  const int32_t *u = ps->ints, rank = u[0], K = u[36], d0 = u[40], s0 = u[42];
  if (ps->n_inputs != 1 || !w->tex[pp->in_tex[0]].v4 || d0 < K) return;
  if (s0 > 0 && s0 % 4 == 0) {
    rlx_gl_define(ps, "PACK_COLS", 1);
    return;
  }
  if (s0 != 1 || K % 4 != 0 || u[33] % 4 != 0) return;
  if (rank < 0 || rank > RLX_MAX_RANK) return;
  for (int32_t d = 0; d < rank; d++)
    if (u[9 + d] % 4 != 0) return;
  rlx_gl_define(ps, "PACK_TEXEL", 1);
}

/* The 4-elements-per-fragment defines of a pass writing 4 floats per texel
 * (glsl/binary.frag, unary.frag, copy.frag rlx_value4): fixed per pass, as
 * a software rasterizer runs both sides of a branch.  binary: RLX_RUN4
 * when a fragment's 4 elements lie on one line of the iteration's
 * innermost axis, then per operand F4_k = 1 (innermost stride 0: one
 * fetch), 2 (stride 1 and every offset of a run 4-aligned in a 4-floats-
 * per-texel input: one texel) or 0 (four fetches).  unary, copy: F4_0 = 2
 * when the input holds 4 floats per texel.  The C twins compute the same
 * values either way.  pool_grad: PG_V4 (rows of its 2x2 windows are
 * texel halves of a 4-floats-per-texel x; PG_RUN4 when the output holds 4
 * floats per texel too: 4 cells per fragment); pack4: add_pack_defines. */
void rlx_gl_add_v4_defines(rlx_gl_planned_pass *pp, const rlx_gl_state *w) {
  rlx_gl_pass *ps = &pp->pass;
  if (strcmp(ps->shader, "pack4") == 0) {
    add_pack_defines(pp, w);
    return;
  }
  if (strcmp(ps->shader, "pool_grad") == 0 && rlx_gl_define_value(ps, "P2", 0) && rlx_gl_define_value(ps, "MAX", 0) &&
      w->tex[pp->in_tex[0]].v4 && ps->ints[2] % 2 == 0) {
    rlx_gl_define(ps, "PG_V4", 1);
    if (w->tex[pp->out_tex].v4) rlx_gl_define(ps, "PG_RUN4", 1);
  }
  if (!w->tex[pp->out_tex].v4) return;
  if (strcmp(ps->shader, "unary") == 0 || strcmp(ps->shader, "copy") == 0) {
    if (ps->n_inputs == 1 && w->tex[pp->in_tex[0]].v4) rlx_gl_define(ps, "F4_0", 2);
    return;
  }
  if (strcmp(ps->shader, "unpack4") == 0) {
    if (run4(ps->ints)) rlx_gl_define(ps, "RLX_RUN4", 1);
    return;
  }
  if (strcmp(ps->shader, "binary") != 0 || ps->n_inputs < 2 || ps->n_inputs > 3) return;
  add_run4_defines(pp, w);
}

/* binary.frag's RLX_RUN4 and F4_k (rlx_gl_add_v4_defines). */
static void add_run4_defines(rlx_gl_planned_pass *pp, const rlx_gl_state *w) {
  rlx_gl_pass *ps = &pp->pass;
  const int32_t *u = ps->ints, rank = u[0];
  if (!run4(u)) return;
  rlx_gl_define(ps, "RLX_RUN4", 1);
  static const char *const names[3] = {"F4_0", "F4_1", "F4_2"};
  for (int32_t k = 0; k < ps->n_inputs; k++) {
    const int32_t *st = &u[9 + 8 * k];
    int32_t mode = 0;
    if (st[0] == 0) {
      mode = 1;
    } else if (st[0] == 1 && w->tex[pp->in_tex[k]].v4 && u[33 + k] % 4 == 0) {
      mode = 2;
      for (int32_t d = 1; d < rank; d++)
        if (st[d] % 4 != 0) mode = 0;
    }
    rlx_gl_define(ps, names[k], mode);
  }
}

/* Whether flat temp t of a lowering may hold 4 floats per texel: every
 * pass writing it writes through common.glsl's main() and every pass
 * reading it is a flat-safe reader (as choose_v4 asks of values). */
int rlx_gl_temp_v4(const rlx_gl_lowering *l, int32_t t) {
  if (l->temp_row_texels[t] > 0) return 0;
  for (int32_t i = 0; i < l->n; i++) {
    const rlx_gl_pass *ps = &l->p[i];
    if (!ps->shader) return 0;
    if (ps->output.kind == RLX_GLT_TEMP && ps->output.index == t && !rlx_gl_writes_flat_safe(ps->shader)) return 0;
    for (int32_t k = 0; k < ps->n_inputs; k++)
      if (ps->inputs[k].kind == RLX_GLT_TEMP && ps->inputs[k].index == t && !rlx_gl_reads_flat_safe(ps->shader)) return 0;
  }
  return 1;
}

/* add/sub(a, m) with m = mul(b, c) read by nothing else (no other step,
 * view or output): one pass a op (b * c) (rlx_gl_lower_mul_into), m gets
 * no texture.  The optimizers' updates p - lr * g are this shape.  fused:
 * the add/sub's entry names the mul and the mul's the add/sub. */
rlx_status rlx_gl_find_fusions(const rlx_plan *p, int32_t *fused) {
  const int32_t n = p->graph.n_nodes;
  int32_t *uses = rlx_calloc((size_t)n + 1, sizeof *uses), *step_of = rlx_malloc(((size_t)n + 1) * sizeof *step_of);
  if (!uses || !step_of) {
    rlx_free(uses, ((size_t)n + 1) * sizeof *uses);
    rlx_free(step_of, ((size_t)n + 1) * sizeof *step_of);
    return rlx_error(RLX_ERR_NO_MEMORY, "webgl: out of memory");
  }
  for (int32_t id = 0; id < n; id++) {
    fused[id] = step_of[id] = -1;
    const rlx_node_t *x = &p->graph.nodes[id];
    if (rlx_plan_is_view(x))
      for (int32_t k = 0; k < x->n_inputs; k++) uses[x->inputs[k]]++;
  }
  for (int32_t step = 0; step < p->n_steps; step++) {
    const rlx_node_t *x = &p->graph.nodes[p->steps[step]];
    step_of[p->steps[step]] = step;
    for (int32_t k = 0; k < x->n_inputs; k++) uses[x->inputs[k]]++;
  }
  for (int32_t i = 0; i < p->n_outputs; i++) uses[p->outputs[i]]++;
  for (int32_t step = 0; step < p->n_steps; step++) {
    const int32_t id = p->steps[step];
    const rlx_node_t *x = &p->graph.nodes[id];
    if ((x->op != RLX_OP_ADD && x->op != RLX_OP_SUB) || x->n_inputs != 2) continue;
    const int32_t m = x->inputs[1];
    const rlx_node_t *mn = &p->graph.nodes[m];
    if (mn->op == RLX_OP_MUL && mn->n_inputs == 2 && uses[m] == 1 && step_of[m] >= 0 && step_of[m] < step &&
        fused[m] < 0) {
      fused[id] = m;
      fused[m] = id;
    }
  }
  rlx_free(uses, ((size_t)n + 1) * sizeof *uses);
  rlx_free(step_of, ((size_t)n + 1) * sizeof *step_of);
  return RLX_OK;
}


/* Asks for line width `want` for v4 root r holding count floats: one row
 * per texture line needs want and the line count within max_width; a
 * second, different ask cancels (-1). */
static void ask_line(int32_t *line, const uint8_t *v4, int32_t r, size_t count, int32_t want, int32_t max_width) {
  if (!v4[r] || want < 1 || want > max_width || (count + 3) / 4 > (size_t)want * (size_t)max_width) return;
  line[r] = line[r] == 0 || line[r] == want ? want : -1;
}

/* Matmul operands a packed matmul may read as they lie (rlx_gl_direct_
 * operands): a [.., M, K] and a transposed b [.., N, K] with K % 4 == 0
 * (line K / 4), a plain b [K, N] with K % 4 == 0 and N % 4 == 0 (line
 * N / 4), and with such a b a transposed a [K, M], M % 4 == 0 (line M / 4,
 * rlx_gl_block_gemm).  A param and the value assigned to it keep one line (webgl.js
 * then swaps their textures). */
void rlx_gl_choose_lines(const rlx_plan *p, const uint8_t *v4, const int32_t *fused, int32_t max_width,
                         int32_t *line) {
  for (int32_t id = 0; id < p->graph.n_nodes; id++) line[id] = 0;
  for (int32_t step = 0; step < p->n_steps; step++) {
    const int32_t id = p->steps[step];
    const rlx_node_t *x = &p->graph.nodes[id];
    if (x->op != RLX_OP_MATMUL || x->n_inputs != 2 || fused[id] >= 0) continue;
    const rlx_shape *sa = &p->graph.nodes[x->inputs[0]].shape, *sb = &p->graph.nodes[x->inputs[1]].shape;
    if (sa->rank < 2 || sb->rank < 2) continue;
    const int32_t ta = ATTR_I(x, MATMUL, TRANS_A) != 0, tb = ATTR_I(x, MATMUL, TRANS_B) != 0;
    const int32_t K = ta ? sa->dims[sa->rank - 2] : sa->dims[sa->rank - 1], N = tb ? sb->dims[sb->rank - 2] : sb->dims[sb->rank - 1];
    if (K % 4 != 0) continue;
    int32_t ra = x->inputs[0], rb = x->inputs[1];
    while (rlx_plan_is_view(&p->graph.nodes[ra])) ra = p->graph.nodes[ra].inputs[0];
    while (rlx_plan_is_view(&p->graph.nodes[rb])) rb = p->graph.nodes[rb].inputs[0];
    const int32_t M = ta ? sa->dims[sa->rank - 1] : sa->dims[sa->rank - 2];
    if (!ta) ask_line(line, v4, ra, rlx_shape_numel(sa), K / 4, max_width);
    else if (!tb && sa->rank == 2 && sb->rank == 2 && M % 4 == 0 && N % 4 == 0) /* rlx_gl_block_gemm */
      ask_line(line, v4, ra, rlx_shape_numel(sa), M / 4, max_width);
    if (tb) ask_line(line, v4, rb, rlx_shape_numel(sb), K / 4, max_width);
    else if (sb->rank == 2 && N % 4 == 0) ask_line(line, v4, rb, rlx_shape_numel(sb), N / 4, max_width);
  }
  /* An optimizer's update add/sub(param, ..) that is a plan output (its
   * assignment is set after planning) takes the param's line. */
  for (int32_t i = 0; i < p->n_outputs; i++) {
    int32_t o = p->outputs[i];
    while (rlx_plan_is_view(&p->graph.nodes[o])) o = p->graph.nodes[o].inputs[0];
    const rlx_node_t *x = &p->graph.nodes[o];
    if ((x->op != RLX_OP_ADD && x->op != RLX_OP_SUB) || x->n_inputs != 2 || !v4[o] || line[o] != 0) continue;
    const int32_t r = x->inputs[0];
    if (p->graph.nodes[r].op == RLX_OP_PARAM && line[r] > 0 &&
        rlx_shape_numel(&p->graph.nodes[r].shape) == rlx_shape_numel(&x->shape))
      line[o] = line[r];
  }
  for (int32_t i = 0; i < p->n_outputs; i++) {
    if (p->assign_param[i] < 0) continue;
    int32_t from = p->outputs[i];
    while (rlx_plan_is_view(&p->graph.nodes[from])) from = p->graph.nodes[from].inputs[0];
    const int32_t to = p->params[p->assign_param[i]];
    if (line[from] != line[to]) {
      const int32_t want = line[from] == 0 ? line[to] : line[to] == 0 ? line[from] : -1;
      line[from] = line[to] = want;
      if (want > 0 && !v4[from]) line[from] = line[to] = -1;
    }
  }
  for (int32_t id = 0; id < p->graph.n_nodes; id++)
    if (line[id] < 0) line[id] = 0;
}
