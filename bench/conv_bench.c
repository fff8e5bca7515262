/* conv_bench.c - times the conv2d kernels on the vision models' layer
 * shapes (batch 64).  Forward: the direct loops, im2col + rlx_gemm, im2col +
 * the original unblocked portable GEMM loop, and whichever strategy the
 * kernel picks.  Backward (conv2d_grad_input, conv2d_grad_weight): the
 * direct loops, the GEMM strategy and the kernel's pick.  Includes k_conv.c
 * and k_conv_grad.c to reach their strategies; links against build/librlx.a.
 *
 *   make build/librlx.a && cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude \
 *     bench/conv_bench.c build/librlx.a -lm -o build/conv_bench && build/conv_bench [batch [shape substring]]
 * (MISMATCH flags a strategy whose output differs from the direct loops by
 * more than 1e-4 relative.)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Route the kernel's GEMM calls through bench_gemm so one build can time
 * both the library GEMM and the naive loop. */
#define rlx_gemm bench_gemm
#define rlx_cpu_conv2d bench_cpu_conv2d
#define rlx_cpu_conv2d_grad_input bench_cpu_conv2d_grad_input
#define rlx_cpu_conv2d_grad_weight bench_cpu_conv2d_grad_weight
#include "bench_clock.h"
#include "../src/cpu/k_conv.c"
#include "../src/cpu/k_conv_grad.c"
#undef rlx_gemm
#undef rlx_cpu_conv2d
#undef rlx_cpu_conv2d_grad_input
#undef rlx_cpu_conv2d_grad_weight

rlx_status rlx_gemm(const rlx_gemm_args *g, rlx_scratch *scratch);

static int use_naive_gemm;

/* The unblocked i-k-j loop that src/cpu/gemm.c started as. */
static void naive_gemm(const rlx_gemm_args *g) {
  for (int32_t i = 0; i < g->M; i++) {
    float *c = g->C + (size_t)i * g->ldc;
    if (!g->accumulate)
      for (int32_t j = 0; j < g->N; j++) c[j] = 0.0f;
    for (int32_t k = 0; k < g->K; k++) {
      float a = g->trans_a ? g->A[(size_t)k * g->lda + i] : g->A[(size_t)i * g->lda + k];
      for (int32_t j = 0; j < g->N; j++) {
        float b = g->trans_b ? g->B[(size_t)j * g->ldb + k] : g->B[(size_t)k * g->ldb + j];
        c[j] += a * b;
      }
    }
  }
}

rlx_status bench_gemm(const rlx_gemm_args *g, rlx_scratch *scratch) {
  if (use_naive_gemm) {
    naive_gemm(g);
    return RLX_OK;
  }
  return rlx_gemm(g, scratch);
}

typedef struct {
  const char *name;
  int32_t C, H, W, O, K, stride, pad, groups;
} conv_shape;

static const conv_shape shapes[] = {
    {"mnist  conv3x3 1->8 28x28 valid", 1, 28, 28, 8, 3, 1, 0, 1},
    {"mnist  conv3x3 8->16 13x13 valid", 8, 13, 13, 16, 3, 1, 0, 1},
    {"cifar  conv3x3 3->32 32x32 pad1", 3, 32, 32, 32, 3, 1, 1, 1},
    {"cifar  conv3x3 32->64 16x16 pad1", 32, 16, 16, 64, 3, 1, 1, 1},
    {"cifar  conv3x3 64->128 8x8 pad1", 64, 8, 8, 128, 3, 1, 1, 1},
    {"resnet conv3x3 32->32 32x32 pad1", 32, 32, 32, 32, 3, 1, 1, 1},
    {"resnet conv3x3 32->64 32x32 s2 pad1", 32, 32, 32, 64, 3, 2, 1, 1},
    {"resnet conv1x1 32->64 32x32 s2", 32, 32, 32, 64, 1, 2, 0, 1},
    {"resnet conv1x1 32->64 16x16 s1", 32, 16, 16, 64, 1, 1, 0, 1},
    /* small-K shapes that decide the direct/GEMM switch */
    {"small  conv3x3 1->2 28x28 valid", 1, 28, 28, 2, 3, 1, 0, 1},
    {"small  conv3x3 1->4 28x28 valid", 1, 28, 28, 4, 3, 1, 0, 1},
    {"small  conv3x3 2->4 28x28 valid", 2, 28, 28, 4, 3, 1, 0, 1},
    {"small  conv5x5 1->4 28x28 valid", 1, 28, 28, 4, 5, 1, 0, 1},
    {"small  conv3x3 3->8 28x28 valid", 3, 28, 28, 8, 3, 1, 0, 1},
    {"small  conv3x3 1->16 28x28 valid", 1, 28, 28, 16, 3, 1, 0, 1},
    {"small  conv3x3 4->8 28x28 valid", 4, 28, 28, 8, 3, 1, 0, 1},
    {"dw     conv3x3 32->32 g32 32x32 pad1", 32, 32, 32, 32, 3, 1, 1, 32},
    {"dw     conv3x3 32->64 g32 16x16 pad1", 32, 16, 16, 64, 3, 1, 1, 32},
    {"dw     conv3x3 32->128 g32 16x16 pad1", 32, 16, 16, 128, 3, 1, 1, 32},
    {"dw     conv3x3 32->256 g32 16x16 pad1", 32, 16, 16, 256, 3, 1, 1, 32},
    {"dw     conv3x3 64->64 g64 8x8 s2 pad1", 64, 8, 8, 64, 3, 2, 1, 64},
};

