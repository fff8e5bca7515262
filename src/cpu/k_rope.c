/* k_rope.c - rotary position embedding, NeoX layout (the two halves of each
 * row rotate against each other) or, in mode 1, adjacent pairs; positions
 * may be shifted by an offset input read at run time.  The cos/sin table for the S positions is
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

/* Mode 1 (adjacent pairs): y[2i] = x[2i] c_i - x[2i + 1] s_i, y[2i + 1] =
 * x[2i + 1] c_i + x[2i] s_i. */
static void rope_row_pairs(const float *restrict x, const float *restrict cs, float *restrict y, size_t half) {
  const float *sn = cs + half;
  for (size_t i = 0; i < half; i++) {
    float a = x[2 * i], b = x[2 * i + 1];
    y[2 * i] = a * cs[i] - b * sn[i];
    y[2 * i + 1] = b * cs[i] + a * sn[i];
  }
}

void rlx_rope_row(const float *x, const float *cs, float *y, size_t half, int pairs) {
  if (pairs)
    rope_row_pairs(x, cs, y, half);
  else
    rope_row(x, cs, y, half);
}

/* (x[..., S, D][, offset i32 [1]]) -> y[..., S, D], D even; attributes
 * theta, pos_offset, inverse, mode.  Row s is at position p = pos_offset +
 * offset[0] + s.  For i < D/2: freq_i = theta^(-2i/D), angle = +-p freq_i
 * (negative when inverse).  Mode 0 rotates the pairs (x[i], x[i + D/2]):
 * y[i] = x[i] cos - x[i + D/2] sin, y[i + D/2] = x[i + D/2] cos + x[i] sin;
 * mode 1 the pairs (x[2i], x[2i + 1]) the same way. */
rlx_status rlx_cpu_rope(const rlx_kargs *a) {
  const rlx_shape *s = &a->in_node[0]->shape;
  size_t d = (size_t)s->dims[s->rank - 1];
  size_t seq = (size_t)s->dims[s->rank - 2];
  size_t half = d / 2;
  size_t slices = rlx_shape_numel(s) / (seq * d);
  double theta = ATTR_F(a->node, ROPE, THETA);
  double pos0 = (double)ATTR_I(a->node, ROPE, POS_OFFSET);
  double sign = a->node->n_iattr > 1 && ATTR_I(a->node, ROPE, INVERSE) ? -1.0 : 1.0; /* sin(-t) = -sin(t) */
  int pairs = a->node->n_iattr > RLX_IATTR_ROPE_MODE && ATTR_I(a->node, ROPE, MODE) == 1;
  if (a->node->n_inputs > 1) pos0 += (double)((const int32_t *)a->in[1])[0];

  /* table[s][0..half) = cos, table[s][half..d) = sin */
  float *table = (float *)rlx_scratch_get(a->scratch, seq * d * sizeof(float));
  if (!table) return rlx_error(RLX_ERR_NO_MEMORY, "rope: no memory for a %zu x %zu table", seq, d);
  rlx_rope_table(table, seq, d, theta, pos0, sign);

  const float *x = a->in[0];
  float *y = a->out;
  for (size_t sl = 0; sl < slices; sl++) {
    for (size_t p = 0; p < seq; p++, x += d, y += d) {
      if (pairs)
        rope_row_pairs(x, table + p * d, y, half);
      else
        rope_row(x, table + p * d, y, half);
    }
  }
  return RLX_OK;
}
