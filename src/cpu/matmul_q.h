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
/* The int8 SIMD rows of a type on this CPU or build, else NULL. */
rlx_wt_rows8_fn rlx_qtable_simd_rows8(uint32_t code);
/* y[M, N] = x's codes c . W^T by fn, weight rows 16 KiB at a time against
 * every x row, the chunks of rows spread over the thread pool. */
/* The same for x[M, K] in f32 with its sums per 32 values xsum[M, K / 32]
 * by the fused rows fn. */
void rlx_qtable_rows(const rlx_qtable *t, rlx_wt_rows_fn fn, const uint8_t *w, const float *x, const float *xsum,
                     size_t M, float *y);
void rlx_qtable_rows8(const rlx_qtable *t, rlx_wt_rows8_fn fn, const uint8_t *w, const rlx_xq8 *c, size_t M,
                      float *y);

#endif
