/* k_rope.c - rotary position embedding, NeoX layout (the two halves of each
 * row rotate against each other).  The cos/sin table for the S positions is
 * computed once per call in double (positions can be large, and float
 * angles lose precision quickly) and stored as float in scratch; it is then
 * applied to every [S, D] slice of the input. */
#include <math.h>
#include "kernels.h"

/* x[..., S, D] -> y[..., S, D], D even; fattr[0] = theta, iattr[0] = pos_offset.
 * For i < D/2: freq_i = theta^(-2i/D), angle = (pos_offset + s) * freq_i,
 * y[i] = x[i] cos - x[i + D/2] sin, y[i + D/2] = x[i + D/2] cos + x[i] sin. */
rlx_status rlx_cpu_rope(const rlx_kargs *a) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  size_t seq = (size_t)s->dims[s->rank - 2];
  size_t half = d / 2;
  size_t slices = rlx_shape_numel(s) / (seq * d);
  double theta = a->node->fattr[0];
  double pos0 = (double)a->node->iattr[0];

  /* table[s][0..half) = cos, table[s][half..d) = sin */
  float *table = (float *)rlx_scratch_get(a->scratch, seq * d * sizeof(float));
  if (!table) return rlx_error(RLX_ERR_NO_MEMORY, "rope: no memory for a %zu x %zu table", seq, d);
  for (size_t i = 0; i < half; i++) {
    double freq = pow(theta, -2.0 * (double)i / (double)d);
    for (size_t p = 0; p < seq; p++) {
      double angle = (pos0 + (double)p) * freq;
      table[p * d + i] = (float)cos(angle);
      table[p * d + half + i] = (float)sin(angle);
    }
  }

  const float *x = a->in[0];
  float *y = a->out;
  for (size_t sl = 0; sl < slices; sl++) {
    for (size_t p = 0; p < seq; p++, x += d, y += d) {
      const float *cs = table + p * d, *sn = cs + half;
      const float *x1 = x, *x2 = x + half;
      float *y1 = y, *y2 = y + half;
      for (size_t i = 0; i < half; i++) {
        y1[i] = x1[i] * cs[i] - x2[i] * sn[i];
        y2[i] = x2[i] * cs[i] + x1[i] * sn[i];
      }
    }
  }
  return RLX_OK;
}
