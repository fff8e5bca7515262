/* gemm_blocked.c - the cache-blocked GEMM driver shared by every SIMD path:
 * B is packed panel by panel (kc x nc, kept in L3/L2), A block by block
 * (mc x kc, kept in L2), and a path's register-blocked micro-kernel sweeps
 * the packed slivers (one B sliver stays in L1).  With few rows of A, B is
 * read in place instead of packed.  Partial register blocks at
 * the right and bottom edges go through a small tile on the stack, so the
 * micro-kernels never touch memory outside C. */
#include "gemm_impl.h"

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static int32_t round_up(int32_t x, int32_t m) { return (x + m - 1) / m * m; }

/* Where the micro-kernels read B from: the packed panel (slivers of kc x
 * NR), or, with B in place, the rows of op(B) itself (row stride ld); then
 * only a partial last sliver is packed, into `packed`. */
typedef struct {
  const float *packed;
  const float *rows;
  int32_t ld;
} b_source;

/* Runs the micro-kernel on an mr x nr corner block through a full tile. */
static void edge_block(const rlx_gemm_impl *impl, int32_t kc, const float *ap, const float *bp,
                       int32_t ldb, float *c, int32_t ldc, int load_c, int32_t mr, int32_t nr) {
  _Alignas(64) float tile[RLX_GEMM_MAX_MR * RLX_GEMM_MAX_NR];
  impl->kernel(kc, ap, bp, ldb, tile, impl->nr, 0);
  for (int32_t i = 0; i < mr; i++) {
    float *ci = c + (size_t)i * ldc;
    const float *ti = tile + (size_t)i * impl->nr;
    if (load_c)
      for (int32_t j = 0; j < nr; j++) ci[j] += ti[j];
    else
      for (int32_t j = 0; j < nr; j++) ci[j] = ti[j];
  }
}

/* C[mc, nc] (+)= packed A block . B panel. */
static void macro_kernel(const rlx_gemm_impl *impl, int32_t mc, int32_t nc, int32_t kc,
                         const float *ap, const b_source *bs, float *c, int32_t ldc, int load_c) {
  const int32_t MR = impl->mr, NR = impl->nr;
  for (int32_t jr = 0; jr < nc; jr += NR) {
    const int32_t nr = min_i32(NR, nc - jr);
    const float *b = bs->packed + (size_t)jr * kc;
    int32_t ldb = NR;
    if (bs->rows) {
      b = nr == NR ? bs->rows + jr : bs->packed;
      ldb = nr == NR ? bs->ld : NR;
    }
    for (int32_t ir = 0; ir < mc; ir += MR) {
      const int32_t mr = min_i32(MR, mc - ir);
      const float *a = ap + (size_t)ir * kc;
      float *cij = c + (size_t)ir * ldc + jr;
      if (mr == MR && nr == NR)
        impl->kernel(kc, a, b, ldb, cij, ldc, load_c);
      else
        edge_block(impl, kc, a, b, ldb, cij, ldc, load_c, mr, nr);
    }
  }
}

/* Size of the blocks when n is cut into equal pieces of at most max, each
 * rounded up to a multiple of unit (784 -> 4 x 196, not 3 x 256 + 16), so
 * no pass is wasted on a thin remainder.  Never more than max when max is a
 * multiple of unit. */
static int32_t even_block(int32_t n, int32_t max, int32_t unit) {
  const int32_t blocks = (n + max - 1) / max;
  return min_i32(round_up((n + blocks - 1) / blocks, unit), max);
}

/* The blocking of one product: block sizes and packing buffer sizes. */
typedef struct {
  int32_t MC, KC, NC;
  int b_in_place;
  size_t a_floats, b_floats;
} blocking;

static blocking plan_blocks(const rlx_gemm_args *g, const rlx_gemm_impl *impl) {
  blocking p;
  const int32_t MR = impl->mr, NR = impl->nr;
  p.MC = even_block(g->M, impl->mc, MR);
  p.KC = even_block(g->K, impl->kc, 1);
  p.NC = even_block(g->N, impl->nc, NR);
  /* Few rows reuse each B sliver only a few times: packing B would cost
   * about as much as the product, so the kernels read B's rows in place. */
  p.b_in_place = !g->trans_b && g->M <= RLX_GEMM_B_IN_PLACE_ROWS;
  /* Buffers sized for this problem, not for the largest blocks. */
  const int32_t b_cols = p.b_in_place ? NR : round_up(min_i32(g->N, p.NC), NR);
  p.b_floats = ((size_t)b_cols * p.KC + 15) / 16 * 16;
  p.a_floats = (size_t)round_up(min_i32(g->M, p.MC), MR) * p.KC;
  return p;
}

size_t rlx_gemm_blocked_bytes(const rlx_gemm_args *g, const rlx_gemm_impl *impl) {
  const blocking p = plan_blocks(g, impl);
  return (p.a_floats + p.b_floats) * sizeof(float);
}

rlx_status rlx_gemm_blocked(const rlx_gemm_args *g, rlx_scratch *scratch,
                            const rlx_gemm_impl *impl) {
  const int32_t M = g->M, N = g->N, K = g->K, NR = impl->nr;
  const blocking p = plan_blocks(g, impl);
  const int32_t MC = p.MC, KC = p.KC, NC = p.NC;
  const size_t bytes = (p.a_floats + p.b_floats) * sizeof(float);
  float *bp = rlx_scratch_get(scratch, bytes);
  if (!bp)
    return rlx_error(RLX_ERR_NO_MEMORY, "gemm: no memory for packing buffers (%zu bytes)", bytes);
  float *ap = bp + p.b_floats;

  for (int32_t jc = 0; jc < N; jc += NC) {
    const int32_t nc = min_i32(NC, N - jc);
    for (int32_t pc = 0; pc < K; pc += KC) {
      const int32_t kc = min_i32(KC, K - pc);
      const int load_c = g->accumulate || pc > 0;
      b_source bs = {bp, NULL, g->ldb};
      if (p.b_in_place) {
        const int32_t full = nc / NR * NR;
        bs.rows = g->B + (size_t)pc * g->ldb + jc;
        if (full < nc) rlx_gemm_pack_b(g, impl, pc, kc, jc + full, nc - full, bp);
      } else {
        rlx_gemm_pack_b(g, impl, pc, kc, jc, nc, bp);
      }
      for (int32_t ic = 0; ic < M; ic += MC) {
        const int32_t mc = min_i32(MC, M - ic);
        rlx_gemm_pack_a(g, impl, ic, mc, pc, kc, ap);
        macro_kernel(impl, mc, nc, kc, ap, &bs, g->C + (size_t)ic * g->ldc + jc, g->ldc, load_c);
      }
    }
  }
  return RLX_OK;
}
