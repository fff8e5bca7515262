/* test_q8_tile.c - the int8 tiles of prompts with xq8 (src/cpu/k_q8_tile.c,
 * k_q8_tile_x86.c) on random Q8_0 / Q4_0 blocks and x codes: every set
 * this CPU has (portable, AVX2, AVX-512 VNNI) bitwise the same as the
 * portable one and as the int8 rows of a one-token step, for odd block
 * counts, several tiles, M and N not multiples of a tile, rows at odd
 * addresses, extreme codes (-128 weights, +-127 x) and a NaN scale; the
 * portable one near a naive sum of integer block dots in double. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/cpu/matmul_q.h"

static uint32_t state = 2024u;
static uint32_t rnd32(void) {
  state ^= state << 13, state ^= state >> 17, state ^= state << 5;
  return state;
}

enum { MAXM = 11, MAXN = 13, MAXB = 9 };

static void random_blocks(uint8_t *w, size_t n, int bytes, int kind) {
  for (size_t k = 0; k < n; k++, w += bytes) {
    for (int i = 2; i < bytes; i++) w[i] = kind == 1 ? 0x80 : (uint8_t)rnd32(); /* kind 1: -128 (Q8_0), 8 / 0 (Q4_0) */
    const float d = ldexpf(1.0f + (float)(rnd32() % 1024) / 1024.0f, -12 + (int)(rnd32() % 12));
    const uint16_t h = rlx_f32_to_f16(rnd32() & 1 ? -d : d);
    w[0] = (uint8_t)h, w[1] = (uint8_t)(h >> 8);
  }
}

/* The naive value: sum over blocks of d_w xd (integer dot of 32 codes) */
static double naive(const uint8_t *p, int q4, const int8_t *x, const float *xd, int nb, double *mag) {
  double s = 0;
  *mag = 0;
  for (int b = 0; b < nb; b++, p += q4 ? 18 : 34, x += 32) {
    long dot = 0, abs_dot = 0;
    for (int i = 0; i < 32; i++) {
      const int c = q4 ? (i < 16 ? p[2 + i] & 15 : p[2 + i - 16] >> 4) - 8 : (int8_t)p[2 + i];
      dot += (long)c * x[i];
      abs_dot += labs((long)c * x[i]);
    }
    const double dw = rlx_f16_to_f32((uint16_t)(p[0] | (p[1] << 8)));
    s += dw * xd[b] * (double)dot;
    *mag += fabs(dw * xd[b]) * (double)abs_dot;
  }
  return s;
}

static void tiles_match(void **st) {
  (void)st;
  static uint8_t wbuf[1 + MAXN * MAXB * 34];
  static int8_t xbuf[1 + MAXM * MAXB * 32];
  static float xd[MAXM * MAXB], want[MAXM * (MAXN + 3)], got[MAXM * (MAXN + 3)], row[MAXN];
  const rlx_q8_tile_set *sets[] = {rlx_q8_tiles_portable(), rlx_q8_tiles_avx2(), rlx_q8_tiles_vnni()};
  const rlx_wt_rows8_set *rows8 = rlx_wt_rows8_avx2();
  for (int s = 0; s < 3; s++) printf("(%s tiles: %s)\n", s == 0 ? "portable" : s == 1 ? "AVX2" : "AVX-512 VNNI",
                                     sets[s] ? "tested" : "not on this CPU");
  size_t cases = 0;
  for (int q4 = 0; q4 < 2; q4++)
    for (int nb = 1; nb <= MAXB; nb += nb < 3 ? 1 : 2)
      for (size_t M = 1; M <= MAXM; M += M < 5 ? 1 : 3)
        for (size_t N = 1; N <= MAXN; N += N < 5 ? 1 : 4)
          for (int kind = 0; kind < 3; kind++, cases++) {
            const int bytes = q4 ? 18 : 34;
            const size_t stride = (size_t)nb * (size_t)bytes, ldy = N + 3, K = 32 * (size_t)nb;
            uint8_t *w = wbuf + 1;
            int8_t *xq = xbuf + 1;
            random_blocks(w, N * (size_t)nb, bytes, kind);
            for (size_t i = 0; i < M * K; i++) /* kind 2: only +-127 */
              xq[i] = kind == 2 ? (rnd32() & 1 ? 127 : -127) : (int8_t)(rnd32() % 255 - 127);
            for (size_t i = 0; i < M * (size_t)nb; i++) xd[i] = ldexpf(1.0f + (float)(rnd32() % 4096) / 4096.0f, -8);
            if (kind == 1 && M > 1) xd[(size_t)nb] = NAN; /* row 1's first block: NaN x (codes 0) */
            if (kind == 1 && M > 1) memset(xq + K, 0, 32);
            const rlx_q8_tile_set *p = sets[0];
            memset(want, 0, sizeof want);
            (q4 ? p->q4_0 : p->q8_0)(w, stride, xq, xd, M, nb, want, ldy, N);
            for (size_t m = 0; m < M; m++)
              for (size_t n = 0; n < N; n++) {
                double mag, ref = naive(w + n * stride, q4, xq + m * K, xd + m * (size_t)nb, nb, &mag);
                const float y = want[m * ldy + n];
                if (isnan(ref) ? !isnan(y) : !(fabs(y - ref) <= 1e-6 * mag + 1e-30))
                  fail_msg("%s portable, %d blocks, M %zu N %zu (%zu, %zu): %.9g, naive %.9g", q4 ? "q4_0" : "q8_0",
                           nb, M, N, m, n, y, ref);
              }
            for (int s = 1; s < 3; s++) {
              if (!sets[s]) continue;
              for (size_t i = 0; i < sizeof got / sizeof got[0]; i++) got[i] = -1.0f;
              (q4 ? sets[s]->q4_0 : sets[s]->q8_0)(w, stride, xq, xd, M, nb, got, ldy, N);
              for (size_t m = 0; m < M; m++) {
                if (memcmp(got + m * ldy, want + m * ldy, N * sizeof(float)))
                  fail_msg("%s %s, %d blocks, M %zu N %zu: row %zu differs from the portable tile", sets[s]->name,
                           q4 ? "q4_0" : "q8_0", nb, M, N, m);
                for (size_t n = N; n < ldy; n++) assert_true(got[m * ldy + n] == -1.0f); /* nothing past N */
              }
            }
            if (!rows8) continue;
            for (size_t m = 0; m < M; m++) { /* the one-token int8 rows: the same values */
              (q4 ? rows8->q4_0 : rows8->q8_0)(w, stride, xq + m * K, xd + m * (size_t)nb, NULL, nb, row, N);
              if (memcmp(row, want + m * ldy, N * sizeof(float)))
                fail_msg("%s, %d blocks, N %zu: the int8 rows of x row %zu differ from the tile", q4 ? "q4_0" : "q8_0",
                         nb, N, m);
            }
          }
  printf("(%zu cases)\n", cases);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(tiles_match)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
