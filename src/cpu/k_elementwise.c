/* k_elementwise.c - broadcasting binary ops (add sub mul div max min pow),
 * comparisons (eq ne lt le gt ge, giving 1.0 or 0.0) and where(cond, a, b).
 *
 * Every op is generated from a one-line scalar expression.  The iteration is
 * simplified first (size-1 axes dropped, contiguous axes merged, see
 * broadcast.c), so equal shapes become one long loop, a scalar operand a
 * loop against a constant, and a bias row ([N, D] + [D]) N rows of a
 * contiguous loop; all of these are plain loops the compiler vectorizes.
 * Any other broadcast walks the remaining outer axes with an odometer. */
#include <math.h>

#include "fast_math.h"
#include "kernels.h"



/* The inner loops of one binary op over n elements: both operands
 * contiguous, y a broadcast scalar, x a broadcast scalar, or both. */
typedef struct {
  void (*vv)(const float *restrict x, const float *restrict y, float *restrict o, size_t n);
  void (*vs)(const float *restrict x, float y, float *restrict o, size_t n);
  void (*sv)(float x, const float *restrict y, float *restrict o, size_t n);
  float (*ss)(float x, float y);
} binary_loops;

/* Output dims and the broadcast strides of inputs 0..n_ops-1, simplified;
 * returns the rank of the simplified iteration. */
static int32_t broadcast_plan(const rlx_kargs *a, int32_t n_ops, size_t *dims,
                              size_t (*strides)[RLX_MAX_RANK]) {
  const rlx_shape *out = &a->node->shape;
  for (int32_t i = 0; i < out->rank; i++) dims[i] = (size_t)out->dims[i];
  for (int32_t k = 0; k < n_ops; k++) rlx_broadcast_strides(&a->in_node[k]->shape, out, strides[k]);
  return rlx_iter_coalesce(out->rank, dims, n_ops, strides);
}

static size_t outer_count(int32_t rank, const size_t *dims) {
  size_t rows = 1;
  for (int32_t i = 0; i < rank - 1; i++) rows *= dims[i];
  return rows;
}

/* Runs one binary op: per row of the simplified iteration, the loop that
 * fits which operands are dense (innermost stride 1) or broadcast (0). */
static rlx_status binary_run(const rlx_kargs *a, const binary_loops *loops) {
  size_t dims[RLX_MAX_RANK], strides[2][RLX_MAX_RANK];
  int32_t rank = broadcast_plan(a, 2, dims, strides);
  size_t n = dims[rank - 1], rows = outer_count(rank, dims);
  int x_dense = strides[0][rank - 1] != 0, y_dense = strides[1][rank - 1] != 0;
  size_t idx[RLX_MAX_RANK] = {0}, offs[2] = {0, 0};
  float *o = a->out;
  for (size_t row = 0; row < rows; row++, o += n) {
    const float *x = a->in[0] + offs[0], *y = a->in[1] + offs[1];
    if (x_dense && y_dense) {
      loops->vv(x, y, o, n);
    } else if (x_dense) {
      loops->vs(x, *y, o, n);
    } else if (y_dense) {
      loops->sv(*x, y, o, n);
    } else {
      float v = loops->ss(*x, *y);
      RLX_VEC_LOOP(i, n, o[i] = v);
    }
    rlx_iter_next(rank, dims, idx, 2, strides, offs);
  }
  return RLX_OK;
}

