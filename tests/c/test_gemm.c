/* test_gemm.c - rlx_gemm against a naive double-precision reference: many
 * (M, N, K) incl. 1, odd sizes and non-multiples of every register block,
 * all four transpose combinations, accumulate on/off, and leading
 * dimensions larger than the rows.  Every GEMM path compiled in and
 * supported by this CPU is run through the blocked driver, once with its
 * real blocking and once with tiny cache blocks (odd kc) so that every loop
 * of the nest and every edge is crossed with small matrices.  Buffers are
 * allocated to their exact size (ASan catches over-reads); the padding
 * columns of C must come back untouched, and with accumulate off C starts
 * as NaN, which must never leak into the result. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/core/pool.h"
#include "../../src/cpu/gemm_impl.h"

typedef struct {
  int32_t M, N, K, trans_a, trans_b, accumulate, pad;
} gemm_case;

static unsigned lcg_state = 12345u;
static float rnd(void) {
  lcg_state = lcg_state * 1664525u + 1013904223u;
  return (float)((lcg_state >> 8) & 0xFFFF) / 32768.0f - 1.0f;
}

/* Runs one case through `impl` (NULL: the public rlx_gemm); returns the
 * number of failures (and prints the first). */
static int run_case(const gemm_case *t, const rlx_gemm_impl *impl, rlx_scratch *s,
                    const char *label) {
  const int32_t M = t->M, N = t->N, K = t->K;
  /* op(A) is M x K; stored rows x cols with leading dimension lda >= cols. */
  const int32_t a_rows = t->trans_a ? K : M, a_cols = t->trans_a ? M : K;
  const int32_t b_rows = t->trans_b ? N : K, b_cols = t->trans_b ? K : N;
  const int32_t lda = a_cols + t->pad, ldb = b_cols + 2 * t->pad, ldc = N + t->pad;
  /* The last row has no padding: anything past it is outside the buffer. */
  const size_t a_len = (size_t)(a_rows - 1) * lda + a_cols;
  const size_t b_len = (size_t)(b_rows - 1) * ldb + b_cols;
  const size_t c_len = (size_t)(M - 1) * ldc + N;
  float *A = malloc(a_len * sizeof(float)), *B = malloc(b_len * sizeof(float));
  float *C = malloc(c_len * sizeof(float)), *C0 = malloc(c_len * sizeof(float));
  assert_non_null(A);
  assert_non_null(B);
  assert_non_null(C);
  assert_non_null(C0);
  for (size_t i = 0; i < a_len; i++) A[i] = rnd();
  for (size_t i = 0; i < b_len; i++) B[i] = rnd();
  for (size_t i = 0; i < c_len; i++) {
    const int32_t col = (int32_t)(i % (size_t)ldc);
    C0[i] = (t->accumulate || col >= N) ? rnd() : NAN;
  }
  memcpy(C, C0, c_len * sizeof(float));

  rlx_gemm_args g = {M, N, K, A, lda, t->trans_a, B, ldb, t->trans_b, C, ldc, t->accumulate};
  rlx_status st = impl ? rlx_gemm_blocked(&g, s, impl) : rlx_gemm(&g, s);
  assert_int_equal(st, RLX_OK);

  int fails = 0;
  for (int32_t i = 0; i < M; i++) {
    for (int32_t j = 0; j < ldc && (size_t)i * ldc + j < c_len; j++) {
      const size_t ci = (size_t)i * ldc + j;
      if (j >= N) { /* padding must be untouched */
        if (memcmp(&C[ci], &C0[ci], sizeof(float)) != 0 && fails++ == 0)
          print_error("%s M=%d N=%d K=%d ta=%d tb=%d acc=%d pad=%d: wrote padding C[%d][%d]\n",
                      label, M, N, K, t->trans_a, t->trans_b, t->accumulate, t->pad, i, j);
        continue;
      }
      double want = t->accumulate ? C0[ci] : 0.0, mag = fabs(want);
      for (int32_t k = 0; k < K; k++) {
        const double a = t->trans_a ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
        const double b = t->trans_b ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
        want += a * b;
        mag += fabs(a * b);
      }
      /* float accumulation error grows with K; bound it by the sum of |terms|. */
      const double err = fabs((double)C[ci] - want);
      if (!(err <= 1e-6 + 1e-6 * (4.0 + K / 64.0) * mag) && fails++ == 0)
        print_error("%s M=%d N=%d K=%d ta=%d tb=%d acc=%d pad=%d: C[%d][%d] = %.8g, want %.8g\n",
                    label, M, N, K, t->trans_a, t->trans_b, t->accumulate, t->pad, i, j,
                    (double)C[ci], want);
    }
  }
  free(A);
  free(B);
  free(C);
  free(C0);
  return fails;
}

