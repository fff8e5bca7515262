/* lower_matmul.c - WebGPU lowering of matmul, and the tiled GEMM that the
 * convolution lowerings share (matmul.wgsl, split-K sums in
 * matmul_splitk.wgsl).
 *
 * Tile shapes (256 threads each, see matmul.wgsl): 128x128 (8x8 outputs per
 * thread) for a matmul output of more than 64 rows with enough tiles to
 * fill a large GPU, 64x128 (8x4) or 64x64 (4x4) below that and for the
 * convolutions, and thin tiles for few rows (16x64, 4x256) or few
 * columns (256x16), 32x64 for up to 32 rows of a product under 64M
 * multiply-adds.  The thin tiles matter most on CPU Vulkan drivers
 * (SwiftShader), where every padded row or column of a tile costs as much
 * as a real one; on GPUs such small products are bound by latency.  Long K
 * with few output tiles is split over workgroups (split-K) and summed by a
 * second dispatch.
 *
 * Tolerance against the CPU executor: the same products summed in another
 * order (the CPU's blocked GEMM vs the GPU's k loop, split partials added
 * in order): ~1e-6 relative on the op cases, inside the 1e-4 budget. */
#include "lower_gemm.h"

typedef struct {
  uint32_t tm, tn, wg_x;
} tile_cfg;

static const tile_cfg TILE_128x128 = {8, 8, 16};
static const tile_cfg TILE_64x128 = {8, 4, 32};
static const tile_cfg TILE_64x64 = {4, 4, 16};
static const tile_cfg TILE_32x64 = {2, 4, 16};
static const tile_cfg TILE_16x64 = {1, 4, 16};
static const tile_cfg TILE_4x256 = {1, 4, 64};
static const tile_cfg TILE_256x16 = {4, 4, 4};

static uint32_t tile_rows(tile_cfg t) { return t.tm * (256u / t.wg_x); }
static uint32_t tile_cols(tile_cfg t) { return t.tn * t.wg_x; }

/* The K depth matmul.wgsl derives for a tile (16 KiB of workgroup memory). */
static uint32_t tile_depth(tile_cfg t) {
  uint32_t s = tile_rows(t) + tile_cols(t);
  return s <= 128 ? 32u : s <= 256 ? 16u : s <= 512 ? 8u : 4u;
}

static uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

static uint64_t tile_count(tile_cfg t, const rlx_wgpu_gemm *g) {
  return ceil_div(g->M, tile_rows(t)) * ceil_div(g->N, tile_cols(t)) * g->Z;
}

static tile_cfg pick_tile(const rlx_wgpu_gemm *g) {
  const uint64_t work = (uint64_t)g->M * g->N * g->K * g->Z;
  if (g->M <= 4) return g->N > 64 ? TILE_4x256 : TILE_16x64;
  if (g->M <= 16) return TILE_16x64;
  if (g->N <= 16) return TILE_256x16;
  if (g->M <= 32 && work < ((uint64_t)1 << 26)) return TILE_32x64;
  if (work < ((uint64_t)1 << 21)) return TILE_64x64;
  /* 128x128 only for matmul: the convolution loaders hold more registers,
   * and with 64 accumulators per thread they spill (an H200 ran a 3x3
   * conv at 2.3 TFLOP/s with 128x128 tiles, 22 with 64x128). */
  if (g->mode == RLX_GEMM_MATMUL && g->M > 64 && tile_count(TILE_128x128, g) >= 200) return TILE_128x128;
  if (tile_count(TILE_64x128, g) >= 100) return TILE_64x128;
  return TILE_64x64;
}

static uint32_t grid_dim(uint64_t n) { return n > 65535 ? 65535u : (uint32_t)(n ? n : 1); }

