/* k_swiglu_q.c - swiglu_q: y[M, N] = silu(x Wg^T) * (x Wu^T), the
 * gate and up halves of a feed-forward block, Wg and Wu two N x K tables
 * of one GGUF type read in place.  matmul_q's paths (k_matmul_q.c, through
 * matmul_q.h) over both weights at once, the work on x shared:
 *  - up to FUSED_MAX_M x rows, a type with fused SIMD rows: x's sums per
 *    32 values once for both weights, then each weight's rows 16 KiB at a
 *    time against every x row (matmul_q's loop), the products combined in
 *    one pass at the end;
 *  - else one x row: each output's gate and up rows decoded and dotted
 *    (or the type's fused dot), then combined;
 *  - otherwise tiles of gate rows and the same up rows are dequantized
 *    into one weight tile (256 KiB) and multiplied with every x row by one
 *    GEMM, so x is packed once per tile for both weights.
 * silu(g) is the silu kernel's g * sigmoid_stable(g) (k_unary.c), then
 * times u: the rounding of silu followed by mul.  With norm, x's rows are
 * normalized first (as matmul_q's). */
#include <string.h>

#include "fast_math.h"
#include "matmul_q.h"

/* y[i] = silu(g[i]) * y[i], y holding the up product (restrict: so the
 * compilers vectorize it as the silu kernel). */
static void swiglu_row(const float *restrict g, float *restrict y, size_t n) {
  RLX_VEC_LOOP(i, n, y[i] = g[i] * sigmoid_stable(g[i]) * y[i]);
}

/* x[M, K], w_gate, w_up: N rows of K quantized values -> y[M, N]. */
static rlx_status swiglu(const rlx_kargs *a, const float *x) {
  const rlx_qtable t = rlx_qtable_of(a->node);
  const size_t N = (size_t)t.rows, K = (size_t)t.cols, M = rlx_shape_numel(&a->in_node[0]->shape) / K;
  const uint8_t *wg = (const uint8_t *)a->in[1], *wu = (const uint8_t *)a->in[2];
  float *y = a->out;

  rlx_wt_rows_fn rows_fn = rlx_qtable_simd_rows(t.wt->code);
  if (rows_fn && M <= FUSED_MAX_M) {
    const size_t ns = K / 32, chunk = t.stride >= FUSED_CHUNK_BYTES ? 1 : FUSED_CHUNK_BYTES / t.stride;
    float *gate = rlx_scratch_get(a->scratch, (M * N + M * ns) * sizeof(float)), *xsum = gate + M * N;
    if (!gate) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for %zu values", M * N + M * ns);
    for (size_t i = 0; i < M * ns; i++) {
      float s = 0.0f;
      for (int j = 0; j < 32; j++) s += x[32 * i + j];
      xsum[i] = s;
    }
    for (int up = 0; up < 2; up++) /* the gate's products into gate, the up's into y */
      for (size_t n0 = 0; n0 < N; n0 += chunk) {
        const size_t rows = N - n0 < chunk ? N - n0 : chunk;
        for (size_t m = 0; m < M; m++)
          rows_fn((up ? wu : wg) + n0 * t.stride, t.stride, x + m * K, xsum + m * ns, (int64_t)t.nblocks,
                  (up ? y : gate) + m * N + n0, rows);
      }
    swiglu_row(gate, y, M * N);
    return RLX_OK;
  }

  if (M == 1) {
    float *gate = rlx_scratch_get(a->scratch, (N + K) * sizeof(float)), *row = gate + N;
    if (!gate) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for %zu values", N + K);
    const int fast = rlx_qtable_fast_decode(&t); /* else the type's fused dot beats decoding its blocks here */
    for (size_t n = 0; n < N; n++) {
      if (!fast) {
        gate[n] = t.wt->dot(wg + n * t.stride, x, (int64_t)t.nblocks);
        y[n] = t.wt->dot(wu + n * t.stride, x, (int64_t)t.nblocks);
        continue;
      }
      rlx_qtable_decode_row(&t, wg + n * t.stride, row);
      gate[n] = rlx_qdot_f32(row, x, K);
      rlx_qtable_decode_row(&t, wu + n * t.stride, row);
      y[n] = rlx_qdot_f32(row, x, K);
    }
    swiglu_row(gate, y, N);
    return RLX_OK;
  }

  /* tile rows of Wg then the same rows of Wu: B[2 rows, K], C = x B^T */
  size_t tile = TILE_FLOATS / (2 * K);
  if (tile < 8) tile = 8;
  if (tile > N) tile = N;
  rlx_gemm_args full = {(int32_t)M, (int32_t)(2 * tile), (int32_t)K, x, (int32_t)K, 0, NULL, (int32_t)K, 1,
                        NULL, (int32_t)(2 * tile), 0};
  const size_t own = (2 * tile * K * sizeof(float) + 63) & ~(size_t)63;
  const size_t prod = (M * 2 * tile * sizeof(float) + 63) & ~(size_t)63, gemm_bytes = rlx_gemm_scratch_bytes(&full);
  unsigned char *mem = rlx_scratch_get(a->scratch, own + prod + gemm_bytes);
  if (!mem) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for a 2 x %zu x %zu weight tile", tile, K);
  float *wtile = (float *)mem, *gu = (float *)(mem + own);
  rlx_scratch gemm_scratch = {mem + own + prod, gemm_bytes};
  for (size_t n0 = 0; n0 < N; n0 += tile) {
    const size_t rows = N - n0 < tile ? N - n0 : tile;
    for (size_t r = 0; r < rows; r++) {
      rlx_qtable_decode_row(&t, wg + (n0 + r) * t.stride, wtile + r * K);
      rlx_qtable_decode_row(&t, wu + (n0 + r) * t.stride, wtile + (rows + r) * K);
    }
    rlx_gemm_args g = full;
    g.N = (int32_t)(2 * rows);
    g.B = wtile;
    g.C = gu;
    g.ldc = (int32_t)(2 * rows);
    rlx_status st = rlx_gemm(&g, &gemm_scratch);
    if (st != RLX_OK) return st;
    for (size_t m = 0; m < M; m++) {
      memcpy(y + m * N + n0, gu + (2 * m + 1) * rows, rows * sizeof(float));
      swiglu_row(gu + 2 * m * rows, y + m * N + n0, rows);
    }
  }
  return RLX_OK;
}