static const int32_t small_dims[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16, 17, 23, 33};
#define N_SMALL ((int)(sizeof small_dims / sizeof small_dims[0]))

/* Every (M, N, K) from small_dims (sparsely), every transpose combination,
 * accumulate and padding varied along the way. */
static int sweep(const rlx_gemm_impl *impl, rlx_scratch *s, const char *label) {
  int fails = 0, n = 0;
  for (int mi = 0; mi < N_SMALL; mi++)
    for (int ni = 0; ni < N_SMALL; ni++)
      for (int ki = 0; ki < N_SMALL; ki++) {
        if ((mi + 2 * ni + 3 * ki) % 4 != 0) continue; /* a quarter of the grid */
        for (int tr = 0; tr < 4; tr++) {
          gemm_case t = {small_dims[mi], small_dims[ni], small_dims[ki], tr & 1, tr >> 1,
                         (n % 3) == 1, (n % 5) == 0 ? 0 : 1 + n % 4};
          n++;
          fails += run_case(&t, impl, s, label);
        }
      }
  /* Larger shapes that cross the real cache blocks of every path. */
  static const gemm_case big[] = {
      {150, 97, 300, 0, 0, 0, 3},  {131, 70, 257, 1, 0, 1, 0},  {67, 130, 513, 0, 1, 0, 1},
      {145, 41, 260, 1, 1, 1, 2},  {9, 1000, 40, 0, 0, 0, 5},   {7, 790, 33, 0, 1, 1, 0},
      {64, 128, 784, 0, 0, 0, 0},  {300, 19, 31, 1, 0, 0, 1},   {1, 300, 77, 0, 0, 1, 0},
      {1, 77, 300, 0, 1, 0, 2},    {250, 1, 66, 0, 0, 0, 1},    {66, 1, 250, 1, 1, 1, 0},
  };
  for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
    fails += run_case(&big[i], impl, s, label);
  return fails;
}

/* The path's blocking, then the same kernel with tiny cache blocks. */
static void check_impl(const rlx_gemm_impl *impl) {
  if (!impl) {
    print_message("path not available in this build/CPU: skipped\n");
    skip();
    return;
  }
  /* The workspace bound callers rely on (conv2d hands rlx_gemm a window). */
  const size_t kc = (size_t)impl->kc;
  const size_t mc = (size_t)(impl->mc + impl->mr - 1) / impl->mr * impl->mr;
  const size_t nc = (size_t)(impl->nc + impl->nr - 1) / impl->nr * impl->nr;
  assert_true((mc * kc + nc * kc + 16) * sizeof(float) <= RLX_GEMM_SCRATCH_MAX);
  assert_true(impl->mr <= RLX_GEMM_MAX_MR && impl->nr <= RLX_GEMM_MAX_NR);
  assert_true(impl->mc % impl->mr == 0 && impl->nc % impl->nr == 0 && impl->nr % 4 == 0);
  rlx_scratch s = {0};
  int fails = sweep(impl, &s, impl->name);
  rlx_gemm_impl tiny = *impl;
  tiny.mc = 2 * impl->mr;
  tiny.kc = 5;
  tiny.nc = 2 * impl->nr;
  fails += sweep(&tiny, &s, "tiny blocks");
  rlx_scratch_release(&s);
  assert_int_equal(fails, 0);
}

