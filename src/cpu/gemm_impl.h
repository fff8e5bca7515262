/* gemm_impl.h - internals of the GEMM engine shared by its files: the
 * micro-kernel interface, the per-path blocking parameters, the packing
 * routines and the cache-blocked driver that ties them together.
 *
 * Layout of packed panels (zero-padded to whole register blocks):
 *   A block: ceil(mc/MR) slivers; sliver s holds op(A)[s*MR + r, k] at
 *            [k*MR + r] for k < kc.
 *   B panel: ceil(nc/NR) slivers; sliver s holds op(B)[k, s*NR + j] at
 *            [k*NR + j] for k < kc. */
#ifndef RLX_CPU_GEMM_IMPL_H
#define RLX_CPU_GEMM_IMPL_H

#include "kernels.h"

/* Largest register block of any path (for the driver's edge tile). */
#define RLX_GEMM_MAX_MR 8
#define RLX_GEMM_MAX_NR 32

/* c[MR, NR] (row stride ldc) = (load_c ? c : 0) + ap . bp over kc steps,
 * where ap is one packed A sliver and bp one B sliver whose k-th row of NR
 * values starts at bp + k*ldb (ldb = NR when packed). */
typedef void (*rlx_gemm_ukernel)(int32_t kc, const float *ap, const float *bp, int32_t ldb,
                                 float *c, int32_t ldc, int load_c);

/* Products with at most this many rows read B in place (no packing). */
#ifndef RLX_GEMM_B_IN_PLACE_ROWS
#define RLX_GEMM_B_IN_PLACE_ROWS 8
#endif

/* Upper bound of the workspace one rlx_gemm call asks its scratch for:
 * (round_up(mc, mr) + round_up(nc, nr)) * kc floats of the largest path
 * (checked by tests/c/test_gemm.c); rlx_gemm_scratch_bytes (kernels.h)
 * gives the exact figure for one product. */
#define RLX_GEMM_SCRATCH_MAX ((size_t)1 << 20)

/* dst[k*ldd + r] = src[r*lds + k] for r < 4, k < n: four rows of a matrix
 * become four columns of a packed sliver. */
typedef void (*rlx_gemm_transpose4_fn)(const float *src, size_t lds, int32_t n, float *dst,
                                       size_t ldd);
void rlx_gemm_transpose4_scalar(const float *src, size_t lds, int32_t n, float *dst, size_t ldd);

typedef struct {
  const char *name;
  int32_t mr, nr;     /* register block */
  int32_t mc, kc, nc; /* cache blocks: A block mc x kc (L2), B panel kc x nc;
                         mc a multiple of mr, nc of nr */
  rlx_gemm_ukernel kernel;
  rlx_gemm_transpose4_fn transpose4; /* for packing */
} rlx_gemm_impl;

/* The paths compiled into this build; each returns NULL where the path is
 * not compiled in or the CPU lacks the instructions. */
const rlx_gemm_impl *rlx_gemm_impl_avx2(void);
const rlx_gemm_impl *rlx_gemm_impl_sse(void);
const rlx_gemm_impl *rlx_gemm_impl_simd128(void);
const rlx_gemm_impl *rlx_gemm_impl_portable(void);

/* Packs op(A)[i0 : i0+mc, k0 : k0+kc] and op(B)[k0 : k0+kc, j0 : j0+nc]
 * into impl's sliver layout. */
void rlx_gemm_pack_a(const rlx_gemm_args *g, const rlx_gemm_impl *impl, int32_t i0, int32_t mc,
                     int32_t k0, int32_t kc, float *dst);
void rlx_gemm_pack_b(const rlx_gemm_args *g, const rlx_gemm_impl *impl, int32_t k0, int32_t kc,
                     int32_t j0, int32_t nc, float *dst);

/* Unpacked products (gemm_direct.c; M, N, K >= 1): row i of C; every row;
 * C as one column (needs N == 1 and ldc == 1). */
void rlx_gemm_row(const rlx_gemm_args *g, int32_t i);
void rlx_gemm_rows(const rlx_gemm_args *g);
void rlx_gemm_column(const rlx_gemm_args *g);

/* The Goto/BLIS-style loop nest with the given path (M, N, K >= 1), and
 * the scratch bytes it asks for (at most RLX_GEMM_SCRATCH_MAX). */
rlx_status rlx_gemm_blocked(const rlx_gemm_args *g, rlx_scratch *scratch,
                            const rlx_gemm_impl *impl);
size_t rlx_gemm_blocked_bytes(const rlx_gemm_args *g, const rlx_gemm_impl *impl);

#endif