/* xq8: for a few x rows the int8 rows of the type, x's codes made once for
 * both tables (the gate's products after them in the scratch, the up's in
 * y); else x rounded to 8 bits through the paths above. */
static rlx_status swiglu_xq8(const rlx_kargs *a, const float *x_in) {
  const rlx_qtable t = rlx_qtable_of(a->node);
  const size_t N = (size_t)t.rows, K = (size_t)t.cols, M = rlx_shape_numel(&a->in_node[0]->shape) / K;
  rlx_wt_rows8_fn fn = rlx_qtable_simd_rows8(t.wt->code);
  if (fn && M <= FUSED_MAX_M) {
    rlx_xq8 c;
    float *gate = rlx_xq8_codes_of(x_in, M, K, M * N * sizeof(float), a->scratch, &c);
    if (!gate) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for %zu 8-bit codes", M * K);
    rlx_qtable_rows8(&t, fn, (const uint8_t *)a->in[1], &c, M, gate);
    rlx_qtable_rows8(&t, fn, (const uint8_t *)a->in[2], &c, M, a->out);
    swiglu_row(gate, a->out, M * N);
    return RLX_OK;
  }
  rlx_scratch own = {NULL, 0};
  float *x = rlx_scratch_get(&own, M * K * sizeof(float));
  if (!x) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for x rounded to 8 bits (%zu values)", M * K);
  rlx_xq8_round(x_in, M * K / 32, x);
  const rlx_status st = swiglu(a, x);
  rlx_scratch_release(&own);
  return st;
}

/* x normalized first with norm; then xq8's paths or the f32 ones. */
rlx_status rlx_cpu_swiglu_q(const rlx_kargs *a) {
  rlx_scratch own = {NULL, 0};
  const float *x = rlx_qtable_norm(a->node) ? rlx_qtable_normed_x(a, &own) : a->in[0];
  if (!x) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for x normalized");
  const rlx_status st = rlx_qtable_xq8(a->node) ? swiglu_xq8(a, x) : swiglu(a, x);
  rlx_scratch_release(&own);
  return st;
}
