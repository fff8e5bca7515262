/* lower_vision.c - WebGL2 lowerings of the vision ops and their gradients
 * (NCHW): conv2d (glsl/conv2d.frag, direct, one output per fragment),
 * conv2d_grad_input (conv_grad_input.frag, the transposed conv per input
 * element), conv2d_grad_weight (conv_grad_weight.frag per weight element;
 * long sums over N * OH * OW split into partial sums that pool_sum.frag
 * adds up), max/avg pooling and their gradients (pool.frag,
 * pool_grad.frag) and global average pooling (pool_sum.frag). */
#include <string.h>

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
  const int32_t v[17] = {x[0], x[1], x[2], x[3], w[0], y[2], y[3], w[2], w[3], attr[RLX_IATTR_CONV_STRIDE_H], attr[RLX_IATTR_CONV_STRIDE_W],
                         attr[RLX_IATTR_CONV_PAD_H], attr[RLX_IATTR_CONV_PAD_W], attr[RLX_IATTR_CONV_DIL_H], attr[RLX_IATTR_CONV_DIL_W], x[1] / attr[RLX_IATTR_CONV_GROUPS], w[0] / attr[RLX_IATTR_CONV_GROUPS]};
  for (int32_t k = 0; k < 17; k++) rlx_gl_int(p, v[k]);
}

/* Without padding and groups, a conv is a packed matmul (lower_packed.c)
 * per image n: A's rows the filters o (shared by all images), B's rows
 * the im2col rows (oh, ow) that pack4 gathers straight from x, k = (c, kh,
 * kw).  P[n, o, (oh, ow)] is y's flat order, so when OH * OW is a multiple
 * of 4 the matmul can write y directly (rlx_gl_packed_direct). */
static int conv_packed(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *x = c->in_node[0]->shape.dims, *w = c->in_node[1]->shape.dims, *y = c->node->shape.dims;
  const int32_t *at = c->node->iattr;
  if (at[RLX_IATTR_CONV_PAD_H] != 0 || at[RLX_IATTR_CONV_PAD_W] != 0 || at[RLX_IATTR_CONV_GROUPS] != 1) return 0;
  const int32_t C = x[1], H = x[2], W = x[3], KH = w[2], KW = w[3];
  rlx_shape a_rows = {1, {w[0]}}, b_rows = {3, {y[0], y[2], y[3]}};
  rlx_gl_gemm g;
  memset(&g, 0, sizeof g);
  g.M = w[0];
  g.N = y[2] * y[3];
  g.K = C * KH * KW;
  g.batch = (rlx_shape){1, {y[0]}};
  g.a = (rlx_gl_gemm_operand){{RLX_GLT_INPUT, 1}, 0, &a_rows, {g.K}, {g.K, 1}, {1, 0, 0}, {0}};
  g.b = (rlx_gl_gemm_operand){{RLX_GLT_INPUT, 0}, 0, &b_rows, {C * H * W, at[RLX_IATTR_CONV_STRIDE_H] * W, at[RLX_IATTR_CONV_STRIDE_W]}, {KW, KH}, {at[RLX_IATTR_CONV_DIL_W], at[RLX_IATTR_CONV_DIL_H] * W, H * W}, {g.N}};
  g.place = &c->node->shape;
  const int32_t row[4] = {w[0], 1, 0, 0}, col[4] = {0, 0, y[3], 1};
  memcpy(g.place_row, row, sizeof row);
  memcpy(g.place_col, col, sizeof col);
  return rlx_gl_add_packed_gemm(out, &g, c->max_width);
}

/* The weight gradient without padding and groups: per image n, a packed
 * matmul P[n, o, (c, kh, kw)] = sum over k = (oh, ow) of dy[n, o, oh, ow] *
 * x[n, c, oh * sh + kh * dh, ow * sw + kw * dw], unpacked into a temp
 * [(o, c, kh, kw), n] whose rows reduce.frag sums (rlx_gl_add_row_sums). */
