/* lower_norm.c - WebGPU lowerings of RMS norm and layer norm over the last
 * axis (norm.wgsl), their input gradients (norm_grad.wgsl) and their weight
 * gradients: the row statistics (norm_grad.wgsl, MODE 1) into scratch,
 * per-chunk column sums over the rows (norm_grad_weight.wgsl), and the sum
 * of the chunks (reduce.wgsl), so the reduction over all leading rows stays
 * parallel.
 *
 * Tolerance against the CPU executor: the CPU keeps row statistics in
 * double, the GPU in f32 (the mean summed around the row's first value, so
 * offset rows keep their digits); ~1e-6 relative, within the 1e-4 budget. */
#include "../core/subops.h"
#include "lower_reduce.h"

#define WG 256u

typedef struct {
  size_t rows, d;
} norm_rows;

static norm_rows rows_of(const rlx_wgpu_ctx *c) {
  const rlx_shape *s = &c->in_node[0]->shape;
  norm_rows r;
  r.d = (size_t)s->dims[s->rank - 1];
  r.rows = rlx_shape_numel(s) / r.d;
  return r;
}

/* rows, D, eps and the row grid of a norm.wgsl / norm_grad.wgsl dispatch */
static void row_dispatch(rlx_wgpu_dispatch *d, const rlx_wgpu_ctx *c, norm_rows r) {
  uint32_t tpr = rlx_wgpu_row_threads(r.d);
  rlx_wgpu_override(d, "TPR", tpr);
  rlx_wgpu_u32(d, (uint32_t)r.rows);
  rlx_wgpu_u32(d, (uint32_t)r.d);
  rlx_wgpu_f32(d, ATTR_F(c->node, NORM, EPS));
  rlx_wgpu_grid1d(d, r.rows, WG / tpr);
}

/* x[..., D], w[D] (, b[D]) -> y[..., D]; layer selects layer norm */
static rlx_status norm_forward(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, int layer) {
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "norm");
  rlx_wgpu_override(d, "OP", layer ? RLX_SUBOP_LAYER_NORM : RLX_SUBOP_RMS_NORM);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 1, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, layer ? 2 : 0, 0, 0, 0); /* b, or a placeholder */
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  row_dispatch(d, c, rows_of(c));
  return RLX_OK;
}

/* x[..., D], w[D] -> y = x / sqrt(mean(x^2) + eps) * w; attribute eps */
rlx_status rlx_wgpu_lower_rms_norm(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) { return norm_forward(c, out, 0); }

/* x[..., D], w[D], b[D] -> y = (x - mean) / sqrt(var + eps) * w + b */
rlx_status rlx_wgpu_lower_layer_norm(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return norm_forward(c, out, 1);
}

/* x[..., D], w[D], dy[..., D] -> dx[..., D] */
static rlx_status norm_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, int layer) {
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "norm_grad");
  rlx_wgpu_override(d, "OP", layer ? RLX_SUBOP_LAYER_NORM : RLX_SUBOP_RMS_NORM);
  rlx_wgpu_override(d, "MODE", 0u);
  rlx_wgpu_bind_inputs(d, 3);
  row_dispatch(d, c, rows_of(c));
  return RLX_OK;
}

rlx_status rlx_wgpu_lower_rms_norm_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return norm_grad(c, out, 0);
}

rlx_status rlx_wgpu_lower_layer_norm_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return norm_grad(c, out, 1);
}

/* x[..., D], dy[..., D] -> dw[D] = sum over rows of dy * xh */
static rlx_status norm_grad_weight(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, int layer) {
  norm_rows r = rows_of(c);
  size_t stats_bytes = r.rows * 3 * sizeof(float); /* x0, moff, r per row */
  rlx_wgpu_binding stats = {RLX_WB_SCRATCH, 0, 0, stats_bytes, 1};
  out->scratch_bytes = rlx_wgpu_align256(stats_bytes);

  /* row statistics (x0, moff, r) */
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "norm_grad");
  rlx_wgpu_override(d, "OP", layer ? RLX_SUBOP_LAYER_NORM : RLX_SUBOP_RMS_NORM);
  rlx_wgpu_override(d, "MODE", 1u);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0); /* w: placeholder */
  rlx_wgpu_bind(d, RLX_WB_INPUT, 1, 0, 0, 0); /* dy: unused */
  rlx_wgpu_bind(d, stats.kind, stats.index, stats.offset, stats.bytes, 1);
  row_dispatch(d, c, r);

  /* column sums per chunk of rows: ~512 workgroups, >= 32 rows per thread */
  uint32_t dx = rlx_wgpu_pow2_at_least(r.d, 64), ry = WG / dx;
  size_t n_cg = (r.d + dx - 1) / dx, iters = (r.rows + ry - 1) / ry, chunks = 1;
  if (n_cg < 512 && iters > 64) {
    chunks = (iters + 31) / 32;
    size_t most = (512 + n_cg - 1) / n_cg;
    if (chunks > most) chunks = most;
  }
  size_t per_chunk = (r.rows + chunks - 1) / chunks;
  chunks = (r.rows + per_chunk - 1) / per_chunk;
  size_t part_off = out->scratch_bytes, part_bytes = chunks * r.d * sizeof(float);
  rlx_wgpu_binding part = {RLX_WB_OUTPUT, 0, 0, 0, 1};
  if (chunks > 1) {
    part = (rlx_wgpu_binding){RLX_WB_SCRATCH, 0, part_off, part_bytes, 1};
    out->scratch_bytes = part_off + rlx_wgpu_align256(part_bytes);
  }
  d = rlx_wgpu_add(out, "norm_grad_weight");
  rlx_wgpu_override(d, "DX", dx);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 1, 0, 0, 0);
  rlx_wgpu_bind(d, stats.kind, stats.index, stats.offset, stats.bytes, 1);
  rlx_wgpu_bind(d, part.kind, part.index, part.offset, part.bytes, 1);
  rlx_wgpu_u32(d, (uint32_t)r.rows);
  rlx_wgpu_u32(d, (uint32_t)r.d);
  rlx_wgpu_u32(d, (uint32_t)per_chunk);
  rlx_wgpu_u32(d, (uint32_t)n_cg);
  rlx_wgpu_u32(d, (uint32_t)(n_cg * chunks));
  rlx_wgpu_grid1d(d, n_cg * chunks, 1);
  if (chunks == 1) return RLX_OK;

  /* partials [chunks, D] -> dw[D] */
  rlx_wgpu_reduce_view v = {0};
  v.n_out = (uint32_t)r.d;
  v.count = (uint32_t)chunks;
  v.nk = 1;
  v.ksize[0] = (uint32_t)r.d;
  v.kstride[0] = 1;
  v.nr = 1;
  v.rsize[0] = (uint32_t)chunks;
  v.rstride[0] = (uint32_t)r.d;
  rlx_wgpu_binding part_r = {RLX_WB_SCRATCH, 0, part_off, part_bytes, 0}, o = {RLX_WB_OUTPUT, 0, 0, 0, 1};
  return rlx_wgpu_add_reduce(out, &v, 0, 1.0f, part_r, o);
}

rlx_status rlx_wgpu_lower_rms_norm_grad_weight(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return norm_grad_weight(c, out, 0);
}

rlx_status rlx_wgpu_lower_layer_norm_grad_weight(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return norm_grad_weight(c, out, 1);
}
