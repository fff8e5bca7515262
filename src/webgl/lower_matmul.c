/* lower_matmul.c - WebGL2 lowering of matmul: the packed matmul
 * (lower_packed.c, 4 passes, 4 values per fetch) when its rows fit a
 * texture line, else glsl/matmul.frag: one pass, one output element per
 * fragment looping over K.  The batch broadcast and both transposes become
 * strides (of the iteration blocks, gl_plan.h rlx_gl_iter, and along k),
 * so every variant is the same programs. */
#include <string.h>

#include "gl_plan.h"

/* The packed form: A's rows (batch_a..., m), B's rows (batch_b..., n);
 * strides[k] are the element strides of operand k over y's axes. */
static int add_packed(const rlx_gl_ctx *c, rlx_gl_lowering *out, int32_t (*strides)[RLX_MAX_RANK]) {
  const rlx_shape *y = &c->node->shape;
  const int32_t ta = ATTR_I(c->node, MATMUL, TRANS_A) != 0, tb = ATTR_I(c->node, MATMUL, TRANS_B) != 0;
  const int32_t r = y->rank, M = y->dims[r - 2], N = y->dims[r - 1];
  const rlx_shape *ops[2] = {&c->in_node[0]->shape, &c->in_node[1]->shape};
  const int32_t K = ta ? ops[0]->dims[ops[0]->rank - 2] : ops[0]->dims[ops[0]->rank - 1];
  rlx_gl_gemm g;
  memset(&g, 0, sizeof g);
  g.M = M;
  g.N = N;
  g.K = K;
  g.batch.rank = r - 2;
  for (int32_t d = 0; d < r - 2; d++) g.batch.dims[d] = y->dims[d];
  rlx_shape rows[2];
  rlx_gl_gemm_operand *o[2] = {&g.a, &g.b};
  for (int32_t k = 0; k < 2; k++) {
    const rlx_shape *s = ops[k];
    int32_t full[RLX_MAX_RANK];
    rlx_gl_contiguous_strides(s, full);
    const int32_t t = k == 0 ? ta : tb, lines = k == 0 ? M : N;
    /* rows: the operand's own batch axes, then m (a) or n (b) */
    rows[k].rank = s->rank - 1;
    for (int32_t d = 0; d < s->rank - 2; d++) {
      rows[k].dims[d] = s->dims[d];
      o[k]->row_strides[d] = full[d];
    }
    rows[k].dims[s->rank - 2] = lines;
    /* a: [.., M, K] (row step K, k step 1) or [.., K, M] (1, M); b: [.., K, N] (1, N) or [.., N, K] (K, 1) */
    const int32_t row_step = k == 0 ? (t ? 1 : K) : (t ? K : 1), k_step = k == 0 ? (t ? M : 1) : (t ? 1 : N);
    o[k]->row_strides[s->rank - 2] = row_step;
    o[k]->src = (rlx_gl_tex){RLX_GLT_INPUT, k};
    o[k]->rows = &rows[k];
    o[k]->kd[0] = K;
    o[k]->kd[1] = 1;
    o[k]->k_strides[0] = k_step;
    /* batch axes of y: rows per batch step = element stride / K (0 when broadcast) */
    for (int32_t d = 0; d < r - 2; d++) o[k]->batch_rows[d] = strides[k][d] / K;
  }
  g.place = y;
  for (int32_t d = 0; d < r; d++) {
    g.place_row[d] = 0;
    g.place_col[d] = 0;
  }
  int32_t rows_after = M;
  for (int32_t d = r - 3; d >= 0; d--) {
    g.place_row[d] = rows_after;
    rows_after *= y->dims[d];
  }
  g.place_row[r - 2] = 1;
  g.place_col[r - 1] = 1;
  return rlx_gl_add_packed_gemm(out, &g, c->max_width);
}

/* a[..., M, K] (trans_a: [..., K, M]), b[..., K, N] (trans_b: [..., N, K])
 *   -> y[..., M, N]; batch dims broadcast.  iattr = {trans_a, trans_b} */
rlx_status rlx_gl_lower_matmul(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const rlx_shape *y = &c->node->shape, *sa = &c->in_node[0]->shape, *sb = &c->in_node[1]->shape;
  const int32_t ta = ATTR_I(c->node, MATMUL, TRANS_A) != 0, tb = ATTR_I(c->node, MATMUL, TRANS_B) != 0;
  const int32_t r = y->rank, M = y->dims[r - 2], N = y->dims[r - 1];
  const int32_t K = ta ? sa->dims[sa->rank - 2] : sa->dims[sa->rank - 1];
  int32_t strides[2][RLX_MAX_RANK], full[RLX_MAX_RANK];
  /* Batch axes: each operand's own strides, 0 where it is broadcast. */
  const rlx_shape *ops[2] = {sa, sb};
  for (int32_t k = 0; k < 2; k++) {
    rlx_gl_contiguous_strides(ops[k], full);
    const int32_t lead = (r - 2) - (ops[k]->rank - 2);
    for (int32_t d = 0; d < r - 2; d++) {
      const int32_t e = d - lead;
      strides[k][d] = (e < 0 || ops[k]->dims[e] == 1) ? 0 : full[e];
    }
  }
  /* Matrix axes: a moves along m only, b along n only. */
  strides[0][r - 2] = ta ? 1 : K;
  strides[0][r - 1] = 0;
  strides[1][r - 2] = 0;
  strides[1][r - 1] = tb ? K : 1;
  if (add_packed(c, out, strides)) return RLX_OK;
  rlx_gl_pass *p = rlx_gl_add(out, "matmul");
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  rlx_gl_iter(p, y, 2, (const int32_t(*)[RLX_MAX_RANK])strides, NULL);
  rlx_gl_int(p, K);
  rlx_gl_int(p, ta ? M : 1); /* a's step along k */
  rlx_gl_int(p, tb ? 1 : N); /* b's step along k */
  return RLX_OK;
}
