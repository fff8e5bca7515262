/* ref_grad_pointwise.c - naive double-precision references for the grad_pointwise group
 * (tests/c/cases_grad_pointwise.c): gelu_grad, silu_grad, narrow_grad,
 * scatter_add, softmax_grad, log_softmax_grad and
 * softmax_cross_entropy_grad.  Derived from the forward definitions
 * independently of the kernels: the activation derivatives are the
 * analytic derivatives of the tanh form (gelu) and x / (1 + e^-x) (silu),
 * and the softmax gradients are explicit Jacobian-vector products
 * dx_j = sum_i dy_i d(y_i)/d(x_j).  adam_update: Adam's (AdamW's)
 * update as Kingma and Ba (Loshchilov and Hutter) write it, with the bias
 * corrections given.  Parameter layouts are documented in
 * cases_grad_pointwise.c. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "op_case.h"

void ref_grad_pointwise_case(const op_case *c, const op_inputs *in, double *expect);
void ref_narrow_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_scatter_add_case(const op_case *c, const op_inputs *in, double *expect);
void ref_axis_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_softmax_ce_grad_case(const op_case *c, const op_inputs *in, double *expect);
void ref_adam_update_case(const op_case *c, const op_inputs *in, double *expect);

/* An integer stored in input k at i: int32 bits or a float value. */
static int64_t read_index(const op_inputs *in, int32_t k, size_t i, int is_i32) {
  if (is_i32) {
    int32_t v;
    memcpy(&v, &in->data[k][i], sizeof v);
    return v;
  }
  return (int64_t)in->data[k][i];
}

/* gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3):
 * gelu'(x) = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) sqrt(2/pi) (1 + 3 * 0.044715 x^2).
 * The limits are 1 at +inf and 0 at -inf. */
static double gelu_derivative(double x) {
  if (isinf(x)) return x > 0 ? 1.0 : 0.0;
  const double k = sqrt(2.0 / 3.14159265358979323846), c = 0.044715;
  double t = tanh(k * (x + c * x * x * x));
  return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * k * (1.0 + 3.0 * c * x * x);
}

/* silu(x) = x s(x), s = 1 / (1 + e^-x): silu'(x) = s + x s (1 - s).
 * The limits are 1 at +inf and 0 at -inf. */
static double silu_derivative(double x) {
  if (isinf(x)) return x > 0 ? 1.0 : 0.0;
  double s = 1.0 / (1.0 + exp(-x));
  return s + x * s * (1.0 - s);
}

/* p = {op (0 gelu, 1 silu), extremes, rank, dims...}; inputs x, dy */
void ref_grad_pointwise_case(const op_case *c, const op_inputs *in, double *expect) {
  size_t n = ref_numel(in->rank[0], in->dims[0]);
  for (size_t i = 0; i < n; i++) {
    double x = in->data[0][i], dy = in->data[1][i];
    expect[i] = dy * (c->p[0] ? silu_derivative(x) : gelu_derivative(x));
  }
}

/* p = {axis, start, full, rank, dy dims...}: each output element is dy at
 * the same index shifted by start on the axis, or 0 outside the range. */
void ref_narrow_grad_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t rank = in->rank[0], axis = c->p[0] < 0 ? c->p[0] + rank : c->p[0];
  int32_t start = c->p[1], len = in->dims[0][axis];
  int32_t out_dims[RLX_MAX_RANK], idx[RLX_MAX_RANK];
  memcpy(out_dims, in->dims[0], sizeof(int32_t) * (size_t)rank);
  out_dims[axis] = c->p[2];
  size_t n = ref_numel(rank, out_dims);
  for (size_t f = 0; f < n; f++) {
    ref_unravel(f, rank, out_dims, idx);
    if (idx[axis] < start || idx[axis] >= start + len) {
      expect[f] = 0.0;
      continue;
    }
    idx[axis] -= start;
    size_t src = 0;
    for (int32_t d = 0; d < rank; d++) src = src * (size_t)in->dims[0][d] + (size_t)idx[d];
    expect[f] = in->data[0][src];
  }
}

/* p = {i32 ids, V, ids rank, ids dims..., D}; inputs ids, dy:
 * out[v][d] = sum over i with ids[i] == v of dy[i][d]. */
void ref_scatter_add_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t v_rows = c->p[1], rank = c->p[2], d_cols = c->p[3 + rank];
  size_t n_ids = ref_numel(in->rank[0], in->dims[0]);
  for (size_t o = 0; o < (size_t)v_rows * (size_t)d_cols; o++) expect[o] = 0.0;
  for (size_t i = 0; i < n_ids; i++) {
    int64_t id = read_index(in, 0, i, c->p[0]);
    if (id < 0 || id >= v_rows) continue;
    for (int32_t d = 0; d < d_cols; d++) expect[id * d_cols + d] += in->data[1][i * (size_t)d_cols + (size_t)d];
  }
}

