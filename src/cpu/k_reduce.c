/* k_reduce.c - sum, mean and max over any set of axes.
 *
 * The input is viewed as a sequence of dim groups that are alternately kept
 * and reduced (adjacent dims with the same role merge, size-1 dims vanish).
 * One pass reads the input in memory order: the innermost group is handled
 * by a tight loop (a row reduction when it is reduced, an elementwise
 * accumulate into a run of outputs when it is kept), and an odometer over
 * the outer groups tracks where in the output the current run lands.
 * Sums accumulate in double, so large reductions stay accurate. */
#include <math.h>
#include <string.h>
#include "kernels.h"

typedef struct {
  int32_t n_groups;           /* groups after merging, outermost first */
  size_t size[RLX_MAX_RANK];  /* elements in each group */
  int reduced[RLX_MAX_RANK];  /* 1 when the group is reduced */
  size_t out_stride[RLX_MAX_RANK]; /* output stride of each group (0 if reduced) */
  size_t in_numel, out_numel;
} reduce_plan;

/* Merges the input dims into alternating kept/reduced groups. */
static void reduce_plan_make(const rlx_shape *in, int32_t axis_mask, reduce_plan *p) {
  p->n_groups = 0;
  p->in_numel = 1;
  for (int32_t d = 0; d < in->rank; d++) {
    size_t n = (size_t)in->dims[d];
    p->in_numel *= n;
    if (n == 1) continue;
    int red = (axis_mask >> d) & 1;
    if (p->n_groups > 0 && p->reduced[p->n_groups - 1] == red) {
      p->size[p->n_groups - 1] *= n;
    } else {
      p->size[p->n_groups] = n;
      p->reduced[p->n_groups] = red;
      p->n_groups++;
    }
  }
  if (p->n_groups == 0) { /* every dim is 1: a single kept element */
    p->size[0] = 1;
    p->reduced[0] = 0;
    p->n_groups = 1;
  }
  size_t stride = 1;
  for (int32_t g = p->n_groups - 1; g >= 0; g--) {
    p->out_stride[g] = p->reduced[g] ? 0 : stride;
    if (!p->reduced[g]) stride *= p->size[g];
  }
  p->out_numel = stride;
}

/* Advances the odometer over groups [0, n_outer) by one step; returns the
 * new output offset. */
static size_t reduce_odometer_next(const reduce_plan *p, int32_t n_outer, size_t *idx, size_t off) {
  for (int32_t g = n_outer - 1; g >= 0; g--) {
    idx[g]++;
    off += p->out_stride[g];
    if (idx[g] < p->size[g]) return off;
    off -= p->out_stride[g] * idx[g];
    idx[g] = 0;
  }
  return off;
}

#define LANES 8 /* fixed-width inner loops vectorize at -O2 without fast-math */

/* NaN-propagating max. */
static inline float reduce_fmax(float m, float v) { return ((v > m) | (v != v)) ? v : m; }

static double row_sum(const float *x, size_t n) {
  double acc[LANES] = {0.0}, tail = 0.0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) acc[l] += x[i + l];
  for (; i < n; i++) tail += x[i];
  for (int l = 0; l < LANES; l++) tail += acc[l]; /* in lane order: keeps clang's SLP 4-wide */
  return tail;
}

/* 1 if any of x[0..n) is NaN (by its bits: integer ops vectorize). */
static int row_has_nan(const float *x, size_t n) {
  int32_t nan[LANES] = {0}, any = 0;
  size_t i = 0;
  for (; i + LANES <= n; i += LANES) {
    int32_t bits[LANES];
    memcpy(bits, x + i, sizeof bits);
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) nan[l] |= (bits[l] & 0x7fffffff) > 0x7f800000;
  }
  for (; i < n; i++) any |= x[i] != x[i];
  for (int l = 0; l < LANES; l++) any |= nan[l];
  return any;
}

/* Max of m0 and x[0..n), NaN if any is NaN.  The max loop is a plain
 * compare-select, which vectorizes only without the NaN test, so NaNs are
 * looked for in a second pass. */
