/* conv_bench.c - times the conv2d kernel on the vision models' layer shapes
 * (batch 64): the direct loops, im2col + rlx_gemm, im2col + the original
 * unblocked portable GEMM loop, and whichever strategy the kernel picks.
 * Includes k_conv.c to reach its strategies; links against build/librlx.a.
 *
 *   make build/librlx.a && cc -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude \
 *     bench/conv_bench.c build/librlx.a -lm -o build/conv_bench && build/conv_bench [batch]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Route the kernel's GEMM calls through bench_gemm so one build can time
 * both the library GEMM and the naive loop. */
#define rlx_gemm bench_gemm
#define rlx_cpu_conv2d bench_cpu_conv2d
#include "../src/cpu/k_conv.c"
#undef rlx_gemm
#undef rlx_cpu_conv2d

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
    {"dw     conv3x3 32->32 g32 32x32 pad1", 32, 32, 32, 32, 3, 1, 1, 32},
    {"dw     conv3x3 32->64 g32 16x16 pad1", 32, 16, 16, 64, 3, 1, 1, 32},
    {"dw     conv3x3 32->128 g32 16x16 pad1", 32, 16, 16, 128, 3, 1, 1, 32},
};

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

enum { RUN_DIRECT, RUN_GEMM, RUN_NAIVE, RUN_KERNEL, RUN_IM2COL, RUN_COUNT };
static const char *run_names[RUN_COUNT] = {"direct", "im2col+gemm", "im2col+naive", "kernel",
                                           "im2col"};

/* The unfolding alone, every image and group (the im2col share of a conv). */
static rlx_status im2col_all(const conv_geom *g, const float *x, rlx_scratch *scratch) {
  float *cols = rlx_scratch_get(scratch, (size_t)g->Cg * g->KH * g->KW * g->OH * g->OW * sizeof(float));
  if (!cols) return RLX_ERR_NO_MEMORY;
  for (int32_t n = 0; n < g->N; n++)
    for (int32_t grp = 0; grp < g->groups; grp++)
      im2col(g, x + ((size_t)n * g->C + (size_t)grp * g->Cg) * g->H * g->W, 0, g->OH, cols);
  return RLX_OK;
}

static rlx_status run_once(int which, const rlx_kargs *a, const conv_geom *g) {
  use_naive_gemm = which == RUN_NAIVE;
  switch (which) {
  case RUN_DIRECT: conv_direct(g, a->in[0], a->in[1], a->out); return RLX_OK;
  case RUN_KERNEL: return bench_cpu_conv2d(a);
  case RUN_IM2COL: return im2col_all(g, a->in[0], a->scratch);
  default: return conv_gemm(g, a->in[0], a->in[1], a->out, a->scratch);
  }
}

/* Best of several timed runs (after one warm-up), in ms. */
static double time_run(int which, const rlx_kargs *a, const conv_geom *g) {
  double best = 1e30, spent = 0.0;
  if (run_once(which, a, g) != RLX_OK) return -1.0;
  for (int rep = 0; rep < 50 && (rep < 3 || spent < 300.0); rep++) {
    double t0 = now_ms();
    run_once(which, a, g);
    double dt = now_ms() - t0;
    spent += dt;
    if (dt < best) best = dt;
  }
  return best;
}

int main(int argc, char **argv) {
  const int32_t batch = argc > 1 ? atoi(argv[1]) : 64;
  rlx_scratch scratch = {NULL, 0};
  printf("conv2d, batch %d, gemm path %s; ms per conv (best of runs)\n", batch, rlx_gemm_path());
  printf("%-38s %9s %12s %13s %9s %8s %9s\n", "shape", run_names[0], run_names[1], run_names[2],
         run_names[3], "GFLOP/s", run_names[4]);
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    const conv_shape *sh = &shapes[s];
    const int32_t groups = sh->groups;
    const int32_t OH = (sh->H + 2 * sh->pad - sh->K) / sh->stride + 1;
    const int32_t OW = (sh->W + 2 * sh->pad - sh->K) / sh->stride + 1;
    rlx_node_t xn = {0}, wn = {0}, yn = {0};
    xn.shape.rank = wn.shape.rank = yn.shape.rank = 4;
    const int32_t xd[4] = {batch, sh->C, sh->H, sh->W}, wd[4] = {sh->O, sh->C / groups, sh->K, sh->K};
    const int32_t yd[4] = {batch, sh->O, OH, OW};
    const int32_t at[7] = {sh->stride, sh->stride, sh->pad, sh->pad, 1, 1, groups};
    for (int i = 0; i < 4; i++) {
      xn.shape.dims[i] = xd[i];
      wn.shape.dims[i] = wd[i];
      yn.shape.dims[i] = yd[i];
    }
    yn.op = RLX_OP_CONV2D;
    yn.n_iattr = 7;
    for (int i = 0; i < 7; i++) yn.iattr[i] = at[i];
    const size_t nx = rlx_shape_numel(&xn.shape), nw = rlx_shape_numel(&wn.shape);
    const size_t ny = rlx_shape_numel(&yn.shape);
    float *x = malloc(nx * sizeof(float)), *w = malloc(nw * sizeof(float));
    float *y = malloc(ny * sizeof(float)), *yref = malloc(ny * sizeof(float));
    if (!x || !w || !y || !yref) return 1;
    for (size_t i = 0; i < nx; i++) x[i] = rlx_uniform(1, i) * 2.0f - 1.0f;
    for (size_t i = 0; i < nw; i++) w[i] = rlx_uniform(2, i) * 2.0f - 1.0f;
    int32_t flags = 0;
    rlx_kargs a = {0};
    a.node = &yn;
    a.in_node[0] = &xn;
    a.in_node[1] = &wn;
    a.in[0] = x;
    a.in[1] = w;
    a.scratch = &scratch;
    a.flags = &flags;
    const conv_geom g = conv_geom_of(&a);
    double ms[RUN_COUNT], maxdiff = 0.0;
    a.out = yref;
    run_once(RUN_DIRECT, &a, &g);
    a.out = y;
    for (int r = 0; r < RUN_COUNT; r++) {
      ms[r] = time_run(r, &a, &g);
      if (r == RUN_IM2COL) continue; /* no output */
      for (size_t i = 0; i < ny; i++) {
        double d = y[i] - yref[i];
        if (d < 0) d = -d;
        if (d > maxdiff) maxdiff = d;
      }
    }
    const double flops = 2.0 * ny * (double)(sh->C / groups) * sh->K * sh->K;
    printf("%-38s %9.3f %12.3f %13.3f %9.3f %8.2f %9.3f%s\n", sh->name, ms[0], ms[1], ms[2],
           ms[3], flops / (ms[3] * 1e6), ms[4], maxdiff > 1e-3 ? "  MISMATCH" : "");
    free(x);
    free(w);
    free(y);
    free(yref);
  }
  rlx_scratch_release(&scratch);
  return 0;
}
