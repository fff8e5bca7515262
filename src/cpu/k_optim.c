/* k_optim.c - the fused optimizer update adam_update (include/rlx_ops.def):
 * one pass over a param instead of the dozen elementwise nodes of the
 * node-by-node formulation, with the same float operations in the same
 * order (one rounding per statement, no contraction), so the result is
 * bitwise that formulation's.  It writes m' and v' into its inputs 2 and 3
 * (param or input leaves) in place and returns p'. */
#include <math.h>

#include "../core/pool.h"
#include "kernels.h"

typedef struct {
  const float *p, *g;
  float *m, *v, *out;
  float lr, bias1, bias2, b1, c1, b2, c2, eps, wd;
} adam_args;

/* p, g, m, v, out: [n] (ranges [b, e)); the scalars are shared. */
static void adam_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  (void)ws;
  const adam_args *a = ctx;
  for (size_t i = b; i < e; i++) {
    const float g = a->g[i];
    float t1 = a->b1 * a->m[i];
    float t2 = a->c1 * g;
    const float m2 = t1 + t2;
    const float gg = g * g;
    t1 = a->b2 * a->v[i];
    t2 = a->c2 * gg;
    const float v2 = t1 + t2;
    const float mhat = m2 / a->bias1, vhat = v2 / a->bias2;
    const float den = sqrtf(vhat) + a->eps;
    float step = mhat / den;
    if (a->wd != 0) {
      const float decay = a->wd * a->p[i];
      step = step + decay;
    }
    const float delta = a->lr * step;
    a->out[i] = a->p[i] - delta;
    a->m[i] = m2;
    a->v[i] = v2;
  }
}

/* (p[n], g[n], m[n], v[n], lr[1], bias1[1], bias2[1]) -> p'[n]; m, v updated. */
rlx_status rlx_cpu_adam_update(const rlx_kargs *a) {
  const rlx_node_t *nd = a->node;
  const float b1 = ATTR_F(nd, ADAM, BETA1), b2 = ATTR_F(nd, ADAM, BETA2);
  adam_args r = {a->in[0], a->in[1], (float *)a->in[2], (float *)a->in[3], a->out, a->in[4][0], a->in[5][0],
                 a->in[6][0], b1, 1 - b1, b2, 1 - b2, ATTR_F(nd, ADAM, EPS), ATTR_F(nd, ADAM, WEIGHT_DECAY)};
  const size_t n = rlx_shape_numel(&nd->shape);
  if (RLX_THREADED) rlx_parallel_for(n, RLX_ELEMENTWISE_GRAIN, 8, adam_range, &r, NULL);
  else adam_range(&r, 0, n, NULL);
  return RLX_OK;
}