rlx_status rlx_wgpu_add_gemm(rlx_wgpu_lowering *l, const rlx_wgpu_gemm *g) {
  const tile_cfg t = pick_tile(g);
  const uint32_t bk = tile_depth(t);
  const uint64_t tiles = tile_count(t, g);
  /* Split K when the output has few tiles and K is long: each split at
   * least 256 deep, about 256 workgroups in all, partials at most 256 MiB. */
  uint32_t splits = 1;
  if (tiles < 64 && g->K >= 512) {
    uint64_t s = ceil_div(256, tiles);
    if (s > g->K / 256) s = g->K / 256;
    while (s > 1 && s * g->out_elems * sizeof(float) > ((size_t)1 << 28)) s--;
    splits = (uint32_t)(s ? s : 1);
  }
  uint32_t k_split = (uint32_t)(ceil_div(ceil_div(g->K, splits), bk) * bk);
  splits = (uint32_t)ceil_div(g->K, k_split);

  rlx_wgpu_dispatch *d = rlx_wgpu_add(l, "matmul");
  if (!d) return rlx_error(RLX_ERR_STATE, "webgpu: matmul needs more than %d dispatches", RLX_WGPU_MAX_DISPATCH);
  rlx_wgpu_override(d, "MODE", g->mode);
  if (g->trans_a) rlx_wgpu_override(d, "TRANS_A", 1);
  if (g->trans_b) rlx_wgpu_override(d, "TRANS_B", 1);
  rlx_wgpu_override(d, "TM", t.tm);
  rlx_wgpu_override(d, "TN", t.tn);
  rlx_wgpu_override(d, "WG_X", t.wg_x);
  /* A product shallower than one tile (a 3x3 convolution of one channel, a
   * weight gradient over a small batch) multiplies only its real depth:
   * padded k cost as much as real ones on CPU Vulkan drivers. */
  if (g->K < bk) rlx_wgpu_override(d, "KD", g->K);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 1, 0, 0, 0);
  size_t part_off = 0, part_bytes = 0;
  if (splits > 1) {
    part_off = (l->scratch_bytes + 255) / 256 * 256;
    part_bytes = (size_t)splits * g->out_elems * sizeof(float);
    l->scratch_bytes = part_off + part_bytes;
    rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, part_off, part_bytes, 1);
  } else {
    rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  }
  const uint64_t mt = ceil_div(g->M, tile_rows(t)), nt = ceil_div(g->N, tile_cols(t));
  rlx_wgpu_u32(d, g->M);
  rlx_wgpu_u32(d, g->N);
  rlx_wgpu_u32(d, g->K);
  rlx_wgpu_u32(d, g->Z);
  rlx_wgpu_u32(d, splits);
  rlx_wgpu_u32(d, k_split);
  rlx_wgpu_u32(d, (uint32_t)mt);
  rlx_wgpu_u32(d, (uint32_t)nt);
  rlx_wgpu_u32(d, (uint32_t)g->out_elems);
  for (int32_t i = 0; i < g->n_words; i++) rlx_wgpu_u32(d, g->words[i]);
  d->groups[0] = grid_dim(nt);
  d->groups[1] = grid_dim(mt);
  d->groups[2] = grid_dim((uint64_t)g->Z * splits);

  if (splits > 1) {
    rlx_wgpu_dispatch *s = rlx_wgpu_add(l, "matmul_splitk");
    if (!s) return rlx_error(RLX_ERR_STATE, "webgpu: matmul needs more than %d dispatches", RLX_WGPU_MAX_DISPATCH);
    rlx_wgpu_bind(s, RLX_WB_SCRATCH, 0, part_off, part_bytes, 0);
    rlx_wgpu_bind(s, RLX_WB_OUTPUT, 0, 0, 0, 1);
    rlx_wgpu_u32(s, (uint32_t)g->out_elems);
    rlx_wgpu_u32(s, splits);
    rlx_wgpu_grid1d(s, g->out_elems, 256);
  }
  return RLX_OK;
}

/* a[..., M, K] (trans_a: [..., K, M]), b[..., K, N] (trans_b: [..., N, K])
 *   -> y[..., M, N]; the batch dims of a and b broadcast.  Batch dims of
 * size 1 are dropped; a shared b under an unbroadcast, untransposed a folds
 * the batch into the rows (one tall GEMM), as on the CPU. */
rlx_status rlx_wgpu_lower_matmul(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const rlx_shape *sa = &c->in_node[0]->shape, *sb = &c->in_node[1]->shape, *so = &c->node->shape;
  const uint32_t ta = ATTR_I(c->node, MATMUL, TRANS_A) != 0, tb = ATTR_I(c->node, MATMUL, TRANS_B) != 0;
  const int32_t batch_rank = so->rank - 2;
  const uint32_t M = (uint32_t)so->dims[so->rank - 2], N = (uint32_t)so->dims[so->rank - 1];
  const uint32_t K = (uint32_t)(ta ? sa->dims[sa->rank - 2] : sa->dims[sa->rank - 1]);

  /* Element strides of a and b along each output batch dim (0 where broadcast). */
  uint32_t dims[RLX_MAX_RANK], astr[RLX_MAX_RANK], bstr[RLX_MAX_RANK];
  int32_t nb = 0;
  uint64_t as = (uint64_t)M * K, bs = (uint64_t)K * N, batch = 1;
  int a_full = 1, b_shared = 1;
  for (int32_t i = batch_rank - 1; i >= 0; i--) {
    const int32_t ia = i - (batch_rank - (sa->rank - 2)), ib = i - (batch_rank - (sb->rank - 2));
    const uint32_t da = ia >= 0 ? (uint32_t)sa->dims[ia] : 1u, db = ib >= 0 ? (uint32_t)sb->dims[ib] : 1u;
    const uint32_t d = (uint32_t)so->dims[i];
    if (d == 1) continue;
    if (da == 1) a_full = 0;
    if (db != 1) b_shared = 0;
    dims[nb] = d;
    astr[nb] = da == 1 ? 0u : (uint32_t)as;
    bstr[nb] = db == 1 ? 0u : (uint32_t)bs;
    nb++;
    as *= da;
    bs *= db;
    batch *= d;
  }
  if (batch > UINT32_MAX)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: matmul with %llu batch entries", (unsigned long long)batch);

  rlx_wgpu_gemm g = {0};
  g.mode = RLX_GEMM_MATMUL;
  g.trans_a = ta;
  g.trans_b = tb;
  g.M = M;
  g.N = N;
  g.K = K;
  g.Z = (uint32_t)batch;
  g.out_elems = (size_t)batch * M * N;
  if (nb > 0 && b_shared && a_full && !ta && batch * M <= UINT32_MAX) {
    g.M = (uint32_t)(batch * M);
    g.Z = 1;
    nb = 0;
  }
  g.words[0] = ta ? 1u : K;  /* a: row stride, k stride */
  g.words[1] = ta ? M : 1u;
  g.words[2] = tb ? 1u : N;  /* b: k stride, column stride */
  g.words[3] = tb ? K : 1u;
  g.words[4] = (uint32_t)nb;
  /* batch dims outermost first, as the shader walks them */
  for (int32_t i = 0; i < 6; i++) {
    const int32_t j = nb - 1 - i;
    g.words[5 + i] = j >= 0 ? dims[j] : 1u;
    g.words[11 + i] = j >= 0 ? astr[j] : 0u;
    g.words[17 + i] = j >= 0 ? bstr[j] : 0u;
  }
  g.n_words = 23;
  return rlx_wgpu_add_gemm(out, &g);
}
