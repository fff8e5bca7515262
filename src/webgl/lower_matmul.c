/* lower_matmul.c - WebGL2 lowering of matmul (glsl/matmul.frag): one pass,
 * one output element per fragment looping over K.  The batch broadcast and
 * both transposes become strides of the iteration block (gl_plan.h
 * rlx_gl_iter) plus one step per operand along k, so every variant is the
 * same program. */
#include "gl_plan.h"

/* a[..., M, K] (trans_a: [..., K, M]), b[..., K, N] (trans_b: [..., N, K])
 *   -> y[..., M, N]; batch dims broadcast.  iattr = {trans_a, trans_b} */
rlx_status rlx_gl_lower_matmul(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const rlx_shape *y = &c->node->shape, *sa = &c->in_node[0]->shape, *sb = &c->in_node[1]->shape;
  const int32_t ta = c->node->iattr[0] != 0, tb = c->node->iattr[1] != 0;
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
  rlx_gl_pass *p = rlx_gl_add(out, "matmul");
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  rlx_gl_iter(p, y, 2, (const int32_t(*)[RLX_MAX_RANK])strides, NULL);
  rlx_gl_int(p, K);
  rlx_gl_int(p, ta ? M : 1); /* a's step along k */
  rlx_gl_int(p, tb ? 1 : N); /* b's step along k */
  return RLX_OK;
}
