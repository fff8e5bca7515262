/* seq_shared.h - helpers of the sequence kernels, shared so that the fused
 * attention block (k_fused_attention.c) computes exactly what the separate
 * rope and attention kernels compute: the key range a query row may see
 * under a causal or sliding mask, and the RoPE cos/sin table.
 * k_attention.c, k_attention_grad.c and k_rope.c use the same helpers. */
#ifndef RLX_CPU_SEQ_SHARED_H
#define RLX_CPU_SEQ_SHARED_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "rlx.h"

/* Keys [*lo, *hi) that query i of Sq may see among Sk keys before padding
 * and bias masks; lo <= hi, and both never decrease with i.  Causal and
 * sliding masks align the last query with the last key. */
static inline void rlx_attn_key_range(int32_t kind, int32_t window, int32_t Sq, int32_t Sk, int32_t i, int32_t *lo,
                                      int32_t *hi) {
  int64_t last = (int64_t)i + Sk - Sq; /* last key query i sees */
  int64_t l = 0, h = Sk;
  if (kind == RLX_MASK_CAUSAL || kind == RLX_MASK_SLIDING) {
    if (last + 1 < h) h = last + 1;
    if (kind == RLX_MASK_SLIDING && last - window + 1 > l) l = last - window + 1;
  }
  if (h < 0) h = 0;
  if (l > h) l = h;
  *lo = (int32_t)l;
  *hi = (int32_t)h;
}

#define RLX_ROPE_RESYNC 32 /* positions between exact cos/sin evaluations */

/* RoPE table (NeoX) for seq positions pos0, pos0 + 1, ... of rows of d
 * (even) values: table[p * d + i] = cos(angle), table[p * d + d/2 + i] =
 * sign * sin(angle), angle = (pos0 + p) theta^(-2i/d), for i < d/2; sign is
 * -1 for the inverse rotation.  Computed in double, stepping from position
 * to position by a rotation with an exact cos/sin every RLX_ROPE_RESYNC
 * positions (the same values as k_rope.c). */
static inline void rlx_rope_table(float *table, size_t seq, size_t d, double theta, double pos0, double sign) {
  size_t half = d / 2;
  for (size_t i = 0; i < half; i++) {
    double freq = pow(theta, -2.0 * (double)i / (double)d);
    double step_c = cos(freq), step_s = sin(freq), c = 1.0, s = 0.0;
    for (size_t p = 0; p < seq; p++) {
      if (p % RLX_ROPE_RESYNC == 0) {
        double angle = (pos0 + (double)p) * freq;
        c = cos(angle);
        s = sin(angle);
      } else {
        double next_c = c * step_c - s * step_s;
        s = s * step_c + c * step_s;
        c = next_c;
      }
      table[p * d + i] = (float)c;
      table[p * d + half + i] = (float)(sign * s);
    }
  }
}

/* Rotates one row in place: its halves x[0, half) and x2[0, half) with the
 * table row's cos c[] and sin s[]: x[i], x2[i] -> x[i] c - x2[i] s,
 * x2[i] c + x[i] s (the expressions of k_rope.c's rope_row). */
static inline void rlx_rope_rotate_inplace(float *restrict x, float *restrict x2, const float *restrict c,
                                           const float *restrict s, size_t half) {
  for (size_t i = 0; i < half; i++) {
    float a = x[i], b = x2[i];
    x[i] = a * c[i] - b * s[i];
    x2[i] = b * c[i] + a * s[i];
  }
}

#endif
