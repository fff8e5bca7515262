/* ref_layout.c - C twins of copy.frag, strided.frag, pad.frag, concat.frag,
 * gather.frag and scatter_add.frag: the same index math, element by
 * element, for the reference executor (reference.c). */
#include "gl_plan.h"

void rlx_glref_copy(const rlx_glref_args *a) {
  for (size_t i = 0; i < a->out_n; i++) a->out[i] = a->in[0][i];
}

void rlx_glref_strided(const rlx_glref_args *a) {
  int32_t off[3];
  for (size_t i = 0; i < a->out_n; i++) {
    rlx_glref_iter(a->pass->ints, (int32_t)i, off);
    a->out[i] = a->in[0][off[0]];
  }
}

void rlx_glref_pad(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  int32_t inner = u[0], full = u[1], start = u[2], len = u[3];
  for (size_t n = 0; n < a->out_n; n++) {
    int32_t i = (int32_t)n, o = i / (full * inner), r = i % (full * inner);
    int32_t at = r / inner - start, j = r % inner;
    a->out[n] = (at < 0 || at >= len) ? 0.0f : a->in[0][(o * len + at) * inner + j];
  }
}

void rlx_glref_concat(const rlx_glref_args *a) {
  const int32_t *u = a->pass->ints;
  int32_t n_in = rlx_gl_define_value(a->pass, "N", 1), prev = rlx_gl_define_value(a->pass, "PREV", 0);
  int32_t inner = u[0], axis = u[1];
  for (size_t n = 0; n < a->out_n; n++) {
    int32_t i = (int32_t)n, o = i / (axis * inner), r = i % (axis * inner);
    int32_t at = r / inner, j = r % inner, k = 0;
    while (k < n_in && !(at >= u[2 + 2 * k] && at < u[2 + 2 * k] + u[3 + 2 * k])) k++;
    if (k < n_in)
      a->out[n] = a->in[k][(o * u[3 + 2 * k] + at - u[2 + 2 * k]) * inner + j];
    else
      a->out[n] = prev ? a->in[n_in][i] : 0.0f;
  }
}

void rlx_glref_gather(const rlx_glref_args *a) {
  int32_t d = a->pass->ints[0], v = a->pass->ints[1];
  for (size_t n = 0; n < a->out_n; n++) {
    int32_t i = (int32_t)n, id = rlx_gl_index(a->in[1][i / d], v);
    a->out[n] = id < 0 ? 0.0f : a->in[0][id * d + i % d];
  }
}

void rlx_glref_scatter_add(const rlx_glref_args *a) {
  int32_t d = a->pass->ints[0], rows = a->pass->ints[1], count = a->pass->ints[2];
  for (size_t n = 0; n < a->out_n; n++) {
    int32_t i = (int32_t)n, v = i / d, j = i % d;
    float acc = 0.0f;
    for (int32_t r = 0; r < rows; r++)
      if (rlx_gl_index(a->in[0][r], count) == v) acc += a->in[1][r * d + j];
    a->out[n] = acc;
  }
}