static float row_max(float m0, const float *x, size_t n) {
  float m[LANES];
  size_t i = 0;
  for (int l = 0; l < LANES; l++) m[l] = -INFINITY;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
  for (; i < n; i++) m0 = reduce_fmax(m0, x[i]);
  for (int l = 0; l < LANES; l++) m0 = reduce_fmax(m0, m[l]);
  return row_has_nan(x, n - (n % LANES)) ? NAN : m0;
}

static void add_into(double *restrict dst, const float *restrict x, size_t n) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) dst[i + l] += x[i + l];
  for (; i < n; i++) dst[i] += x[i];
}

static void max_into(float *restrict dst, const float *restrict x, size_t n) {
  size_t i = 0;
  for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
    for (int l = 0; l < LANES; l++) dst[i + l] = reduce_fmax(dst[i + l], x[i + l]);
  for (; i < n; i++) dst[i] = reduce_fmax(dst[i], x[i]);
}

/* acc[out_numel] += sums of x over the reduced groups. */
static void reduce_sum_into(const reduce_plan *p, const float *x, double *acc) {
  int32_t n_outer = p->n_groups - 1;
  size_t inner = p->size[n_outer];
  size_t steps = p->in_numel / inner;
  size_t idx[RLX_MAX_RANK] = {0};
  size_t off = 0;
  if (p->reduced[n_outer]) {
    for (size_t s = 0; s < steps; s++, x += inner) {
      acc[off] += row_sum(x, inner);
      off = reduce_odometer_next(p, n_outer, idx, off);
    }
  } else {
    for (size_t s = 0; s < steps; s++, x += inner) {
      add_into(acc + off, x, inner);
      off = reduce_odometer_next(p, n_outer, idx, off);
    }
  }
}

/* out[out_numel] = max of x over the reduced groups. */
static void reduce_max_into(const reduce_plan *p, const float *x, float *out) {
  int32_t n_outer = p->n_groups - 1;
  size_t inner = p->size[n_outer];
  size_t steps = p->in_numel / inner;
  size_t idx[RLX_MAX_RANK] = {0};
  size_t off = 0;
  for (size_t o = 0; o < p->out_numel; o++) out[o] = -INFINITY;
  if (p->reduced[n_outer]) {
    for (size_t s = 0; s < steps; s++, x += inner) {
      out[off] = row_max(out[off], x, inner);
      off = reduce_odometer_next(p, n_outer, idx, off);
    }
  } else {
    for (size_t s = 0; s < steps; s++, x += inner) {
      max_into(out + off, x, inner);
      off = reduce_odometer_next(p, n_outer, idx, off);
    }
  }
}

/* Shared body of sum and mean: double accumulators in scratch. */
static rlx_status reduce_sum_common(const rlx_kargs *a, int mean) {
  reduce_plan p;
  reduce_plan_make(&a->in_node[0]->shape, ATTR_I(a->node, REDUCE, AXES), &p);
  double *acc = (double *)rlx_scratch_get(a->scratch, p.out_numel * sizeof(double));
  if (!acc) return rlx_error(RLX_ERR_NO_MEMORY, "reduce: no memory for %zu accumulators", p.out_numel);
  memset(acc, 0, p.out_numel * sizeof(double));
  reduce_sum_into(&p, a->in[0], acc);
  double count = mean ? (double)(p.in_numel / p.out_numel) : 1.0; /* elements per output */
  for (size_t o = 0; o < p.out_numel; o++) a->out[o] = (float)(acc[o] / count);
  return RLX_OK;
}

/* x[...] -> y[kept dims] (size-1 kept where keepdim); iattr = {axis bitmask, keepdim} */
rlx_status rlx_cpu_reduce_sum(const rlx_kargs *a) { return reduce_sum_common(a, 0); }

/* x[...] -> y[kept dims]; sum divided by the number of reduced elements */
rlx_status rlx_cpu_reduce_mean(const rlx_kargs *a) { return reduce_sum_common(a, 1); }

/* x[...] -> y[kept dims]; NaN propagates */
rlx_status rlx_cpu_reduce_max(const rlx_kargs *a) {
  reduce_plan p;
  reduce_plan_make(&a->in_node[0]->shape, ATTR_I(a->node, REDUCE, AXES), &p);
  reduce_max_into(&p, a->in[0], a->out);
  return RLX_OK;
}
