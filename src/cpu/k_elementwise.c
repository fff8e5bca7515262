/* k_elementwise.c - broadcasting binary ops (add sub mul div max min pow),
 * comparisons (eq ne lt le gt ge, giving 1.0 or 0.0) and where(cond, a, b).
 *
 * Every op is generated from a one-line scalar expression.  The iteration is
 * simplified first (size-1 axes dropped, contiguous axes merged, see
 * broadcast.c), so equal shapes become one long loop, a scalar operand one
 * loop against a constant (or a buffer of it, below), and a bias row ([N, D] + [D]) N rows of a
 * contiguous loop; all of these are plain loops the compiler vectorizes.
 * Any other broadcast walks the remaining outer axes with an odometer.
 *
 * Each op has one vectorized loop over dense operands: a broadcast operand
 * of a row (innermost stride 0) is read from a stack buffer filled with its
 * value, a chunk at a time.  That keeps the module small (one loop per op
 * instead of one per operand pattern) for an extra L1 load per element on
 * broadcast rows.  The arithmetic ops (add sub mul div), which optimizers
 * and biases run with a scalar or [N, 1] operand, also have a loop for y
 * broadcast.  The same scalar expressions, by sub-op code, are the WebGL2
 * reference executor's formulas for binary.frag (rlx_cpu_binary_scalar,
 * below). */
#include <math.h>

#include "../core/pool.h"
#include "../core/subops.h"
#include "fast_math.h"
#include "kernels.h"

/* o[i] = x[i] OP y[i] for i < n. */
typedef void (*binary_loop)(const float *restrict x, const float *restrict y, float *restrict o, size_t n);

/* Elements per chunk of a broadcast operand's buffer. */
#define CHUNK 256

/* Helpers called once per call or per broadcast row stay out of line. */
#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* Output dims and the broadcast strides of inputs 0..n_ops-1, simplified;
 * returns the rank of the simplified iteration. */
NOINLINE static int32_t broadcast_plan(const rlx_kargs *a, int32_t n_ops, size_t *dims,
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

/* buf[0..n) = v; blocks of 8 (SIMD stores), the loop over them left as
 * written (vectorizing it again made this 1 KB of wasm). */
NOINLINE static void fill(float *restrict buf, float v, size_t n) {
  size_t i = 0;
  RLX_SCALAR_LOOP
  for (; i + 8 <= n; i += 8)
    for (size_t j = i; j < i + 8; j++) buf[j] = v;
  RLX_SCALAR_LOOP
  for (; i < n; i++) buf[i] = v;
}

/* Runs one binary op: per row of the simplified iteration, dense operands
 * (innermost stride 1) in place, a broadcast one (stride 0) from a buffer;
 * with y broadcast and x dense, vs (when the op has one) reads y's value
 * directly. */
typedef struct {
  binary_loop loop;
  const float *x, *y;
  float *o;
} binary_ranges;

static void binary_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  (void)ws;
  const binary_ranges *r = ctx;
  r->loop(r->x + b, r->y + b, r->o + b, e - b);
}

static rlx_status binary_run(const rlx_kargs *a, binary_loop loop, binary_loop vs) {
  size_t dims[RLX_MAX_RANK], strides[2][RLX_MAX_RANK];
  int32_t rank = broadcast_plan(a, 2, dims, strides);
  size_t n = dims[rank - 1], rows = outer_count(rank, dims), first = n < CHUNK ? n : CHUNK;
  int x_dense = strides[0][rank - 1] != 0, y_dense = strides[1][rank - 1] != 0;
  if (RLX_THREADED && rows == 1 && x_dense && y_dense) { /* same shapes: ranges over the thread pool */
    const binary_ranges r = {loop, a->in[0], a->in[1], a->out};
    rlx_parallel_for(n, RLX_ELEMENTWISE_GRAIN, 4, binary_range, (void *)&r, NULL);
    return RLX_OK;
  }
  size_t idx[RLX_MAX_RANK] = {0}, offs[2] = {0, 0};
  float xb[CHUNK], yb[CHUNK], *o = a->out;
  for (size_t row = 0; row < rows; row++, o += n) {
    const float *x = a->in[0] + offs[0], *y = a->in[1] + offs[1];
    if (x_dense && y_dense) {
      loop(x, y, o, n);
    } else if (x_dense && vs) {
      vs(x, y, o, n);
    } else {
      if (!x_dense) fill(xb, *x, first);
      if (!y_dense) fill(yb, *y, first);
      for (size_t k = 0; k < n; k += CHUNK)
        loop(x_dense ? x + k : xb, y_dense ? y + k : yb, o + k, n - k < CHUNK ? n - k : CHUNK);
    }
    rlx_iter_next(rank, dims, idx, 2, strides, offs);
  }
  return RLX_OK;
}

