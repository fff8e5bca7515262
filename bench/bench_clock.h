/* bench_clock.h - what the native benches time with: a monotonic clock in
 * milliseconds and the median of a run's samples. */
#ifndef RLX_BENCH_CLOCK_H
#define RLX_BENCH_CLOCK_H

#include <stdlib.h>
#include <time.h>

static inline double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static inline int cmp_double(const void *a, const void *b) {
  double d = *(const double *)a - *(const double *)b;
  return (d > 0) - (d < 0);
}

/* The median of v[0, n) (sorts v in place). */
static inline double median_of(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
