/* cases_grad_vision.c - op cases for the backward ops of convolution and
 * pooling: conv2d_grad_input, conv2d_grad_weight, max_pool2d_grad and
 * avg_pool2d_grad (references in ref_grad_vision.c).  Backward ops have no typed
 * builders, so the graphs use rlx_op_node.  Parameter layouts (c->p):
 *   conv  {N, C, H, W, O, KH, KW, stride_h, stride_w, pad_h, pad_w, dil_h,
 *         dil_w, groups} (the forward's); grad_input has inputs dy, w and
 *         grad_weight x, dy.  Every conv shape runs for both ops.
 *   pool  {N, C, H, W, kernel_h, kernel_w, stride_h, stride_w, pad_h,
 *         pad_w}; max_pool2d_grad has inputs x, dy and avg_pool2d_grad dy.
 * The conv shapes reach every kernel strategy: the direct loops (few
 * outputs per group and few taps: depthwise and the like; up to two
 * outputs for dx, up to eight for dw), GEMM + col2im / im2col + GEMM (with
 * row bands when the columns pass 1 MiB), and the plain GEMM of an
 * unpadded stride-1 1x1 conv.  Strided shapes whose windows skip the last
 * input rows or columns check that those cells get zero. */
#include <math.h>
#include "op_case.h"

void ref_conv2d_grad_input_case(const op_case *c, const op_inputs *in, double *expect);
void ref_conv2d_grad_weight_case(const op_case *c, const op_inputs *in, double *expect);
void ref_max_pool2d_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_avg_pool2d_grad_case(const op_case *c, const op_inputs *in, double *expect);

static int32_t out_size(int32_t in, int32_t k, int32_t stride, int32_t pad, int32_t dil) {
  return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1;
}

/* ---- conv2d_grad_input, conv2d_grad_weight ---- */

/* dy[N, O, OH, OW] of the conv in c->p */
static rlx_node conv_dy(rlx_graph *g, const op_case *c) {
  const int32_t *p = c->p;
  const int32_t d[4] = {p[0], p[4], out_size(p[2], p[5], p[7], p[9], p[11]),
                        out_size(p[3], p[6], p[8], p[10], p[12])};
  return rlx_input(g, "dy", 4, d, RLX_F32);
}

static rlx_node build_conv_grad_input(rlx_graph *g, const op_case *c) {
  const int32_t *p = c->p;
  const int32_t wd[4] = {p[4], p[1] / p[13], p[5], p[6]};
  const int32_t at[9] = {p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[2], p[3]};
  rlx_node in[2];
  in[0] = conv_dy(g, c);
  in[1] = rlx_input(g, "w", 4, wd, RLX_F32);
  return rlx_op_node(g, RLX_OP_CONV2D_GRAD_INPUT, in, 2, at, 9, NULL, 0);
}

static rlx_node build_conv_grad_weight(rlx_graph *g, const op_case *c) {
  const int32_t *p = c->p;
  const int32_t xd[4] = {p[0], p[1], p[2], p[3]};
  const int32_t at[9] = {p[7], p[8], p[9], p[10], p[11], p[12], p[13], p[5], p[6]};
  rlx_node in[2];
  in[0] = rlx_input(g, "x", 4, xd, RLX_F32);
  in[1] = conv_dy(g, c);
  return rlx_op_node(g, RLX_OP_CONV2D_GRAD_WEIGHT, in, 2, at, 9, NULL, 0);
}

/* One conv shape, as a grad_input and a grad_weight case. */
#define CONV(name, N, C, H, W, O, KH, KW, SH, SW, PH, PW, DH, DW, G)                            \
  {"conv2d_grad_input_" name, build_conv_grad_input, ref_conv2d_grad_input_case, NULL,         \
   {N, C, H, W, O, KH, KW, SH, SW, PH, PW, DH, DW, G}, 0.0f, 0.0f, 0.0},                      \
  {"conv2d_grad_weight_" name, build_conv_grad_weight, ref_conv2d_grad_weight_case, NULL,      \
   {N, C, H, W, O, KH, KW, SH, SW, PH, PW, DH, DW, G}, 0.0f, 0.0f, 0.0}

/* ---- max_pool2d_grad, avg_pool2d_grad ---- */

