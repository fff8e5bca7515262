/* test_pool.c - the thread pool behind rlx_parallel_for (src/core/pool.h):
 * every item of a loop runs exactly once, in ranges cut at the grain, for
 * 1 .. 5 threads; loops inside a range run inline; a range's workspace
 * belongs to one thread at a time; pools freed and made again 100 times
 * leave no thread behind (/proc/self/task); a pool shared by two holders.
 * With the library (not POOL_ONLY): bad thread counts are refused by
 * rlx_compile with a clear message, and sessions started and freed 100
 * times leave no thread.  Built as well with -DPOOL_ONLY under
 * ThreadSanitizer (make test-tsan) over the pool's own files. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/core/pool.h"
#include "../../src/cpu/kernels.h"
#include "rlx.h"

static int task_count(void) {
  DIR *d = opendir("/proc/self/task");
  int n = 0;
  if (!d) return -1;
  for (struct dirent *e; (e = readdir(d));)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n;
}

typedef struct {
  int *hits; /* per item */
  size_t grain, n;
  int bad;   /* a range whose start is not at the grain */
  int nested;
} cover_ctx;

static void nested_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  (void)ws;
  int *sum = ctx;
  for (size_t i = b; i < e; i++) sum[i] += 1;
}

static void cover_range(void *ctx, size_t b, size_t e, rlx_scratch *ws) {
  cover_ctx *c = ctx;
  if (b % c->grain != 0 || (e != c->n && e % c->grain != 0)) rlx_task_failed(&c->bad, 1);
  /* the workspace is this thread's alone while the range runs */
  unsigned char *w = ws ? rlx_scratch_get(ws, 256) : NULL;
  if (w) memset(w, (int)(b & 0xff), 256);
  for (size_t i = b; i < e; i++) {
    c->hits[i]++;
    if (w && w[i % 256] != (unsigned char)(b & 0xff)) rlx_task_failed(&c->bad, 2);
  }
  if (c->nested) { /* runs inline: the pool is busy */
    int local[8] = {0};
    rlx_parallel_for(8, 1, 1 << 20, nested_range, local, NULL);
    for (int i = 0; i < 8; i++)
      if (local[i] != 1) rlx_task_failed(&c->bad, 3);
  }
}

static void loops_cover_every_item(void **state) {
  (void)state;
  rlx_parallel_set_min_work(1);
  for (int32_t threads = 1; threads <= 5; threads++) {
    rlx_pool *p = NULL;
    assert_int_equal(rlx_pool_acquire(threads, &p), RLX_OK);
    assert_true(threads == 1 ? p == NULL : p != NULL);
    rlx_pool *prev = rlx_pool_use(p);
    assert_int_equal(rlx_parallel_threads(), threads);
    rlx_scratch own = {NULL, 0};
    for (size_t n = 0; n < 300; n += 37)
      for (size_t grain = 1; grain <= 16; grain *= 4)
        for (int rep = 0; rep < 20; rep++) {
          int *hits = calloc(n + 1, sizeof *hits);
          cover_ctx c = {hits, grain, n, 0, rep == 0};
          rlx_parallel_for(n, grain, 1, cover_range, &c, &own);
          assert_int_equal(c.bad, 0);
          for (size_t i = 0; i < n; i++) assert_int_equal(hits[i], 1);
          free(hits);
        }
    rlx_scratch_release(&own);
    rlx_pool_use(prev);
    rlx_pool_release(p);
  }
  rlx_parallel_set_min_work(RLX_PARALLEL_MIN_WORK);
}

static void small_loops_stay_inline(void **state) {
  (void)state;
  rlx_pool *p = NULL;
  assert_int_equal(rlx_pool_acquire(3, &p), RLX_OK);
  rlx_pool *prev = rlx_pool_use(p);
  int hits[64] = {0};
  cover_ctx c = {hits, 1, 64, 0, 0};
  rlx_scratch own = {NULL, 0};
  /* under RLX_PARALLEL_MIN_WORK: one call over the whole range, on the caller's workspace */
  rlx_parallel_for(64, 1, 1, cover_range, &c, &own);
  assert_non_null(own.ptr);
  for (int i = 0; i < 64; i++) assert_int_equal(hits[i], 1);
  rlx_scratch_release(&own);
  rlx_pool_use(prev);
  rlx_pool_release(p);
}

static void pools_leave_no_thread(void **state) {
  (void)state;
  const int before = task_count();
  assert_true(before >= 1);
  rlx_parallel_set_min_work(1);
  for (int i = 0; i < 100; i++) {
    rlx_pool *p = NULL, *q = NULL;
    assert_int_equal(rlx_pool_acquire(4, &p), RLX_OK);
    assert_int_equal(rlx_pool_acquire(4, &q), RLX_OK);
    assert_ptr_equal(p, q); /* one pool per thread count, shared */
    if (i == 0) assert_int_equal(task_count(), before + 3);
    rlx_pool *prev = rlx_pool_use(p);
    int hits[40] = {0};
    cover_ctx c = {hits, 1, 40, 0, 0};
    rlx_parallel_for(40, 1, 1, cover_range, &c, NULL);
    rlx_pool_use(prev);
    rlx_pool_release(q);
    rlx_pool_release(p);
  }
  rlx_parallel_set_min_work(RLX_PARALLEL_MIN_WORK);
  assert_int_equal(task_count(), before);
}

