/* lower_packed.c - the packed matmul (gl_plan.h rlx_gl_gemm) shared by
 * matmul and the convolutions: each operand is packed into an RGBA32F
 * texture, 4 values along k per texel (glsl/pack4.frag), one pass
 * multiplies them 4 outputs per fragment into a packed result
 * (glsl/matmul_packed.frag), and one pass puts the result in the op's flat
 * output (glsl/unpack4.frag), unless the planner finds the packed result
 * already is the output's layout (rlx_gl_packed_direct) or the caller
 * keeps it packed (col2im).  Reading 4 values per fetch is what makes
 * this faster than the flat shaders, whose loops are fetch-bound.  At plan
 * time, operands that already are 4-floats-per-texel inputs with one
 * matrix row per texture line skip their pack pass
 * (rlx_gl_direct_operands), and unbatched products of such operands with
 * M, N, K multiples of 4 compute 4 x 4 outputs per fragment into a 4-layer
 * temp (glsl/matmul_block4.frag, rlx_gl_block_gemm), half the fetches per
 * multiply-add. */
#include <string.h>

#include "gl_plan.h"

/* pack4: rows of operand o (K values each) into packed temp `temp`. */
static void add_pack(rlx_gl_lowering *l, const rlx_gl_gemm_operand *o, int32_t K, int32_t temp, int32_t max_width) {
  const size_t rows = rlx_shape_numel(o->rows);
  const int32_t rt = (K + 3) / 4;
  int32_t per, width, height;
  rlx_gl_packed_layout(rows, rt, max_width, &per, &width, &height);
  rlx_gl_pass *p = rlx_gl_add(l, "pack4");
  rlx_gl_in(p, o->src.kind, o->src.index);
  rlx_gl_out(p, RLX_GLT_TEMP, temp);
  rlx_gl_iter(p, o->rows, 1, (const int32_t(*)[RLX_MAX_RANK])o->row_strides, &o->base);
  rlx_gl_int(p, K);
  rlx_gl_int(p, rt);
  rlx_gl_int(p, per);
  rlx_gl_int(p, (int32_t)rows);
  rlx_gl_int(p, o->kd[0] > 0 ? o->kd[0] : 1);
  rlx_gl_int(p, o->kd[1] > 0 ? o->kd[1] : 1);
  for (int32_t d = 0; d < 3; d++) rlx_gl_int(p, o->k_strides[d]);
  rlx_gl_int(p, width);
}