static rlx_node pool_dy(rlx_graph *g, const op_case *c) {
  const int32_t *p = c->p;
  const int32_t d[4] = {p[0], p[1], out_size(p[2], p[4], p[6], p[8], 1), out_size(p[3], p[5], p[7], p[9], 1)};
  return rlx_input(g, "dy", 4, d, RLX_F32);
}

static rlx_node build_max_pool2d_grad(rlx_graph *g, const op_case *c) {
  const int32_t *p = c->p;
  const int32_t xd[4] = {p[0], p[1], p[2], p[3]};
  rlx_node in[2];
  in[0] = rlx_input(g, "x", 4, xd, RLX_F32);
  in[1] = pool_dy(g, c);
  return rlx_op_node(g, RLX_OP_MAX_POOL2D_GRAD, in, 2, &p[4], 6, NULL, 0);
}

static rlx_node build_avg_pool2d_grad(rlx_graph *g, const op_case *c) {
  const int32_t *p = c->p;
  const int32_t at[8] = {p[4], p[5], p[6], p[7], p[8], p[9], p[2], p[3]};
  rlx_node dy = pool_dy(g, c);
  return rlx_op_node(g, RLX_OP_AVG_POOL2D_GRAD, &dy, 1, at, 8, NULL, 0);
}

/* x of max pooling with many ties: values in {-1, 0, 1} (the first max of
 * a window must win); dy uniform in [-1, 1). */
static void fill_ties(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c;
  for (size_t i = 0; i < n; i++) {
    const float u = opcase_uniform(seed, i, -1.0f, 1.0f);
    data[i] = k == 0 ? floorf(1.5f * u + 0.5f) : u;
  }
}

/* x with a NaN in every 7th cell (the first NaN of a window wins). */
static void fill_nans(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c;
  for (size_t i = 0; i < n; i++)
    data[i] = k == 0 && i % 7 == 3 ? NAN : opcase_uniform(seed, i, -1.0f, 1.0f);
}

/* x mostly -inf (whole windows of -inf route to their first cell; padding
 * still never wins). */
static void fill_neg_inf(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c;
  for (size_t i = 0; i < n; i++)
    data[i] = k == 0 && i % 5 != 2 ? -INFINITY : opcase_uniform(seed, i, -1.0f, 1.0f);
}

/* One pool shape, as a max_pool2d_grad and an avg_pool2d_grad case. */
#define POOL(name, N, C, H, W, KH, KW, SH, SW, PH, PW)                                                  \
  {"max_pool2d_grad_" name, build_max_pool2d_grad, ref_max_pool2d_grad_case, NULL,                     \
   {N, C, H, W, KH, KW, SH, SW, PH, PW}, 0.0f, 0.0f, 0.0},                                              \
  {"avg_pool2d_grad_" name, build_avg_pool2d_grad, ref_avg_pool2d_grad_case, NULL,                     \
   {N, C, H, W, KH, KW, SH, SW, PH, PW}, 0.0f, 0.0f, 0.0}
#define MAXPOOL_FILL(name, fill, N, C, H, W, KH, KW, SH, SW, PH, PW) \
  {"max_pool2d_grad_" name, build_max_pool2d_grad, ref_max_pool2d_grad_case, fill, {N, C, H, W, KH, KW, SH, SW, PH, PW}, 0.0f, 0.0f, 0.0}

