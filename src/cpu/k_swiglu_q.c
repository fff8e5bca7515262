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
 * normalized first (as matmul_q's).  Each path splits the N outputs over
 * the thread pool at its own loop's bounds (chunks, rows, tiles). */
#include <string.h>

#include "../core/pool.h"
#include "fast_math.h"
#include "matmul_q.h"

/* y[i] = silu(g[i]) * y[i], y holding the up product (restrict: so the
 * compilers vectorize it as the silu kernel). */
static void swiglu_row(const float *restrict g, float *restrict y, size_t n) {
  RLX_VEC_LOOP(i, n, y[i] = g[i] * sigmoid_stable(g[i]) * y[i]);
}

/* One parallel loop of swiglu's row and tile paths. */
typedef struct {
  const rlx_qtable *t;
  const uint8_t *wg, *wu;
  const float *x;
  float *y, *gate;                /* rows: the gate's products */
  size_t M, tile, own, prod;      /* tiles: rows per tile, the workspace's parts */
  rlx_gemm_args full;
  size_t gemm_bytes;
  int failed;                     /* 1 or RLX_ERR_NO_MEMORY: no memory; else the GEMM's status */
} swiglu_loop;

/* One x row: outputs [b, e)'s gate and up rows decoded into ws and dotted
 * (or the type's fused dot). */
static void one_row_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  swiglu_loop *l = ctx;
  const rlx_qtable *t = l->t;
  const size_t K = (size_t)t->cols;
  const int fast = rlx_qtable_fast_decode(t); /* else the type's fused dot beats decoding its blocks here */
  float *row = fast ? rlx_scratch_get(ws, K * sizeof(float)) : NULL;
  if (fast && !row) {
    rlx_task_failed(&l->failed, 1);
    return;
  }
  for (size_t n = b; n < e; n++) {
    if (!fast) {
      l->gate[n] = t->wt->dot(l->wg + n * t->stride, l->x, (int64_t)t->nblocks);
      l->y[n] = t->wt->dot(l->wu + n * t->stride, l->x, (int64_t)t->nblocks);
      continue;
    }
    rlx_qtable_decode_row(t, l->wg + n * t->stride, row);
    l->gate[n] = rlx_qdot_f32(row, l->x, K);
    rlx_qtable_decode_row(t, l->wu + n * t->stride, row);
    l->y[n] = rlx_qdot_f32(row, l->x, K);
  }
}

/* Outputs [b, e) (whole tiles), a tile at a time: its gate and up rows
 * dequantized into ws, times every x row by one GEMM, combined into y. */
static void tile_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  swiglu_loop *l = ctx;
  const rlx_qtable *t = l->t;
  const size_t K = (size_t)t->cols, N = (size_t)t->rows;
  unsigned char *mem = rlx_scratch_get(ws, l->own + l->prod + l->gemm_bytes);
  if (!mem) {
    rlx_task_failed(&l->failed, RLX_ERR_NO_MEMORY);
    return;
  }
  float *wtile = (float *)mem, *gu = (float *)(mem + l->own);
  rlx_scratch gemm_scratch = {mem + l->own + l->prod, l->gemm_bytes};
  for (size_t n0 = b; n0 < e; n0 += l->tile) {
    const size_t rows = e - n0 < l->tile ? e - n0 : l->tile;
    for (size_t r = 0; r < rows; r++) {
      rlx_qtable_decode_row(t, l->wg + (n0 + r) * t->stride, wtile + r * K);
      rlx_qtable_decode_row(t, l->wu + (n0 + r) * t->stride, wtile + (rows + r) * K);
    }
    rlx_gemm_args g = l->full;
    g.N = (int32_t)(2 * rows);
    g.B = wtile;
    g.C = gu;
    g.ldc = (int32_t)(2 * rows);
    rlx_status st = rlx_gemm(&g, &gemm_scratch);
    if (st != RLX_OK) {
      rlx_task_failed(&l->failed, (int)st);
      return;
    }
    for (size_t m = 0; m < l->M; m++) {
      memcpy(l->y + m * N + n0, gu + (2 * m + 1) * rows, rows * sizeof(float));
      swiglu_row(gu + 2 * m * rows, l->y + m * N + n0, rows);
    }
  }
}

