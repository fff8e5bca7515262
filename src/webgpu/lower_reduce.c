/* lower_reduce.c - WebGPU lowerings of reduce_sum/mean/max over any axes
 * (reduce.wgsl), softmax and log-softmax over any axis and their gradients
 * (softmax.wgsl, softmax_grad.wgsl), and the softmax cross-entropy loss and
 * its gradient (softmax_ce.wgsl).  Also the reduction helper the norm
 * lowerings share (lower_reduce.h).
 *
 * Tolerance against the CPU executor: the CPU sums in double, the GPU in
 * f32 (per-thread runs, then a tree), and the GPU's exp/log are not
 * correctly rounded; expect ~1e-6 relative, within the 1e-4 budget. */
#include <string.h>

#include "../core/subops.h"
#include "lower_reduce.h"

#define WG 256u

uint32_t rlx_wgpu_pow2_at_least(size_t n, uint32_t cap) {
  uint32_t p = 1;
  while (p < n && p < cap) p *= 2;
  return p;
}

/* About 16 values per thread (4 batches of 4 loads), up to 256 threads:
 * short rows then share a workgroup instead of paying for a deep tree. */
uint32_t rlx_wgpu_row_threads(size_t n) { return rlx_wgpu_pow2_at_least((n + 15) / 16, WG); }

static size_t ceil_div(size_t a, size_t b) { return (a + b - 1) / b; }

/* One pass of reduce.wgsl over `chunks` chunks of chunk_len elements. */
static rlx_status reduce_pass(rlx_wgpu_lowering *l, const rlx_wgpu_reduce_view *v, int max_op, float divisor,
                              rlx_wgpu_binding in, rlx_wgpu_binding out, uint32_t ox, uint32_t chunks,
                              uint32_t chunk_len) {
  rlx_wgpu_dispatch *d = rlx_wgpu_add(l, "reduce");
  if (!d) return rlx_error(RLX_ERR_STATE, "webgpu: reduce needs more than %d dispatches", RLX_WGPU_MAX_DISPATCH);
  rlx_wgpu_override(d, "OP", max_op ? RLX_SUBOP_REDUCE_MAX : RLX_SUBOP_REDUCE_SUM);
  rlx_wgpu_override(d, "OX", ox);
  rlx_wgpu_bind(d, in.kind, in.index, in.offset, in.bytes, in.writable);
  rlx_wgpu_bind(d, out.kind, out.index, out.offset, out.bytes, out.writable);
  uint32_t n_og = (uint32_t)ceil_div(v->n_out, ox);
  rlx_wgpu_u32(d, v->n_out);
  rlx_wgpu_u32(d, v->count);
  rlx_wgpu_u32(d, (uint32_t)v->nk);
  rlx_wgpu_u32(d, (uint32_t)v->nr);
  for (int i = 0; i < 4; i++) rlx_wgpu_u32(d, i < v->nk ? v->ksize[i] : 1u);
  for (int i = 0; i < 4; i++) rlx_wgpu_u32(d, i < v->nk ? v->kstride[i] : 0u);
  for (int i = 0; i < 4; i++) rlx_wgpu_u32(d, i < v->nr ? v->rsize[i] : 1u);
  for (int i = 0; i < 4; i++) rlx_wgpu_u32(d, i < v->nr ? v->rstride[i] : 0u);
  rlx_wgpu_u32(d, chunk_len);
  rlx_wgpu_u32(d, chunks > 1 ? v->n_out : 0u);
  rlx_wgpu_f32(d, divisor);
  rlx_wgpu_u32(d, n_og);
  rlx_wgpu_u32(d, chunks);
  rlx_wgpu_grid1d(d, (size_t)n_og * chunks, 1);
  return RLX_OK;
}

/* Threads along outputs: 1 (a workgroup per output) when the reduced
 * elements are contiguous and many, more when they are few or when the
 * outputs are the contiguous ones. */
static void reduce_layout(const rlx_wgpu_reduce_view *v, uint32_t *ox, uint32_t *ry) {
  int inner_reduced = v->nr > 0 && v->rstride[0] == 1;
  uint32_t r;
  if (v->nr == 0) {
    r = 1;
  } else if (inner_reduced) {
    r = rlx_wgpu_pow2_at_least(v->count, WG);
  } else {
    uint32_t kin = v->nk > 0 && v->kstride[0] == 1 ? v->ksize[0] : 1u;
    uint32_t ox0 = rlx_wgpu_pow2_at_least(kin, 64);
    r = rlx_wgpu_pow2_at_least(v->count, WG / ox0);
  }
  *ry = r;
  *ox = WG / r;
}

