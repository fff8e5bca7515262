/* ref_reduce.c - naive double-precision references for the reduce group
 * (tests/c/cases_reduce.c): reductions, softmax / log-softmax, softmax
 * cross-entropy and the two normalizations.  Written element by element
 * from the definitions, sharing nothing with the kernels.  The case
 * parameter layouts are documented in cases_reduce.c. */
#include <math.h>
#include <string.h>
#include "op_case.h"

void ref_reduce_case(const op_case *c, const op_inputs *in, double *expect);
void ref_softmax_case(const op_case *c, const op_inputs *in, double *expect);
void ref_softmax_ce_case(const op_case *c, const op_inputs *in, double *expect);
void ref_norm_case(const op_case *c, const op_inputs *in, double *expect);

/* p = {op (0 sum, 1 mean, 2 max), axis mask, keepdim, negative axes, rank, dims...} */
void ref_reduce_case(const op_case *c, const op_inputs *in, double *expect) {
  int op = c->p[0], mask = c->p[1];
  int32_t rank = in->rank[0];
  const int32_t *dims = in->dims[0];
  size_t n_in = ref_numel(rank, dims), n_out = 1, count = 1;
  for (int32_t d = 0; d < rank; d++) {
    if ((mask >> d) & 1)
      count *= (size_t)dims[d];
    else
      n_out *= (size_t)dims[d];
  }
  for (size_t o = 0; o < n_out; o++) expect[o] = op == 2 ? -INFINITY : 0.0;
  int32_t idx[RLX_MAX_RANK];
  for (size_t f = 0; f < n_in; f++) {
    ref_unravel(f, rank, dims, idx);
    size_t o = 0;
    for (int32_t d = 0; d < rank; d++)
      if (!((mask >> d) & 1)) o = o * (size_t)dims[d] + (size_t)idx[d];
    double x = in->data[0][f];
    if (op == 2)
      expect[o] = x > expect[o] ? x : expect[o];
    else
      expect[o] += x;
  }
  if (op == 1)
    for (size_t o = 0; o < n_out; o++) expect[o] /= (double)count;
}

/* p = {log flag, axis (may be negative), rank, dims...} */
void ref_softmax_case(const op_case *c, const op_inputs *in, double *expect) {
  int log_out = c->p[0];
  int32_t rank = in->rank[0];
  const int32_t *dims = in->dims[0];
  int32_t axis = c->p[1] < 0 ? c->p[1] + rank : c->p[1];
  size_t n = ref_numel(rank, dims);
  size_t stride = 1;
  for (int32_t d = axis + 1; d < rank; d++) stride *= (size_t)dims[d];
  int32_t len = dims[axis];
  int32_t idx[RLX_MAX_RANK];
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, dims, idx);
    size_t base = f - (size_t)idx[axis] * stride; /* same position, axis index 0 */
    double m = -INFINITY;
    for (int32_t r = 0; r < len; r++) {
      double v = in->data[0][base + (size_t)r * stride];
      if (v > m) m = v;
    }
    double sum = 0.0;
    for (int32_t r = 0; r < len; r++) sum += exp(in->data[0][base + (size_t)r * stride] - m);
    double x = in->data[0][f];
    expect[f] = log_out ? (x - m) - log(sum) : exp(x - m) / sum;
  }
}

/* Label of sample r: f32 ids truncate toward zero; i32 ids are int bits. */
static int64_t ref_label(const op_inputs *in, int i32_labels, size_t r) {
  if (i32_labels) {
    int32_t v;
    memcpy(&v, &in->data[1][r], sizeof v);
    return v;
  }
  return (int64_t)trunc(in->data[1][r]);
}

/* p = {i32 labels, logits rank, logits dims...}; loss per sample =
 * logsumexp(row) - row[label], 0 for a label outside [0, C). */
void ref_softmax_ce_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t rank = in->rank[0];
  int32_t classes = in->dims[0][rank - 1];
  size_t rows = ref_numel(rank, in->dims[0]) / (size_t)classes;
  for (size_t r = 0; r < rows; r++) {
    const float *x = in->data[0] + r * (size_t)classes;
    int64_t label = ref_label(in, c->p[0], r);
    if (label < 0 || label >= classes) {
      expect[r] = 0.0;
      continue;
    }
    double m = -INFINITY;
    for (int32_t i = 0; i < classes; i++)
      if (x[i] > m) m = x[i];
    double sum = 0.0;
    for (int32_t i = 0; i < classes; i++) sum += exp((double)x[i] - m);
    expect[r] = m + log(sum) - x[label];
  }
}

/* p = {kind (0 rms, 1 layer), eps in units of 1e-6, rank, dims...};
 * inputs x[..., D], w[D] (, b[D]). */
void ref_norm_case(const op_case *c, const op_inputs *in, double *expect) {
  int layer = c->p[0];
  double eps = (double)(float)(c->p[1] * 1e-6); /* the graph stores eps as float */
  int32_t rank = in->rank[0];
  int32_t d = in->dims[0][rank - 1];
  size_t rows = ref_numel(rank, in->dims[0]) / (size_t)d;
  const float *w = in->data[1];
  const float *b = layer ? in->data[2] : NULL;
  for (size_t r = 0; r < rows; r++) {
    const float *x = in->data[0] + r * (size_t)d;
    double *y = expect + r * (size_t)d;
    if (layer) {
      double mean = 0.0, var = 0.0;
      for (int32_t i = 0; i < d; i++) mean += x[i];
      mean /= d;
      for (int32_t i = 0; i < d; i++) var += (x[i] - mean) * (x[i] - mean);
      var /= d;
      for (int32_t i = 0; i < d; i++) y[i] = (x[i] - mean) / sqrt(var + eps) * w[i] + b[i];
    } else {
      double ms = 0.0;
      for (int32_t i = 0; i < d; i++) ms += (double)x[i] * x[i];
      ms /= d;
      for (int32_t i = 0; i < d; i++) y[i] = x[i] / sqrt(ms + eps) * w[i];
    }
  }
}