int rlx_gl_add_packed_gemm(rlx_gl_lowering *l, const rlx_gl_gemm *g, int32_t max_width) {
  const int32_t kt = (g->K + 3) / 4, ot = (g->N + 3) / 4;
  if (g->K < 1 || g->M < 1 || g->N < 1 || kt > max_width || ot > max_width) return 0;
  const size_t a_rows = rlx_shape_numel(g->a.rows), b_rows = rlx_shape_numel(g->b.rows);
  const size_t out_rows = rlx_shape_numel(&g->batch) * (size_t)g->M;
  if (a_rows > (size_t)INT32_MAX || b_rows > (size_t)INT32_MAX || out_rows > (size_t)INT32_MAX) return 0;
  const int32_t ta = rlx_gl_temp_packed(l, a_rows, kt), tb = rlx_gl_temp_packed(l, b_rows, kt);
  const int32_t to = rlx_gl_temp_packed(l, out_rows, ot);
  add_pack(l, &g->a, g->K, ta, max_width);
  add_pack(l, &g->b, g->K, tb, max_width);
  int32_t pa, pb, po, wa, wb, wo, h;
  rlx_gl_packed_layout(a_rows, kt, max_width, &pa, &wa, &h);
  rlx_gl_packed_layout(b_rows, kt, max_width, &pb, &wb, &h);
  rlx_gl_packed_layout(out_rows, ot, max_width, &po, &wo, &h);
  rlx_gl_pass *p = rlx_gl_add(l, "matmul_packed");
  rlx_gl_define(p, "KT", kt);
  rlx_gl_in(p, RLX_GLT_TEMP, ta);
  rlx_gl_in(p, RLX_GLT_TEMP, tb);
  rlx_gl_out(p, RLX_GLT_TEMP, to);
  int32_t strides[2][RLX_MAX_RANK];
  for (int32_t d = 0; d < g->batch.rank; d++) {
    strides[0][d] = g->a.batch_rows[d];
    strides[1][d] = g->b.batch_rows[d];
  }
  rlx_gl_iter(p, &g->batch, 2, (const int32_t(*)[RLX_MAX_RANK])strides, NULL);
  const int32_t tail[] = {g->M, g->N, kt, pa, pb, ot, po, (int32_t)out_rows, wa, wb, wo};
  for (size_t k = 0; k < sizeof tail / sizeof *tail; k++) rlx_gl_int(p, tail[k]);
  if (g->packed_out) {
    *g->packed_out = to;
    return p != NULL;
  }
  p = rlx_gl_add(l, "unpack4");
  rlx_gl_in(p, RLX_GLT_TEMP, to);
  if (g->place_temp > 0) rlx_gl_out(p, RLX_GLT_TEMP, g->place_temp - 1);
  int32_t place[2][RLX_MAX_RANK];
  for (int32_t d = 0; d < g->place->rank; d++) {
    place[0][d] = g->place_row[d];
    place[1][d] = g->place_col[d];
  }
  rlx_gl_iter(p, g->place, 2, (const int32_t(*)[RLX_MAX_RANK])place, NULL);
  rlx_gl_int(p, ot);
  rlx_gl_int(p, po);
  rlx_gl_int(p, wo);
  return p != NULL;
}

/* When the op's output holds 4 floats per texel (plan_gl.c) and the
 * lowering ends with matmul_packed into a temp then an unpack4 of that
 * temp onto the output in plain row-major order with N = 4 * ort, the
 * packed result already is the output's layout (texel t = row t / ort):
 * the matmul writes the output and the unpack pass goes.  Returns 1 when
 * it did. */
int rlx_gl_packed_direct(rlx_gl_lowering *l) {
  if (l->n < 2) return 0;
  rlx_gl_pass *mm = &l->p[l->n - 2];
  const rlx_gl_pass *up = &l->p[l->n - 1];
  if (!mm->shader || !up->shader || strcmp(mm->shader, "matmul_packed") != 0 || strcmp(up->shader, "unpack4") != 0)
    return 0;
  if (mm->output.kind != RLX_GLT_TEMP || up->output.kind != RLX_GLT_OUTPUT || up->n_inputs != 1 ||
      up->inputs[0].kind != RLX_GLT_TEMP || up->inputs[0].index != mm->output.index)
    return 0;
  const int32_t *u = up->ints, N = mm->ints[37], ort = mm->ints[41], rows = mm->ints[43];
  if (N != 4 * ort || u[33] != 0 || u[34] != 0) return 0;
  /* the unpack's iteration: operand 0 = row, operand 1 = column, flat order */
  const int ok = (u[0] == 1 && rows == 1 && u[1] == N && u[9] == 0 && u[17] == 1) ||
                 (u[0] == 2 && u[1] == N && u[2] == rows && u[9] == 0 && u[10] == 1 && u[17] == 1 && u[18] == 0);
  if (!ok) return 0;
  mm->output = up->output;
  l->n--;
  return 1;
}

/* Removes pass i of l. */
static void drop_pass(rlx_gl_lowering *l, int32_t i) {
  for (int32_t j = i; j + 1 < l->n; j++) l->p[j] = l->p[j + 1];
  l->n--;
}

