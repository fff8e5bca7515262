/* matmul_q.h - the row machinery of k_matmul_q.c that the other kernels
 * over GGUF-typed weights share (k_swiglu_q.c): a node's quantized
 * table (QTABLE attributes), its rows decoded to floats, the fused SIMD
 * rows of its type, and the sizes that pick matmul_q's paths. */
#ifndef RLX_CPU_MATMUL_Q_H
#define RLX_CPU_MATMUL_Q_H

#include "../models/gguf_quants.h"
#include "kernels.h"

#define TILE_FLOATS 65536       /* dequantized weights per GEMM tile (256 KiB) */
#define FUSED_MAX_M 4           /* x rows up to which the fused rows beat tile + GEMM (measured) */
#define FUSED_CHUNK_BYTES 16384 /* weight rows fused against every x row at a time */

typedef struct {
  const rlx_wtype *wt;
  size_t nblocks, stride; /* blocks and bytes per row */
  int32_t rows, cols;
} rlx_qtable;

/* The table of a node's QTABLE attributes (checked by its shape rule). */
rlx_qtable rlx_qtable_of(const rlx_node_t *n);
/* One row of t (at src) as cols floats. */
void rlx_qtable_decode_row(const rlx_qtable *t, const uint8_t *src, float *dst);
/* Whether decode + rlx_qdot_f32 beats the type's fused dot on one x row. */
int rlx_qtable_fast_decode(const rlx_qtable *t);
/* The fused SIMD rows of a type on this CPU or build, else NULL. */
rlx_wt_rows_fn rlx_qtable_simd_rows(uint32_t code);
/* sum_i a[i] b[i] */
float rlx_qdot_f32(const float *a, const float *b, size_t n);

/* norm (matmul_q, swiglu_q): x RMS-normalized with the weight input first. */
int rlx_qtable_norm(const rlx_node_t *n);
/* x normalized (rms_norm's rows) in the caller's own scratch; NULL when
 * out of memory. */
const float *rlx_qtable_normed_x(const rlx_kargs *a, rlx_scratch *own);
/* xq8 (matmul_q, swiglu_q): x rounded to 8 bits per 32 values. */
int rlx_qtable_xq8(const rlx_node_t *n);
/* x[M, K] as int8 codes q, per 32 values the scale d and the codes' sum s. */
typedef struct {
  int8_t *q;
  float *d;
  int32_t *s;
} rlx_xq8;
/* The codes of x in scratch s, followed by `extra` bytes for the caller
 * (returned; NULL when out of memory). */
void *rlx_xq8_codes_of(const float *x, size_t M, size_t K, size_t extra, rlx_scratch *s, rlx_xq8 *c);
/* nblocks blocks of 32 values of x -> the rounded values q d themselves. */
void rlx_xq8_round(const float *x, size_t nblocks, float *out);

/* The int8 tiles of prompts with xq8 (k_q8_tile.c, k_q8_tile_x86.c):
 * y[m ldy + n] for m < M, n < N = x's codes (M rows of nb blocks: xq,
 * xd) . N weight rows at w (stride bytes apart), Q8_0 or Q4_0.  Each y is
 * the value the int8 rows give (rlx_wt_rows8_fn, k_matmul_q_x86.c), bit
 * for bit: per 32-value block b, 8 lanes j of exact integer sums over
 * values 4j .. 4j + 3, each lane fused-multiply-added with d_w(b) xd[b]
 * into a sum of even blocks or of odd ones; then the two sums added lane
 * by lane and the 8 lanes as (l0 + l4 + l2 + l6) + (l1 + l5 + l3 + l7)
 * (precisely: u_j = l_j + l_{j+4}, then (u0 + u2) + (u1 + u3)). */
typedef void (*rlx_q8_tile_fn)(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd, size_t M,
                               int64_t nb, float *y, size_t ldy, size_t N);
typedef struct {
  rlx_q8_tile_fn q8_0, q4_0;
  const char *name;
} rlx_q8_tile_set;
#ifdef __wasm__ /* no tiles in wasm: prompts with xq8 keep the f32 GEMM */
#define RLX_Q8_TILES 0
static inline rlx_q8_tile_fn rlx_qtable_tile8(uint32_t code) { return (void)code, (rlx_q8_tile_fn)0; }
#else
#define RLX_Q8_TILES 1
/* The tile of a type (Q8_0, Q4_0) on this CPU, else NULL. */
rlx_q8_tile_fn rlx_qtable_tile8(uint32_t code);
#endif
/* Each set: portable C always; AVX2 (with FMA and F16C) and AVX-512 VNNI
 * (256-bit and 512-bit, BW and VL) where the running CPU has them, else
 * NULL. */
const rlx_q8_tile_set *rlx_q8_tiles_portable(void);
const rlx_q8_tile_set *rlx_q8_tiles_avx2(void);
const rlx_q8_tile_set *rlx_q8_tiles_vnni(void);
/* Tests: the set rlx_qtable_tile8 takes from (NULL: the best one). */
void rlx_q8_tiles_force(const rlx_q8_tile_set *s);
/* y[M, N] = x[M, K] in f32 with its sums per 32 values xsum[M, K / 32]
 * . W^T by the fused rows fn, weight rows 16 KiB at a time against every
 * x row, the chunks of rows spread over the thread pool. */
void rlx_qtable_rows(const rlx_qtable *t, rlx_wt_rows_fn fn, const uint8_t *w, const float *x, const float *xsum,
                     size_t M, float *y);

/* xq8's int8 path for M x rows of a table: the type's int8 rows for a few
 * rows (M <= FUSED_MAX_M), its int8 tiles for more; neither (both NULL):
 * x rounded to 8 bits goes through the f32 paths (rlx_qtable_rounded). */
typedef struct {
  rlx_wt_rows8_fn rows;
  rlx_q8_tile_fn tile;
} rlx_xq8_path;
rlx_xq8_path rlx_qtable_xq8_path(const rlx_qtable *t, size_t M);
/* y[M, N] = x's codes c . W^T by path p (one of its functions set). */
void rlx_qtable_xq8_product(const rlx_qtable *t, rlx_xq8_path p, const uint8_t *w, const rlx_xq8 *c, size_t M,
                            float *y);
/* f(a, x) with x the n values of x_in rounded to 8 bits (their own
 * scratch); op names the kernel in the out-of-memory message. */
rlx_status rlx_qtable_rounded(const rlx_kargs *a, const float *x_in, size_t n,
                              rlx_status (*f)(const rlx_kargs *, const float *), const char *op);

#endif