static int conv_grad_weight_packed(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *x = c->in_node[0]->shape.dims, *dy = c->in_node[1]->shape.dims, *w = c->node->shape.dims;
  const int32_t *at = c->node->iattr;
  if (at[RLX_IATTR_CONV_PAD_H] != 0 || at[RLX_IATTR_CONV_PAD_W] != 0 || at[RLX_IATTR_CONV_GROUPS] != 1) return 0;
  const int32_t N = x[0], C = x[1], H = x[2], W = x[3], O = w[0], KH = w[2], KW = w[3], OH = dy[2], OW = dy[3];
  rlx_shape a_rows = {2, {N, O}}, b_rows = {4, {N, C, KH, KW}}, place = {3, {O, C * KH * KW, N}};
  rlx_gl_gemm g;
  memset(&g, 0, sizeof g);
  g.M = O;
  g.N = C * KH * KW;
  g.K = OH * OW;
  g.batch = (rlx_shape){1, {N}};
  g.a = (rlx_gl_gemm_operand){{RLX_GLT_INPUT, 1}, 0, &a_rows, {O * OH * OW, OH * OW}, {OW, OH}, {1, OW, 0}, {O}};
  g.b = (rlx_gl_gemm_operand){{RLX_GLT_INPUT, 0}, 0, &b_rows, {C * H * W, H * W, at[RLX_IATTR_CONV_DIL_H] * W, at[RLX_IATTR_CONV_DIL_W]}, {OW, OH}, {at[RLX_IATTR_CONV_STRIDE_W], at[RLX_IATTR_CONV_STRIDE_H] * W, 0},
                              {g.N}};
  g.place = &place;
  const int32_t row[3] = {1, 0, O}, col[3] = {0, 1, 0};
  memcpy(g.place_row, row, sizeof row);
  memcpy(g.place_col, col, sizeof col);
  const size_t count = rlx_shape_numel(&c->node->shape);
  if ((g.K + 3) / 4 > c->max_width || (g.N + 3) / 4 > c->max_width) return 0;
  const int32_t t = rlx_gl_temp(out, count * (size_t)N);
  g.place_temp = t + 1;
  if (rlx_gl_add_packed_gemm(out, &g, c->max_width) &&
      rlx_gl_add_row_sums(out, count, N, (rlx_gl_tex){RLX_GLT_TEMP, t}, (rlx_gl_tex){RLX_GLT_OUTPUT, 0}) == RLX_OK)
    return 1;
  memset(out, 0, sizeof *out); /* nothing was added before: start over with the flat shader */
  return 0;
}

/* x[N,C,H,W], w[O,C/g,KH,KW] -> y[N,O,OH,OW];
 * iattr = {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups}.
 * Packed (conv_packed) without padding and groups; else conv2d.frag, whose
 * 3x3 kernels take the unrolled path (K3). */
rlx_status rlx_gl_lower_conv2d(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *w = c->in_node[1]->shape.dims;
  if (conv_packed(c, out)) return RLX_OK;
  rlx_gl_pass *p = rlx_gl_add(out, "conv2d");
  rlx_gl_define(p, "K3", w[2] == 3 && w[3] == 3);
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_in(p, RLX_GLT_INPUT, 1);
  conv_ints(p, c->in_node[0]->shape.dims, c->in_node[1]->shape.dims, c->node->shape.dims, c->node->iattr);
  return RLX_OK;
}

/* The input gradient at stride 1 without groups: dy padded by (K - 1) * d
 * - p on each side (two pad.frag passes into temps) and convolved with the
 * flipped filters as a packed matmul: dx[(n, y, x), c] = sum over k = (o,
 * a, b) of dyp[n, o, y + a * dh, x + b * dw] * w[o, c, KH-1-a, KW-1-b]. */
