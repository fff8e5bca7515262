/* conv_common.h - what the conv2d kernels (forward in k_conv.c, backward in
 * k_conv_grad.c) share: the geometry of a convolution, the im2col unfolding
 * and its adjoint col2im, the banding of the unfolded columns and the split
 * of one scratch into a columns buffer plus a window for rlx_gemm. */
#ifndef RLX_CPU_CONV_COMMON_H
#define RLX_CPU_CONV_COMMON_H

#include "../core/pool.h"
#include "kernels.h"

typedef struct {
  int32_t N, C, H, W;     /* input  */
  int32_t O, KH, KW;      /* weight */
  int32_t OH, OW;         /* output */
  int32_t sh, sw, ph, pw, dh, dw, groups;
  int32_t Cg, Og;         /* channels per group (input, output) */
} conv_geom;

/* Geometry from the dims of x[N,C,H,W], w[O,C/g,KH,KW], y[N,O,OH,OW] and
 * conv2d's iattr {stride_h, stride_w, pad_h, pad_w, dil_h, dil_w, groups}. */
conv_geom rlx_conv_geom(const int32_t *xd, const int32_t *wd, const int32_t *yd, const int32_t *attr);

/* The outputs [o0, o1) of an axis (out of n_out) whose input index
 * o*stride + off lies in [0, size): off = k*dil - pad for tap k. */
void rlx_conv_valid_range(int32_t off, int32_t stride, int32_t size, int32_t n_out, int32_t *o0, int32_t *o1);

/* A 1x1, stride-1, unpadded conv: the input planes of a group are its
 * columns, so no unfolding is needed. */
int rlx_conv_is_pointwise(const conv_geom *g);

/* x[Cg,H,W] (one image, one group) -> cols[Cg*KH*KW, (oh1-oh0)*OW], the
 * unfolding of output rows [oh0, oh1); taps in the padding are zero. */
void rlx_conv_im2col(const conv_geom *g, const float *x, int32_t oh0, int32_t oh1, float *cols);

/* The adjoint of im2col: x[Cg,H,W] += every column entry of output rows
 * [oh0, oh1) at the input cell it was unfolded from (padding taps dropped). */
void rlx_conv_col2im(const conv_geom *g, const float *cols, int32_t oh0, int32_t oh1, float *x);

/* y[r*ldy + i*sy] += a * x[r*ldx + i*sx] for r < rows, i < n: one weight
 * tap applied between a region of rows of two planes (the direct conv
 * loops).  Vectorized when both strides are 1. */
void rlx_conv_region_axpy(float *y, size_t ldy, int32_t sy, const float *x, size_t ldx, int32_t sx, float a,
                          int32_t rows, int32_t n);

/* Most bytes of cols per GEMM call: larger outputs are unfolded in bands of
 * output rows, which bounds the workspace.  Smaller bands (64-256 KiB, to
 * stay in L2) measured no faster on the vision shapes, so the bound is
 * loose and whole planes of the vision models go in one call. */
#ifndef CONV_COLS_BYTES
#define CONV_COLS_BYTES ((size_t)1 << 20)
#endif

/* Output rows per band so that cols[Cg*KH*KW, band*OW] stays within
 * CONV_COLS_BYTES (bands of equal height, at least one row). */
int32_t rlx_conv_band_rows(const conv_geom *g);

/* First output row of the last band when output rows go in bands of
 * `band`: every band but the last has `band` rows, the last OH minus this.
 * (The two sizes a kernel sizes its GEMM workspace for.) */
int32_t rlx_conv_last_band(const conv_geom *g, int32_t band);

/* Takes cols_bytes for a columns buffer plus, past it, a window for
 * rlx_gemm as large as the most any of the n products in gemms asks for
 * (rlx_gemm_scratch_bytes): *cols is the start and *gemm the window, so
 * GEMM packing never reallocates or overwrites the columns.  Returns the
 * bytes taken; *cols is NULL when out of memory. */
size_t rlx_conv_workspace(rlx_scratch *scratch, size_t cols_bytes, const rlx_gemm_args *gemms, int32_t n,
                          float **cols, rlx_scratch *gemm);

/* One loop of a conv kernel over the thread pool (src/core/pool.h): the
 * geometry, two operands (x and w, dy and w, x and dy), the output, and
 * for image ranges the function that computes images [n0, n1) with a
 * workspace. */
typedef rlx_status (*rlx_conv_images_fn)(const conv_geom *g, const float *a, const float *b, float *out, int32_t n0,
                                         int32_t n1, rlx_scratch *ws);
typedef struct {
  const conv_geom *g;
  const float *a, *b;
  float *out;
  rlx_conv_images_fn images;
  int failed; /* a range's status */
} rlx_conv_loop;
/* The pool's task over images: l->images on [n0, n1) (inline, so that a
 * threadless build calls l->images directly). */
static inline void rlx_conv_images_range(void *ctx, size_t n0, size_t n1, rlx_scratch *ws) {
  rlx_conv_loop *l = ctx;
  const rlx_status st = l->images(l->g, l->a, l->b, l->out, (int32_t)n0, (int32_t)n1, ws);
  if (st != RLX_OK) rlx_task_failed(&l->failed, (int)st);
}
/* RLX_OK, or the error of a failed range named for `what`. */
rlx_status rlx_conv_loop_status(const rlx_conv_loop *l, const char *what);

#endif
