/* k_softmax.c - softmax and log-softmax over any axis, the fused softmax
 * cross-entropy loss over the last axis, and the row helpers (max, shifted
 * exp with sum) that attention shares.
 *
 * The input is viewed as [outer, n, inner] around the axis.  When inner is 1
 * each row is contiguous; otherwise the n values of one softmax are inner
 * apart, and the kernel walks them for a whole run of `inner` positions at
 * once so every loop stays contiguous.  All variants subtract the row max
 * before exp (numerically stable) and sum the exponentials in double.
 *
 * exp is exp_poly from fast_math.h, a branch-free Cephes-style polynomial
 * (within 2 ulp of expf, 0 for -inf, NaN for NaN), so the loops below
 * vectorize at -O2 without fast-math: the reductions as 8 lanes, the
 * elementwise loops through RLX_VEC_LOOP (fast_math.h). */
#include <math.h>
#include <string.h>
#include "../core/pool.h"
#include "fast_math.h"
#include "kernels.h"
#include "row_math.h"

#define LANES 8

/* Largest of x[0..n) (-inf when n is 0; NaNs are skipped). */
float rlx_cpu_row_max(const float *x, size_t n) {
  float m[LANES], r = -INFINITY;
  size_t i = 0;
#pragma GCC unroll 8
  for (int l = 0; l < LANES; l++) m[l] = -INFINITY;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
#pragma GCC unroll 8
  for (int l = 0; l < LANES; l++) r = m[l] > r ? m[l] : r;
  for (; i < n; i++) r = x[i] > r ? x[i] : r;
  return r;
}

/* y[i] = exp(x[i] - shift) for i < n, returning the sum (in double); y may
 * be x. */
double rlx_cpu_exp_shift_sum(const float *x, float shift, float *y, size_t n) {
  double acc[LANES] = {0.0}, tail = 0.0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES) {
    float t[LANES];
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) t[l] = x[i + l] - shift;
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) t[l] = exp_poly(t[l]);
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) {
      y[i + l] = t[l];
      acc[l] += t[l];
    }
  }
  for (; i < n; i++) {
    float e = exp_poly(x[i] - shift);
    y[i] = e;
    tail += e;
  }
  for (int l = 0; l < LANES; l++) tail += acc[l]; /* in lane order: keeps clang's SLP 4-wide */
  return tail;
}

/* y[i] = x[i] * s */
static void scale_row(float *restrict y, float s, size_t n) {
  RLX_VEC_LOOP(i, n, y[i] *= s);
}

/* Splits `s` around `axis` into outer * n * inner. */
static void softmax_view(const rlx_shape *s, int32_t axis, size_t *outer, size_t *n, size_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int32_t d = 0; d < axis; d++) *outer *= (size_t)s->dims[d];
  *n = (size_t)s->dims[axis];
  for (int32_t d = axis + 1; d < s->rank; d++) *inner *= (size_t)s->dims[d];
}

/* y[i] = (x[i] - m) - log_sum */
static void log_softmax_finish(const float *restrict x, float m, float log_sum, float *restrict y, size_t n) {
  RLX_VEC_LOOP(i, n, y[i] = (x[i] - m) - log_sum);
}

/* One contiguous row of n values. */
static void softmax_row(const float *x, float *y, size_t n, int log_out) {
  float m = rlx_cpu_row_max(x, n);
  double sum = rlx_cpu_exp_shift_sum(x, m, y, n);
  if (log_out) {
    log_softmax_finish(x, m, (float)log(sum), y, n);
  } else {
    scale_row(y, (float)(1.0 / sum), n);
  }
}

/* y[j] = exp(x[j] - shift[j]) */
static void exp_sub_row(const float *restrict x, const float *restrict shift, float *restrict y, size_t n) {
  RLX_VEC_LOOP(j, n, y[j] = exp_poly(x[j] - shift[j]));
}

/* acc[j] += y[j] */
static void accumulate_row(double *restrict acc, const float *restrict y, size_t n) {
  RLX_VEC_LOOP(j, n, acc[j] += y[j]);
}

/* m[j] = max(m[j], x[j]) */
static void max_row(float *restrict m, const float *restrict x, size_t n) {
  RLX_VEC_LOOP(j, n, m[j] = x[j] > m[j] ? x[j] : m[j]);
}

/* y[j] = (x[j] - m[j]) - log_sum[j] */
static void log_softmax_finish_strided(const float *restrict x, const float *restrict m,
                                       const float *restrict log_sum, float *restrict y, size_t n) {
  RLX_VEC_LOOP(j, n, y[j] = (x[j] - m[j]) - log_sum[j]);
}

/* y[j] *= f[j] */
static void scale_row_strided(float *restrict y, const float *restrict f, size_t n) {
  RLX_VEC_LOOP(j, n, y[j] *= f[j]);
}

/* The strided case, one softmax per j < inner over n values inner apart,
 * walked row by row so every loop is contiguous.  mx holds 2 * inner
 * floats and sum inner doubles of workspace. */
