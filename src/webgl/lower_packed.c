/* lower_packed.c - the packed matmul (gl_plan.h rlx_gl_gemm) shared by
 * matmul and the convolutions: each operand is packed into an RGBA32F
 * texture, 4 values along k per texel (glsl/pack4.frag), one pass
 * multiplies them 4 outputs per fragment into a packed result
 * (glsl/matmul_packed.frag), and one pass puts the result in the op's flat
 * output (glsl/unpack4.frag), unless the planner finds the packed result
 * already is the output's layout (rlx_gl_packed_direct) or the caller
 * keeps it packed (col2im).  Reading 4 values per fetch is what makes
 * this faster than the flat shaders, whose loops are fetch-bound. */
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
