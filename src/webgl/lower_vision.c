/* lower_vision.c - WebGL2 lowerings of the vision ops and their gradients
 * (NCHW): conv2d (glsl/conv2d.frag, direct, one output per fragment),
 * conv2d_grad_input (conv_grad_input.frag, the transposed conv per input
 * element), conv2d_grad_weight (conv_grad_weight.frag per weight element;
 * long sums over N * OH * OW split into partial sums that pool_sum.frag
 * adds up), max/avg pooling and their gradients (pool.frag,
 * pool_grad.frag) and global average pooling (pool_sum.frag). */
#include "gl_plan.h"

/* conv_grad_weight: sums over more terms than this are split into partial
 * sums of about CONV_PARTIAL_TERMS terms (whole output rows) each. */
#define CONV_SPLIT_TERMS 4096
#define CONV_PARTIAL_TERMS 256
/* pool_sum passes add at most this many partial sums per element. */
#define SUM_RUN 512
/* global_avg_pool: planes longer than this take two passes. */
#define GAP_SPLIT 4096
#define GAP_RUN 1024

/* The conv geometry block of conv*.frag, 17 ints: {N, C, H, W, O, OH, OW,
 * KH, KW, sh, sw, ph, pw, dh, dw, C/g, O/g} from x[N, C, H, W], w[O, C/g,
 * KH, KW], y[N, O, OH, OW] and conv2d's iattr. */
static void conv_ints(rlx_gl_pass *p, const int32_t *x, const int32_t *w, const int32_t *y, const int32_t *attr) {
  const int32_t v[17] = {x[0], x[1], x[2], x[3], w[0], y[2], y[3], w[2], w[3], attr[0], attr[1],
                         attr[2], attr[3], attr[4], attr[5], x[1] / attr[6], w[0] / attr[6]};
  for (int32_t k = 0; k < 17; k++) rlx_gl_int(p, v[k]);
}

/* x[N,C,H,W], w[O,C/g,KH,KW] -> y[N,O,OH,OW];
 * iattr = {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups}.
 * 3x3 kernels take conv2d.frag's unrolled path (K3). */
rlx_status rlx_gl_lower_conv2d(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *w = c->in_node[1]->shape.dims;
  rlx_gl_pass *p = rlx_gl_add(out, "conv2d");
  rlx_gl_define(p, "K3", w[2] == 3 && w[3] == 3);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  conv_ints(p, c->in_node[0]->shape.dims, c->in_node[1]->shape.dims, c->node->shape.dims, c->node->iattr);
  return RLX_OK;
}

/* dy[N,O,OH,OW], w[O,C/g,KH,KW] -> dx[N,C,H,W]; iattr = conv2d's 7 + {H, W}.
 * 3x3 kernels at stride 1 take conv_grad_input.frag's unrolled path (K3). */
rlx_status rlx_gl_lower_conv2d_grad_input(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *w = c->in_node[1]->shape.dims, *at = c->node->iattr;
  rlx_gl_pass *p = rlx_gl_add(out, "conv_grad_input");
  rlx_gl_define(p, "K3", w[2] == 3 && w[3] == 3 && at[0] == 1 && at[1] == 1);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  conv_ints(p, c->node->shape.dims, c->in_node[1]->shape.dims, c->in_node[0]->shape.dims, c->node->iattr);
  return RLX_OK;
}

/* Adds up `parts` consecutive partial sums per element of `from` (a temp
 * of count * parts floats) into the op output, SUM_RUN at a time (more
 * passes through temps while more remain). */
static void sum_partials(rlx_gl_lowering *out, int32_t from, size_t count, int32_t parts) {
  while (parts > 1) {
    const int32_t next = (parts + SUM_RUN - 1) / SUM_RUN;
    rlx_gl_pass *p = rlx_gl_add(out, "pool_sum");
    rlx_gl_in(p, RLX_GLT_TEMP, from);
    rlx_gl_int(p, parts);
    rlx_gl_int(p, next == 1 ? parts : SUM_RUN);
    rlx_gl_int(p, next);
    rlx_gl_float(p, 1.0f);
    if (next > 1) {
      from = rlx_gl_temp(out, count * (size_t)next);
      rlx_gl_out(p, RLX_GLT_TEMP, from);
    }
    parts = next;
  }
}

/* x[N,C,H,W], dy[N,O,OH,OW] -> dw[O,C/g,KH,KW]; iattr = conv2d's 7 + {KH, KW}.
 * Each weight sums N * OH * OW products; past CONV_SPLIT_TERMS the output
 * rows are split into runs of about CONV_PARTIAL_TERMS terms, one partial
 * sum per weight and run (a temp), added up by sum_partials. */
