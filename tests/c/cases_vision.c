/* cases_vision.c - op cases for conv2d, max/avg pooling and global average
 * pooling (NCHW).  Shapes are small and odd on purpose (channel and spatial
 * sizes that are not multiples of the SIMD width) and cover every attribute:
 * stride, padding, dilation, groups (incl. depthwise), non-square kernels and
 * inputs, 1x1 kernels.  Every conv strategy is reached: direct loops (one or
 * two output channels per group, few taps: depthwise and the like), im2col +
 * GEMM, and the plain GEMM of an unpadded stride-1 1x1 conv. */
#include <math.h>
#include "op_case.h"

void ref_vision_conv2d(const op_case *c, const op_inputs *in, double *expect);
void ref_vision_max_pool2d(const op_case *c, const op_inputs *in, double *expect);
void ref_vision_avg_pool2d(const op_case *c, const op_inputs *in, double *expect);
void ref_vision_global_avg_pool(const op_case *c, const op_inputs *in, double *expect);

/* p = {N, C, H, W, O, KH, KW, stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups} */
static rlx_node build_conv2d(rlx_graph *g, const op_case *c) {
  const int32_t *p = c->p;
  const int32_t xd[4] = {p[0], p[1], p[2], p[3]};
  const int32_t wd[4] = {p[4], p[1] / p[13], p[5], p[6]};
  rlx_node x = rlx_input(g, "x", 4, xd, RLX_F32);
  rlx_node w = rlx_input(g, "w", 4, wd, RLX_F32);
  const rlx_conv2d_params cp = {p[7], p[8], p[9], p[10], p[11], p[12], p[13]};
  return rlx_conv2d(g, x, w, &cp);
}

/* p = {N, C, H, W, kernel_h, kernel_w, stride_h, stride_w, pad_h, pad_w} */
static rlx_node build_pool_input(rlx_graph *g, const op_case *c, rlx_pool2d_params *pp) {
  const int32_t *p = c->p;
  const int32_t xd[4] = {p[0], p[1], p[2], p[3]};
  const rlx_pool2d_params q = {p[4], p[5], p[6], p[7], p[8], p[9]};
  *pp = q;
  return rlx_input(g, "x", 4, xd, RLX_F32);
}

static rlx_node build_max_pool2d(rlx_graph *g, const op_case *c) {
  rlx_pool2d_params pp;
  rlx_node x = build_pool_input(g, c, &pp);
  return rlx_max_pool2d(g, x, &pp);
}

static rlx_node build_avg_pool2d(rlx_graph *g, const op_case *c) {
  rlx_pool2d_params pp;
  rlx_node x = build_pool_input(g, c, &pp);
  return rlx_avg_pool2d(g, x, &pp);
}

/* p = {N, C, H, W} */
static rlx_node build_global_avg_pool(rlx_graph *g, const op_case *c) {
  const int32_t xd[4] = {c->p[0], c->p[1], c->p[2], c->p[3]};
  return rlx_global_avg_pool(g, rlx_input(g, "x", 4, xd, RLX_F32));
}

/* Uniform in [-1, 1) with a NaN in every 7th cell (NaN must propagate). */
static void fill_with_nans(const op_case *c, int32_t k, float *data, size_t n, unsigned seed) {
  (void)c;
  (void)k;
  for (size_t i = 0; i < n; i++) data[i] = i % 7 == 3 ? NAN : opcase_uniform(seed, i, -1.0f, 1.0f);
}

#define CONV(name, N, C, H, W, O, KH, KW, SH, SW, PH, PW, DH, DW, G) \
  {name, build_conv2d, ref_vision_conv2d, NULL,                     \
   {N, C, H, W, O, KH, KW, SH, SW, PH, PW, DH, DW, G}, 0.0f, 0.0f, 0.0}
#define MAXPOOL(name, N, C, H, W, KH, KW, SH, SW, PH, PW) \
  {name, build_max_pool2d, ref_vision_max_pool2d, NULL, {N, C, H, W, KH, KW, SH, SW, PH, PW}, 0.0f, 0.0f, 0.0}
#define AVGPOOL(name, N, C, H, W, KH, KW, SH, SW, PH, PW) \
  {name, build_avg_pool2d, ref_vision_avg_pool2d, NULL, {N, C, H, W, KH, KW, SH, SW, PH, PW}, 0.0f, 0.0f, 0.0}
#define GAP(name, N, C, H, W) \
  {name, build_global_avg_pool, ref_vision_global_avg_pool, NULL, {N, C, H, W}, 0.0f, 0.0f, 0.0}

