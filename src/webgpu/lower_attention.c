/* lower_attention.c - WebGPU lowerings of the sequence ops: rope (one
 * dispatch, rope_fused.wgsl, for heads up to D = 128; wider ones a cos/sin
 * table by rope.wgsl, applied by rope_apply.wgsl), attention with
 * every mask kind (attention.wgsl, flash style) and its gradient
 * attention_grad: the per-row logsumexp and dy . y (attention.wgsl, MODE 1)
 * into scratch, then dq per query block (attention_grad_dq.wgsl) and dk, dv
 * per key block (attention_grad_dkdv.wgsl), written into the packed
 * [dq | dk | dv].
 * Long, narrow attentions (decoding) split the keys over workgroups and
 * merge the splits (attention_combine.wgsl).
 *
 * Tolerances against the CPU executor: attention and its gradient sum in
 * f32 over D and the keys (the CPU keeps softmax sums in double): ~1e-6
 * relative for the test sizes, growing like sqrt(Sk) eps.  rope: the
 * angle is reduced exactly (see _rope_turns.wgsl), so the error is a few
 * 1e-7 at any position below 2^31; only heads with D/2 > 448 fall back to f32
 * frequencies, about position * 1e-7 radians (1e-2 at position 1e5). */
#include <math.h>
#include <string.h>

#include "lower_reduce.h"

/* ---- rope ---- */

/* The uniform of rope.wgsl and rope_fused.wgsl: the header (threads, S, D,
 * D/2, pos0, i0, n_i, inverse), then per frequency i in [i0, i0 + n_i)
 * g_i = freq_i / (2 pi) (turns per position, in double) split into a, b, c
 * so that the shader's products are exact (_rope_turns.wgsl). */
static void rope_uniform(rlx_wgpu_dispatch *d, const rlx_node_t *n, uint32_t threads, uint32_t S, uint32_t D,
                         uint32_t i0, uint32_t n_i) {
  double theta = ATTR_F(n, ROPE, THETA);
  rlx_wgpu_u32(d, threads);
  rlx_wgpu_u32(d, S);
  rlx_wgpu_u32(d, D);
  rlx_wgpu_u32(d, D / 2);
  rlx_wgpu_u32(d, (uint32_t)ATTR_I(n, ROPE, POS_OFFSET));
  rlx_wgpu_u32(d, i0);
  rlx_wgpu_u32(d, n_i);
  rlx_wgpu_u32(d, n->n_iattr > 1 && ATTR_I(n, ROPE, INVERSE) ? 1u : 0u);
  if (n_i > RLX_WGPU_ROPE_FREQS) { /* FREQ_GPU */
    rlx_wgpu_f32(d, (float)(-2.0 * log2(theta) / (double)D));
    return;
  }
  rlx_wgpu_rope_freqs(d, theta, D, i0, n_i);
}

/* (x[..., S, D][, offset i32 [1]]) -> y[..., S, D], D even; attributes
 * theta, pos_offset, inverse, mode (1: adjacent pairs).  Heads of at most
 * 64 frequencies (D <= 128): one dispatch (rope_fused.wgsl) computing each
 * pair's cos/sin and rotating it.  Wider heads: the cos/sin table [S, D]
 * into scratch (rope.wgsl, one dispatch per 64 frequencies; it reads the
 * offset), then the rotation of every slice (rope_apply.wgsl). */