static void thread_counts_checked(void **state) {
  (void)state;
  rlx_pool *p = (rlx_pool *)1;
  assert_int_equal(rlx_pool_acquire(0, &p), RLX_ERR_INVALID_ARG);
  assert_null(p);
  assert_int_equal(rlx_pool_acquire(RLX_MAX_THREADS + 1, &p), RLX_ERR_INVALID_ARG);
  int32_t n = 0;
  assert_int_equal(rlx_threads_resolve(-1, "test", &n), RLX_ERR_INVALID_ARG);
  assert_non_null(strstr(rlx_last_error(), "threads is -1"));
  assert_int_equal(rlx_threads_resolve(1 << 30, "test", &n), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_threads_resolve(0, "test", &n), RLX_OK);
  assert_true(n >= 1 && n <= RLX_MAX_THREADS);
  assert_int_equal(rlx_threads_resolve(7, "test", &n), RLX_OK);
  assert_int_equal(n, 7);
  /* RLX_THREADS: a count for the default; anything else refused by name (an explicit count still goes) */
  const char *saved = getenv("RLX_THREADS");
  char keep[32] = "";
  if (saved) snprintf(keep, sizeof keep, "%s", saved);
  setenv("RLX_THREADS", "3", 1);
  assert_int_equal(rlx_threads_resolve(0, "test", &n), RLX_OK);
  assert_int_equal(n, 3);
  const char *bad[3] = {"many", "0", "1000"};
  for (int i = 0; i < 3; i++) {
    setenv("RLX_THREADS", bad[i], 1);
    assert_int_equal(rlx_threads_resolve(0, "test", &n), RLX_ERR_INVALID_ARG);
    assert_non_null(strstr(rlx_last_error(), "RLX_THREADS is"));
    assert_int_equal(rlx_threads_resolve(2, "test", &n), RLX_OK);
    assert_int_equal(n, 2);
  }
  if (saved) setenv("RLX_THREADS", keep, 1);
  else unsetenv("RLX_THREADS");
}

#ifndef POOL_ONLY
static rlx_status compile_with(int32_t threads, rlx_session **s) {
  rlx_graph *g = rlx_graph_new();
  int32_t dims[2] = {64, 64};
  rlx_node a = rlx_input(g, "a", 2, dims, RLX_F32), b = rlx_input(g, "b", 2, dims, RLX_F32);
  rlx_node y = rlx_matmul(g, a, b);
  rlx_compile_options opt = {RLX_DEVICE_CPU, 0, 0, threads};
  rlx_status st = rlx_compile(g, &y, 1, &opt, s);
  rlx_graph_free(g);
  return st;
}

static void bad_options_refused(void **state) {
  (void)state;
  const int32_t bad[3] = {-1, -1000, RLX_MAX_THREADS + 1};
  for (int i = 0; i < 3; i++) {
    rlx_session *s = (rlx_session *)1;
    assert_int_equal(compile_with(bad[i], &s), RLX_ERR_INVALID_ARG);
    assert_null(s);
    assert_non_null(strstr(rlx_last_error(), "threads"));
  }
}

static void sessions_leave_no_thread(void **state) {
  (void)state;
  const int before = task_count();
  float x[64 * 64];
  for (int i = 0; i < 64 * 64; i++) x[i] = (float)(i % 7) - 3.0f;
  for (int i = 0; i < 100; i++) {
    rlx_session *s = NULL, *t = NULL;
    assert_int_equal(compile_with(3, &s), RLX_OK);
    assert_int_equal(compile_with(3, &t), RLX_OK);
    assert_int_equal(task_count(), before + 2); /* one pool for both */
    assert_int_equal(rlx_session_set_input(s, "a", x, 64 * 64), RLX_OK);
    assert_int_equal(rlx_session_set_input(s, "b", x, 64 * 64), RLX_OK);
    assert_int_equal(rlx_session_run(s), RLX_OK);
    rlx_session_free(s);
    rlx_session_free(t);
  }
  assert_int_equal(task_count(), before);
}
#endif

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(loops_cover_every_item),
      cmocka_unit_test(small_loops_stay_inline),
      cmocka_unit_test(pools_leave_no_thread),
      cmocka_unit_test(thread_counts_checked),
#ifndef POOL_ONLY
      cmocka_unit_test(bad_options_refused),
      cmocka_unit_test(sessions_leave_no_thread),
#endif
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