rlx_status rlx_wgpu_add_reduce(rlx_wgpu_lowering *l, const rlx_wgpu_reduce_view *v, int max_op, float divisor,
                               rlx_wgpu_binding in, rlx_wgpu_binding out) {
  uint32_t ox, ry;
  reduce_layout(v, &ox, &ry);
  size_t n_og = ceil_div(v->n_out, ox), iters = ceil_div(v->count, ry);
  /* split long reductions with few outputs: ~1024 workgroups, >= 32 values per thread */
  size_t chunks = 1;
  if (n_og < 1024 && iters > 64) {
    chunks = ceil_div(iters, 32);
    size_t most = ceil_div(1024, n_og);
    if (chunks > most) chunks = most;
  }
  if (chunks <= 1) return reduce_pass(l, v, max_op, divisor, in, out, ox, 1, v->count);
  size_t chunk_len = ceil_div(ceil_div(v->count, chunks), ry) * ry;
  chunks = ceil_div(v->count, chunk_len);
  size_t part_off = rlx_wgpu_align256(l->scratch_bytes), part_bytes = chunks * v->n_out * sizeof(float);
  l->scratch_bytes = part_off + rlx_wgpu_align256(part_bytes);
  rlx_wgpu_binding part_w = {RLX_WB_SCRATCH, 0, part_off, part_bytes, 1};
  rlx_wgpu_binding part_r = {RLX_WB_SCRATCH, 0, part_off, part_bytes, 0};
  rlx_status st = reduce_pass(l, v, max_op, 1.0f, in, part_w, ox, (uint32_t)chunks, (uint32_t)chunk_len);
  if (st != RLX_OK) return st;
  /* partials [chunks, n_out] -> out: a column reduction */
  rlx_wgpu_reduce_view p;
  memset(&p, 0, sizeof p);
  p.n_out = v->n_out;
  p.count = (uint32_t)chunks;
  p.nk = 1;
  p.ksize[0] = v->n_out;
  p.kstride[0] = 1;
  p.nr = 1;
  p.rsize[0] = (uint32_t)chunks;
  p.rstride[0] = v->n_out;
  reduce_layout(&p, &ox, &ry);
  return reduce_pass(l, &p, max_op, divisor, part_r, out, ox, 1, p.count);
}

/* Merges x's dims into alternating kept/reduced groups (size-1 dims
 * vanish), as src/cpu/k_reduce.c does, and lists them innermost first. */
static void reduce_view_of(const rlx_shape *s, int32_t axis_mask, rlx_wgpu_reduce_view *v) {
  uint32_t size[RLX_MAX_RANK];
  int red[RLX_MAX_RANK], n = 0;
  for (int32_t d = 0; d < s->rank; d++) {
    uint32_t dim = (uint32_t)s->dims[d];
    if (dim == 1) continue;
    int r = (axis_mask >> d) & 1;
    if (n > 0 && red[n - 1] == r) {
      size[n - 1] *= dim;
    } else {
      size[n] = dim;
      red[n++] = r;
    }
  }
  memset(v, 0, sizeof *v);
  v->n_out = v->count = 1;
  uint32_t stride = 1;
  for (int g = n - 1; g >= 0; g--) {
    if (red[g]) {
      v->rsize[v->nr] = size[g];
      v->rstride[v->nr++] = stride;
      v->count *= size[g];
    } else {
      v->ksize[v->nk] = size[g];
      v->kstride[v->nk++] = stride;
      v->n_out *= size[g];
    }
    stride *= size[g];
  }
}

static rlx_status reduce_common(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, int max_op, int mean) {
  rlx_wgpu_reduce_view v;
  reduce_view_of(&c->in_node[0]->shape, ATTR_I(c->node, REDUCE, AXES), &v);
  rlx_wgpu_binding in = {RLX_WB_INPUT, 0, 0, 0, 0}, o = {RLX_WB_OUTPUT, 0, 0, 0, 1};
  return rlx_wgpu_add_reduce(out, &v, max_op, mean ? (float)v.count : 1.0f, in, o);
}

/* x[...] -> y[kept dims]; iattr = {axis bitmask, keepdim} */
rlx_status rlx_wgpu_lower_reduce_sum(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return reduce_common(c, out, 0, 0);
}

/* x[...] -> y[kept dims]; the sum divided by the reduced count */
rlx_status rlx_wgpu_lower_reduce_mean(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return reduce_common(c, out, 0, 1);
}

/* x[...] -> y[kept dims]; NaN propagates */
rlx_status rlx_wgpu_lower_reduce_max(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return reduce_common(c, out, 1, 0);
}

/* ---- softmax family ---- */

