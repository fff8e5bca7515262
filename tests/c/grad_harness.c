/* grad_harness.c - runs one gradient check (see grad_case.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grad_case.h"
#include "rlx_gguf.h"

#define MAX_IN 8
#define MAX_CHECKS_PER_INPUT 40

struct grad_builder {
  rlx_graph *g;
  int32_t n;
  rlx_node node[MAX_IN];
  int kind[MAX_IN], diff[MAX_IN];
  int32_t classes[MAX_IN];
  size_t numel[MAX_IN];
  char name[MAX_IN][16];
};

rlx_graph *grad_graph(grad_builder *b) { return b->g; }

rlx_node grad_in(grad_builder *b, int32_t rank, const int32_t *dims, int kind, int no_grad, int32_t classes) {
  if (b->n >= MAX_IN) return RLX_NO_NODE;
  int32_t k = b->n++;
  snprintf(b->name[k], sizeof b->name[k], "in%d", (int)k);
  b->node[k] = rlx_input(b->g, b->name[k], rank, dims, kind >= FILL_INDEX ? RLX_I32 : RLX_F32);
  b->kind[k] = kind;
  b->diff[k] = !no_grad && kind != FILL_LABELS && kind != FILL_BINARY && kind < FILL_INDEX;
  b->classes[k] = classes;
  b->numel[k] = 1;
  for (int32_t i = 0; i < rank; i++) b->numel[k] *= (size_t)dims[i];
  return b->node[k];
}

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double unit(uint64_t seed, uint64_t i) { return (double)(mix(seed * 0x9E3779B97F4A7C15ull + i + 1) >> 11) / 9007199254740992.0; }

/* FILL_GGUF: as many whole blocks of the type as the n words hold. */
static void fill_gguf(const grad_builder *b, int32_t k, float *x, uint64_t seed) {
  size_t n = b->numel[k];
  rlx_gguf_type t = (rlx_gguf_type)b->classes[k];
  int32_t be = rlx_gguf_type_block_elems(t), bb = rlx_gguf_type_block_bytes(t);
  memset(x, 0, n * sizeof(float));
  if (be <= 0 || bb <= 0) return;
  size_t count = n * 4 / (size_t)bb * (size_t)be;
  float *v = malloc((count ? count : 1) * sizeof(float));
  if (!v) return;
  for (size_t i = 0; i < count; i++) v[i] = (float)(2.0 * unit(seed, i) - 1.0);
  rlx_gguf_quantize(t, v, (int64_t)count, x, n * sizeof(float));
  free(v);
}

static void fill(const grad_builder *b, int32_t k, float *x, uint64_t seed) {
  size_t n = b->numel[k];
  if (b->kind[k] == FILL_GGUF) {
    fill_gguf(b, k, x, seed);
    return;
  }
  if (b->kind[k] == FILL_INDEX) { /* int32 bits */
    for (size_t i = 0; i < n; i++) ((int32_t *)x)[i] = (int32_t)(unit(seed, i) * b->classes[k]);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    double u = unit(seed, i);
    switch (b->kind[k]) {
      case FILL_POSITIVE: x[i] = (float)(0.5 + 1.5 * u); break;
      case FILL_LABELS: x[i] = (float)(int32_t)(u * b->classes[k]); break;
      case FILL_BINARY: x[i] = (i % 3 == 0) ? 1.0f : (u < 0.6 ? 1.0f : 0.0f); break;
      case FILL_AWAY: x[i] = (float)((0.1 + 0.9 * u) * (unit(seed + 7, i) < 0.5 ? -1 : 1)); break;
      case FILL_DISTINCT: x[i] = 0.0f; break; /* below */
      default: x[i] = (float)(2.0 * u - 1.0);
    }
  }
  if (b->kind[k] == FILL_DISTINCT) { /* a shuffled ramp: neighbours differ by >= 0.02 */
    for (size_t i = 0; i < n; i++) x[i] = (float)(-1.0 + 0.02 * (double)i * (100.0 / (double)(n > 100 ? n : 100)));
    for (size_t i = n; i > 1; i--) {
      size_t j = (size_t)(unit(seed, 1000003 + i) * (double)i);
      float t = x[i - 1];
      x[i - 1] = x[j];
      x[j] = t;
    }
  }
}

static void fail(gradcase_result *r, rlx_status st, const char *what) {
  r->status = st;
  snprintf(r->message, sizeof r->message, "%s: %s", what, rlx_last_error());
}

/* L = sum(y * r) in double from the forward session. */
static double loss_of(rlx_session *fwd, const double *r) {
  const float *y = rlx_session_output(fwd, 0);
  size_t n = rlx_session_output_len(fwd, 0);
  double s = 0;
  for (size_t i = 0; i < n; i++) s += (double)y[i] * r[i];
  return s;
}

