/* lower_reduce.c - WebGL2 lowerings of reduce_sum/mean/max over any axes
 * (reduce.frag), softmax and log-softmax over any axis and their gradients
 * (softmax.frag, softmax_grad.frag), and the softmax cross-entropy loss and
 * its gradient (softmax_ce.frag).  Also the chunked row sum that the norm
 * weight gradients share (rlx_gl_add_row_sums).
 *
 * Reductions: the input is viewed as kept and reduced groups of merged
 * axes (as src/cpu/k_reduce.c does); one fragment per output loops over
 * its reduced elements.  More than RLX_GL_REDUCE_CHUNK elements per output
 * are split into chunks: a first pass writes partial results [out][chunk]
 * into a temp, further passes reduce those rows until one value remains.
 * Row statistics (softmax, cross-entropy, softmax gradients): short rows
 * (<= RLX_GL_ROW_INLINE values) are one pass whose fragments compute
 * their row's statistics themselves; longer rows take a statistics pass
 * into a temp, then the elementwise pass.
 *
 * Tolerance against the CPU executor: the CPU sums in double, the shaders
 * in float in blocks of 64 (about 1e-7 relative for the 100003-value rows
 * of the cases); the GPU's exp/log are not correctly rounded (the browser
 * test allows 1e-4). */
#include "../core/subops.h"
#include "gl_plan.h"

#ifndef RLX_GL_REDUCE_CHUNK
#define RLX_GL_REDUCE_CHUNK 2048 /* reduced elements one fragment sums at most */
#endif
#ifndef RLX_GL_ROW_INLINE
#define RLX_GL_ROW_INLINE 32     /* rows up to this long compute their statistics per fragment */
#endif

/* The input seen by reduce.frag: kept groups, the innermost reduced group
 * (n0 values s0 apart) and the other reduced groups, innermost first. */
typedef struct {
  int32_t nk, ksize[4], kstride[4];
  int32_t n0, s0, nro, rsize[3], rstride[3], rows; /* rows = product of the outer reduced sizes */
  size_t out_n, count;                                /* outputs, reduced elements per output */
} reduce_view;

static void reduce_view_make(const rlx_shape *in, int32_t mask, reduce_view *v) {
  int32_t size[RLX_MAX_RANK], red[RLX_MAX_RANK], stride[RLX_MAX_RANK], n = 0;
  for (int32_t d = 0; d < in->rank; d++) {
    if (in->dims[d] == 1) continue;
    int r = (mask >> d) & 1;
    if (n > 0 && red[n - 1] == r) {
      size[n - 1] *= in->dims[d];
    } else {
      size[n] = in->dims[d];
      red[n++] = r;
    }
  }
  for (int32_t g = n - 1, s = 1; g >= 0; g--) {
    stride[g] = s;
    s *= size[g];
  }
  v->nk = v->nro = 0;
  v->n0 = 1, v->s0 = 0, v->rows = 1;
  v->out_n = v->count = 1;
  int have_inner = 0;
  for (int32_t g = n - 1; g >= 0; g--) { /* innermost first */
    if (!red[g]) {
      v->ksize[v->nk] = size[g];
      v->kstride[v->nk++] = stride[g];
      v->out_n *= (size_t)size[g];
    } else if (!have_inner) {
      v->n0 = size[g], v->s0 = stride[g];
      have_inner = 1;
      v->count *= (size_t)size[g];
    } else {
      v->rsize[v->nro] = size[g];
      v->rstride[v->nro++] = stride[g];
      v->rows *= size[g];
      v->count *= (size_t)size[g];
    }
  }
}

/* The view of a temp [out_n][chunks] reduced along its rows. */
static void reduce_view_rows(reduce_view *v, size_t out_n, int32_t chunks) {
  v->nk = out_n > 1 ? 1 : 0;
  v->ksize[0] = (int32_t)out_n;
  v->kstride[0] = chunks;
  v->n0 = chunks, v->s0 = 1, v->nro = 0, v->rows = 1;
  v->out_n = out_n;
  v->count = (size_t)chunks;
}

/* Chunks of at most RLX_GL_REDUCE_CHUNK elements: whole reduced rows of n0
 * (per_chunk of them) when rows are short, else pieces of one row. */
static void reduce_chunks(const reduce_view *v, int32_t *chunks, int32_t *per_chunk, int32_t *pieces,
                          int32_t *piece) {
  if (v->count <= RLX_GL_REDUCE_CHUNK) {
    *chunks = 1, *per_chunk = v->rows, *pieces = 1, *piece = v->n0;
  } else if (v->n0 >= RLX_GL_REDUCE_CHUNK) {
    *pieces = (v->n0 + RLX_GL_REDUCE_CHUNK - 1) / RLX_GL_REDUCE_CHUNK;
    *piece = (v->n0 + *pieces - 1) / *pieces;
    *per_chunk = 1;
    *chunks = v->rows * *pieces;
  } else {
    *per_chunk = RLX_GL_REDUCE_CHUNK / v->n0;
    *chunks = (v->rows + *per_chunk - 1) / *per_chunk;
    *pieces = 1, *piece = v->n0;
  }
}

