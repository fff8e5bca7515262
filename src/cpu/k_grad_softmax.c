/* k_grad_softmax.c - backward kernels of softmax, log_softmax (over any
 * axis) and the fused softmax cross-entropy (over the last axis).
 *
 *   softmax_grad      dx = y * (dy - sum(dy * y))   (y = softmax output)
 *   log_softmax_grad  dx = dy - exp(y) * sum(dy)    (y = log_softmax output)
 *   softmax_cross_entropy_grad  dx = (softmax(logits) - onehot(label)) * dy
 *
 * As in k_softmax.c the tensor is viewed as [outer, n, inner] around the
 * axis: rows are contiguous when inner is 1, otherwise the kernel walks
 * whole runs of `inner` positions so every loop is contiguous, with the
 * per-position sums in scratch.  Sums are accumulated in double. */
#include <string.h>

#include "fast_math.h"
#include "kernels.h"
#include "row_math.h"

#define LANES 8

/* Splits `s` around `axis` into outer * n * inner. */
static void axis_view(const rlx_shape *s, int32_t axis, size_t *outer, size_t *n, size_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int32_t d = 0; d < axis; d++) *outer *= (size_t)s->dims[d];
  *n = (size_t)s->dims[axis];
  for (int32_t d = axis + 1; d < s->rank; d++) *inner *= (size_t)s->dims[d];
}

/* sum of a[i] * b[i] (b NULL: of a[i]), in double, 8 lanes */
static double dot_or_sum(const float *restrict a, const float *restrict b, size_t n) {
  double acc[LANES] = {0.0}, tail = 0.0;
  size_t i = 0;
  if (b) {
    for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
      for (int l = 0; l < LANES; l++) acc[l] += (double)(a[i + l] * b[i + l]);
    for (; i < n; i++) tail += (double)(a[i] * b[i]);
  } else {
    for (; i + LANES <= n; i += LANES)
#pragma GCC unroll 8
      for (int l = 0; l < LANES; l++) acc[l] += a[i + l];
    for (; i < n; i++) tail += a[i];
  }
  for (int l = 0; l < LANES; l++) tail += acc[l];
  return tail;
}

/* acc[j] += a[j] * b[j] (b NULL: += a[j]) */
static void accumulate(double *restrict acc, const float *restrict a, const float *restrict b, size_t n) {
  if (b)
    RLX_VEC_LOOP(j, n, acc[j] += (double)(a[j] * b[j]));
  else
    RLX_VEC_LOOP(j, n, acc[j] += a[j]);
}

/* softmax: dx = y * (dy - s); log_softmax: dx = dy - exp(y) * s.  s is
 * one value per position j (s_step 1) or one for the row (s_step 0). */
static void softmax_finish(const float *restrict y, const float *restrict dy, const float *restrict s,
                           int s_step, float *restrict dx, size_t n) {
  if (s_step)
    RLX_VEC_LOOP(j, n, dx[j] = y[j] * (dy[j] - s[j]));
  else {
    float sv = s[0];
    RLX_VEC_LOOP(j, n, dx[j] = y[j] * (dy[j] - sv));
  }
}

static void log_softmax_finish(const float *restrict y, const float *restrict dy, const float *restrict s,
                               int s_step, float *restrict dx, size_t n) {
  if (s_step)
    RLX_VEC_LOOP(j, n, dx[j] = dy[j] - exp_poly(y[j]) * s[j]);
  else {
    float sv = s[0];
    RLX_VEC_LOOP(j, n, dx[j] = dy[j] - exp_poly(y[j]) * sv);
  }
}

static rlx_status axis_grad_common(const rlx_kargs *a, int log_out) {
  size_t outer, n, inner;
  axis_view(&a->in_node[0]->shape, ATTR_I(a->node, AXIS, AXIS), &outer, &n, &inner);
  const float *y = a->in[0], *dy = a->in[1];
  float *dx = a->out;
  if (inner == 1) {
    for (size_t o = 0; o < outer; o++, y += n, dy += n, dx += n) {
      float s = (float)dot_or_sum(dy, log_out ? NULL : y, n);
      if (log_out)
        log_softmax_finish(y, dy, &s, 0, dx, n);
      else
        softmax_finish(y, dy, &s, 0, dx, n);
    }
    return RLX_OK;
  }
  /* doubles first so both workspaces stay aligned */
  double *acc = (double *)rlx_scratch_get(a->scratch, inner * (sizeof(double) + sizeof(float)));
  if (!acc)
    return rlx_error(RLX_ERR_NO_MEMORY, "%s: no memory for a %zu-wide workspace",
                     log_out ? "log_softmax_grad" : "softmax_grad", inner);
  float *s = (float *)(acc + inner);
  size_t block = n * inner;
  for (size_t o = 0; o < outer; o++, y += block, dy += block, dx += block) {
    memset(acc, 0, inner * sizeof(double));
    for (size_t r = 0; r < n; r++) accumulate(acc, dy + r * inner, log_out ? NULL : y + r * inner, inner);
    for (size_t j = 0; j < inner; j++) s[j] = (float)acc[j];
    for (size_t r = 0; r < n; r++) {
      size_t off = r * inner;
      if (log_out)
        log_softmax_finish(y + off, dy + off, s, 1, dx + off, inner);
      else
        softmax_finish(y + off, dy + off, s, 1, dx + off, inner);
    }
  }
  return RLX_OK;
}

/* y[...], dy[...] -> dx[...], y = softmax(x) over the attribute axis */
rlx_status rlx_cpu_softmax_grad(const rlx_kargs *a) { return axis_grad_common(a, 0); }

/* y[...], dy[...] -> dx[...], y = log_softmax(x) over the attribute axis */
rlx_status rlx_cpu_log_softmax_grad(const rlx_kargs *a) { return axis_grad_common(a, 1); }

/* logits[..., C], labels[...] (f32 or i32 class ids), dy[...] -> dx[..., C]
 * dx = (softmax(logits) - onehot(label)) * dy; a label outside [0, C)
 * gives a zero row and sets RLX_KFLAG_BAD_INDEX. */
rlx_status rlx_cpu_softmax_cross_entropy_grad(const rlx_kargs *a) {
  const rlx_shape *ls = &a->in_node[0]->shape;
  size_t c = (size_t)ls->dims[ls->rank - 1];
  size_t rows = rlx_shape_numel(ls) / c;
  const float *x = a->in[0], *dy = a->in[2];
  float *dx = a->out;
  for (size_t r = 0; r < rows; r++, x += c, dx += c) {
    int64_t label = rlx_kindex(a, 1, r);
    if (label < 0 || label >= (int64_t)c) {
      memset(dx, 0, c * sizeof(float));
      *a->flags |= RLX_KFLAG_BAD_INDEX;
      continue;
    }
    float m = rlx_cpu_row_max(x, c);
    double sum = rlx_cpu_exp_shift_sum(x, m, dx, c); /* dx = exp(x - m) */
    double e_label = dx[label];
    float scale = (float)((double)dy[r] / sum);
    RLX_VEC_LOOP(j, c, dx[j] *= scale);
    /* p - 1 = -(sum of the other exps) / sum: no cancellation when p ~ 1 */
    dx[label] = (float)((e_label - sum) / sum * (double)dy[r]);
  }
  return RLX_OK;
}