enum { RUN_DIRECT, RUN_GEMM, RUN_NAIVE, RUN_KERNEL, RUN_IM2COL, RUN_COUNT };
static const char *run_names[RUN_COUNT] = {"direct", "im2col+gemm", "im2col+naive", "kernel",
                                           "im2col"};

/* The unfolding alone, every image and group (the im2col share of a conv). */
static rlx_status im2col_all(const conv_geom *g, const float *x, rlx_scratch *scratch) {
  float *cols = rlx_scratch_get(scratch, (size_t)g->Cg * g->KH * g->KW * g->OH * g->OW * sizeof(float));
  if (!cols) return RLX_ERR_NO_MEMORY;
  for (int32_t n = 0; n < g->N; n++)
    for (int32_t grp = 0; grp < g->groups; grp++)
      rlx_conv_im2col(g, x + ((size_t)n * g->C + (size_t)grp * g->Cg) * g->H * g->W, 0, g->OH, cols);
  return RLX_OK;
}

static rlx_status run_once(int which, const rlx_kargs *a, const conv_geom *g) {
  use_naive_gemm = which == RUN_NAIVE;
  switch (which) {
  case RUN_DIRECT: { /* every output plane on this thread */
    rlx_conv_loop l = {g, a->in[0], a->in[1], a->out, conv_gemm, 0};
    direct_planes(&l, 0, (size_t)g->N * g->O, NULL);
    return RLX_OK;
  }
  case RUN_KERNEL: return bench_cpu_conv2d(a);
  case RUN_IM2COL: return im2col_all(g, a->in[0], a->scratch);
  default: return conv_gemm(g, a->in[0], a->in[1], a->out, 0, g->N, a->scratch);
  }
}

/* Backward strategies: dx through direct / GEMM / kernel, dw likewise. */
enum { GRAD_DX_DIRECT, GRAD_DX_GEMM, GRAD_DX_KERNEL, GRAD_DW_DIRECT, GRAD_DW_GEMM, GRAD_DW_KERNEL,
       GRAD_COUNT };
static const char *grad_names[GRAD_COUNT] = {"dx direct", "dx gemm", "dx kernel",
                                             "dw direct", "dw gemm", "dw kernel"};

/* The backward operands of one conv: dy, and the kargs of each op. */
typedef struct {
  rlx_kargs dx, dw;
  rlx_node_t dx_node, dw_node;
} grad_bench;

static rlx_status run_grad_once(int which, const grad_bench *b, const conv_geom *g) {
  const rlx_kargs *dx = &b->dx, *dw = &b->dw;
  switch (which) {
  case GRAD_DX_DIRECT: { /* every image and output channel on this thread */
    rlx_conv_loop l = {g, dx->in[0], dx->in[1], dx->out, grad_input_gemm, 0};
    input_direct_images(&l, 0, (size_t)g->N, NULL);
    return RLX_OK;
  }
  case GRAD_DX_GEMM: return grad_input_gemm(g, dx->in[0], dx->in[1], dx->out, 0, g->N, dx->scratch);
  case GRAD_DX_KERNEL: return bench_cpu_conv2d_grad_input(dx);
  case GRAD_DW_DIRECT: {
    rlx_conv_loop l = {g, dw->in[0], dw->in[1], dw->out, NULL, 0};
    weight_direct_channels(&l, 0, (size_t)g->O, NULL);
    return RLX_OK;
  }
  case GRAD_DW_GEMM: return grad_weight_gemm(g, dw->in[0], dw->in[1], dw->out, dw->scratch);
  default: return bench_cpu_conv2d_grad_weight(dw);
  }
}

typedef rlx_status (*bench_fn)(int which, const void *ctx, const conv_geom *g);

static rlx_status fwd_fn(int which, const void *ctx, const conv_geom *g) { return run_once(which, ctx, g); }
static rlx_status grad_fn(int which, const void *ctx, const conv_geom *g) { return run_grad_once(which, ctx, g); }

