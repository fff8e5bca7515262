/* gguf_quants.h - the weight types' table and row kernels (internal).
 *
 * One entry per row of include/rlx_gguf_types.def, indexed by GGUF code.
 * The kernels work on whole blocks and trust their arguments (the public
 * wrappers of gguf_quants.c check sizes and values):
 *   dequant  nblocks blocks of src -> nblocks * block_elems floats
 *   quant    the reverse; returns -1, or the index of the first block whose
 *            scale does not fit an f16 (src must be finite)
 *   dot      sum of dequantized(row)_i * x_i over nblocks blocks
 * Each entry holds the portable C kernel.  A SIMD variant (AVX2, wasm
 * SIMD128) of a type's dot or dequant goes in a file of its own, declared
 * here, and replaces the portable function in that type's table entry
 * under the same compile-time test src/cpu/gemm_*.c use; the portable
 * kernels stay callable as the reference the tests compare with. */
#ifndef RLX_GGUF_QUANTS_H
#define RLX_GGUF_QUANTS_H

#include <stddef.h>
#include <stdint.h>
#include "rlx_gguf.h"

typedef void (*rlx_wt_dequant_fn)(const uint8_t *src, float *dst, int64_t nblocks);
typedef int64_t (*rlx_wt_quant_fn)(const float *src, uint8_t *dst, int64_t nblocks);
typedef float (*rlx_wt_dot_fn)(const uint8_t *row, const float *x, int64_t nblocks);

typedef struct {
  const char *name;     /* NULL: not a supported code */
  uint32_t code;
  int32_t block_elems, block_bytes;
  rlx_wt_dequant_fn dequant;
  rlx_wt_quant_fn quant;
  rlx_wt_dot_fn dot;
} rlx_wtype;

#define RLX_GGUF_TYPE(ID, name, code, block_elems, block_bytes)           \
  void rlx_wt_dequant_##ID(const uint8_t *src, float *dst, int64_t nblocks); \
  int64_t rlx_wt_quant_##ID(const float *src, uint8_t *dst, int64_t nblocks); \
  float rlx_wt_dot_##ID(const uint8_t *row, const float *x, int64_t nblocks);
#include "rlx_gguf_types.def"
#undef RLX_GGUF_TYPE

/* A fused matrix-vector product over whole rows: y[r] = dot(row r, x) for
 * r < nrows, row r at w + r * stride, each of nblocks blocks; xsum[i] is
 * the sum of x[32 i .. 32 i + 32) (the affine and K types fold their
 * minimums through it).  rlx_wt_rows_avx2 (x86-64 with AVX2, FMA and F16C
 * at run time: src/cpu/k_matmul_q_x86.c) and rlx_wt_rows_simd128 (wasm
 * built with -msimd128: src/cpu/k_matmul_q_wasm.c) give one kernel per
 * type, or NULL where the build or the CPU has none. */
/* The 8 six-bit scales (bytes 0..7) and mins (bytes 8..15) of a Q4_K /
 * Q5_K block from its 12 packed scale bytes at s (layout in gguf_quants.c). */
static inline void rlx_k4_scales_unpack(const uint8_t *s, uint32_t u[4]) {
  __builtin_memcpy(u, s, 12);
  const uint32_t m6 = 0x3f3f3f3fu, m4 = 0x0f0f0f0fu, m2 = 0x03030303u, mins_lo = u[1] & m6;
  u[3] = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);
  u[1] = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);
  u[2] = mins_lo;
  u[0] &= m6;
}

typedef void (*rlx_wt_rows_fn)(const uint8_t *w, size_t stride, const float *x, const float *xsum, int64_t nblocks,
                               float *y, size_t nrows);
typedef struct {
  rlx_wt_rows_fn q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k, q6_k;
} rlx_wt_rows_set;
const rlx_wt_rows_set *rlx_wt_rows_avx2(void);
const rlx_wt_rows_set *rlx_wt_rows_simd128(void);
/* The same over x rounded to 8 bits (matmul_q's xq8): per 32 values of x
 * the int8 codes xq, the scale xd and the codes' sum xs; y[r] = sum over
 * blocks b of d_w(b) xd[b] (w codes . xq). */
typedef void (*rlx_wt_rows8_fn)(const uint8_t *w, size_t stride, const int8_t *xq, const float *xd,
                                const int32_t *xs, int64_t nblocks, float *y, size_t nrows);
typedef struct {
  rlx_wt_rows8_fn q8_0, q4_0;
} rlx_wt_rows8_set;
const rlx_wt_rows8_set *rlx_wt_rows8_avx2(void);
const rlx_wt_rows8_set *rlx_wt_rows8_simd128(void);

/* GGUF type codes are below this (the tables' size). */
#define RLX_WT_CODES 64

/* The entry of a supported code, else NULL. */
const rlx_wtype *rlx_wtype_get(uint32_t code);
/* Name of any GGUF type code the format defines ("q2_K", ...), else NULL. */
const char *rlx_wtype_known_name(uint32_t code);

/* IEEE half and bfloat16 <-> float (round to nearest even; NaN stays NaN). */
float rlx_f16_to_f32(uint16_t h);
uint16_t rlx_f32_to_f16(float f);
float rlx_bf16_to_f32(uint16_t h);
uint16_t rlx_f32_to_bf16(float f);

/* IEEE half -> float without branches (so loops of it vectorize): the
 * exponent and mantissa shifted into place and scaled by 2^112 give every
 * finite half exactly (subnormals included); inf and NaN keep the top
 * exponent. */
static inline float rlx_f16_fast(uint16_t h) {
  uint32_t em = h & 0x7fffu, bits = em << 13, sign = (uint32_t)(h & 0x8000u) << 16;
  float f;
  __builtin_memcpy(&f, &bits, sizeof f);
  f *= 0x1p112f;
  __builtin_memcpy(&bits, &f, sizeof f);
  bits = em >= 0x7c00u ? (em << 13) | 0x7f800000u : bits;
  bits |= sign;
  __builtin_memcpy(&f, &bits, sizeof f);
  return f;
}

#endif