/* [outer, n, inner] around axis, and the row layout for it: rows of
 * contiguous values get lane-adjacent threads; strided rows get
 * row-adjacent threads, at most 256 / min(inner, 32) per row. */
static void axis_rows(const rlx_shape *s, int32_t axis, rlx_wgpu_dispatch *d, size_t *rows, uint32_t *rpw) {
  size_t outer = 1, inner = 1, n = (size_t)s->dims[axis];
  for (int32_t i = 0; i < axis; i++) outer *= (size_t)s->dims[i];
  for (int32_t i = axis + 1; i < s->rank; i++) inner *= (size_t)s->dims[i];
  uint32_t tpr = rlx_wgpu_row_threads(n);
  if (inner > 1) {
    uint32_t cap = WG / rlx_wgpu_pow2_at_least(inner, 32);
    if (tpr > cap) tpr = cap;
  }
  rlx_wgpu_override(d, "TPR", tpr);
  rlx_wgpu_override(d, "LANE_FAST", inner == 1 ? 1u : 0u);
  rlx_wgpu_u32(d, (uint32_t)(outer * inner));
  rlx_wgpu_u32(d, (uint32_t)n);
  rlx_wgpu_u32(d, (uint32_t)inner);
  *rows = outer * inner;
  *rpw = WG / tpr;
}

static rlx_status softmax_common(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, const char *shader, int log_out,
                                 int n_inputs) {
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, shader);
  size_t rows;
  uint32_t rpw;
  rlx_wgpu_override(d, "OP", log_out ? RLX_SUBOP_LOG_SOFTMAX : RLX_SUBOP_SOFTMAX);
  rlx_wgpu_bind_inputs(d, n_inputs);
  axis_rows(&c->in_node[0]->shape, ATTR_I(c->node, AXIS, AXIS), d, &rows, &rpw);
  rlx_wgpu_grid1d(d, rows, rpw);
  return RLX_OK;
}

/* x[...] -> y[...], softmax over the attribute axis */
rlx_status rlx_wgpu_lower_softmax(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return softmax_common(c, out, "softmax", 0, 1);
}

/* x[...] -> y[...], x - logsumexp(x) over the attribute axis */
rlx_status rlx_wgpu_lower_log_softmax(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return softmax_common(c, out, "softmax", 1, 1);
}

/* y[...], dy[...] -> dx = y (dy - sum(dy y)) over the attribute axis */
rlx_status rlx_wgpu_lower_softmax_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return softmax_common(c, out, "softmax_grad", 0, 2);
}

/* y[...], dy[...] -> dx = dy - exp(y) sum(dy) over the attribute axis */
rlx_status rlx_wgpu_lower_log_softmax_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return softmax_common(c, out, "softmax_grad", 1, 2);
}

/* The cross-entropy dispatch; dy_input < 0 binds a placeholder (input 0). */
static rlx_status softmax_ce_common(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out, int grad) {
  const rlx_shape *ls = &c->in_node[0]->shape;
  size_t classes = (size_t)ls->dims[ls->rank - 1], rows = rlx_shape_numel(ls) / classes;
  uint32_t tpr = rlx_wgpu_row_threads(classes);
  rlx_wgpu_dispatch *d = rlx_wgpu_add(out, "softmax_ce");
  rlx_wgpu_override(d, "OP", grad ? RLX_SUBOP_CE_GRAD : RLX_SUBOP_CE_LOSS);
  rlx_wgpu_override(d, "TPR", tpr);
  rlx_wgpu_override(d, "IDS_I32", c->in_node[1]->dtype == RLX_I32 ? 1u : 0u);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 0, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, 1, 0, 0, 0);
  rlx_wgpu_bind(d, RLX_WB_INPUT, grad ? 2 : 0, 0, 0, 0); /* dy, or a placeholder */
  rlx_wgpu_bind(d, RLX_WB_OUTPUT, 0, 0, 0, 1);
  rlx_wgpu_u32(d, (uint32_t)rows);
  rlx_wgpu_u32(d, (uint32_t)classes);
  rlx_wgpu_grid1d(d, rows, WG / tpr);
  return RLX_OK;
}

/* logits[..., C], labels[...] (f32 or i32) -> loss[...]; bad labels give 0 */
rlx_status rlx_wgpu_lower_softmax_cross_entropy(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return softmax_ce_common(c, out, 0);
}

/* logits[..., C], labels[...], dy[...] -> dx[..., C]; bad labels give zero rows */
rlx_status rlx_wgpu_lower_softmax_cross_entropy_grad(const rlx_wgpu_ctx *c, rlx_wgpu_lowering *out) {
  return softmax_ce_common(c, out, 1);
}
