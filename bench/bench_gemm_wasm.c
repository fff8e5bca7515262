/* bench_gemm_wasm.c - entry points of build/bench/gemm_bench.wasm, the
 * WebAssembly GEMM benchmark module driven by bench/bench_gemm.mjs:
 *   bench_setup(M, K, N)  allocates and fills A[M,K], B[K,N], C[M,N];
 *                         returns C's address (0 when out of memory)
 *   bench_gemm()          C = A . B once through rlx_gemm (0 = ok)
 *   bench_check()         max |C - A.B| over sampled entries (double ref)
 *   bench_path()          the GEMM path name (NUL-terminated string) */
#include <math.h>
#include <stdlib.h>

#include "../src/cpu/kernels.h"

#define EXPORT(name) __attribute__((export_name(#name)))

static float *A, *B, *C;
static int32_t M, K, N;
static rlx_scratch scratch;

EXPORT(bench_setup) float *bench_setup(int32_t m, int32_t k, int32_t n) {
  free(A), free(B), free(C);
  M = m, K = k, N = n;
  A = malloc(sizeof(float) * (size_t)M * K);
  B = malloc(sizeof(float) * (size_t)K * N);
  C = malloc(sizeof(float) * (size_t)M * N);
  if (!A || !B || !C) return NULL;
  unsigned s = 1;
  for (size_t i = 0; i < (size_t)M * K; i++) A[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  for (size_t i = 0; i < (size_t)K * N; i++) B[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
  return C;
}

EXPORT(bench_gemm) int32_t bench_gemm(void) {
  rlx_gemm_args g = {M, N, K, A, K, 0, B, N, 0, C, N, 0};
  return rlx_gemm(&g, &scratch);
}

EXPORT(bench_check) double bench_check(void) {
  double err = 0;
  for (int32_t t = 0; t < 64; t++) {
    int32_t i = (int32_t)((t * 97L) % M), j = (int32_t)((t * 193L) % N);
    double want = 0;
    for (int32_t k = 0; k < K; k++) want += (double)A[(size_t)i * K + k] * B[(size_t)k * N + j];
    err = fmax(err, fabs(want - C[(size_t)i * N + j]));
  }
  return err;
}

EXPORT(bench_path) const char *bench_path(void) { return rlx_gemm_path(); }