static void test_avx2(void **state) { (void)state; check_impl(rlx_gemm_impl_avx2()); }
static void test_sse(void **state) { (void)state; check_impl(rlx_gemm_impl_sse()); }
static void test_simd128(void **state) { (void)state; check_impl(rlx_gemm_impl_simd128()); }
static void test_portable(void **state) { (void)state; check_impl(rlx_gemm_impl_portable()); }

/* The public entry point: path choice, direct loops for vectors and tiny
 * products, and the blocked path. */
static void test_rlx_gemm(void **state) {
  (void)state;
  rlx_scratch s = {0};
  print_message("rlx_gemm path: %s\n", rlx_gemm_path());
  int fails = sweep(NULL, &s, "rlx_gemm");
  rlx_scratch_release(&s);
  assert_int_equal(fails, 0);
}

/* Products cut over 2 and 3 threads (every split taken) give C bitwise
 * equal to one thread's: K past the cache block (partial sums reloaded
 * from C), edge tiles, both transposes, accumulate, a single row. */
static void test_threads_bitwise(void **state) {
  (void)state;
  static const gemm_case cases[] = {{67, 131, 700, 0, 0, 0, 1}, {300, 45, 513, 1, 0, 1, 0}, {129, 257, 300, 0, 1, 0, 2},
                                    {7, 500, 600, 1, 1, 1, 0},   {1, 1000, 333, 0, 0, 0, 0}, {1, 700, 90, 1, 1, 1, 0}};
  rlx_parallel_set_min_work(1);
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const gemm_case *t = &cases[c];
    const int32_t lda = (t->trans_a ? t->M : t->K) + t->pad, ldb = (t->trans_b ? t->K : t->N) + t->pad;
    const size_t na = (size_t)(t->trans_a ? t->K : t->M) * lda, nb = (size_t)(t->trans_b ? t->N : t->K) * ldb;
    const size_t nc = (size_t)t->M * t->N;
    float *A = malloc(na * sizeof(float)), *B = malloc(nb * sizeof(float)), *C[3];
    for (size_t i = 0; i < na; i++) A[i] = rnd();
    for (size_t i = 0; i < nb; i++) B[i] = rnd();
    for (int k = 0; k < 3; k++) {
      C[k] = malloc(nc * sizeof(float));
      lcg_state = 777u;
      for (size_t i = 0; i < nc; i++) C[k][i] = rnd();
      rlx_pool *p = NULL;
      assert_int_equal(rlx_pool_acquire(k + 1, &p), RLX_OK);
      rlx_pool *prev = rlx_pool_use(p);
      rlx_scratch s = {0};
      rlx_gemm_args g = {t->M, t->N, t->K, A, lda, t->trans_a, B, ldb, t->trans_b, C[k], t->N, t->accumulate};
      assert_int_equal(rlx_gemm(&g, &s), RLX_OK);
      rlx_scratch_release(&s);
      rlx_pool_use(prev);
      rlx_pool_release(p);
      if (k && memcmp(C[k], C[0], nc * sizeof(float)))
        fail_msg("%d x %d x %d: %d threads differ from 1", (int)t->M, (int)t->N, (int)t->K, k + 1);
    }
    for (int k = 0; k < 3; k++) free(C[k]);
    free(A), free(B);
  }
  rlx_parallel_set_min_work(RLX_PARALLEL_MIN_WORK);
}