/* Removes temp t of l (read and written by no pass any more). */
static void drop_temp(rlx_gl_lowering *l, int32_t t) {
  for (int32_t j = t; j + 1 < l->n_temps; j++) {
    l->temp_count[j] = l->temp_count[j + 1];
    l->temp_row_texels[j] = l->temp_row_texels[j + 1];
    l->temp_layers[j] = l->temp_layers[j + 1];
  }
  l->n_temps--;
  for (int32_t i = 0; i < l->n; i++) {
    rlx_gl_pass *ps = &l->p[i];
    if (ps->output.kind == RLX_GLT_TEMP && ps->output.index > t) ps->output.index--;
    for (int32_t k = 0; k < ps->n_inputs; k++)
      if (ps->inputs[k].kind == RLX_GLT_TEMP && ps->inputs[k].index > t) ps->inputs[k].index--;
  }
}

/* The pack pass writing temp t (read only by pass mi), or -1. */
static int32_t pack_of(const rlx_gl_lowering *l, int32_t mi, int32_t t) {
  int32_t pi = -1, uses = 0;
  for (int32_t i = 0; i < l->n; i++) {
    const rlx_gl_pass *ps = &l->p[i];
    if (ps->output.kind == RLX_GLT_TEMP && ps->output.index == t) pi = pi == -1 ? i : -2;
    for (int32_t k = 0; k < ps->n_inputs; k++) uses += ps->inputs[k].kind == RLX_GLT_TEMP && ps->inputs[k].index == t;
  }
  if (pi < 0 || pi > mi || uses != 1) return -1;
  const rlx_gl_pass *pk = &l->p[pi];
  if (!pk->shader || strcmp(pk->shader, "pack4") != 0 || pk->n_inputs != 1 || pk->inputs[0].kind != RLX_GLT_INPUT ||
      pk->inputs[0].index < 0 || pk->inputs[0].index >= RLX_MAX_INPUTS)
    return -1;
  return pi;
}

/* How matmul pass mm may read operand `slot` straight from the input that
 * pack pass pk packs: 1 rows along k (the packed layout with per = 1),
 * 2 B [K, N] along its lines (B_KN), 0 not at all.  pk's ints: the
 * iteration block over the rows, then {K, rt, per, rows, d0, d1, s0, ..}. */
static int direct_form(const rlx_gl_pass *mm, const rlx_gl_pass *pk, int32_t slot, int32_t line) {
  const int32_t *u = pk->ints, K = u[36], rows = u[39];
  if (line <= 0 || K % 4 != 0 || u[40] < K || u[33] != 0) return 0;
  if (line == u[37] && u[42] == 1 && ((u[0] == 1 && u[9] == K) || (u[0] == 0 && rows == 1))) return 1;
  const int32_t *v = mm->ints, N = v[37];
  if (slot != 1 || N % 4 != 0 || line != N / 4 || u[42] != N || rows != N || u[0] != 1 || u[9] != 1) return 0;
  for (int32_t d = 0; d < v[0] && d < RLX_MAX_RANK; d++)
    if (v[17 + d] != 0) return 0; /* B shared by every batch */
  return 2;
}

int rlx_gl_direct_operands(rlx_gl_lowering *l, const int32_t *in_line) {
  int32_t dropped = 0, mi = -1;
  for (int32_t i = 0; i < l->n; i++)
    if (l->p[i].shader && strcmp(l->p[i].shader, "matmul_packed") == 0) mi = i;
  if (mi < 0) return 0;
  for (int32_t slot = 1; slot >= 0; slot--) {
    rlx_gl_pass *mm = &l->p[mi];
    if (mm->n_inputs != 2 || mm->inputs[slot].kind != RLX_GLT_TEMP) continue;
    const int32_t t = mm->inputs[slot].index, pi = pack_of(l, mi, t);
    if (pi < 0) continue;
    const rlx_gl_pass *pk = &l->p[pi];
    const int32_t line = in_line[pk->inputs[0].index], form = direct_form(mm, pk, slot, line);
    if (!form) continue;
    mm->inputs[slot] = pk->inputs[0];
    mm->ints[39 + slot] = 1;    /* rows per line */
    mm->ints[44 + slot] = line; /* texture width */
    if (form == 2) rlx_gl_define(mm, "B_KN", 1);
    drop_pass(l, pi);
    mi--;
    drop_temp(l, t);
    dropped++;
  }
  return dropped;
}

