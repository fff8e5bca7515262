/* k_rope.c - rotary position embedding, NeoX layout (the two halves of each
 * row rotate against each other).  The cos/sin table for the S positions is
 * computed once per call in double (positions can be large, and float
 * angles lose precision quickly) and stored as float in scratch; it is then
 * applied to every [S, D] slice of the input.  Within a frequency the table
 * steps from position to position by a double-precision rotation, with an
 * exact cos/sin every RLX_ROPE_RESYNC positions (seq_shared.h), so drift stays near 1e-14.
 * The inverse rotation (the gradient of rope) only negates the sines. */
#include <math.h>
#include "kernels.h"
#include "seq_shared.h"

#define LANES 8

/* One row: y[i] = x[i] c_i - x[i + half] s_i, y[i + half] = x[i + half] c_i
 * + x[i] s_i, with cs = {c_0.., s_0..}.  Parameters are restrict so that
 * clang vectorizes too. */
static void rope_row(const float *restrict x, const float *restrict cs, float *restrict y, size_t half) {
  const float *sn = cs + half, *x2 = x + half;
  float *y2 = y + half;
  size_t i = 0;
  for (; i + LANES <= half; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) {
      y[i + l] = x[i + l] * cs[i + l] - x2[i + l] * sn[i + l];
      y2[i + l] = x2[i + l] * cs[i + l] + x[i + l] * sn[i + l];
    }
  for (; i < half; i++) {
    y[i] = x[i] * cs[i] - x2[i] * sn[i];
    y2[i] = x2[i] * cs[i] + x[i] * sn[i];
  }
}

/* x[..., S, D] -> y[..., S, D], D even; attributes theta,
 * pos_offset, inverse.  For i < D/2: freq_i = theta^(-2i/D),
 * angle = +-(pos_offset + s) * freq_i (negative when inverse),
 * y[i] = x[i] cos - x[i + D/2] sin, y[i + D/2] = x[i + D/2] cos + x[i] sin. */
rlx_status rlx_cpu_rope(const rlx_kargs *a) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  size_t seq = (size_t)s->dims[s->rank - 2];
  size_t half = d / 2;
  size_t slices = rlx_shape_numel(s) / (seq * d);
  double theta = ATTR_F(a->node, ROPE, THETA);
  double pos0 = (double)ATTR_I(a->node, ROPE, POS_OFFSET);
  double sign = a->node->n_iattr > 1 && ATTR_I(a->node, ROPE, INVERSE) ? -1.0 : 1.0; /* sin(-t) = -sin(t) */

  /* table[s][0..half) = cos, table[s][half..d) = sin */
  float *table = (float *)rlx_scratch_get(a->scratch, seq * d * sizeof(float));
  if (!table) return rlx_error(RLX_ERR_NO_MEMORY, "rope: no memory for a %zu x %zu table", seq, d);
  rlx_rope_table(table, seq, d, theta, pos0, sign);

  const float *x = a->in[0];
  float *y = a->out;
  for (size_t sl = 0; sl < slices; sl++) {
    for (size_t p = 0; p < seq; p++, x += d, y += d) {
      rope_row(x, table + p * d, y, half);
    }
  }
  return RLX_OK;
}