/* Best of several timed runs (after one warm-up), in ms. */
static double time_fn(bench_fn fn, int which, const void *ctx, const conv_geom *g) {
  double best = 1e30, spent = 0.0;
  if (fn(which, ctx, g) != RLX_OK) return -1.0;
  for (int rep = 0; rep < 50 && (rep < 3 || spent < 300.0); rep++) {
    double t0 = now_ms();
    fn(which, ctx, g);
    double dt = now_ms() - t0;
    spent += dt;
    if (dt < best) best = dt;
  }
  return best;
}

/* One shape's forward operands: nodes of x, w, y and random x, w. */
typedef struct {
  rlx_node_t xn, wn, yn;
  float *x, *w;
  size_t nx, nw, ny;
} conv_operands;

static int make_operands(const conv_shape *sh, int32_t batch, conv_operands *c) {
  const int32_t OH = (sh->H + 2 * sh->pad - sh->K) / sh->stride + 1;
  const int32_t OW = (sh->W + 2 * sh->pad - sh->K) / sh->stride + 1;
  const int32_t xd[4] = {batch, sh->C, sh->H, sh->W}, wd[4] = {sh->O, sh->C / sh->groups, sh->K, sh->K};
  const int32_t yd[4] = {batch, sh->O, OH, OW};
  const int32_t at[7] = {sh->stride, sh->stride, sh->pad, sh->pad, 1, 1, sh->groups};
  memset(c, 0, sizeof *c);
  c->xn.shape.rank = c->wn.shape.rank = c->yn.shape.rank = 4;
  for (int i = 0; i < 4; i++) {
    c->xn.shape.dims[i] = xd[i];
    c->wn.shape.dims[i] = wd[i];
    c->yn.shape.dims[i] = yd[i];
  }
  c->yn.op = RLX_OP_CONV2D;
  c->yn.n_iattr = 7;
  for (int i = 0; i < 7; i++) c->yn.iattr[i] = at[i];
  c->nx = rlx_shape_numel(&c->xn.shape);
  c->nw = rlx_shape_numel(&c->wn.shape);
  c->ny = rlx_shape_numel(&c->yn.shape);
  c->x = malloc(c->nx * sizeof(float));
  c->w = malloc(c->nw * sizeof(float));
  if (!c->x || !c->w) return 0;
  for (size_t i = 0; i < c->nx; i++) c->x[i] = rlx_uniform(1, i) * 2.0f - 1.0f;
  for (size_t i = 0; i < c->nw; i++) c->w[i] = rlx_uniform(2, i) * 2.0f - 1.0f;
  return 1;
}

/* max |got - want| / (1 + |want|) */
static double rel_diff(const float *got, const float *want, size_t n) {
  double worst = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - want[i]) / (1.0 + fabs((double)want[i]));
    if (d > worst) worst = d;
  }
  return worst;
}

static void bench_forward(const conv_shape *sh, conv_operands *c, rlx_scratch *scratch) {
  float *y = malloc(c->ny * sizeof(float)), *yref = malloc(c->ny * sizeof(float));
  if (!y || !yref) exit(1);
  int32_t flags = 0;
  rlx_kargs a = {0};
  a.node = &c->yn;
  a.in_node[0] = &c->xn;
  a.in_node[1] = &c->wn;
  a.in[0] = c->x;
  a.in[1] = c->w;
  a.scratch = scratch;
  a.flags = &flags;
  const conv_geom g = conv_geom_of(&a);
  double ms[RUN_COUNT], maxdiff = 0.0;
  a.out = yref;
  run_once(RUN_DIRECT, &a, &g);
  a.out = y;
  for (int r = 0; r < RUN_COUNT; r++) {
    ms[r] = time_fn(fwd_fn, r, &a, &g);
    if (r == RUN_IM2COL) continue; /* no output */
    double d = rel_diff(y, yref, c->ny);
    if (d > maxdiff) maxdiff = d;
  }
  const double flops = 2.0 * c->ny * (double)(sh->C / sh->groups) * sh->K * sh->K;
  printf("%-38s %9.3f %12.3f %13.3f %9.3f %8.2f %9.3f%s\n", sh->name, ms[0], ms[1], ms[2], ms[3],
         flops / (ms[3] * 1e6), ms[4], maxdiff > 1e-4 ? "  MISMATCH" : "");
  free(y);
  free(yref);
}

