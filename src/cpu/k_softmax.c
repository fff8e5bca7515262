/* k_softmax.c - softmax and log-softmax over any axis, and the fused
 * softmax cross-entropy loss over the last axis.
 *
 * The input is viewed as [outer, n, inner] around the axis.  When inner is 1
 * each row is contiguous; otherwise the n values of one softmax are inner
 * apart, and the kernel walks them for a whole run of `inner` positions at
 * once so every loop stays contiguous.  All variants subtract the row max
 * before exp (numerically stable) and sum the exponentials in double. */
#include <math.h>
#include "kernels.h"

/* Splits `s` around `axis` into outer * n * inner. */
static void softmax_view(const rlx_shape *s, int32_t axis, size_t *outer, size_t *n, size_t *inner) {
  *outer = 1;
  *inner = 1;
  for (int32_t d = 0; d < axis; d++) *outer *= (size_t)s->dims[d];
  *n = (size_t)s->dims[axis];
  for (int32_t d = axis + 1; d < s->rank; d++) *inner *= (size_t)s->dims[d];
}

/* One contiguous row of n values. */
static void softmax_row(const float *x, float *y, size_t n, int log_out) {
  float m = x[0];
  for (size_t i = 1; i < n; i++) m = x[i] > m ? x[i] : m;
  double sum = 0.0;
  if (log_out) {
    for (size_t i = 0; i < n; i++) sum += expf(x[i] - m);
    float log_sum = (float)log(sum);
    for (size_t i = 0; i < n; i++) y[i] = (x[i] - m) - log_sum;
  } else {
    for (size_t i = 0; i < n; i++) {
      float e = expf(x[i] - m);
      y[i] = e;
      sum += e;
    }
    float inv = (float)(1.0 / sum);
    for (size_t i = 0; i < n; i++) y[i] *= inv;
  }
}

/* n values `inner` apart, for `inner` interleaved softmaxes at once; mx holds
 * 2 * inner floats and sum inner doubles of workspace. */
static void softmax_strided(const float *x, float *y, size_t n, size_t inner, int log_out, float *mx,
                            double *sum) {
  for (size_t j = 0; j < inner; j++) {
    mx[j] = x[j];
    sum[j] = 0.0;
  }
  for (size_t r = 1; r < n; r++) {
    const float *xr = x + r * inner;
    for (size_t j = 0; j < inner; j++) mx[j] = xr[j] > mx[j] ? xr[j] : mx[j];
  }
  for (size_t r = 0; r < n; r++) {
    const float *xr = x + r * inner;
    float *yr = y + r * inner;
    for (size_t j = 0; j < inner; j++) {
      float e = expf(xr[j] - mx[j]);
      if (!log_out) yr[j] = e;
      sum[j] += e;
    }
  }
  if (log_out) {
    float *log_sum = mx + inner;
    for (size_t j = 0; j < inner; j++) log_sum[j] = (float)log(sum[j]);
    for (size_t r = 0; r < n; r++) {
      const float *xr = x + r * inner;
      float *yr = y + r * inner;
      for (size_t j = 0; j < inner; j++) yr[j] = (xr[j] - mx[j]) - log_sum[j];
    }
  } else {
    for (size_t j = 0; j < inner; j++) mx[j] = (float)(1.0 / sum[j]); /* mx now holds 1/sum */
    for (size_t r = 0; r < n; r++) {
      float *yr = y + r * inner;
      for (size_t j = 0; j < inner; j++) yr[j] *= mx[j];
    }
  }
}

static rlx_status softmax_common(const rlx_kargs *a, int log_out) {
  size_t outer, n, inner;
  softmax_view(&a->in_node[0]->shape, a->node->iattr[0], &outer, &n, &inner);
  const float *x = a->in[0];
  float *y = a->out;
  if (inner == 1) {
    for (size_t o = 0; o < outer; o++) softmax_row(x + o * n, y + o * n, n, log_out);
    return RLX_OK;
  }
  /* doubles first so both workspaces stay aligned */
  double *sum = (double *)rlx_scratch_get(a->scratch, inner * (sizeof(double) + 2 * sizeof(float)));
  if (!sum) return rlx_error(RLX_ERR_NO_MEMORY, "softmax: no memory for %zu-wide workspace", inner);
  float *mx = (float *)(sum + inner);
  size_t block = n * inner;
  for (size_t o = 0; o < outer; o++) softmax_strided(x + o * block, y + o * block, n, inner, log_out, mx, sum);
  return RLX_OK;
}

/* x[...] -> y[...], softmax over iattr[0] = axis */
rlx_status rlx_cpu_softmax(const rlx_kargs *a) { return softmax_common(a, 0); }

/* x[...] -> y[...], x - logsumexp(x) over iattr[0] = axis */
rlx_status rlx_cpu_log_softmax(const rlx_kargs *a) { return softmax_common(a, 1); }

/* logits[..., C], labels[...] (f32 or i32 class ids) -> loss[...]
 * loss = logsumexp(logits) - logits[label]; a label outside [0, C) gives 0
 * and sets RLX_KFLAG_BAD_INDEX. */
rlx_status rlx_cpu_softmax_cross_entropy(const rlx_kargs *a) {
  const rlx_shape *ls = &a->in_node[0]->shape;
  size_t c = (size_t)ls->dims[ls->rank - 1];
  size_t rows = rlx_shape_numel(ls) / c;
  const float *x = a->in[0];
  for (size_t r = 0; r < rows; r++, x += c) {
    int64_t label = rlx_kindex(a, 1, r);
    if (label < 0 || label >= (int64_t)c) {
      a->out[r] = 0.0f;
      *a->flags |= RLX_KFLAG_BAD_INDEX;
      continue;
    }
    float m = x[0];
    for (size_t i = 1; i < c; i++) m = x[i] > m ? x[i] : m;
    double sum = 0.0;
    for (size_t i = 0; i < c; i++) sum += expf(x[i] - m);
    /* (m - x[label]) is exact-ish and >= 0; adding log(sum) last avoids
     * cancelling two large logsumexp terms */
    a->out[r] = (float)(log(sum) + ((double)m - (double)x[label]));
  }
  return RLX_OK;
}