void gradcase_run(const grad_case *c, double scale_analytic, gradcase_result *res) {
  grad_builder b;
  rlx_session *bwd = NULL, *bwd3 = NULL, *fwd = NULL;
  float *x[MAX_IN] = {0}, *rf = NULL;
  double *r = NULL;
  rlx_node wrt[MAX_IN], outs[MAX_IN + 1];
  int32_t n_wrt = 0, wrt_of[MAX_IN];
  rlx_status st;
  memset(res, 0, sizeof *res);
  memset(&b, 0, sizeof b);
  b.g = rlx_graph_new();
  rlx_node y = c->build(&b, c);
  int32_t dims[RLX_MAX_RANK], rank = rlx_node_shape(b.g, y, dims);
  if (rank < 0) {
    fail(res, rlx_graph_status(b.g), "build");
    snprintf(res->message, sizeof res->message, "build: %s", rlx_graph_error(b.g));
    goto done;
  }
  size_t ny = 1;
  for (int32_t i = 0; i < rank; i++) ny *= (size_t)dims[i];
  r = malloc(ny * sizeof *r);
  rf = malloc(ny * sizeof *rf);
  for (size_t i = 0; i < ny; i++) rf[i] = (float)(2.0 * unit(99, i) - 1.0), r[i] = rf[i];
  rlx_node rc = rlx_constant(b.g, rank, dims, rf);
  int32_t axes[RLX_MAX_RANK];
  for (int32_t i = 0; i < rank; i++) axes[i] = i;
  rlx_node prod = rlx_mul(b.g, y, rc);
  rlx_node loss = rank ? rlx_reduce_sum(b.g, prod, axes, rank, 0) : prod;
  for (int32_t k = 0; k < b.n; k++)
    if (b.diff[k]) wrt_of[n_wrt] = k, wrt[n_wrt++] = b.node[k];
  if ((st = rlx_grad_with_loss(b.g, loss, wrt, n_wrt, outs)) != RLX_OK) {
    fail(res, st, "grad");
    goto done;
  }
  /* the gradients on one thread, and again on three (bitwise the same) */
  const rlx_compile_options one = {RLX_DEVICE_CPU, 0, 0, 1}, three = {RLX_DEVICE_CPU, 0, 0, 3};
  if ((st = rlx_compile(b.g, outs, n_wrt + 1, &one, &bwd)) != RLX_OK ||
      (st = rlx_compile(b.g, outs, n_wrt + 1, &three, &bwd3)) != RLX_OK ||
      (st = rlx_compile(b.g, &y, 1, &one, &fwd)) != RLX_OK) {
    fail(res, st, "compile");
    goto done;
  }
  const float seed = 1.0f;
  rlx_session_set_input(bwd, "d_output", &seed, 1);
  rlx_session_set_input(bwd3, "d_output", &seed, 1);
  for (int32_t k = 0; k < b.n; k++) {
    x[k] = malloc(b.numel[k] * sizeof(float));
    fill(&b, k, x[k], 1234 + (uint64_t)k);
    if (b.kind[k] >= FILL_INDEX) { /* int32 bits */
      rlx_session_set_input_i32(bwd, b.name[k], (const int32_t *)x[k], b.numel[k]);
      rlx_session_set_input_i32(bwd3, b.name[k], (const int32_t *)x[k], b.numel[k]);
      rlx_session_set_input_i32(fwd, b.name[k], (const int32_t *)x[k], b.numel[k]);
      continue;
    }
    rlx_session_set_input(bwd, b.name[k], x[k], b.numel[k]);
    rlx_session_set_input(bwd3, b.name[k], x[k], b.numel[k]);
    rlx_session_set_input(fwd, b.name[k], x[k], b.numel[k]);
  }
  if ((st = rlx_session_run(bwd)) != RLX_OK || (st = rlx_session_run(bwd3)) != RLX_OK ||
      (st = rlx_session_run(fwd)) != RLX_OK) {
    fail(res, st, "run");
    goto done;
  }
  for (int32_t o = 0; o <= n_wrt; o++)
    if (memcmp(rlx_session_output(bwd, o), rlx_session_output(bwd3, o), rlx_session_output_len(bwd, o) * sizeof(float))) {
      res->status = RLX_ERR_STATE;
      snprintf(res->message, sizeof res->message, "output %d on 3 threads differs from 1 thread", (int)o);
      goto done;
    }
  double tol = c->tol > 0 ? c->tol : 1e-2;
  for (int32_t w = 0; w < n_wrt; w++) {
    int32_t k = wrt_of[w];
    const float *an = rlx_session_output(bwd, 1 + w);
    size_t n = b.numel[k], stride = n > MAX_CHECKS_PER_INPUT ? n / MAX_CHECKS_PER_INPUT : 1;
    double gmax = 0;
    for (size_t i = 0; i < n; i++) gmax = fmax(gmax, fabs(an[i]));
    for (size_t i = (size_t)w % stride; i < n; i += stride) {
      float keep = x[k][i];
      float eps = 1e-3f * fmaxf(1.0f, fabsf(keep));
      double lp, lm;
      x[k][i] = keep + eps;
      rlx_session_set_input(fwd, b.name[k], x[k], n);
      rlx_session_run(fwd);
      lp = loss_of(fwd, r);
      x[k][i] = keep - eps;
      rlx_session_set_input(fwd, b.name[k], x[k], n);
      rlx_session_run(fwd);
      lm = loss_of(fwd, r);
      x[k][i] = keep;
      rlx_session_set_input(fwd, b.name[k], x[k], n);
      double fd = (lp - lm) / (2.0 * (double)eps), a = an[i] * scale_analytic;
      double err = fabs(fd - a) / fmax(fmax(fabs(a), 0.05 * gmax), 1e-3);
      res->checked++;
      if (!(err <= res->max_err)) {
        res->max_err = err;
        if (err > tol)
          snprintf(res->message, sizeof res->message, "input %d element %zu: analytic %.6g vs finite difference %.6g (error %.3g > %.3g)",
                   (int)k, i, a, fd, err, tol);
      }
    }
  }
  res->status = RLX_OK;
done:
  for (int32_t k = 0; k < MAX_IN; k++) free(x[k]);
  free(r);
  free(rf);
  rlx_session_free(bwd);
  rlx_session_free(bwd3);
  rlx_session_free(fwd);
  rlx_graph_free(b.g);
}
