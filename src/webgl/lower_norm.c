/* lower_norm.c - WebGL2 lowerings of RMS norm and layer norm over the last
 * axis, forward and backward (norm.frag): the input gradients dx and the
 * weight gradients dw summed over every leading row.
 *
 * Rows of up to RLX_GL_NORM_INLINE values are one pass whose fragments
 * compute their row's statistics themselves; longer rows take a statistics
 * pass (a few floats per row into a temp) and then the elementwise pass.
 * dw: a statistics pass, then one fragment per column summing its rows, in
 * chunks of RLX_GL_NORM_CHUNK rows with a reduce.frag pass over the
 * partial sums when there are more rows (lower_reduce.c).
 *
 * The CPU accumulates in double; the shaders in float, in blocks of 64,
 * with the row centred on its first value before the mean is taken, so
 * rows far from zero keep their digits (the offset cases: 1e-7 relative). */
#include "gl_plan.h"

#ifndef RLX_GL_NORM_INLINE
#define RLX_GL_NORM_INLINE 32  /* rows up to this long compute their statistics per fragment */
#endif
#ifndef RLX_GL_NORM_CHUNK
#define RLX_GL_NORM_CHUNK 2048 /* rows one dw fragment sums at most */
#endif


typedef struct {
  int32_t d, rows;
  float eps;
} norm_view;

static norm_view view_of(const rlx_gl_ctx *c) {
  const rlx_shape *s = &c->in_node[0]->shape;
  norm_view v;
  v.d = s->dims[s->rank - 1];
  v.rows = (int32_t)(rlx_shape_numel(s) / (size_t)v.d);
  v.eps = ATTR_F(c->node, NORM, EPS);
  return v;
}

/* A norm.frag pass with its defines and uniforms (inputs added after). */
static rlx_gl_pass *norm_pass(rlx_gl_lowering *l, const norm_view *v, int layer, int mode, int grad, int inl,
                              int32_t n_in, int32_t k) {
  rlx_gl_pass *p = rlx_gl_add(l, "norm");
  rlx_gl_define(p, "LAYER", layer);
  rlx_gl_define(p, "MODE", mode);
  rlx_gl_define(p, "GRAD", grad);
  rlx_gl_define(p, "INLINE", inl);
  rlx_gl_define(p, "N", n_in);
  rlx_gl_int(p, v->d);
  rlx_gl_int(p, k);
  rlx_gl_int(p, v->rows);
  rlx_gl_int(p, 1);
  rlx_gl_int(p, v->rows);
  rlx_gl_float(p, v->eps);
  return p;
}

/* Statistics per row into a new temp: forward {r} / {dm, r}, or for the
 * gradient {r, sgx} / {dm, r, sg, sgx}; returns the temp, k = floats per row. */
static int32_t stats_pass(rlx_gl_lowering *l, const norm_view *v, int layer, int grad, int32_t *k) {
  *k = grad ? (layer ? 4 : 2) : (layer ? 2 : 1);
  int32_t t = rlx_gl_temp(l, (size_t)v->rows * (size_t)*k);
  rlx_gl_pass *p = norm_pass(l, v, layer, 0, grad, 0, grad ? 3 : 1, *k);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  if (grad) {
    rlx_gl_in(p, RLX_GLT_INPUT, 1);
    rlx_gl_in(p, RLX_GLT_INPUT, 2);
  }
  rlx_gl_out(p, RLX_GLT_TEMP, t);
  return t;
}

/* Forward (x, w (, b)) or dx (x, w, dy): inputs 0..n_op-1, then the stats. */
static rlx_status lower_apply(const rlx_gl_ctx *c, rlx_gl_lowering *out, int layer, int grad) {
  norm_view v = view_of(c);
  int inl = v.d <= RLX_GL_NORM_INLINE;
  int32_t n_op = grad || layer ? 3 : 2, k = 0, stats = -1;
  if (!inl) stats = stats_pass(out, &v, layer, grad, &k);
  rlx_gl_pass *p = norm_pass(out, &v, layer, grad ? 2 : 1, grad, inl, n_op + !inl, k);
  for (int32_t i = 0; i < n_op; i++) rlx_gl_in(p, RLX_GLT_INPUT, i);
  if (!inl) rlx_gl_in(p, RLX_GLT_TEMP, stats);
  return RLX_OK;
}

/* dw[D] = sum over rows of dy * xh (x, dy) */
static rlx_status lower_grad_weight(const rlx_gl_ctx *c, rlx_gl_lowering *out, int layer) {
  norm_view v = view_of(c);
  int32_t k, stats = stats_pass(out, &v, layer, 0, &k);
  int32_t chunks = (v.rows + RLX_GL_NORM_CHUNK - 1) / RLX_GL_NORM_CHUNK;
  int32_t per = (v.rows + chunks - 1) / chunks, partial = -1;
  rlx_gl_pass *p = norm_pass(out, &v, layer, 3, 0, 0, 3, k);
  p->ints[3] = chunks;
  p->ints[4] = per;
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  rlx_gl_in(p, RLX_GLT_TEMP, stats);
  if (chunks == 1) return RLX_OK;
  partial = rlx_gl_temp(out, (size_t)v.d * (size_t)chunks);
  rlx_gl_out(p, RLX_GLT_TEMP, partial);
  rlx_gl_tex in = {RLX_GLT_TEMP, partial}, dw = {RLX_GLT_OUTPUT, 0};
  return rlx_gl_add_row_sums(out, (size_t)v.d, chunks, in, dw);
}

/* x[..., D], w[D] -> y[..., D]; y = x / sqrt(mean(x^2) + eps) * w, attribute eps */
rlx_status rlx_gl_lower_rms_norm(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_apply(c, out, 0, 0); }

/* x[..., D], w[D], b[D] -> y[..., D]; y = (x - mean) / sqrt(var + eps) * w + b */
rlx_status rlx_gl_lower_layer_norm(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_apply(c, out, 1, 0); }

/* x[..., D], w[D], dy[..., D] -> dx[..., D]; attribute eps */
rlx_status rlx_gl_lower_rms_norm_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_apply(c, out, 0, 1); }

/* x[..., D], w[D], dy[..., D] -> dx[..., D]; attribute eps */
rlx_status rlx_gl_lower_layer_norm_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return lower_apply(c, out, 1, 1);
}

/* x[..., D], dy[..., D] -> dw[D]; attribute eps */
rlx_status rlx_gl_lower_rms_norm_grad_weight(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return lower_grad_weight(c, out, 0);
}

/* x[..., D], dy[..., D] -> dw[D]; attribute eps */
rlx_status rlx_gl_lower_layer_norm_grad_weight(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return lower_grad_weight(c, out, 1);
}