rlx_status rlx_wgpu_lower_rope(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  const int has_offset = c->node->n_inputs > 1;
  const uint32_t pairs = ATTR_I(c->node, ROPE, MODE) == 1;
  const rlx_shape *s = &c->in_node[0]->shape;
  uint32_t D = (uint32_t)s->dims[s->rank - 1], S = (uint32_t)s->dims[s->rank - 2], half = D / 2;
  size_t rows = rlx_shape_numel(s) / D, table_bytes = (size_t)S * D * sizeof(float);
  if (half <= RLX_WGPU_ROPE_FREQS) {
    rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "rope_fused");
    rlx_wgpu_override(d, "PAIRS", pairs);
    rlx_wgpu_override(d, "OFFSET", (uint32_t)has_offset);
    rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0);
    rlx_wgpu_bind(d, RLX_WB_INPUT, has_offset, 0, 0, 0); /* x again (not read) when there is no offset */
    rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
    rope_uniform(d, c->node, (uint32_t)(rows * half), S, D, 0, half);
    rlx_wgpu_grid1d(d, rows * half, 256);
    return RLX_OK;
  }
  int gpu_freqs = half > RLX_WGPU_ROPE_FREQS * (RLX_WGPU_MAX_DISPATCH - 1);
  uint32_t per = gpu_freqs ? half : RLX_WGPU_ROPE_FREQS;
  out->scratch_bytes = rlx_wgpu_align256(table_bytes);
  for (uint32_t i0 = 0; i0 < half; i0 += per) {
    uint32_t n_i = half - i0 < per ? half - i0 : per;
    rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "rope");
    rlx_wgpu_override(d, "FREQ_GPU", gpu_freqs ? 1u : 0u);
    rlx_wgpu_override(d, "OFFSET", (uint32_t)has_offset);
    rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, 0, table_bytes, 1);
    rlx_wgpu_bind(d, RLX_WB_INPUT, has_offset, 0, 0, 0); /* x (not read) when there is no offset */
    rope_uniform(d, c->node, S * n_i, S, D, i0, n_i);
    rlx_wgpu_grid1d(d, (size_t)S * n_i, 256);
  }
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "rope_apply");
  rlx_wgpu_override(d, "PAIRS", pairs);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, 0, table_bytes, 0);
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  rlx_wgpu_u32(d, (uint32_t)(rows * half));
  rlx_wgpu_u32(d, S);
  rlx_wgpu_u32(d, D);
  rlx_wgpu_u32(d, half);
  rlx_wgpu_grid1d(d, rows * half, 256);
  return RLX_OK;
}

/* ---- attention ---- */

#define ATTN_THREADS 128u

typedef struct {
  uint32_t B, H, Sq, Sk, D, Dv, kind, window;
  float scale;
  uint32_t bias_stride[4];
  int mask_input; /* input index of the mask tensor, or -1 */
} attn_dims;

static attn_dims attn_dims_of(const rlx_wgpu_ctx *c, int mask_at) {
  const rlx_shape *q = &c->in_node[0]->shape;
  attn_dims a;
  memset(&a, 0, sizeof a);
  a.B = (uint32_t)q->dims[0];
  a.H = (uint32_t)q->dims[1];
  a.Sq = (uint32_t)q->dims[2];
  a.D = (uint32_t)q->dims[3];
  a.Sk = (uint32_t)c->in_node[1]->shape.dims[2];
  a.Dv = (uint32_t)c->in_node[2]->shape.dims[3];
  a.kind = (uint32_t)ATTR_I(c->node, ATTENTION, MASK);
  a.window = (uint32_t)ATTR_I(c->node, ATTENTION, WINDOW);
  a.scale = ATTR_F(c->node, ATTENTION, SCALE) > 0.0f ? ATTR_F(c->node, ATTENTION, SCALE) : (float)(1.0 / sqrt((double)a.D));
  a.mask_input = c->node->n_inputs > mask_at ? mask_at : -1;
  if (a.kind == RLX_MASK_PADDING || a.kind == RLX_MASK_BIAS) {
    if (a.mask_input < 0) a.kind = RLX_MASK_NONE; /* as the CPU: nothing to apply */
  } else {
    a.mask_input = -1;
  }
  if (a.kind == RLX_MASK_BIAS) { /* strides of the bias broadcast to [B, H, Sq, Sk] */
    const rlx_shape *m = &c->in_node[mask_at]->shape;
    uint32_t stride = 1;
    for (int32_t i = m->rank - 1; i >= 0; i--) {
      int32_t o = i + (4 - m->rank);
      a.bias_stride[o] = m->dims[i] == 1 ? 0u : stride;
      stride *= (uint32_t)m->dims[i];
    }
  }
  return a;
}

/* Largest power of two <= cap with n * width <= budget (at least 1). */
static uint32_t block_rows(uint32_t cap, uint32_t rows, uint32_t width, uint32_t budget) {
  uint32_t b = cap;
  while (b > 1 && ((size_t)b * width > budget || b / 2 >= rows)) b /= 2;
  return b;
}