static void bench_backward(const conv_shape *sh, conv_operands *c, rlx_scratch *scratch) {
  float *dy = malloc(c->ny * sizeof(float));
  float *dx = malloc(c->nx * sizeof(float)), *dx_ref = malloc(c->nx * sizeof(float));
  float *dw = malloc(c->nw * sizeof(float)), *dw_ref = malloc(c->nw * sizeof(float));
  if (!dy || !dx || !dx_ref || !dw || !dw_ref) exit(1);
  for (size_t i = 0; i < c->ny; i++) dy[i] = rlx_uniform(3, i) * 2.0f - 1.0f;
  int32_t flags = 0;
  grad_bench b;
  memset(&b, 0, sizeof b);
  b.dx_node.op = RLX_OP_CONV2D_GRAD_INPUT;
  b.dx_node.shape = c->xn.shape;
  b.dw_node.op = RLX_OP_CONV2D_GRAD_WEIGHT;
  b.dw_node.shape = c->wn.shape;
  b.dx_node.n_iattr = b.dw_node.n_iattr = 9;
  for (int i = 0; i < 7; i++) b.dx_node.iattr[i] = b.dw_node.iattr[i] = c->yn.iattr[i];
  b.dx_node.iattr[7] = c->xn.shape.dims[2];
  b.dx_node.iattr[8] = c->xn.shape.dims[3];
  b.dw_node.iattr[7] = c->wn.shape.dims[2];
  b.dw_node.iattr[8] = c->wn.shape.dims[3];
  b.dx.node = &b.dx_node;
  b.dx.in_node[0] = &c->yn;
  b.dx.in_node[1] = &c->wn;
  b.dx.in[0] = dy;
  b.dx.in[1] = c->w;
  b.dw.node = &b.dw_node;
  b.dw.in_node[0] = &c->xn;
  b.dw.in_node[1] = &c->yn;
  b.dw.in[0] = c->x;
  b.dw.in[1] = dy;
  b.dx.scratch = b.dw.scratch = scratch;
  b.dx.flags = b.dw.flags = &flags;
  const conv_geom g = rlx_conv_geom(c->xn.shape.dims, c->wn.shape.dims, c->yn.shape.dims, c->yn.iattr);
  double ms[GRAD_COUNT], maxdiff = 0.0;
  b.dx.out = dx_ref;
  b.dw.out = dw_ref;
  run_grad_once(GRAD_DX_DIRECT, &b, &g);
  run_grad_once(GRAD_DW_DIRECT, &b, &g);
  b.dx.out = dx;
  b.dw.out = dw;
  for (int r = 0; r < GRAD_COUNT; r++) {
    ms[r] = time_fn(grad_fn, r, &b, &g);
    double d = r < GRAD_DW_DIRECT ? rel_diff(dx, dx_ref, c->nx) : rel_diff(dw, dw_ref, c->nw);
    if (d > maxdiff) maxdiff = d;
  }
  const double flops = 2.0 * c->ny * (double)(sh->C / sh->groups) * sh->K * sh->K;
  printf("%-38s %9.3f %9.3f %9.3f %7.2f %9.3f %9.3f %9.3f %7.2f%s\n", sh->name, ms[0], ms[1], ms[2],
         flops / (ms[2] * 1e6), ms[3], ms[4], ms[5], flops / (ms[5] * 1e6),
         maxdiff > 1e-4 ? "  MISMATCH" : "");
  free(dy);
  free(dx);
  free(dx_ref);
  free(dw);
  free(dw_ref);
}

int main(int argc, char **argv) {
  const int32_t batch = argc > 1 ? atoi(argv[1]) : 64;
  const char *only = argc > 2 ? argv[2] : NULL; /* shapes whose name contains this */
  const size_t n_shapes = sizeof shapes / sizeof shapes[0];
  rlx_scratch scratch = {NULL, 0};
  conv_operands c;
  printf("conv2d, batch %d, gemm path %s; ms per conv (best of runs)\n", batch, rlx_gemm_path());
  printf("%-38s %9s %12s %13s %9s %8s %9s\n", "shape", run_names[0], run_names[1], run_names[2],
         run_names[3], "GFLOP/s", run_names[4]);
  for (size_t s = 0; s < n_shapes; s++) {
    if (only && !strstr(shapes[s].name, only)) continue;
    if (!make_operands(&shapes[s], batch, &c)) return 1;
    bench_forward(&shapes[s], &c, &scratch);
    free(c.x);
    free(c.w);
  }
  printf("\nconv2d backward, batch %d; ms per op (best of runs)\n", batch);
  printf("%-38s %9s %9s %9s %7s %9s %9s %9s %7s\n", "shape", grad_names[0], grad_names[1],
         grad_names[2], "GFLOP/s", grad_names[3], grad_names[4], grad_names[5], "GFLOP/s");
  for (size_t s = 0; s < n_shapes; s++) {
    if (only && !strstr(shapes[s].name, only)) continue;
    if (!make_operands(&shapes[s], batch, &c)) return 1;
    bench_backward(&shapes[s], &c, &scratch);
    free(c.x);
    free(c.w);
  }
  rlx_scratch_release(&scratch);
  return 0;
}
