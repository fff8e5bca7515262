/* lower_optim.c - WebGL2 lowering of the optimizer update adam_update
 * (include/rlx_ops.def).  A pass never reads the texture it writes, so the
 * moments go through temps: adam_update.frag writes m' and v' to two temps
 * (MODE 0), then p' to the output from p, the temps and the scalars (MODE
 * 1), then two copy passes write the temps over m and v in place (inputs
 * 2 and 3, param or input leaves).  Five passes for the dozen of the node-by-node
 * formulation. */
#include "../cpu/kernels.h"
#include "gl_plan.h"

/* temp t = a x + c y (or c y y with square); x = input k, y = g (input 1) */
static void moment(rlx_gl_lowering *l, int32_t t, int32_t k, float a, float c, int square) {
  rlx_gl_pass *p = rlx_gl_add(l, "adam_update");
  rlx_gl_define(p, "MODE", 0);
  if (square) rlx_gl_define(p, "SQUARE", 1);
  rlx_gl_in(p, RLX_GLT_INPUT, k);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  rlx_gl_out(p, RLX_GLT_TEMP, t);
  rlx_gl_float(p, a);
  rlx_gl_float(p, c);
}

static void copy_back(rlx_gl_lowering *l, int32_t t, int32_t k) {
  rlx_gl_pass *p = rlx_gl_add(l, "copy");
  rlx_gl_in(p, RLX_GLT_TEMP, t);
  rlx_gl_out(p, RLX_GLT_INPUT, k);
}

/* (p[n], g[n], m[n], v[n], lr[1], bias1[1], bias2[1]) -> p'[n]; m, v updated. */
rlx_status rlx_gl_lower_adam_update(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const rlx_node_t *nd = c->node;
  const size_t n = rlx_shape_numel(&nd->shape);
  const float b1 = ATTR_F(nd, ADAM, BETA1), b2 = ATTR_F(nd, ADAM, BETA2);
  const int32_t tm = rlx_gl_temp(out, n), tv = rlx_gl_temp(out, n);
  moment(out, tm, 2, b1, 1 - b1, 0);
  moment(out, tv, 3, b2, 1 - b2, 1);
  rlx_gl_pass *p = rlx_gl_add(out, "adam_update");
  rlx_gl_define(p, "MODE", 1);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_TEMP, tm);
  rlx_gl_in(p, RLX_GLT_TEMP, tv);
  for (int32_t k = 4; k < 7; k++) rlx_gl_in(p, RLX_GLT_INPUT, k);
  rlx_gl_out(p, RLX_GLT_OUTPUT, 0);
  rlx_gl_float(p, ATTR_F(nd, ADAM, EPS));
  rlx_gl_float(p, ATTR_F(nd, ADAM, WEIGHT_DECAY));
  copy_back(out, tm, 2);
  copy_back(out, tv, 3);
  return RLX_OK;
}