rlx_status rlx_gl_lower_conv2d_grad_weight(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *dy = c->in_node[1]->shape.dims;
  const size_t count = rlx_shape_numel(&c->node->shape);
  const int32_t rows = dy[0] * dy[2];
  int32_t run = rows, parts = 1;
  if ((int64_t)rows * dy[3] > CONV_SPLIT_TERMS) {
    run = CONV_PARTIAL_TERMS / dy[3] > 1 ? CONV_PARTIAL_TERMS / dy[3] : 1;
    parts = (rows + run - 1) / run;
  }
  rlx_gl_pass *p = rlx_gl_add(out, "conv_grad_weight");
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  conv_ints(p, c->in_node[0]->shape.dims, c->node->shape.dims, dy, c->node->iattr);
  rlx_gl_int(p, parts);
  rlx_gl_int(p, run);
  if (parts > 1) {
    const int32_t t = rlx_gl_temp(out, count * (size_t)parts);
    rlx_gl_out(p, RLX_GLT_TEMP, t);
    sum_partials(out, t, count, parts);
  }
  return RLX_OK;
}

/* The pool geometry block of pool*.frag, 10 ints: {OW, OH, W, H, kernel_h,
 * kernel_w, stride_h, stride_w, pad_h, pad_w} from x[N,C,H,W], y[N,C,OH,OW]
 * and the pool's iattr. */
static void pool_ints(rlx_gl_pass *p, const int32_t *x, const int32_t *y, const int32_t *attr) {
  rlx_gl_int(p, y[3]);
  rlx_gl_int(p, y[2]);
  rlx_gl_int(p, x[3]);
  rlx_gl_int(p, x[2]);
  for (int32_t k = 0; k < 6; k++) rlx_gl_int(p, attr[k]);
}

static float pool_inverse_area(const int32_t *attr) { return 1.0f / ((float)attr[0] * (float)attr[1]); }

/* x[N,C,H,W] -> y[N,C,OH,OW]; iattr = {kernel_h, kernel_w, stride_h,
 * stride_w, pad_h, pad_w} */
static rlx_status lower_pool(const rlx_gl_ctx *c, rlx_gl_lowering *out, int32_t is_max) {
  rlx_gl_pass *p = rlx_gl_add(out, "pool");
  rlx_gl_define(p, "MAX", is_max);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  pool_ints(p, c->in_node[0]->shape.dims, c->node->shape.dims, c->node->iattr);
  rlx_gl_float(p, is_max ? 1.0f : pool_inverse_area(c->node->iattr));
  return RLX_OK;
}

rlx_status rlx_gl_lower_max_pool2d(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_pool(c, out, 1); }
rlx_status rlx_gl_lower_avg_pool2d(const rlx_gl_ctx *c, rlx_gl_lowering *out) { return lower_pool(c, out, 0); }

/* x[N,C,H,W], dy[N,C,OH,OW] -> dx[N,C,H,W]; iattr = the pool's 6.  2x2
 * windows at stride 2 without padding take pool_grad.frag's P2 path. */
rlx_status rlx_gl_lower_max_pool2d_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *at = c->node->iattr;
  rlx_gl_pass *p = rlx_gl_add(out, "pool_grad");
  rlx_gl_define(p, "MAX", 1);
  rlx_gl_define(p, "P2", at[0] == 2 && at[1] == 2 && at[2] == 2 && at[3] == 2 && at[4] == 0 && at[5] == 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  pool_ints(p, c->node->shape.dims, c->in_node[1]->shape.dims, c->node->iattr);
  rlx_gl_float(p, 1.0f);
  return RLX_OK;
}

/* dy[N,C,OH,OW] -> dx[N,C,H,W]; iattr = the pool's 6 + {H, W} */
rlx_status rlx_gl_lower_avg_pool2d_grad(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  rlx_gl_pass *p = rlx_gl_add(out, "pool_grad");
  rlx_gl_define(p, "MAX", 0);
  rlx_gl_define(p, "P2", 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  pool_ints(p, c->node->shape.dims, c->in_node[0]->shape.dims, c->node->iattr);
  rlx_gl_float(p, pool_inverse_area(c->node->iattr));
  return RLX_OK;
}

/* x[N,C,H,W] -> y[N,C], the mean of each plane: one pass, or partial sums
 * of GAP_RUN cells first when a plane is longer than GAP_SPLIT. */
rlx_status rlx_gl_lower_global_avg_pool(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *x = c->in_node[0]->shape.dims;
  const int32_t hw = x[2] * x[3];
  const float area = (float)hw;
  int32_t len = hw, from = -1;
  if (hw > GAP_SPLIT) {
    const int32_t parts = (hw + GAP_RUN - 1) / GAP_RUN;
    rlx_gl_pass *p = rlx_gl_add(out, "pool_sum");
    rlx_gl_in(p, RLX_GLT_INPUT, 0);
    rlx_gl_int(p, hw);
    rlx_gl_int(p, GAP_RUN);
    rlx_gl_int(p, parts);
    rlx_gl_float(p, 1.0f);
    from = rlx_gl_temp(out, (size_t)x[0] * x[1] * (size_t)parts);
    rlx_gl_out(p, RLX_GLT_TEMP, from);
    len = parts;
  }
  rlx_gl_pass *p = rlx_gl_add(out, "pool_sum");
  rlx_gl_in(p, from < 0 ? RLX_GLT_INPUT : RLX_GLT_TEMP, from < 0 ? 0 : from);
  rlx_gl_int(p, len);
  rlx_gl_int(p, len);
  rlx_gl_int(p, 1);
  rlx_gl_float(p, area);
  return RLX_OK;
}