static int conv_grad_input_packed(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *dy = c->in_node[0]->shape.dims, *w = c->in_node[1]->shape.dims, *x = c->node->shape.dims;
  const int32_t *at = c->node->iattr;
  const int32_t N = dy[0], O = dy[1], OH = dy[2], OW = dy[3], C = x[1], H = x[2], W = x[3], KH = w[2], KW = w[3];
  const int32_t PH = (KH - 1) * at[RLX_IATTR_CONV_DIL_H] - at[RLX_IATTR_CONV_PAD_H], PW = (KW - 1) * at[RLX_IATTR_CONV_DIL_W] - at[RLX_IATTR_CONV_PAD_W];
  if (at[RLX_IATTR_CONV_STRIDE_H] != 1 || at[RLX_IATTR_CONV_STRIDE_W] != 1 || at[RLX_IATTR_CONV_GROUPS] != 1 || PH < 0 || PW < 0) return 0;
  const int32_t Hp = OH + 2 * PH, Wp = OW + 2 * PW, K = O * KH * KW;
  if ((K + 3) / 4 > c->max_width || (C + 3) / 4 > c->max_width) return 0;
  /* dy [N*O, OH, OW] -> [N*O, Hp, OW] -> [N*O, Hp, Wp] */
  const int32_t t1 = rlx_gl_temp(out, (size_t)N * O * Hp * OW), t2 = rlx_gl_temp(out, (size_t)N * O * Hp * Wp);
  rlx_gl_pass *p = rlx_gl_add(out, "pad");
  rlx_gl_in(p, RLX_GLT_INPUT, 0);
  rlx_gl_out(p, RLX_GLT_TEMP, t1);
  const int32_t pad_h[4] = {OW, Hp, PH, OH}, pad_w[4] = {1, Wp, PW, OW};
  for (int32_t k = 0; k < 4; k++) rlx_gl_int(p, pad_h[k]);
  p = rlx_gl_add(out, "pad");
  rlx_gl_in(p, RLX_GLT_TEMP, t1);
  rlx_gl_out(p, RLX_GLT_TEMP, t2);
  for (int32_t k = 0; k < 4; k++) rlx_gl_int(p, pad_w[k]);
  rlx_shape a_rows = {3, {N, H, W}}, b_rows = {1, {C}};
  rlx_gl_gemm g;
  memset(&g, 0, sizeof g);
  g.M = N * H * W;
  g.N = C;
  g.K = K;
  g.a = (rlx_gl_gemm_operand){{RLX_GLT_TEMP, t2}, 0, &a_rows, {O * Hp * Wp, Wp, 1}, {KW, KH}, {at[RLX_IATTR_CONV_DIL_W], at[RLX_IATTR_CONV_DIL_H] * Wp, Hp * Wp},
                              {0}};
  g.b = (rlx_gl_gemm_operand){{RLX_GLT_INPUT, 1}, (KH - 1) * KW + KW - 1, &b_rows, {KH * KW}, {KW, KH},
                              {-1, -KW, C * KH * KW}, {0}};
  g.place = &c->node->shape;
  const int32_t row[4] = {H * W, 0, W, 1}, col[4] = {0, 1, 0, 0};
  memcpy(g.place_row, row, sizeof row);
  memcpy(g.place_col, col, sizeof col);
  if (rlx_gl_add_packed_gemm(out, &g, c->max_width)) return 1;
  memset(out, 0, sizeof *out);
  return 0;
}

/* Without groups, any stride, padding and dilation: the packed matmul
 * P[(n, oh, ow), (c, kh, kw)] = sum_o dy[n, o, oh, ow] * w[o, c, kh, kw]
 * (K = O), kept packed, then col2im.frag sums each dx cell's window
 * entries of P.  Fewer and smaller passes than padding dy and gathering
 * its im2col rows (conv_grad_input_packed). */