static void softmax_strided(const float *x, float *y, size_t n, size_t inner, int log_out, float *mx, double *sum) {
  memcpy(mx, x, inner * sizeof(float));
  memset(sum, 0, inner * sizeof(double));
  for (size_t r = 1; r < n; r++) max_row(mx, x + r * inner, inner);
  for (size_t r = 0; r < n; r++) {
    exp_sub_row(x + r * inner, mx, y + r * inner, inner);
    accumulate_row(sum, y + r * inner, inner);
  }
  float *fac = mx + inner; /* log(sum) for log_out, else 1 / sum */
  for (size_t j = 0; j < inner; j++) fac[j] = log_out ? (float)log(sum[j]) : (float)(1.0 / sum[j]);
  for (size_t r = 0; r < n; r++) {
    if (log_out)
      log_softmax_finish_strided(x + r * inner, mx, fac, y + r * inner, inner);
    else
      scale_row_strided(y + r * inner, fac, inner);
  }
}

/* The loop of softmax and cross-entropy over outer rows on the thread pool
 * (src/core/pool.h); each range's workspace is its thread's. */
typedef struct {
  const rlx_kargs *a;
  size_t n, inner;
  int log_out;
  int failed; /* no memory */
} softmax_loop;

static void softmax_range(void *ctx, size_t o0, size_t o1, rlx_scratch *ws) {
  softmax_loop *l = ctx;
  const size_t n = l->n, inner = l->inner, block = n * inner;
  const float *x = l->a->in[0];
  float *y = l->a->out;
  if (inner == 1) {
    for (size_t o = o0; o < o1; o++) softmax_row(x + o * n, y + o * n, n, l->log_out);
    return;
  }
  /* doubles first so both workspaces stay aligned */
  double *sum = (double *)rlx_scratch_get(ws, inner * (sizeof(double) + 2 * sizeof(float)));
  if (!sum) {
    rlx_task_failed(&l->failed, 1);
    return;
  }
  float *mx = (float *)(sum + inner);
  for (size_t o = o0; o < o1; o++) softmax_strided(x + o * block, y + o * block, n, inner, l->log_out, mx, sum);
}

static rlx_status softmax_common(const rlx_kargs *a, int log_out) {
  size_t outer, n, inner;
  softmax_view(&a->in_node[0]->shape, ATTR_I(a->node, AXIS, AXIS), &outer, &n, &inner);
  softmax_loop l = {a, n, inner, log_out, 0};
  rlx_parallel_for(outer, 1, 4 * n * inner, softmax_range, &l, a->scratch);
  if (l.failed) return rlx_error(RLX_ERR_NO_MEMORY, "softmax: no memory for a %zu-wide workspace", inner);
  return RLX_OK;
}

/* x[...] -> y[...], softmax over the attribute axis */
rlx_status rlx_cpu_softmax(const rlx_kargs *a) { return softmax_common(a, 0); }

/* x[...] -> y[...], x - logsumexp(x) over the attribute axis */
rlx_status rlx_cpu_log_softmax(const rlx_kargs *a) { return softmax_common(a, 1); }

/* logits[..., C], labels[...] (f32 or i32 class ids) -> loss[...]
 * loss = logsumexp(logits) - logits[label]; a label outside [0, C) gives 0
 * and sets RLX_KFLAG_BAD_INDEX. */
static void cross_entropy_range(void *ctx, size_t r0, size_t r1, rlx_scratch *ws) {
  softmax_loop *l = ctx;
  const rlx_kargs *a = l->a;
  const size_t c = l->n;
  float *tmp = (float *)rlx_scratch_get(ws, c * sizeof(float));
  if (!tmp) {
    rlx_task_failed(&l->failed, 1);
    return;
  }
  for (size_t r = r0; r < r1; r++) {
    const float *x = a->in[0] + r * c;
    int64_t label = rlx_kindex(a, 1, r);
    if (label < 0 || label >= (int64_t)c) {
      a->out[r] = 0.0f;
      __atomic_fetch_or(a->flags, RLX_KFLAG_BAD_INDEX, __ATOMIC_RELAXED); /* ranges may run on several threads */
      continue;
    }
    float m = rlx_cpu_row_max(x, c);
    double sum = rlx_cpu_exp_shift_sum(x, m, tmp, c);
    /* m - x[label] >= 0 is exact enough; adding log(sum) last avoids
     * cancelling two large logsumexp terms */
    a->out[r] = (float)(log(sum) + ((double)m - (double)x[label]));
  }
}

rlx_status rlx_cpu_softmax_cross_entropy(const rlx_kargs *a) {
  const rlx_shape *ls = &a->in_node[0]->shape;
  const size_t c = (size_t)ls->dims[ls->rank - 1];
  softmax_loop l = {a, c, 1, 0, 0};
  rlx_parallel_for(rlx_shape_numel(ls) / c, 1, 4 * c, cross_entropy_range, &l, a->scratch);
  if (l.failed) return rlx_error(RLX_ERR_NO_MEMORY, "softmax_cross_entropy: no memory for a %zu-class row", c);
  return RLX_OK;
}