/* p = {log flag, axis, from forward, rank, dims...}.
 * From forward (inputs x, dy; the graph computes y = softmax(x) or
 * log_softmax(x) itself): p = softmax(x) over the axis in double and
 *   softmax:     d y_i / d x_j = p_i (delta_ij - p_j)
 *   log_softmax: d y_i / d x_j = delta_ij - p_j
 * with dx_j = sum_i dy_i d y_i / d x_j.
 * Direct (inputs y, dy with y filled arbitrarily): the op's defining
 * formula, softmax y (dy - sum(dy y)) or log_softmax dy - exp(y) sum(dy). */
void ref_axis_grad_case(const op_case *c, const op_inputs *in, double *expect) {
  int log_out = c->p[0], from_forward = c->p[2];
  int32_t rank = in->rank[0], axis = c->p[1] < 0 ? c->p[1] + rank : c->p[1];
  const int32_t *dims = in->dims[0];
  size_t outer = 1, inner = 1, n = (size_t)dims[axis];
  for (int32_t d = 0; d < axis; d++) outer *= (size_t)dims[d];
  for (int32_t d = axis + 1; d < rank; d++) inner *= (size_t)dims[d];
  double *p = malloc(n * sizeof(double));
  for (size_t o = 0; o < outer; o++)
    for (size_t j0 = 0; j0 < inner; j0++) {
      size_t base = o * n * inner + j0;
#define AT(k, i) ((double)in->data[k][base + (i) * inner])
      if (from_forward) {
        double m = -INFINITY, sum = 0.0;
        for (size_t i = 0; i < n; i++) m = AT(0, i) > m ? AT(0, i) : m;
        for (size_t i = 0; i < n; i++) sum += exp(AT(0, i) - m);
        for (size_t i = 0; i < n; i++) p[i] = exp(AT(0, i) - m) / sum;
        for (size_t j = 0; j < n; j++) {
          double dx = 0.0;
          for (size_t i = 0; i < n; i++) {
            double delta = i == j ? 1.0 : 0.0;
            double jac = log_out ? delta - p[j] : p[i] * (delta - p[j]);
            dx += AT(1, i) * jac;
          }
          expect[base + j * inner] = dx;
        }
      } else {
        double s = 0.0;
        for (size_t i = 0; i < n; i++) s += log_out ? AT(1, i) : AT(1, i) * AT(0, i);
        for (size_t j = 0; j < n; j++)
          expect[base + j * inner] = log_out ? AT(1, j) - exp(AT(0, j)) * s : AT(0, j) * (AT(1, j) - s);
      }
#undef AT
    }
  free(p);
}

/* p = {i32 labels, logits rank, logits dims...}; inputs logits, labels, dy:
 * d/dlogits of dy * (logsumexp(logits) - logits[label]) =
 * (softmax(logits) - onehot(label)) * dy, row by row. */
void ref_softmax_ce_grad_case(const op_case *c, const op_inputs *in, double *expect) {
  int32_t rank = c->p[1];
  size_t classes = (size_t)c->p[2 + rank - 1];
  size_t rows = ref_numel(rank, &c->p[2]) / classes;
  for (size_t r = 0; r < rows; r++) {
    const float *x = in->data[0] + r * classes;
    int64_t label = read_index(in, 1, r, c->p[0]);
    double dy = in->data[2][r], m = -INFINITY, sum = 0.0;
    for (size_t j = 0; j < classes; j++) m = x[j] > m ? x[j] : m;
    for (size_t j = 0; j < classes; j++) sum += exp((double)x[j] - m);
    for (size_t j = 0; j < classes; j++) {
      double onehot = (int64_t)j == label ? 1.0 : 0.0;
      expect[r * classes + j] = (exp((double)x[j] - m) / sum - onehot) * dy;
    }
  }
}

/* p' = p - lr ((m' / bias1) / (sqrt(v' / bias2) + eps) + wd p) with
 * m' = b1 m + (1 - b1) g, v' = b2 v + (1 - b2) g^2 (inputs p, g, m, v, lr,
 * bias1, bias2); hyperparameters from c->p in millionths, as the f32
 * attributes the case gives the op. */
void ref_adam_update_case(const op_case *c, const op_inputs *in, double *expect) {
  const double b1 = c->p[0] * 1e-6f, b2 = c->p[1] * 1e-6f, eps = c->p[2] * 1e-6f, wd = c->p[3] * 1e-6f;
  const double lr = in->data[4][0], bias1 = in->data[5][0], bias2 = in->data[6][0];
  size_t n = 1;
  for (int32_t d = 0; d < c->p[4]; d++) n *= (size_t)c->p[5 + d];
  for (size_t i = 0; i < n; i++) {
    const double p = in->data[0][i], g = in->data[1][i];
    const double m = b1 * in->data[2][i] + (1 - b1) * g, v = b2 * in->data[3][i] + (1 - b2) * g * g;
    expect[i] = p - lr * ((m / bias1) / (sqrt(v / bias2) + eps) + wd * p);
  }
}