static int conv_grad_input_col2im(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *dy = c->in_node[0]->shape.dims, *w = c->in_node[1]->shape.dims, *x = c->node->shape.dims;
  const int32_t *at = c->node->iattr;
  const int32_t N = dy[0], O = dy[1], OH = dy[2], OW = dy[3], C = x[1], H = x[2], W = x[3], KH = w[2], KW = w[3];
  if (at[RLX_IATTR_CONV_GROUPS] != 1 || at[RLX_IATTR_CONV_STRIDE_H] < 1 || at[RLX_IATTR_CONV_STRIDE_W] < 1) return 0;
  rlx_shape a_rows = {3, {N, OH, OW}}, b_rows = {1, {C * KH * KW}};
  rlx_gl_gemm g;
  memset(&g, 0, sizeof g);
  int32_t packed = -1;
  g.M = N * OH * OW;
  g.N = C * KH * KW;
  g.K = O;
  g.a = (rlx_gl_gemm_operand){{RLX_GLT_INPUT, 0}, 0, &a_rows, {O * OH * OW, OW, 1}, {O, 1}, {OH * OW, 0, 0}, {0}};
  g.b = (rlx_gl_gemm_operand){{RLX_GLT_INPUT, 1}, 0, &b_rows, {1}, {O, 1}, {C * KH * KW, 0, 0}, {0}};
  g.packed_out = &packed;
  if (!rlx_gl_add_packed_gemm(out, &g, c->max_width) || packed < 0) {
    memset(out, 0, sizeof *out);
    return 0;
  }
  int32_t per, width, height;
  rlx_gl_packed_layout((size_t)g.M, (g.N + 3) / 4, c->max_width, &per, &width, &height);
  rlx_gl_pass *p = rlx_gl_add(out, "col2im");
  rlx_gl_in(p, RLX_GLT_TEMP, packed);
  const int32_t v[17] = {N, C, H, W, OH, OW, KH, KW, at[RLX_IATTR_CONV_STRIDE_H], at[RLX_IATTR_CONV_STRIDE_W], at[RLX_IATTR_CONV_PAD_H], at[RLX_IATTR_CONV_PAD_W], at[RLX_IATTR_CONV_DIL_H], at[RLX_IATTR_CONV_DIL_W], (g.N + 3) / 4, per, width};
  for (int32_t k = 0; k < 17; k++) rlx_gl_int(p, v[k]);
  return p != NULL;
}

/* dy[N,O,OH,OW], w[O,C/g,KH,KW] -> dx[N,C,H,W]; iattr = conv2d's 7 + {H, W}.
 * Packed (conv_grad_input_packed) at stride 1 without groups; else
 * conv_grad_input.frag, whose 3x3 kernels at stride 1 take the unrolled path (K3). */
rlx_status rlx_gl_lower_conv2d_grad_input(const rlx_gl_ctx *c, rlx_gl_lowering *out) {
  const int32_t *w = c->in_node[1]->shape.dims, *at = c->node->iattr;
  if (conv_grad_input_col2im(c, out) || conv_grad_input_packed(c, out)) return RLX_OK;
  rlx_gl_pass *p = rlx_gl_add(out, "conv_grad_input");
  rlx_gl_define(p, "K3", w[2] == 3 && w[3] == 3 && at[RLX_IATTR_CONV_STRIDE_H] == 1 && at[RLX_IATTR_CONV_STRIDE_W] == 1);
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
  if (conv_grad_weight_packed(c, out)) return RLX_OK;
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

static float pool_inverse_area(const int32_t *attr) { return 1.0f / ((float)attr[RLX_IATTR_POOL_KERNEL_H] * (float)attr[RLX_IATTR_POOL_KERNEL_W]); }

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
  rlx_gl_define(p, "P2", at[RLX_IATTR_POOL_KERNEL_H] == 2 && at[RLX_IATTR_POOL_KERNEL_W] == 2 && at[RLX_IATTR_POOL_STRIDE_H] == 2 && at[RLX_IATTR_POOL_STRIDE_W] == 2 && at[RLX_IATTR_POOL_PAD_H] == 0 && at[RLX_IATTR_POOL_PAD_W] == 0);
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
