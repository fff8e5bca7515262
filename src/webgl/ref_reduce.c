/* ref_reduce.c - C twins of reduce.frag, softmax.frag, softmax_ce.frag and
 * softmax_grad.frag: the same float formulas, loop orders and index math,
 * element by element, for the reference executor (reference.c). */
#include <math.h>

#include "../core/subops.h"
#include "gl_plan.h"

/* exp(t) as the shaders guard it: NaN stays NaN, below -104 gives 0. */
static float exp_shifted(float t) { return isnan(t) ? NAN : (t < -104.0f ? 0.0f : expf(t)); }

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

static float reduce_one(const rlx_glref_args *a, const int32_t *u, int max_op, int32_t i) {
  const float *x = a->in[0];
  int32_t chunks = u[18], o = i / chunks, c = i - o * chunks, base = 0, rem = o;
  for (int32_t g = 0; g < 4 && g < u[0]; g++) {
    base += (rem % u[1 + g]) * u[5 + g];
    rem /= u[1 + g];
  }
  int32_t n0 = u[9], s0 = u[10], per_chunk = u[19], pieces = u[20], piece = u[21];
  int32_t ro0 = (c / pieces) * per_chunk, ro1 = min_i32(ro0 + per_chunk, u[22]);
  int32_t j0 = (c % pieces) * piece, j1 = min_i32(j0 + piece, n0);
  float acc = max_op ? -INFINITY : 0.0f, part = 0.0f;
  int32_t count = 0;
  for (int32_t ro = ro0; ro < ro1; ro++) {
    int32_t off = base, rr = ro;
    for (int32_t g = 0; g < 3 && g < u[11]; g++) {
      off += (rr % u[12 + g]) * u[15 + g];
      rr /= u[12 + g];
    }
    for (int32_t j = j0; j < j1; j++) {
      float v = x[off + j * s0];
      if (max_op) {
        acc = (v > acc || isnan(v)) ? v : acc;
      } else {
        part += v;
        if (++count == 64) {
          acc += part;
          part = 0.0f;
          count = 0;
        }
      }
    }
  }
  return max_op ? acc : (acc + part) / a->pass->floats[0];
}

void rlx_glref_reduce(const rlx_glref_args *a) {
  int max_op = rlx_gl_define_value(a->pass, "OP", 0) == RLX_SUBOP_REDUCE_MAX;
  for (size_t i = 0; i < a->out_n; i++) a->out[i] = reduce_one(a, a->pass->ints, max_op, (int32_t)i);
}

/* ---- softmax.frag ---- */

static float row_max(const float *x, int32_t base, int32_t n, int32_t stride) {
  float m = -INFINITY;
  for (int32_t j = 0; j < n; j++)
    if (x[base + j * stride] > m) m = x[base + j * stride];
  return m;
}

static float row_exp_sum(const float *x, int32_t base, int32_t n, int32_t stride, float m) {
  float acc = 0.0f;
  for (int32_t b = 0; b < n; b += 64) {
    int32_t e = min_i32(b + 64, n);
    float part = 0.0f;
    for (int32_t j = b; j < e; j++) part += exp_shifted(x[base + j * stride] - m);
    acc += part;
  }
  return acc;
}

void rlx_glref_softmax(const rlx_glref_args *a) {
  int32_t mode = rlx_gl_define_value(a->pass, "MODE", 0), inl = rlx_gl_define_value(a->pass, "INLINE", 0);
  int32_t n = a->pass->ints[0], inner = a->pass->ints[1];
  const float *x = a->in[0];
  for (size_t k = 0; k < a->out_n; k++) {
    int32_t i = (int32_t)k;
    if (mode == 0) {
      int32_t r = i / 2, base = (r / inner) * n * inner + r % inner;
      float m = row_max(x, base, n, inner);
      a->out[k] = i % 2 == 0 ? m : row_exp_sum(x, base, n, inner, m);
      continue;
    }
    int32_t r = (i / (n * inner)) * inner + i % inner;
    float m, s;
    if (inl) {
      int32_t base = (r / inner) * n * inner + r % inner;
      m = row_max(x, base, n, inner);
      s = row_exp_sum(x, base, n, inner, m);
    } else {
      m = a->in[1][2 * r];
      s = a->in[1][2 * r + 1];
    }
    if (mode == 1)
      a->out[k] = exp_shifted(x[i] - m) * (1.0f / s);
    else
      a->out[k] = isnan(s) ? NAN : (x[i] - m) - logf(s);
  }
}

/* ---- softmax_ce.frag ---- */

void rlx_glref_softmax_ce(const rlx_glref_args *a) {
  int grad = rlx_gl_define_value(a->pass, "GRAD", 0), inl = rlx_gl_define_value(a->pass, "INLINE", 0);
  int32_t classes = a->pass->ints[0];
  const float *x = a->in[0], *labels = a->in[1], *dys = grad ? a->in[2] : NULL;
  const float *stats = inl ? NULL : a->in[grad ? 3 : 2];
  for (size_t k = 0; k < a->out_n; k++) {
    int32_t i = (int32_t)k, r = grad ? i / classes : i, c = grad ? i % classes : 0;
    int32_t label = rlx_gl_index(labels[r], classes);
    if (label < 0) {
      a->out[k] = 0.0f;
      continue;
    }
    int32_t base = r * classes;
    float m, s;
    if (inl) {
      m = row_max(x, base, classes, 1);
      s = row_exp_sum(x, base, classes, 1, m);
    } else {
      m = stats[2 * r];
      s = stats[2 * r + 1];
    }
    if (grad) {
      float e = exp_shifted(x[i] - m), dy = dys[r];
      a->out[k] = c == label ? (e - s) / s * dy : e * (dy / s);
    } else {
      a->out[k] = isnan(s) ? NAN : logf(s) + (m - x[base + label]);
    }
  }
}

/* ---- softmax_grad.frag ---- */

static float grad_row_sum(const float *y, const float *dy, int log_out, int32_t r, int32_t n, int32_t inner) {
  int32_t base = (r / inner) * n * inner + r % inner;
  float acc = 0.0f;
  for (int32_t b = 0; b < n; b += 64) {
    int32_t e = min_i32(b + 64, n);
    float part = 0.0f;
    for (int32_t j = b; j < e; j++) {
      int32_t at = base + j * inner;
      part += log_out ? dy[at] : dy[at] * y[at];
    }
    acc += part;
  }
  return acc;
}

void rlx_glref_softmax_grad(const rlx_glref_args *a) {
  int log_out = rlx_gl_define_value(a->pass, "LOG", 0), mode = rlx_gl_define_value(a->pass, "MODE", 0);
  int32_t n = a->pass->ints[0], inner = a->pass->ints[1];
  const float *y = a->in[0], *dy = a->in[1];
  for (size_t k = 0; k < a->out_n; k++) {
    int32_t i = (int32_t)k;
    if (mode == 0) {
      a->out[k] = grad_row_sum(y, dy, log_out, i, n, inner);
      continue;
    }
    int32_t r = (i / (n * inner)) * inner + i % inner;
    float s = mode == 1 ? a->in[2][r] : grad_row_sum(y, dy, log_out, r, n, inner);
    if (log_out) {
      float e = isnan(y[i]) ? NAN : (y[i] < -104.0f ? 0.0f : expf(y[i]));
      a->out[k] = dy[i] - e * s;
    } else {
      a->out[k] = y[i] * (dy[i] - s);
    }
  }
}