const op_case rlx_cases_vision[] = {
    /*    name                                N  C  H   W   O  KH KW sh sw ph pw dh dw g */
    /* one or two outputs per group, few taps (direct path) */
    CONV("conv2d_1to1_3x3_valid",             1, 1, 5,  5,  1, 3, 3, 1, 1, 0, 0, 1, 1, 1),
    CONV("conv2d_1to2_3x3_pad1_7x9",          3, 1, 7,  9,  2, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    CONV("conv2d_3to2_3x2_s12_p11_d21",       2, 3, 9,  7,  2, 3, 2, 1, 2, 1, 1, 2, 1, 1),
    CONV("conv2d_4to2_3x3_groups2_dil2",      1, 4, 8,  9,  2, 3, 3, 1, 1, 1, 2, 2, 2, 2),
    CONV("conv2d_1to2_3x3_stride2_pad2",      2, 1, 9,  8,  2, 3, 3, 2, 2, 2, 2, 1, 1, 1),
    CONV("conv2d_depthwise_3x3_pad1",         3, 5, 7,  9,  5, 3, 3, 1, 1, 1, 1, 1, 1, 5),
    CONV("conv2d_depthwise_x2_3x3_stride2",   2, 3, 9,  7,  6, 3, 3, 2, 2, 1, 1, 1, 1, 3),
    CONV("conv2d_depthwise_3x2_s21_p10_d12",  1, 7, 8,  9,  7, 3, 2, 2, 1, 1, 0, 1, 2, 7),
    CONV("conv2d_depthwise_3x3_dil2_pad2",    3, 4, 9,  9,  4, 3, 3, 1, 1, 2, 2, 2, 2, 4),
    /* many taps per output (im2col + GEMM) */
    CONV("conv2d_3to5_3x3_pad1_7x9",          3, 3, 7,  9,  5, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    CONV("conv2d_4to6_3x3_stride2_pad1",      2, 4, 9,  7,  6, 3, 3, 2, 2, 1, 1, 1, 1, 1),
    CONV("conv2d_3to4_3x3_pad2",              1, 3, 6,  5,  4, 3, 3, 1, 1, 2, 2, 1, 1, 1),
    CONV("conv2d_3to5_3x3_dil2_pad2",         2, 3, 9,  9,  5, 3, 3, 1, 1, 2, 2, 2, 2, 1),
    CONV("conv2d_2to3_3x3_dil2_stride2_pad1", 1, 2, 11, 10, 3, 3, 3, 2, 2, 1, 1, 2, 2, 1),
    CONV("conv2d_6to4_3x3_groups2_pad1",      2, 6, 7,  8,  4, 3, 3, 1, 1, 1, 1, 1, 1, 2),
    CONV("conv2d_9to6_3x3_groups3_stride2",   1, 9, 8,  7,  6, 3, 3, 2, 2, 0, 0, 1, 1, 3),
    CONV("conv2d_3to4_3x2_s12_p10",           1, 3, 7,  9,  4, 3, 2, 1, 2, 1, 0, 1, 1, 1),
    CONV("conv2d_3to5_2x3_s21_p02_d12",       3, 3, 8,  9,  5, 2, 3, 2, 1, 0, 2, 1, 2, 1),
    CONV("conv2d_3to5_5x5_pad2",              1, 3, 9,  9,  5, 5, 5, 1, 1, 2, 2, 1, 1, 1),
    CONV("conv2d_5to3_2x2_stride3",           2, 5, 10, 11, 3, 2, 2, 3, 3, 0, 0, 1, 1, 1),
    CONV("conv2d_8to16_3x3_13x13",            2, 8, 13, 13, 16, 3, 3, 1, 1, 0, 0, 1, 1, 1),
    CONV("conv2d_17to33_3x3_pad1_8x8",        1, 17, 8, 8,  33, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    /* cols of one image (576 x 1024 floats) exceed k_conv.c's 1 MiB band: 3 bands */
    CONV("conv2d_64to3_3x3_pad1_32x29_bands", 1, 64, 32, 29, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    /* padding wider than the kernel reach: border outputs see only zeros */
    CONV("conv2d_1to2_3x3_pad3_on_2x3",       2, 1, 2,  3,  2, 3, 3, 1, 1, 3, 3, 1, 1, 1),
    CONV("conv2d_3to5_3x2_pad3_s2_on_2x3",    1, 3, 2,  3,  5, 3, 2, 2, 2, 3, 3, 1, 1, 1),
    CONV("conv2d_5to7_3x3_pad1_on_1x1",       3, 5, 1,  1,  7, 3, 3, 1, 1, 1, 1, 1, 1, 1),
    CONV("conv2d_3to2_3x3_kernel_eq_input",   1, 3, 3,  3,  2, 3, 3, 1, 1, 0, 0, 1, 1, 1),
    /* 1x1 kernels: plain GEMM (stride 1, no pad), or im2col when strided/padded */
    CONV("conv2d_1x1_7to9",                   3, 7, 5,  6,  9, 1, 1, 1, 1, 0, 0, 1, 1, 1),
    CONV("conv2d_1x1_12to15_groups3",         2, 12, 5, 3,  15, 1, 1, 1, 1, 0, 0, 1, 1, 3),
    CONV("conv2d_1x1_5to3_stride2",           1, 5, 7,  9,  3, 1, 1, 2, 2, 0, 0, 1, 1, 1),
    CONV("conv2d_1x1_32to17_stride2_7x9",     1, 32, 7, 9,  17, 1, 1, 2, 2, 0, 0, 1, 1, 1),
    CONV("conv2d_1x1_6to5_pad1",              1, 6, 4,  5,  5, 1, 1, 1, 1, 1, 1, 1, 1, 1),
    CONV("conv2d_1x1_1to1_on_1x1",            1, 1, 1,  1,  1, 1, 1, 1, 1, 0, 0, 1, 1, 1),

    /*       name                             N  C  H  W  KH KW sh sw ph pw */
    MAXPOOL("max_pool2d_2x2_s2_6x8",          2, 3, 6, 8, 2, 2, 2, 2, 0, 0),
    MAXPOOL("max_pool2d_2x2_s2_odd_7x9",      1, 5, 7, 9, 2, 2, 2, 2, 0, 0),
    MAXPOOL("max_pool2d_2x2_s1",              3, 2, 5, 7, 2, 2, 1, 1, 0, 0),
    MAXPOOL("max_pool2d_2x2_s2_pad1",         2, 3, 7, 6, 2, 2, 2, 2, 1, 1),
    MAXPOOL("max_pool2d_3x3_s2_pad1",         3, 5, 7, 9, 3, 3, 2, 2, 1, 1),
    MAXPOOL("max_pool2d_3x3_s1_pad1",         1, 3, 5, 6, 3, 3, 1, 1, 1, 1),
    MAXPOOL("max_pool2d_3x2_s21_p10",         2, 3, 7, 9, 3, 2, 2, 1, 1, 0),
    MAXPOOL("max_pool2d_2x3_s12_p01",         1, 4, 6, 7, 2, 3, 1, 2, 0, 1),
    MAXPOOL("max_pool2d_3x3_on_3x3",          2, 3, 3, 3, 3, 3, 1, 1, 0, 0),
    MAXPOOL("max_pool2d_3x3_s1_pad2",         1, 3, 4, 5, 3, 3, 1, 1, 2, 2),
    MAXPOOL("max_pool2d_3x3_s2_pad2_on_1x2",  2, 3, 1, 2, 3, 3, 2, 2, 2, 2),
    /* all inputs negative: padding must not act as 0 */
    {"max_pool2d_3x3_s1_pad1_negative", build_max_pool2d, ref_vision_max_pool2d, NULL,
     {2, 3, 5, 6, 3, 3, 1, 1, 1, 1}, -5.0f, -1.0f, 0.0},
    {"max_pool2d_2x2_s2_negative", build_max_pool2d, ref_vision_max_pool2d, NULL,
     {1, 3, 6, 5, 2, 2, 2, 2, 0, 0}, -5.0f, -1.0f, 0.0},
    {"max_pool2d_2x2_s2_nan", build_max_pool2d, ref_vision_max_pool2d, fill_with_nans,
     {2, 3, 6, 8, 2, 2, 2, 2, 0, 0}, 0.0f, 0.0f, 0.0},
    {"max_pool2d_3x2_s1_pad1_nan", build_max_pool2d, ref_vision_max_pool2d, fill_with_nans,
     {1, 3, 7, 5, 3, 2, 1, 1, 1, 1}, 0.0f, 0.0f, 0.0},
    AVGPOOL("avg_pool2d_2x2_s2_6x8",          2, 3, 6, 8, 2, 2, 2, 2, 0, 0),
    AVGPOOL("avg_pool2d_2x2_s2_odd_7x9",      1, 5, 7, 9, 2, 2, 2, 2, 0, 0),
    AVGPOOL("avg_pool2d_2x2_s1",              3, 2, 5, 7, 2, 2, 1, 1, 0, 0),
    AVGPOOL("avg_pool2d_2x2_s2_pad1",         2, 3, 7, 6, 2, 2, 2, 2, 1, 1),
    AVGPOOL("avg_pool2d_3x3_s2_pad1",         3, 5, 7, 9, 3, 3, 2, 2, 1, 1),
    AVGPOOL("avg_pool2d_3x3_s1_pad1",         1, 3, 5, 6, 3, 3, 1, 1, 1, 1),
    AVGPOOL("avg_pool2d_3x2_s21_p10",         2, 3, 7, 9, 3, 2, 2, 1, 1, 0),
    AVGPOOL("avg_pool2d_2x3_s12_p01",         1, 4, 6, 7, 2, 3, 1, 2, 0, 1),
    AVGPOOL("avg_pool2d_3x3_on_3x3",          2, 3, 3, 3, 3, 3, 1, 1, 0, 0),
    AVGPOOL("avg_pool2d_3x3_s1_pad2",         1, 3, 4, 5, 3, 3, 1, 1, 2, 2),
    AVGPOOL("avg_pool2d_3x3_s2_pad2_on_1x2",  2, 3, 1, 2, 3, 3, 2, 2, 2, 2),

    /*   name                                 N  C  H  W */
    GAP("global_avg_pool_7x5",                2, 3, 7, 5),
    GAP("global_avg_pool_1x1",                3, 4, 1, 1),
    GAP("global_avg_pool_8x8_c5",             1, 5, 8, 8),
    GAP("global_avg_pool_13x11",              2, 7, 13, 11),
};
const int rlx_n_cases_vision = sizeof rlx_cases_vision / sizeof rlx_cases_vision[0];
