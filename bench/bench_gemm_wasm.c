/* bench_gemm_wasm.c - entry points of build/bench/gemm_bench.wasm, the
 * WebAssembly GEMM benchmark module driven by bench/bench_gemm.mjs:
 *   bench_setup(M, K, N)  allocates and fills A[M,K], B[K,N], C[M,N];
 *                         returns C's address (0 when out of memory)
 *   bench_gemm()          C = A . B once through rlx_gemm (0 = ok)
 *   bench_check()         max |C - A.B| over sampled entries (double ref)
 *   bench_path()          the GEMM path name (NUL-terminated string)
 *   bench_selftest()      rlx_gemm vs a double reference over odd sizes, all
 *                         transpose combinations, accumulate and padded
 *                         leading dims; returns the number of failing cases
 *                         (the native cmocka test cannot run the SIMD128 path) */
#include <math.h>
#include <stdlib.h>

#include "../src/cpu/kernels.h"

#define EXPORT(name) __attribute__((export_name(#name)))

/* Uniform in [-1, 1). */
static float lcg(unsigned *s) {
  *s = *s * 1664525u + 1013904223u;
  return (float)(*s >> 8) / 8388608.0f - 1.0f;
}

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
  for (size_t i = 0; i < (size_t)M * K; i++) A[i] = lcg(&s);
  for (size_t i = 0; i < (size_t)K * N; i++) B[i] = lcg(&s);
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

/* One case; 0 when every element is within tolerance. */
static int selftest_case(int32_t m, int32_t n, int32_t k, int32_t ta, int32_t tb, int32_t acc,
                         int32_t pad, unsigned *seed) {
  const int32_t lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
  const size_t la = (size_t)(ta ? k : m) * lda, lb = (size_t)(tb ? n : k) * ldb;
  const size_t lc = (size_t)m * ldc;
  float *a = malloc(la * sizeof(float)), *b = malloc(lb * sizeof(float));
  float *c = malloc(lc * sizeof(float)), *c0 = malloc(lc * sizeof(float));
  int bad = !a || !b || !c || !c0;
  if (!bad) {
    for (size_t i = 0; i < la; i++) a[i] = lcg(seed);
    for (size_t i = 0; i < lb; i++) b[i] = lcg(seed);
    for (size_t i = 0; i < lc; i++) c[i] = c0[i] = lcg(seed);
    rlx_gemm_args g = {m, n, k, a, lda, ta, b, ldb, tb, c, ldc, acc};
    bad = rlx_gemm(&g, &scratch) != RLX_OK;
    for (int32_t i = 0; i < m && !bad; i++)
      for (int32_t j = 0; j < ldc && !bad; j++) {
        const size_t ci = (size_t)i * ldc + j;
        if (j >= n) { /* padding untouched */
          bad = c[ci] != c0[ci];
          continue;
        }
        double want = acc ? c0[ci] : 0.0, mag = fabs(want);
        for (int32_t p = 0; p < k; p++) {
          const double x = ta ? a[(size_t)p * lda + i] : a[(size_t)i * lda + p];
          const double y = tb ? b[(size_t)j * ldb + p] : b[(size_t)p * ldb + j];
          want += x * y;
          mag += fabs(x * y);
        }
        bad = !(fabs(c[ci] - want) <= 1e-6 + 1e-5 * mag);
      }
  }
  free(a), free(b), free(c), free(c0);
  return bad;
}

EXPORT(bench_selftest) int32_t bench_selftest(void) {
  static const int32_t dims[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 17, 33, 70};
  const int32_t nd = (int32_t)(sizeof dims / sizeof dims[0]);
  unsigned seed = 7;
  int32_t fails = 0, t = 0;
  for (int32_t mi = 0; mi < nd; mi++)
    for (int32_t ni = 0; ni < nd; ni++)
      for (int32_t ki = 0; ki < nd; ki++, t++)
        if ((mi + 2 * ni + 3 * ki) % 3 == 0)
          fails += selftest_case(dims[mi], dims[ni], dims[ki], t & 1, (t >> 1) & 1, (t % 5) == 1,
                                 t % 3, &seed);
  fails += selftest_case(150, 90, 300, 0, 0, 0, 1, &seed);
  fails += selftest_case(131, 800, 40, 1, 1, 1, 0, &seed);
  fails += selftest_case(67, 45, 513, 0, 1, 0, 2, &seed);
  return fails;
}
