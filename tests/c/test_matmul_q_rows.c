/* test_matmul_q_rows.c - the fused SIMD rows of matmul_q's one-token
 * product (src/cpu/k_matmul_q_x86.c on this CPU; the wasm SIMD128 ones run
 * through the op cases under Node) against the portable dot of
 * src/models/gguf_quants.c: random blocks (every code pattern, finite
 * scales over a wide range), one block up to seven, one row up to five,
 * rows and x at unaligned addresses, and x whose sums cancel. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/models/gguf_quants.h"

static uint32_t state = 12345u;
static uint32_t rnd32(void) {
  state ^= state << 13, state ^= state >> 17, state ^= state << 5;
  return state;
}
static float uniform(float lo, float hi) { return lo + (hi - lo) * (float)(rnd32() >> 8) / 16777216.0f; }

/* a finite half of magnitude 2^lo .. 2^hi, either sign */
static void put_half(uint8_t *p, int lo, int hi) {
  float v = ldexpf(1.0f + uniform(0, 1), lo + (int)(rnd32() % (unsigned)(hi - lo)));
  uint16_t h = rlx_f32_to_f16(rnd32() & 1 ? -v : v);
  p[0] = (uint8_t)h, p[1] = (uint8_t)(h >> 8);
}

static void random_row(uint32_t code, uint8_t *b, int nblocks, int bytes) {
  for (int i = 0; i < nblocks * bytes; i++) b[i] = (uint8_t)rnd32();
  for (int k = 0; k < nblocks; k++, b += bytes) switch (code) {
      case RLX_GGUF_TYPE_Q4_1: case RLX_GGUF_TYPE_Q5_1: put_half(b, -12, 2), put_half(b + 2, -12, 2); break;
      case RLX_GGUF_TYPE_Q4_K: case RLX_GGUF_TYPE_Q5_K: put_half(b, -16, -4), put_half(b + 2, -16, -4); break;
      case RLX_GGUF_TYPE_Q6_K: put_half(b + 208, -16, -6); break;
      default: put_half(b, -12, 2); break; /* Q8_0, Q4_0, Q5_0 */
    }
}

/* the order of rlx_wt_rows_set's fields */
static const uint32_t CODES[] = {RLX_GGUF_TYPE_Q8_0, RLX_GGUF_TYPE_Q4_0, RLX_GGUF_TYPE_Q4_1, RLX_GGUF_TYPE_Q5_0,
                                 RLX_GGUF_TYPE_Q5_1, RLX_GGUF_TYPE_Q4_K, RLX_GGUF_TYPE_Q5_K, RLX_GGUF_TYPE_Q6_K};

static void rows_equal_the_portable_dot(void **st) {
  (void)st;
  enum { MAXB = 7, MAXR = 5, MAXK = MAXB * 256 };
  static uint8_t wbuf[1 + MAXR * MAXB * 210];
  static float xbuf[1 + MAXK], row[MAXK], xsum[MAXK / 32];
  const rlx_wt_rows_set *set = rlx_wt_rows_avx2();
  if (!set) set = rlx_wt_rows_simd128();
  if (!set) {
    printf("(no fused SIMD rows on this CPU: nothing to compare)\n");
    return;
  }
  const rlx_wt_rows_fn fns[] = {set->q8_0, set->q4_0, set->q4_1, set->q5_0, set->q5_1, set->q4_k, set->q5_k, set->q6_k};
  assert_int_equal(sizeof fns / sizeof fns[0], sizeof CODES / sizeof CODES[0]);
  for (size_t t = 0; t < sizeof CODES / sizeof CODES[0]; t++) {
    const rlx_wtype *wt = rlx_wtype_get(CODES[t]);
    rlx_wt_rows_fn f = fns[t];
    for (int nb = 1; nb <= MAXB; nb++)
      for (int nr = 1; nr <= MAXR; nr++)
        for (int kind = 0; kind < 3; kind++) {
          const int K = nb * wt->block_elems;
          const size_t stride = (size_t)nb * (size_t)wt->block_bytes;
          uint8_t *w = wbuf + 1; /* rows at odd addresses */
          float *x = xbuf + 1, y[MAXR];
          random_row(CODES[t], w, nb * nr, wt->block_bytes);
          for (int i = 0; i < K; i++) /* 0: uniform; 1: pairs that cancel; 2: an offset */
            x[i] = kind == 0 ? uniform(-1, 1) : kind == 1 ? (i & 1 ? -x[i - 1] : uniform(-4, 4)) : 3 + uniform(-1, 1);
          for (int i = 0; i < K / 32; i++) {
            xsum[i] = 0.0f;
            for (int j = 0; j < 32; j++) xsum[i] += x[32 * i + j];
          }
          f(w, stride, x, xsum, nb, y, (size_t)nr);
          for (int r = 0; r < nr; r++) {
            wt->dequant(w + (size_t)r * stride, row, nb);
            double want = 0, xa = 0, wmax = 0;
            for (int i = 0; i < K; i++) {
              want += (double)row[i] * x[i];
              xa += fabs(x[i]);
              wmax = fmax(wmax, fabs(row[i]));
            }
            float port = wt->dot(w + (size_t)r * stride, x, nb);
            double bound = 2e-6 * xa * wmax + 1e-30;
            if (!(fabs(y[r] - want) <= bound) || !(fabs(port - want) <= bound))
              fail_msg("%s, %d blocks, row %d of %d, x kind %d: fused %.9g, portable %.9g, want %.9g (bound %.3g)",
                       wt->name, nb, r, nr, kind, y[r], port, want, bound);
          }
        }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(rows_equal_the_portable_dot)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