#define BINARY_LOOP(name, EXPR)                                                                \
  static inline float name##_op(float x, float y) { return (EXPR); }                           \
  static void name##_loop(const float *restrict xs, const float *restrict ys, float *restrict o, \
                          size_t n) {                                                         \
    RLX_VEC_LOOP(i, n, float x = xs[i]; float y = ys[i]; o[i] = (EXPR));                      \
  }

/* a[...], b[...] broadcast (numpy rules) -> out[broadcast shape] */
#define RLX_BINARY_KERNEL(name, EXPR) \
  BINARY_LOOP(name, EXPR)             \
  rlx_status rlx_cpu_##name(const rlx_kargs *a) { return binary_run(a, name##_loop, NULL); }
/* The same with a loop for y broadcast. */
#define RLX_ARITH_KERNEL(name, EXPR)                                                                        \
  BINARY_LOOP(name, EXPR)                                                                                   \
  static void name##_vs(const float *restrict xs, const float *restrict ys, float *restrict o, size_t n) { \
    const float y = ys[0];                                                                                  \
    RLX_VEC_LOOP(i, n, float x = xs[i]; o[i] = (EXPR));                                                     \
  }                                                                                                         \
  rlx_status rlx_cpu_##name(const rlx_kargs *a) { return binary_run(a, name##_loop, name##_vs); }

RLX_ARITH_KERNEL(add, x + y)
RLX_ARITH_KERNEL(sub, x - y)
RLX_ARITH_KERNEL(mul, x * y)
RLX_ARITH_KERNEL(div, x / y) /* IEEE: x/0 is +-inf, 0/0 is NaN */
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

/* Each op's scalar expression, indexed by its sub-op code. */
#define SCALAR_BINARY(ID, name) [RLX_SUBOP_##ID] = name##_op,
#define SCALAR_UNARY(ID, name)
#define SCALAR_POINTWISE_GRAD(ID, name)
#define SCALAR_NONE(ID, name)
static float (*const scalar_ops[])(float, float) = {
#define RLX_OP(ID, name, lo, hi, rule, attrs) RLX_SUBOP_ROW(rule, SCALAR, ID, name)
#include "rlx_ops.def"
#undef RLX_OP
};

float rlx_cpu_binary_scalar(int32_t subop, float x, float y) {
  int32_t n = (int32_t)(sizeof scalar_ops / sizeof scalar_ops[0]);
  return subop >= 0 && subop < n ? scalar_ops[subop](x, y) : NAN;
}

/* o = c != 0 ? x : y over n dense elements; both values are loaded so the
 * choice is a select. */
static void where_loop(const float *restrict c, const float *restrict x, const float *restrict y,
                       float *restrict o, size_t n) {
  RLX_VEC_LOOP(i, n, float xv = x[i]; float yv = y[i]; o[i] = c[i] != 0.0f ? xv : yv);
}

/* cond[...], a[...], b[...] broadcast together -> out: a where cond != 0
 * (NaN counts as nonzero), else b.  Broadcast operands of a row come from
 * buffers, as in binary_run. */
rlx_status rlx_cpu_where(const rlx_kargs *a) {
  size_t dims[RLX_MAX_RANK], strides[3][RLX_MAX_RANK];
  int32_t rank = broadcast_plan(a, 3, dims, strides);
  size_t n = dims[rank - 1], rows = outer_count(rank, dims), first = n < CHUNK ? n : CHUNK;
  int dense[3];
  for (int k = 0; k < 3; k++) dense[k] = strides[k][rank - 1] != 0;
  size_t idx[RLX_MAX_RANK] = {0}, offs[3] = {0, 0, 0};
  float buf[3][CHUNK], *o = a->out;
  for (size_t row = 0; row < rows; row++, o += n) {
    const float *in[3];
    for (int k = 0; k < 3; k++) {
      in[k] = a->in[k] + offs[k];
      if (!dense[k]) fill(buf[k], *in[k], first);
    }
    for (size_t j = 0; j < n; j += CHUNK)
      where_loop(dense[0] ? in[0] + j : buf[0], dense[1] ? in[1] + j : buf[1], dense[2] ? in[2] + j : buf[2], o + j,
                 n - j < CHUNK ? n - j : CHUNK);
    rlx_iter_next(rank, dims, idx, 3, strides, offs);
  }
  return RLX_OK;
}