int rlx_gl_block_gemm(rlx_gl_lowering *l, const int32_t *in_line) {
  int32_t mi = -1;
  for (int32_t i = 0; i < l->n; i++)
    if (l->p[i].shader && strcmp(l->p[i].shader, "matmul_packed") == 0) mi = i;
  if (mi < 0 || l->n_temps >= RLX_GL_MAX_PASSES) return 0;
  const rlx_gl_pass *mm = &l->p[mi];
  const int32_t *v = mm->ints, M = v[36], N = v[37], kt = v[38];
  const int unbatched = v[0] == 0 || (v[0] == 1 && v[1] == 1); /* an empty batch: one block of size 1 */
  if (mm->n_inputs != 2 || mm->inputs[0].kind != RLX_GLT_TEMP || mm->inputs[1].kind != RLX_GLT_TEMP || !unbatched ||
      M % 4 != 0 || N % 4 != 0 || v[41] != N / 4 || v[43] != M)
    return 0;
  const int32_t ta = mm->inputs[0].index, tb = mm->inputs[1].index;
  const int32_t pa = pack_of(l, mi, ta), pb = pack_of(l, mi, tb);
  if (pa < 0 || pb < 0) return 0;
  const rlx_gl_pass *ka = &l->p[pa], *kb = &l->p[pb];
  const int32_t *u = ka->ints, K = u[36];
  if (K % 4 != 0 || kt != K / 4 || u[40] < K || u[33] != 0 || u[0] != 1 || u[39] != M) return 0;
  int32_t a_km;
  if (in_line[ka->inputs[0].index] == K / 4 && u[42] == 1 && u[9] == K) a_km = 0;       /* A [M, K] */
  else if (in_line[ka->inputs[0].index] == M / 4 && u[42] == M && u[9] == 1) a_km = 1;   /* A^T [K, M] */
  else return 0;
  if (direct_form(mm, kb, 1, in_line[kb->inputs[0].index]) != 2) return 0;
  /* the passes: matmul_block4 into a 4-layer temp, unblock4 into mm's output */
  rlx_gl_pass block, unblock;
  memset(&block, 0, sizeof block);
  memset(&unblock, 0, sizeof unblock);
  block.shader = "matmul_block4";
  rlx_gl_define(&block, "KT", kt);
  if (a_km) rlx_gl_define(&block, "A_KM", 1);
  block.n_inputs = 2;
  block.inputs[0] = ka->inputs[0];
  block.inputs[1] = kb->inputs[0];
  const int32_t tl = l->n_temps++;
  l->temp_count[tl] = (size_t)(M / 4);
  l->temp_row_texels[tl] = N / 4;
  l->temp_layers[tl] = 4;
  block.output = (rlx_gl_tex){RLX_GLT_TEMP, tl};
  const int32_t bi[] = {M, N, K};
  for (size_t k = 0; k < sizeof bi / sizeof *bi; k++) rlx_gl_int(&block, bi[k]);
  unblock.shader = "unblock4";
  unblock.n_inputs = 1;
  unblock.inputs[0] = block.output;
  unblock.output = mm->output;
  const int32_t ui[] = {M, N / 4};
  for (size_t k = 0; k < sizeof ui / sizeof *ui; k++) rlx_gl_int(&unblock, ui[k]);
  l->p[mi] = unblock;
  /* block goes where pack pb was, pack pa goes (pa, pb < mi) */
  l->p[pb] = block;
  drop_pass(l, pa);
  drop_temp(l, ta > tb ? ta : tb);
  drop_temp(l, ta > tb ? tb : ta);
  return 1;
}
