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

#endif