const op_case rlx_cases_grad_vision[] = {
    /*    name                         N  C   H   W   O  KH KW sh sw ph pw dh dw g */
    /* one or two outputs per group, few taps (direct loops) */
    CONV("1to1_3x3_valid",             1, 1,  5,  5,  1, 3, 3, 1, 1, 0, 0, 1, 1, 1),
    CONV("1to2_3x3_pad1_7x9",          3, 1,  7,  9,  2, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    CONV("3to2_3x2_s12_p11_d21",       2, 3,  9,  7,  2, 3, 2, 1, 2, 1, 1, 2, 1, 1),
    CONV("4to2_3x3_groups2_dil2",      1, 4,  8,  9,  2, 3, 3, 1, 1, 1, 2, 2, 2, 2),
    CONV("1to2_3x3_stride2_pad2",      2, 1,  9,  8,  2, 3, 3, 2, 2, 2, 2, 1, 1, 1),
    CONV("depthwise_3x3_pad1",         3, 5,  7,  9,  5, 3, 3, 1, 1, 1, 1, 1, 1, 5),
    CONV("depthwise_x2_3x3_stride2",   2, 3,  9,  7,  6, 3, 3, 2, 2, 1, 1, 1, 1, 3),
    CONV("depthwise_3x2_s21_p10_d12",  1, 7,  8,  9,  7, 3, 2, 2, 1, 1, 0, 1, 2, 7),
    CONV("depthwise_3x3_dil2_pad2",    3, 4,  9,  9,  4, 3, 3, 1, 1, 2, 2, 2, 2, 4),
    /* stride 2 leaves the last row and column of the 8x10 input untouched */
    CONV("depthwise_3x3_s2_skips_edge", 2, 3, 8,  10, 3, 3, 3, 2, 2, 0, 0, 1, 1, 3),
    CONV("1to2_3x3_pad3_on_2x3",       2, 1,  2,  3,  2, 3, 3, 1, 1, 3, 3, 1, 1, 1),
    CONV("3to2_3x3_kernel_eq_input",   1, 3,  3,  3,  2, 3, 3, 1, 1, 0, 0, 1, 1, 1),
    /* four (or eight with 3x3) outputs per group: dx by GEMM, dw direct */
    CONV("1to8_3x3_valid",             3, 1,  9,  8,  8, 3, 3, 1, 1, 0, 0, 1, 1, 1),
    CONV("2to8_3x3_groups2_s2_pad1",   2, 2,  9,  8,  8, 3, 3, 2, 2, 1, 1, 1, 1, 2),
    CONV("1to4_5x5_pad2_d21",          1, 1,  9,  7,  4, 5, 5, 1, 1, 2, 2, 2, 1, 1),
    CONV("depthwise_x4_3x3_stride2",   3, 2,  7,  9,  8, 3, 3, 2, 2, 1, 1, 1, 1, 2),
    /* many taps per output (GEMM with col2im / im2col) */
    CONV("3to5_3x3_pad1_7x9",          3, 3,  7,  9,  5, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    CONV("4to6_3x3_stride2_pad1",      2, 4,  9,  7,  6, 3, 3, 2, 2, 1, 1, 1, 1, 1),
    CONV("3to4_3x3_pad2",              1, 3,  6,  5,  4, 3, 3, 1, 1, 2, 2, 1, 1, 1),
    CONV("3to5_3x3_dil2_pad2",         2, 3,  9,  9,  5, 3, 3, 1, 1, 2, 2, 2, 2, 1),
    CONV("2to3_3x3_dil2_stride2_pad1", 1, 2,  11, 10, 3, 3, 3, 2, 2, 1, 1, 2, 2, 1),
    CONV("6to4_3x3_groups2_pad1",      2, 6,  7,  8,  4, 3, 3, 1, 1, 1, 1, 1, 1, 2),
    CONV("9to6_3x3_groups3_stride2",   1, 9,  8,  7,  6, 3, 3, 2, 2, 0, 0, 1, 1, 3),
    CONV("8to12_3x3_groups2_s2_pad1",  3, 8,  10, 9,  12, 3, 3, 2, 2, 1, 1, 1, 1, 2),
    CONV("3to4_3x2_s12_p10",           1, 3,  7,  9,  4, 3, 2, 1, 2, 1, 0, 1, 1, 1),
    CONV("3to5_2x3_s21_p02_d12",       3, 3,  8,  9,  5, 2, 3, 2, 1, 0, 2, 1, 2, 1),
    CONV("3to5_5x5_pad2",              1, 3,  9,  9,  5, 5, 5, 1, 1, 2, 2, 1, 1, 1),
    CONV("5to3_2x2_stride3",           2, 5,  10, 11, 3, 2, 2, 3, 3, 0, 0, 1, 1, 1),
    CONV("8to16_3x3_13x13",            2, 8,  13, 13, 16, 3, 3, 1, 1, 0, 0, 1, 1, 1),
    CONV("17to33_3x3_pad1_8x8",        1, 17, 8,  8,  33, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    CONV("3to5_3x2_pad3_s2_on_2x3",    1, 3,  2,  3,  5, 3, 2, 2, 2, 3, 3, 1, 1, 1),
    CONV("5to7_3x3_pad1_on_1x1",       3, 5,  1,  1,  7, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    /* columns of one image (576 x 928 floats) pass the 1 MiB band: 3 bands */
    CONV("64to3_3x3_pad1_32x29_bands", 1, 64, 32, 29, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    /* 1x1: plain GEMM (stride 1, no padding), else im2col / col2im */
    CONV("1x1_7to9",                   3, 7,  5,  6,  9, 1, 1, 1, 1, 0, 0, 1, 1, 1),
    CONV("1x1_12to15_groups3",         2, 12, 5,  3,  15, 1, 1, 1, 1, 0, 0, 1, 1, 3),
    CONV("1x1_5to3_stride2",           1, 5,  7,  9,  3, 1, 1, 2, 2, 0, 0, 1, 1, 1),
    CONV("1x1_32to17_stride2_7x9",     1, 32, 7,  9,  17, 1, 1, 2, 2, 0, 0, 1, 1, 1),
    CONV("1x1_6to5_pad1",              1, 6,  4,  5,  5, 1, 1, 1, 1, 1, 1, 1, 1, 1),
    CONV("1x1_1to1_on_1x1",            1, 1,  1,  1,  1, 1, 1, 1, 1, 0, 0, 1, 1, 1),

    /*    name                   N  C  H  W  KH KW sh sw ph pw */
    POOL("2x2_s2_6x8",           2, 3, 6, 8, 2, 2, 2, 2, 0, 0),
    POOL("2x2_s2_odd_7x9",       1, 5, 7, 9, 2, 2, 2, 2, 0, 0),
    POOL("2x2_s1",               3, 2, 5, 7, 2, 2, 1, 1, 0, 0),
    POOL("2x2_s2_pad1",          2, 3, 7, 6, 2, 2, 2, 2, 1, 1),
    POOL("3x3_s2_pad1",          3, 5, 7, 9, 3, 3, 2, 2, 1, 1),
    POOL("3x3_s1_pad1",          1, 3, 5, 6, 3, 3, 1, 1, 1, 1),
    POOL("3x3_s3_9x10",          1, 2, 9, 10, 3, 3, 3, 3, 0, 0),
    POOL("3x2_s21_p10",          2, 3, 7, 9, 3, 2, 2, 1, 1, 0),
    POOL("2x3_s12_p01",          1, 4, 6, 7, 2, 3, 1, 2, 0, 1),
    POOL("3x3_on_3x3",           2, 3, 3, 3, 3, 3, 1, 1, 0, 0),
    POOL("3x3_s1_pad2",          1, 3, 4, 5, 3, 3, 1, 1, 2, 2),
    POOL("3x3_s2_pad2_on_1x2",   2, 3, 1, 2, 3, 3, 2, 2, 2, 2),
    /* all inputs negative: padding must not act as 0 */
    {"max_pool2d_grad_3x3_s1_pad1_negative", build_max_pool2d_grad, ref_max_pool2d_grad_case, NULL,
     {2, 3, 5, 6, 3, 3, 1, 1, 1, 1}, -5.0f, -1.0f, 0.0},
    MAXPOOL_FILL("2x2_s2_ties",           fill_ties,    2, 3, 6, 9, 2, 2, 2, 2, 0, 0),
    MAXPOOL_FILL("3x3_s1_pad1_ties",      fill_ties,    2, 3, 7, 6, 3, 3, 1, 1, 1, 1),
    MAXPOOL_FILL("2x2_s2_nan",            fill_nans,    2, 3, 6, 8, 2, 2, 2, 2, 0, 0),
    MAXPOOL_FILL("3x2_s1_pad1_nan",       fill_nans,    1, 3, 7, 5, 3, 2, 1, 1, 1, 1),
    MAXPOOL_FILL("2x2_s2_neg_inf",        fill_neg_inf, 1, 3, 6, 8, 2, 2, 2, 2, 0, 0),
    MAXPOOL_FILL("3x3_s2_pad1_neg_inf",   fill_neg_inf, 2, 2, 7, 9, 3, 3, 2, 2, 1, 1),
};
const int rlx_n_cases_grad_vision = sizeof rlx_cases_grad_vision / sizeof rlx_cases_grad_vision[0];