/* x[M, K], w_gate, w_up: N rows of K quantized values -> y[M, N]. */
static rlx_status swiglu(const rlx_kargs *a, const float *x) {
  const rlx_qtable t = rlx_qtable_of(a->node);
  const size_t N = (size_t)t.rows, K = (size_t)t.cols, M = rlx_shape_numel(&a->in_node[0]->shape) / K;
  const uint8_t *wg = (const uint8_t *)a->in[1], *wu = (const uint8_t *)a->in[2];
  float *y = a->out;

  rlx_wt_rows_fn rows_fn = rlx_qtable_simd_rows(t.wt->code);
  if (rows_fn && M <= FUSED_MAX_M) {
    const size_t ns = K / 32;
    float *gate = rlx_scratch_get(a->scratch, (M * N + M * ns) * sizeof(float)), *xsum = gate + M * N;
    if (!gate) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for %zu values", M * N + M * ns);
    for (size_t i = 0; i < M * ns; i++) {
      float s = 0.0f;
      for (int j = 0; j < 32; j++) s += x[32 * i + j];
      xsum[i] = s;
    }
    rlx_qtable_rows(&t, rows_fn, wg, x, xsum, M, gate); /* the gate's products into gate, the up's into y */
    rlx_qtable_rows(&t, rows_fn, wu, x, xsum, M, y);
    swiglu_row(gate, y, M * N);
    return RLX_OK;
  }

  swiglu_loop l = {.t = &t, .wg = wg, .wu = wu, .x = x, .y = y};
  if (M == 1) {
    float *gate = rlx_scratch_get(a->scratch, (N + K) * sizeof(float));
    if (!gate) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for %zu values", N + K);
    rlx_scratch row = {gate + N, K * sizeof(float)}; /* the row buffer when the loop runs inline */
    l.gate = gate;
    rlx_parallel_for(N, 1, 2 * K, one_row_range, &l, &row);
    if (l.failed) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for a row of %zu values", K);
    swiglu_row(gate, y, N);
    return RLX_OK;
  }

  /* tile rows of Wg then the same rows of Wu: B[2 rows, K], C = x B^T */
  size_t tile = TILE_FLOATS / (2 * K);
  if (tile < 8) tile = 8;
  if (tile > N) tile = N;
  rlx_gemm_args full = {(int32_t)M, (int32_t)(2 * tile), (int32_t)K, x, (int32_t)K, 0, NULL, (int32_t)K, 1,
                        NULL, (int32_t)(2 * tile), 0};
  l.M = M;
  l.tile = tile;
  l.own = (2 * tile * K * sizeof(float) + 63) & ~(size_t)63;
  l.prod = (M * 2 * tile * sizeof(float) + 63) & ~(size_t)63;
  l.full = full;
  l.gemm_bytes = rlx_gemm_scratch_bytes(&full);
  rlx_parallel_for(N, tile, 2 * M * K, tile_range, &l, a->scratch);
  if (l.failed == RLX_ERR_NO_MEMORY)
    return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for a 2 x %zu x %zu weight tile", tile, K);
  if (l.failed) return rlx_error((rlx_status)l.failed, "swiglu_q: the product of a weight tile failed");
  return RLX_OK;
}

/* xq8: for a few x rows the int8 rows of the type, for more its int8
 * tiles (native Q8_0, Q4_0), x's codes made once for both tables (the
 * gate's products after them in the scratch, the up's in y); else x
 * rounded to 8 bits through the paths above. */
static rlx_status swiglu_xq8(const rlx_kargs *a, const float *x_in) {
  const rlx_qtable t = rlx_qtable_of(a->node);
  const size_t N = (size_t)t.rows, K = (size_t)t.cols, M = rlx_shape_numel(&a->in_node[0]->shape) / K;
  const rlx_xq8_path p = rlx_qtable_xq8_path(&t, M);
  if (!p.rows && !p.tile) return rlx_qtable_rounded(a, x_in, M * K, swiglu, "swiglu_q");
  rlx_xq8 c;
  float *gate = rlx_xq8_codes_of(x_in, M, K, M * N * sizeof(float), a->scratch, &c);
  if (!gate) return rlx_error(RLX_ERR_NO_MEMORY, "swiglu_q: no memory for %zu 8-bit codes", M * K);
  rlx_qtable_xq8_product(&t, p, (const uint8_t *)a->in[1], &c, M, gate);
  rlx_qtable_xq8_product(&t, p, (const uint8_t *)a->in[2], &c, M, a->out);
  swiglu_row(gate, a->out, M * N);
  return RLX_OK;
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