static void reduce_pass(rlx_gl_lowering *l, const reduce_view *v, int max_op, float divisor, rlx_gl_tex in,
                        rlx_gl_tex out, const int32_t *chunking) {
  rlx_gl_pass *p = rlx_gl_add(l, "reduce");
  rlx_gl_define(p, "OP", max_op ? RLX_SUBOP_REDUCE_MAX : RLX_SUBOP_REDUCE_SUM);
  rlx_gl_in(p, in.kind, in.index);
  rlx_gl_out(p, out.kind, out.index);
  rlx_gl_int(p, v->nk);
  for (int g = 0; g < 4; g++) rlx_gl_int(p, g < v->nk ? v->ksize[g] : 1);
  for (int g = 0; g < 4; g++) rlx_gl_int(p, g < v->nk ? v->kstride[g] : 0);
  rlx_gl_int(p, v->n0);
  rlx_gl_int(p, v->s0);
  rlx_gl_int(p, v->nro);
  for (int g = 0; g < 3; g++) rlx_gl_int(p, g < v->nro ? v->rsize[g] : 1);
  for (int g = 0; g < 3; g++) rlx_gl_int(p, g < v->nro ? v->rstride[g] : 0);
  for (int k = 0; k < 4; k++) rlx_gl_int(p, chunking[k]);
  rlx_gl_int(p, v->rows);
  rlx_gl_float(p, divisor);
}

/* Passes reducing `in` as seen by v into `out`, through temps when the
 * reduction is long; the divisor applies on the last pass only. */
static rlx_status add_reduce(rlx_gl_lowering *l, reduce_view v, int max_op, float divisor, rlx_gl_tex in,
                             rlx_gl_tex out) {
  size_t count = v.count;
  for (;;) {
    int32_t ch[4];
    reduce_chunks(&v, &ch[0], &ch[1], &ch[2], &ch[3]);
    if (ch[0] == 1) {
      reduce_pass(l, &v, max_op, divisor, in, out, ch);
      return RLX_OK;
    }
    int32_t t = rlx_gl_temp(l, v.out_n * (size_t)ch[0]);
    if (t < 0 || l->n + 1 >= RLX_GL_MAX_PASSES)
      return rlx_error(RLX_ERR_UNSUPPORTED, "webgl: a reduction of %zu values per output needs too many passes",
                       count);
    rlx_gl_tex tt = {RLX_GLT_TEMP, t};
    reduce_pass(l, &v, max_op, 1.0f, in, tt, ch);
    reduce_view_rows(&v, v.out_n, ch[0]);
    in = tt;
  }
}

/* Declared in gl_plan.h. */
rlx_status rlx_gl_add_row_sums(rlx_gl_lowering *l, size_t out_n, int32_t chunks, rlx_gl_tex in, rlx_gl_tex out) {
  reduce_view v;
  reduce_view_rows(&v, out_n, chunks);
  return add_reduce(l, v, 0, 1.0f, in, out);
}

static rlx_status lower_reduce(const rlx_gl_ctx *c, rlx_gl_lowering *out, int max_op, int mean) {
  reduce_view v;
  reduce_view_make(&c->in_node[0]->shape, ATTR_I(c->node, REDUCE, AXES), &v);
  rlx_gl_tex in = {RLX_GLT_INPUT, 0}, y = {RLX_GLT_OUTPUT, 0};
  return add_reduce(out, v, max_op, mean ? (float)v.count : 1.0f, in, y);
}

/* x[...] -> y[kept dims] (size-1 kept where keepdim); iattr = {axis bitmask, keepdim} */
rlx_status rlx_gl_lower_reduce_sum(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_reduce(c, out, 0, 0); }

/* x[...] -> y[kept dims]; the sum divided by the number of reduced elements */
rlx_status rlx_gl_lower_reduce_mean(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_reduce(c, out, 0, 1); }

/* x[...] -> y[kept dims]; NaN propagates */
rlx_status rlx_gl_lower_reduce_max(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_reduce(c, out, 1, 0); }

/* ---- softmax family --------------------------------------------------- */

/* [outer, n, inner] around `axis`: n and inner. */
static void axis_view(const rlx_shape *s, int32_t axis, int32_t *n, int32_t *inner) {
  *n = s->dims[axis];
  *inner = 1;
  for (int32_t d = axis + 1; d < s->rank; d++) *inner *= s->dims[d];
}

