/* ref_matmul.c - C twin of matmul.frag for the reference executor
 * (reference.c): the same offsets and the same sequential sum over k. */
#include "gl_plan.h"

void rlx_glref_matmul(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  const int32_t k_len = u[36], step_a = u[37], step_b = u[38];
  const float *x = a->in[0], *w = a->in[1];
  int32_t off[3];
  for (size_t n = 0; n < a->out_n; n++) {
    rlx_glref_iter(u, (int32_t)n, off);
    float acc = 0.0f;
    for (int32_t k = 0; k < k_len; k++) acc += x[off[0] + (size_t)k * step_a] * w[off[1] + (size_t)k * step_b];
    a->out[n] = acc;
  }
}