/* a[...], b[...] broadcast (numpy rules) -> out[broadcast shape] */
#define RLX_BINARY_KERNEL(name, EXPR)                                                        \
  static float name##_op(float x, float y) { return EXPR; }                                  \
  static void name##_vv(const float *restrict xs, const float *restrict ys, float *restrict o, \
                        size_t n) {                                                          \
    RLX_VEC_LOOP(i, n, o[i] = name##_op(xs[i], ys[i]));                                         \
  }                                                                                          \
  static void name##_vs(const float *restrict xs, float y, float *restrict o, size_t n) {     \
    RLX_VEC_LOOP(i, n, o[i] = name##_op(xs[i], y));                                             \
  }                                                                                          \
  static void name##_sv(float x, const float *restrict ys, float *restrict o, size_t n) {    \
    RLX_VEC_LOOP(i, n, o[i] = name##_op(x, ys[i]));                                             \
  }                                                                                          \
  rlx_status rlx_cpu_##name(const rlx_kargs *a) {                                            \
    static const binary_loops loops = {name##_vv, name##_vs, name##_sv, name##_op};          \
    return binary_run(a, &loops);                                                            \
  }

RLX_BINARY_KERNEL(add, x + y)
RLX_BINARY_KERNEL(sub, x - y)
RLX_BINARY_KERNEL(mul, x * y)
RLX_BINARY_KERNEL(div, x / y) /* IEEE: x/0 is +-inf, 0/0 is NaN */
/* max/min propagate NaN: the result is NaN when either operand is NaN (if x
 * is NaN the test x != x picks x; if only y is NaN the comparison is false
 * and y is picked).  Between -0 and +0 either may be returned. */
RLX_BINARY_KERNEL(max, (x > y || x != x) ? x : y)
RLX_BINARY_KERNEL(min, (x < y || x != x) ? x : y)
RLX_BINARY_KERNEL(pow, powf(x, y))
/* Comparisons: 1.0 where true, 0.0 where false (any comparison with NaN is
 * false, except ne which is true). */
RLX_BINARY_KERNEL(eq, x == y ? 1.0f : 0.0f)
RLX_BINARY_KERNEL(ne, x != y ? 1.0f : 0.0f)
RLX_BINARY_KERNEL(lt, x < y ? 1.0f : 0.0f)
RLX_BINARY_KERNEL(le, x <= y ? 1.0f : 0.0f)
RLX_BINARY_KERNEL(gt, x > y ? 1.0f : 0.0f)
RLX_BINARY_KERNEL(ge, x >= y ? 1.0f : 0.0f)

/* One row of where: mode bit 2/1/0 says whether cond/x/y are dense
 * (stride 1) or broadcast (stride 0, the only other innermost stride that
 * broadcasting leaves).  One loop per combination; both values are loaded so
 * the choice is a select. */
static void where_row(const float *restrict c, const float *restrict x, const float *restrict y,
                      float *restrict o, size_t n, int mode) {
  const float c0 = c[0], x0 = x[0], y0 = y[0];
#define WHERE_LOOP(CV, XV, YV) RLX_VEC_LOOP(i, n, float xv = (XV); float yv = (YV); o[i] = (CV) != 0.0f ? xv : yv)
  switch (mode) {
    case 7: WHERE_LOOP(c[i], x[i], y[i]); break;
    case 6: WHERE_LOOP(c[i], x[i], y0); break;
    case 5: WHERE_LOOP(c[i], x0, y[i]); break;
    case 4: WHERE_LOOP(c[i], x0, y0); break;
    case 3: WHERE_LOOP(c0, x[i], y[i]); break;
    case 2: WHERE_LOOP(c0, x[i], y0); break;
    case 1: WHERE_LOOP(c0, x0, y[i]); break;
    default: WHERE_LOOP(c0, x0, y0); break;
  }
#undef WHERE_LOOP
}

/* cond[...], a[...], b[...] broadcast together -> out: a where cond != 0
 * (NaN counts as nonzero), else b. */
rlx_status rlx_cpu_where(const rlx_kargs *a) {
  size_t dims[RLX_MAX_RANK], strides[3][RLX_MAX_RANK];
  int32_t rank = broadcast_plan(a, 3, dims, strides);
  size_t n = dims[rank - 1], rows = outer_count(rank, dims);
  int mode = (strides[0][rank - 1] != 0) << 2 | (strides[1][rank - 1] != 0) << 1 | (strides[2][rank - 1] != 0);
  size_t idx[RLX_MAX_RANK] = {0}, offs[3] = {0, 0, 0};
  float *o = a->out;
  for (size_t row = 0; row < rows; row++, o += n) {
    where_row(a->in[0] + offs[0], a->in[1] + offs[1], a->in[2] + offs[2], o, n, mode);
    rlx_iter_next(rank, dims, idx, 3, strides, offs);
  }
  return RLX_OK;
}