/* K = 0: C = 0 (or unchanged with accumulate); M or N = 0: nothing. */
static void test_empty_k(void **state) {
  (void)state;
  rlx_scratch s = {0};
  float A[1] = {1.0f}, B[1] = {1.0f}, C[6] = {NAN, NAN, NAN, 7, 8, 9};
  rlx_gemm_args g = {2, 3, 0, A, 1, 0, B, 3, 0, C, 3, 0};
  assert_int_equal(rlx_gemm(&g, &s), RLX_OK);
  for (int i = 0; i < 6; i++) assert_true(C[i] == 0.0f);
  C[0] = 5.0f;
  g.accumulate = 1;
  assert_int_equal(rlx_gemm(&g, &s), RLX_OK);
  assert_true(C[0] == 5.0f);
  g.M = 0;
  g.K = 1;
  assert_int_equal(rlx_gemm(&g, &s), RLX_OK);
  rlx_scratch_release(&s);
}

/* Two GEMMs in a row on one scratch (the second may need a larger buffer). */
static void test_scratch_reuse(void **state) {
  (void)state;
  rlx_scratch s = {0};
  gemm_case a = {20, 24, 10, 0, 0, 0, 0}, b = {100, 200, 300, 0, 0, 0, 0};
  int fails = run_case(&a, NULL, &s, "first") + run_case(&b, NULL, &s, "second") +
              run_case(&a, NULL, &s, "third");
  rlx_scratch_release(&s);
  assert_int_equal(fails, 0);
}

/* rlx_gemm_scratch_bytes covers what rlx_gemm asks for: given exactly that
 * window (as conv2d and attention do), rlx_gemm never reallocates it. */
static void test_scratch_bytes(void **state) {
  (void)state;
  static const int32_t dims[][3] = {{1, 1, 1},     {1, 300, 77},   {77, 1, 300},   {5, 7, 9},
                                    {16, 16, 16},  {8, 513, 100},  {150, 97, 300}, {300, 800, 40},
                                    {1000, 1000, 300}, {64, 128, 784}};
  int fails = 0;
  for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++)
    for (int tr = 0; tr < 4; tr++) {
      const int32_t M = dims[d][0], N = dims[d][1], K = dims[d][2], ta = tr & 1, tb = tr >> 1;
      float *A = calloc((size_t)M * K, sizeof(float)), *B = calloc((size_t)K * N, sizeof(float));
      float *C = calloc((size_t)M * N, sizeof(float));
      assert_true(A && B && C);
      rlx_gemm_args g = {M, N, K, A, ta ? M : K, ta, B, tb ? K : N, tb, C, N, 0};
      const size_t bytes = rlx_gemm_scratch_bytes(&g);
      if (bytes > RLX_GEMM_SCRATCH_MAX && fails++ == 0)
        print_error("M=%d N=%d K=%d: %zu scratch bytes > RLX_GEMM_SCRATCH_MAX\n", M, N, K, bytes);
      rlx_scratch whole = {0};
      void *p = rlx_scratch_get(&whole, bytes + 64);
      assert_non_null(p);
      rlx_scratch window = {p, bytes};
      assert_int_equal(rlx_gemm(&g, &window), RLX_OK);
      if (window.ptr == p) {
        rlx_scratch_release(&whole);
      } else { /* it reallocated, releasing the window (= whole's block) */
        if (fails++ == 0)
          print_error("M=%d N=%d K=%d ta=%d tb=%d: rlx_gemm wanted more than %zu bytes\n", M, N,
                      K, ta, tb, bytes);
        rlx_scratch_release(&window);
      }
      free(A);
      free(B);
      free(C);
    }
  assert_int_equal(fails, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_avx2),     cmocka_unit_test(test_sse),
      cmocka_unit_test(test_simd128),  cmocka_unit_test(test_portable),
      cmocka_unit_test(test_rlx_gemm), cmocka_unit_test(test_threads_bitwise), cmocka_unit_test(test_empty_k),
      cmocka_unit_test(test_scratch_reuse), cmocka_unit_test(test_scratch_bytes),
  };
  return cmocka_run_group_tests_name("gemm", tests, NULL, NULL);
}