/* The 16 shared uniform words of the attention kernels; word 9 is the
 * number of blocks per head, word 14 the workgroup count (blocks times key
 * splits). */
static void attn_uniform(rlx_wgpu_dispatch *d, const attn_dims *a, uint32_t blocks_per_head, uint32_t splits) {
  uint32_t groups = a->B * a->H * blocks_per_head * splits;
  rlx_wgpu_u32(d, a->B);
  rlx_wgpu_u32(d, a->H);
  rlx_wgpu_u32(d, a->Sq);
  rlx_wgpu_u32(d, a->Sk);
  rlx_wgpu_u32(d, a->D);
  rlx_wgpu_u32(d, a->Dv);
  rlx_wgpu_u32(d, a->kind);
  rlx_wgpu_u32(d, a->window);
  rlx_wgpu_f32(d, a->scale);
  rlx_wgpu_u32(d, blocks_per_head);
  for (int i = 0; i < 4; i++) rlx_wgpu_u32(d, a->bias_stride[i]);
  rlx_wgpu_u32(d, groups);
  rlx_wgpu_u32(d, a->B * a->H * a->Sq);
  rlx_wgpu_grid1d(d, groups, 1);
}

/* attention.wgsl's block: RPT query rows per thread (16 RPT per block)
 * and NC value column groups of 32; the register tile RPT x 4 NC stays at
 * 32 accumulators (64 only for value heads above 256, with RPT 1), more
 * spills on NVIDIA. */
static void forward_block(const attn_dims *a, uint32_t *rpt, uint32_t *nc) {
  uint32_t cols = (a->Dv + 31) / 32, r = 4;
  while (r > 1 && (r * cols > 8 || 16 * r / 2 >= a->Sq)) r /= 2;
  *rpt = r;
  *nc = cols;
}

/* attention.wgsl: MODE 0 writes y (dy_input < 0; long, narrow attentions
 * are split over the keys and merged by attention_combine.wgsl), MODE 1
 * the gradient's row statistics into `out` (a scratch region at offset 0). */
static void attn_forward_dispatch(rlx_wgpu_lowering *l, const attn_dims *a, int dy_input, rlx_wgpu_binding out) {
  uint32_t rpt, nc;
  forward_block(a, &rpt, &nc);
  uint32_t bq = 16 * rpt, nqb = (a->Sq + bq - 1) / bq, groups = a->B * a->H * nqb;
  /* key splits when there are few blocks for many keys (decoding) */
  uint32_t splits = 1, per_split = a->Sk;
  if (dy_input < 0 && groups < 512 && a->Sk >= 256) {
    splits = (1024 + groups - 1) / groups;
    if (splits > (a->Sk + 127) / 128) splits = (a->Sk + 127) / 128;
    if (splits > 64) splits = 64;
    per_split = ((a->Sk + splits - 1) / splits + 31) / 32 * 32;
    splits = (a->Sk + per_split - 1) / per_split;
  }
  size_t rows = (size_t)a->B * a->H * a->Sq;
  size_t part_floats = rows * splits * a->Dv, ml_floats = rows * splits * 2;
  size_t part_bytes = (part_floats + ml_floats) * sizeof(float);
  if (splits > 1) {
    out = (rlx_wgpu_binding){RLX_WB_SCRATCH, 0, 0, part_bytes, 1};
    l->scratch_bytes = rlx_wgpu_align256(part_bytes);
  }
  rlx_wgpu_dispatch *d = rlx_wgpu_add(l, "attention");
  rlx_wgpu_override(d, "RPT", rpt);
  rlx_wgpu_override(d, "NC", nc);
  rlx_wgpu_override(d, "DC", rpt == 4 ? 16u : 32u); /* min(32, 1024 / BQ) */
  rlx_wgpu_override(d, "MODE", dy_input >= 0 ? 1u : splits > 1 ? 2u : 0u);
  for (int k = 0; k < 3; k++) rlx_wgpu_bind(d, RLX_WB_INPUT, k, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, a->mask_input >= 0 ? a->mask_input : 0, 0, 0, 0); /* or a placeholder */
  rlx_wgpu_bind(d, RLX_WB_INPUT, dy_input >= 0 ? dy_input : 0, 0, 0, 0);
  rlx_wgpu_bind(d, out.kind, out.index, out.offset, out.bytes, out.writable);
  attn_uniform(d, a, nqb, splits);
  rlx_wgpu_u32(d, splits);
  rlx_wgpu_u32(d, (uint32_t)part_floats);
  rlx_wgpu_u32(d, per_split);
  if (splits == 1) return;
  d = rlx_wgpu_add(l, "attention_combine");
  rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, 0, part_bytes, 0);
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  rlx_wgpu_u32(d, (uint32_t)rows);
  rlx_wgpu_u32(d, a->Dv);
  rlx_wgpu_u32(d, splits);
  rlx_wgpu_u32(d, (uint32_t)part_floats);
  rlx_wgpu_grid1d(d, rows * a->Dv, 256);
}

