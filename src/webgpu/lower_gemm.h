/* lower_gemm.h - the tiled GEMM of matmul.wgsl (lower_matmul.c) that the
 * WebGPU lowerings of matmul and of the convolutions (lower_vision.c, as
 * implicit GEMMs) share. */
#ifndef RLX_WGPU_LOWER_GEMM_H
#define RLX_WGPU_LOWER_GEMM_H

#include "wgpu.h"

/* matmul.wgsl's modes: how its tile loaders read A and B. */
enum { RLX_GEMM_MATMUL = 0, RLX_GEMM_CONV = 1, RLX_GEMM_CONV_DX = 2, RLX_GEMM_CONV_DW = 3 };

/* One GEMM for matmul.wgsl: C[M, N] = A[M, K] . B[K, N] for Z batch
 * entries; words are the mode's uniform words from index 9 on (see the
 * shader), out_elems the elements of the whole output.  k_fast_a / k_fast_b:
 * whether k is the contiguous index of A / B in memory (picks the shape of
 * the tile that fits the loads). */
typedef struct {
  uint32_t mode, trans_a, trans_b;
  uint32_t M, N, K, Z;
  size_t out_elems;
  uint32_t words[23];
  int32_t n_words;
} rlx_wgpu_gemm;

/* Adds the GEMM's dispatches to l: one, or, when the output has too few
 * tiles to keep a GPU busy and K is long, a split-K GEMM into scratch
 * (after l->scratch_bytes, which grows) plus matmul_splitk to sum it. */
rlx_status rlx_wgpu_add_gemm(rlx_wgpu_lowering *l, const rlx_wgpu_gemm *g);

#endif
