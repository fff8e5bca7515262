/* ref_norm.c - C twin of norm.frag (RMS norm and layer norm, forward,
 * statistics, dx and dw partial sums): the same float formulas and loop
 * orders, element by element, for the reference executor (reference.c). */
#include <math.h>

#include "gl_plan.h"

typedef struct {
  float c, dm, r, sg, sgx;
} norm_stats;

typedef struct {
  int layer, mode, grad, inl;
  const float *x, *w, *b, *dy, *stats;
  float eps;
} norm_pass;

static int32_t min_i32(int32_t a, int32_t b) { return a < b ? a : b; }

static norm_stats row_stats(const norm_pass *p, int32_t base, int32_t d, int grad) {
  norm_stats st = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  const float *x = p->x;
  if (p->layer) {
    st.c = x[base];
    float s1 = 0.0f;
    for (int32_t b = 0; b < d; b += 64) {
      int32_t e = min_i32(b + 64, d);
      float part = 0.0f;
      for (int32_t j = b; j < e; j++) part += x[base + j] - st.c;
      s1 += part;
    }
    st.dm = s1 / (float)d;
  }
  float ss = 0.0f;
  for (int32_t b = 0; b < d; b += 64) {
    int32_t e = min_i32(b + 64, d);
    float part = 0.0f;
    for (int32_t j = b; j < e; j++) {
      float xc = (x[base + j] - st.c) - st.dm;
      part += xc * xc;
    }
    ss += part;
  }
  st.r = 1.0f / sqrtf(ss / (float)d + p->eps);
  if (grad) {
    for (int32_t b = 0; b < d; b += 64) {
      int32_t e = min_i32(b + 64, d);
      float pg = 0.0f, pgx = 0.0f;
      for (int32_t j = b; j < e; j++) {
        float g = p->dy[base + j] * p->w[j];
        pg += g;
        pgx += g * ((x[base + j] - st.c) - st.dm);
      }
      st.sg += pg;
      st.sgx += pgx;
    }
  }
  return st;
}

static norm_stats read_stats(const norm_pass *p, int32_t row, int32_t base, int32_t k) {
  norm_stats st = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
  int32_t at = row * k;
  if (p->layer) {
    st.c = p->x[base];
    st.dm = p->stats[at++];
  }
  st.r = p->stats[at];
  if (p->mode == 2) {
    if (p->layer) st.sg = p->stats[at + 1];
    st.sgx = p->stats[at + (p->layer ? 2 : 1)];
  }
  return st;
}

static float norm_value(const norm_pass *p, const int32_t *u, int32_t i) {
  int32_t d = u[0];
  if (p->mode == 0) {
    int32_t k = u[1], row = i / k, which = i % k;
    norm_stats st = row_stats(p, row * d, d, p->grad && which > p->layer);
    float v[4] = {st.dm, st.r, st.sg, st.sgx};
    return v[p->layer ? which : (which == 0 ? 1 : 3)];
  }
  if (p->mode == 3) {
    int32_t chunks = u[3], per = u[4], j = i / chunks, ch = i % chunks;
    int32_t r0 = ch * per, r1 = min_i32(r0 + per, u[2]);
    float acc = 0.0f;
    for (int32_t b = r0; b < r1; b += 64) {
      int32_t e = min_i32(b + 64, r1);
      float part = 0.0f;
      for (int32_t row = b; row < e; row++) {
        norm_stats st = read_stats(p, row, row * d, u[1]);
        float xc = (p->x[row * d + j] - st.c) - st.dm;
        part += p->dy[row * d + j] * (xc * st.r);
      }
      acc += part;
    }
    return acc;
  }
  int32_t row = i / d, j = i % d, base = row * d;
  norm_stats st = p->inl ? row_stats(p, base, d, p->mode == 2) : read_stats(p, row, base, u[1]);
  float xc = (p->x[i] - st.c) - st.dm;
  if (p->mode == 1) return p->layer ? xc * st.r * p->w[j] + p->b[j] : xc * st.r * p->w[j];
  float g = p->dy[i] * p->w[j];
  float shift = p->layer ? st.r * st.sg / (float)d : 0.0f;
  return st.r * g - shift - xc * (st.r * st.r * st.r * st.sgx / (float)d);
}

void rlx_glref_norm(const rlx_glref_args *a) {
  norm_pass p = {0};
  p.layer = rlx_gl_define_value(a->pass, "LAYER", 0);
  p.mode = rlx_gl_define_value(a->pass, "MODE", 0);
  p.grad = rlx_gl_define_value(a->pass, "GRAD", 0);
  p.inl = rlx_gl_define_value(a->pass, "INLINE", 0);
  p.eps = a->pass->floats[0];
  p.x = a->in[0];
  switch (p.mode) { /* the inputs of each mode, as norm.frag names them */
    case 0: p.w = a->in[1], p.dy = a->in[2]; break;
    case 1: p.w = a->in[1], p.b = p.layer ? a->in[2] : NULL, p.stats = a->in[p.layer ? 3 : 2]; break;
    case 2: p.w = a->in[1], p.dy = a->in[2], p.stats = a->in[3]; break;
    default: p.dy = a->in[1], p.stats = a->in[2]; break;
  }
  for (size_t i = 0; i < a->out_n; i++) a->out[i] = norm_value(&p, a->pass->ints, (int32_t)i);
}