/* q[B,H,Sq,D], k[B,H,Sk,D], v[B,H,Sk,Dv] (, mask) -> y[B,H,Sq,Dv];
 * attributes mask, window, scale (<= 0: 1/sqrt(D)) */
rlx_status rlx_wgpu_lower_attention(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  attn_dims a = attn_dims_of(c, 3);
  if (a.Dv > 512)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: attention with value heads of %u (> 512) is not supported",
                     (unsigned)a.Dv);
  rlx_wgpu_binding y = {RLX_WB_OUTPUT, 0, 0, 0, 1};
  attn_forward_dispatch(out, &a, -1, y);
  return RLX_OK;
}

/* q, k, v, dy[B,H,Sq,Dv] (, mask) -> [numel(q) + numel(k) + numel(v)] =
 * dq, dk, dv flat; attributes as attention */
rlx_status rlx_wgpu_lower_attention_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  attn_dims a = attn_dims_of(c, 4);
  if (a.D > 1024 || a.Dv > 512)
    return rlx_error(RLX_ERR_UNSUPPORTED, "webgpu: attention_grad with heads of %u x %u (> 1024 x 512) is not supported",
                     (unsigned)a.D, (unsigned)a.Dv);
  size_t rows = (size_t)a.B * a.H * a.Sq, stats_bytes = 2 * rows * sizeof(float);
  out->scratch_bytes = rlx_wgpu_align256(stats_bytes);
  rlx_wgpu_binding stats_w = {RLX_WB_SCRATCH, 0, 0, stats_bytes, 1};
  attn_forward_dispatch(out, &a, 3, stats_w);

  uint32_t mask = (uint32_t)(a.mask_input >= 0 ? a.mask_input : 0);
  uint32_t dq_off = 0, dk_off = a.B * a.H * a.Sq * a.D, dv_off = dk_off + a.B * a.H * a.Sk * a.D;
  for (int pass = 0; pass < 2; pass++) {
    rlx_wgpu_dispatch *d = rlx_wgpu_add(out, pass == 0 ? "attention_grad_dq" : "attention_grad_dkdv");
    uint32_t width = a.D > a.Dv ? a.D : a.Dv;
    /* query rows (dq) or keys (dk, dv) per block */
    uint32_t per_block = pass == 0 ? block_rows(32, a.Sq, a.D, 2048) : block_rows(16, a.Sk, width, 1024);
    uint32_t blocks = ((pass == 0 ? a.Sq : a.Sk) + per_block - 1) / per_block;
    for (int k = 0; k < 4; k++) rlx_wgpu_bind(d, RLX_WB_INPUT, k, 0, 0, 0);
    rlx_wgpu_bind(d, RLX_WB_INPUT, (int32_t)mask, 0, 0, 0);
    rlx_wgpu_bind(d, RLX_WB_SCRATCH, 0, 0, stats_bytes, 0);
    rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
    attn_uniform(d, &a, blocks, 1);
    rlx_wgpu_u32(d, dq_off);
    rlx_wgpu_u32(d, dk_off);
    rlx_wgpu_u32(d, dv_off);
    rlx_wgpu_u32(d, per_block);
  }
  return RLX_OK;
}
