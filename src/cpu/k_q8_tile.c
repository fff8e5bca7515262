/* k_q8_tile.c - the int8 products of prompts with xq8 (matmul_q.h's
 * rlx_q8_tile_fn) in portable C, and the choice of a tile set at run
 * time: AVX-512 VNNI, else AVX2 (k_q8_tile_x86.c), else these.  The
 * portable tile is the definition written out: for each (x row, weight
 * row) pair, 8 integer lanes per block, a fused multiply-add per lane into
 * the even or odd blocks' sums, then the fixed sum of lanes.  Not built
 * into wasm (matmul_q.h: no tiles there). */
#include "matmul_q.h"

#ifndef __wasm__
#include <math.h>

/* The sum of matmul_q.h's definition over 8 lanes of the two sums. */
static float lanes_sum(const float *e, const float *o) {
  float u[4];
  for (int j = 0; j < 4; j++) u[j] = (e[j] + o[j]) + (e[j + 4] + o[j + 4]);
  return (u[0] + u[2]) + (u[1] + u[3]);
}

/* xq[M, 32 nb] codes (scales xd[M, nb]) . weight rows [N] -> y[M, ldy]:
 * Q8_0 [d f16][32 int8], Q4_0 [d f16][16 nibble bytes] (code - 8). */
static void tile_32(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, size_t M, int64_t nb,
                    float *y, size_t ldy, size_t N, int q4) {
  const size_t bytes = q4 ? 18 : 34;
  for (size_t n = 0; n < N; n++)
    for (size_t m = 0; m < M; m++) {
      const uint8_t *p = w + n * stride;
      const int8_t *x = xq + m * 32 * (size_t)nb;
      float acc[2][8] = {{0}};
      for (int64_t b = 0; b < nb; b++, p += bytes, x += 32) {
        int c[32];
        for (int i = 0; i < 16; i++)
          if (q4) c[i] = (p[2 + i] & 15) - 8, c[i + 16] = (p[2 + i] >> 4) - 8;
          else c[i] = (int8_t)p[2 + i], c[i + 16] = (int8_t)p[18 + i];
        const float s = rlx_f16_to_f32((uint16_t)(p[0] | (p[1] << 8))) * xd[m * (size_t)nb + (size_t)b];
        for (int j = 0; j < 8; j++) {
          const int l = c[4 * j] * x[4 * j] + c[4 * j + 1] * x[4 * j + 1] + c[4 * j + 2] * x[4 * j + 2] +
                        c[4 * j + 3] * x[4 * j + 3];
          acc[b & 1][j] = fmaf(s, (float)l, acc[b & 1][j]);
        }
      }
      y[m * ldy + n] = lanes_sum(acc[0], acc[1]);
    }
}

static void tile_q8_0(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, size_t M, int64_t nb,
                      float *y, size_t ldy, size_t N) {
  tile_32(w, stride, xq, xd, M, nb, y, ldy, N, 0);
}
static void tile_q4_0(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, size_t M, int64_t nb,
                      float *y, size_t ldy, size_t N) {
  tile_32(w, stride, xq, xd, M, nb, y, ldy, N, 1);
}

static const rlx_q8_tile_set portable = {tile_q8_0, tile_q4_0, "portable"};
const rlx_q8_tile_set *rlx_q8_tiles_portable(void) { return &portable; }

static const rlx_q8_tile_set *forced;
void rlx_q8_tiles_force(const rlx_q8_tile_set *s) { __atomic_store_n(&forced, s, __ATOMIC_RELAXED); }

rlx_q8_tile_fn rlx_qtable_tile8(uint32_t code) {
  const rlx_q8_tile_set *s = __atomic_load_n(&forced, __ATOMIC_RELAXED);
  if (!s) s = rlx_q8_tiles_vnni();
  if (!s) s = rlx_q8_tiles_avx2();
  if (!s) s = &portable;
  return code == RLX_GGUF_TYPE_Q8_0 ? s->q8_0 : code == RLX_GGUF_TYPE_Q4_0 ? s->q4_0 : NULL;
}
#endif