static rlx_status lower_softmax(const rlx_gl_ctx *c, rlx_gl_lowering *out, int log_out) {
  const rlx_shape *s = &c->in_node[0]->shape;
  int32_t n, inner;
  axis_view(s, ATTR_I(c->node, AXIS, AXIS), &n, &inner);
  int inline_stats = n <= RLX_GL_ROW_INLINE;
  int32_t stats = -1;
  if (!inline_stats) {
    stats = rlx_gl_temp(out, 2 * (rlx_shape_numel(s) / (size_t)n));
    rlx_gl_pass *p = rlx_gl_add(out, "softmax");
    rlx_gl_define(p, "MODE", 0);
    rlx_gl_define(p, "INLINE", 0);
    rlx_gl_in(p, RLX_GLT_INPUT, 0);
    rlx_gl_out(p, RLX_GLT_TEMP, stats);
    rlx_gl_int(p, n);
    rlx_gl_int(p, inner);
  }
  rlx_gl_pass *p = rlx_gl_add(out, "softmax");
  rlx_gl_define(p, "MODE", log_out ? 2 : 1);
  rlx_gl_define(p, "INLINE", inline_stats);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  if (!inline_stats) rlx_gl_in(p, RLX_GLT_TEMP, stats);
  rlx_gl_int(p, n);
  rlx_gl_int(p, inner);
  return RLX_OK;
}

/* x[...] -> y[...], softmax over the attribute axis */
rlx_status rlx_gl_lower_softmax(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_softmax(c, out, 0); }

/* x[...] -> y[...], x - logsumexp(x) over the attribute axis */
rlx_status rlx_gl_lower_log_softmax(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_softmax(c, out, 1); }

/* Cross-entropy and its gradient: logits, labels (, dy). */
static rlx_status lower_softmax_ce(const rlx_gl_ctx *c, rlx_gl_lowering *out, int grad) {
  const rlx_shape *s = &c->in_node[0]->shape;
  int32_t classes = s->dims[s->rank - 1];
  int inline_stats = classes <= RLX_GL_ROW_INLINE;
  int32_t stats = -1;
  if (!inline_stats) { /* softmax.frag's statistics of the rows (inner = 1) */
    stats = rlx_gl_temp(out, 2 * (rlx_shape_numel(s) / (size_t)classes));
    rlx_gl_pass *p = rlx_gl_add(out, "softmax");
    rlx_gl_define(p, "MODE", 0);
    rlx_gl_define(p, "INLINE", 0);
    rlx_gl_in(p, RLX_GLT_INPUT, 0);
    rlx_gl_out(p, RLX_GLT_TEMP, stats);
    rlx_gl_int(p, classes);
    rlx_gl_int(p, 1);
  }
  rlx_gl_pass *p = rlx_gl_add(out, "softmax_ce");
  rlx_gl_define(p, "GRAD", grad);
  rlx_gl_define(p, "INLINE", inline_stats);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  if (grad) rlx_gl_in(p, RLX_GLT_INPUT, 2);
  if (!inline_stats) rlx_gl_in(p, RLX_GLT_TEMP, stats);
  rlx_gl_int(p, classes);
  return RLX_OK;
}

/* logits[..., C], labels[...] (class ids) -> loss[...]; a label outside
 * [0, C) gives 0 (the CPU also raises RLX_KFLAG_BAD_INDEX) */
rlx_status rlx_gl_lower_softmax_cross_entropy(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return lower_softmax_ce(c, out, 0);
}

/* logits[..., C], labels[...], dy[...] -> dx[..., C] = (softmax - onehot) * dy */
rlx_status rlx_gl_lower_softmax_cross_entropy_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return lower_softmax_ce(c, out, 1);
}

static rlx_status lower_softmax_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out, int log_out) {
  const rlx_shape *s = &c->in_node[0]->shape;
  int32_t n, inner;
  axis_view(s, ATTR_I(c->node, AXIS, AXIS), &n, &inner);
  int inline_sums = n <= RLX_GL_ROW_INLINE;
  int32_t sums = -1;
  if (!inline_sums) {
    sums = rlx_gl_temp(out, rlx_shape_numel(s) / (size_t)n);
    rlx_gl_pass *p = rlx_gl_add(out, "softmax_grad");
    rlx_gl_define(p, "LOG", log_out);
    rlx_gl_define(p, "MODE", 0);
    rlx_gl_in(p, RLX_GLT_INPUT, 0);
    rlx_gl_in(p, RLX_GLT_INPUT, 1);
    rlx_gl_out(p, RLX_GLT_TEMP, sums);
    rlx_gl_int(p, n);
    rlx_gl_int(p, inner);
  }
  rlx_gl_pass *p = rlx_gl_add(out, "softmax_grad");
  rlx_gl_define(p, "LOG", log_out);
  rlx_gl_define(p, "MODE", inline_sums ? 2 : 1);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  if (!inline_sums) rlx_gl_in(p, RLX_GLT_TEMP, sums);
  rlx_gl_int(p, n);
  rlx_gl_int(p, inner);
  return RLX_OK;
}

/* y[...], dy[...] -> dx[...], y = softmax(x) over the attribute axis */
rlx_status rlx_gl_lower_softmax_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return lower_softmax_grad(c, out, 0);
}

/* y[...], dy[...] -> dx[...], y = log_softmax(x) over the attribute axis */
rlx_status rlx_gl_lower_log_softmax_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  return lower_softmax_grad(c, out, 1);
}
