/* bench_gemm_native.c - native GEMM throughput: rlx_gemm (whatever path the
 * library picked) and OpenBLAS cblas_sgemm (run with OPENBLAS_NUM_THREADS=1)
 * on the same matrices (calls interleaved), for each (M, K, N) given on the
 * command line.
 * Prints one JSON object per line (read by bench/bench_gemm.mjs). */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench_clock.h"
#include "../src/cpu/kernels.h"

char *openblas_get_corename(void);

typedef struct {
  int M, N, K;
  const float *A, *B;
  float *C;
  rlx_scratch *scratch;
} problem;

static void run_rlx(const problem *p) {
  rlx_gemm_args g = {p->M, p->N, p->K, p->A, p->K, 0, p->B, p->N, 0, p->C, p->N, 0};
  if (rlx_gemm(&g, p->scratch) != RLX_OK) {
    fprintf(stderr, "rlx_gemm failed\n");
    exit(1);
  }
}

static void run_openblas(const problem *p) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, p->M, p->N, p->K, 1.0f, p->A, p->K,
              p->B, p->N, 0.0f, p->C, p->N);
}

static void report(const char *backend, const char *path, const problem *p, double *ts, int iters,
                   double max_err) {
  qsort(ts, (size_t)iters, sizeof(double), cmp_double);
  const double med = (ts[iters / 2 - 1] + ts[iters / 2]) / 2;
  printf("{\"host\":\"native\",\"backend\":\"%s\",\"path\":\"%s\","
         "\"workload\":\"W5 matmul %dx%dx%d\",\"median_ms\":%.4f,\"min_ms\":%.4f,"
         "\"max_ms\":%.4f,\"n\":%d,\"gflops\":%.2f,\"max_abs_err\":%.3g}\n",
         backend, path, p->M, p->K, p->N, med, ts[0], ts[iters - 1], iters,
         2.0 * p->M * p->N * p->K / (med * 1e6), max_err);
}

/* Same protocol as the TF.js anchors (warm-up, then timed calls), with the
 * two contenders' calls interleaved so that both see the same load. */
static void measure(const problem *p, double max_err) {
  const int big = p->M >= 1024, warmup = big ? 3 : 10, iters = big ? 20 : 50;
  double ours[64], blas[64];
  for (int i = 0; i < warmup; i++) run_rlx(p), run_openblas(p);
  for (int i = 0; i < iters; i++) {
    double s = now_ms();
    run_rlx(p);
    ours[i] = now_ms() - s;
    s = now_ms();
    run_openblas(p);
    blas[i] = now_ms() - s;
  }
  report("rlx", rlx_gemm_path(), p, ours, iters, max_err);
  report("openblas", openblas_get_corename(), p, blas, iters, 0);
  fflush(stdout);
}

int main(int argc, char **argv) {
  rlx_scratch scratch = {0};
  for (int arg = 1; arg < argc; arg++) {
    problem p;
    if (sscanf(argv[arg], "%dx%dx%d", &p.M, &p.K, &p.N) != 3) {
      fprintf(stderr, "usage: %s MxKxN...\n", argv[0]);
      return 2;
    }
    size_t na = (size_t)p.M * p.K, nb = (size_t)p.K * p.N, nc = (size_t)p.M * p.N;
    float *A = malloc(na * sizeof(float)), *B = malloc(nb * sizeof(float));
    float *C = malloc(nc * sizeof(float)), *R = malloc(nc * sizeof(float));
    if (!A || !B || !C || !R) return 1;
    for (size_t i = 0; i < na; i++) A[i] = (float)rand() / RAND_MAX * 2 - 1;
    for (size_t i = 0; i < nb; i++) B[i] = (float)rand() / RAND_MAX * 2 - 1;
    p.A = A, p.B = B, p.scratch = &scratch;
    /* Cross-check: ours against OpenBLAS. */
    p.C = R;
    run_openblas(&p);
    p.C = C;
    run_rlx(&p);
    double err = 0;
    for (size_t i = 0; i < nc; i++) err = fmax(err, fabs((double)C[i] - R[i]));
    measure(&p, err);
    free(A), free(B), free(C), free(R);
  }
  rlx_scratch_release(&scratch);
  return 0;
}
