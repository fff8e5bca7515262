/* ref_optim.c - C twin of adam_update.frag (src/webgl/lower_optim.c) for
 * the reference executor (reference.c): the shader's formulas, one rounding
 * per operation. */
#include <math.h>

#include "gl_plan.h"

void rlx_glref_adam_update(const rlx_glref_args *a) {
  const float *f = a->pass->floats;
  if (rlx_gl_define_value(a->pass, "MODE", 0) == 0) {
    const int square = rlx_gl_define_value(a->pass, "SQUARE", 0);
    for (size_t i = 0; i < a->out_n; i++) {
      float y = a->in[1][i];
      if (square) y = y * y;
      const float t1 = f[0] * a->in[0][i], t2 = f[1] * y;
      a->out[i] = t1 + t2;
    }
    return;
  }
  const float lr = a->in[3][0], bias1 = a->in[4][0], bias2 = a->in[5][0];
  for (size_t i = 0; i < a->out_n; i++) {
    const float p = a->in[0][i], mhat = a->in[1][i] / bias1, vhat = a->in[2][i] / bias2;
    const float den = sqrtf(vhat) + f[0];
    float s = mhat / den;
    if (f[1] != 0.0f) {
      const float decay = f[1] * p;
      s = s + decay;
    }
    const float delta = lr * s;
    a->out[i] = p - delta;
  }
}
