/* pool.c - the pthread pool behind rlx_parallel_for (pool.h).  One pool per
 * thread count, shared by every session and model that asks for that count
 * (reference-counted: started on the first acquire, its threads joined on
 * the last release).  A loop (pool_loop.h) is published as a generation
 * number; workers spin briefly on it, then sleep on a condition variable.
 * A loop started while the pool runs another (a nested loop, or two
 * sessions on different threads) runs inline: same results, no deadlock.
 * The wasm builds with threads have their own pool (pool_wasm.c). */
#define _GNU_SOURCE 1 /* sched_getaffinity, CPU_COUNT */
#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../cpu/kernels.h"
#include "core.h"
#include "pool_loop.h"

#if !defined(__wasm__) && !defined(RLX_NO_THREADS)

/* RLX_THREADS from the environment: 0 unset or empty, -1 not a count of
 * 1 .. RLX_MAX_THREADS, else the count. */
static int32_t env_threads(void) {
  const char *env = getenv("RLX_THREADS");
  if (!env || !*env) return 0;
  char *end;
  const long v = strtol(env, &end, 10);
  return *end == '\0' && v >= 1 && v <= RLX_MAX_THREADS ? (int32_t)v : -1;
}

rlx_status rlx_threads_resolve(int32_t threads, const char *who, int32_t *out) {
  if (threads < 0 || threads > RLX_MAX_THREADS)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: threads is %d; give 1 .. %d, or 0 for the default", who, (int)threads,
                     RLX_MAX_THREADS);
  if (!threads && env_threads() < 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: the environment's RLX_THREADS is '%.32s'; give 1 .. %d, or unset it "
                     "for the physical cores", who, getenv("RLX_THREADS"), RLX_MAX_THREADS);
  *out = threads ? threads : rlx_threads_default();
  return RLX_OK;
}

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>

/* Spins of a worker on the generation before it sleeps (about 100 us). */
#define SPIN_WAIT 4000
#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

struct rlx_pool {
  rlx_pool_loop loop; /* its ws: the pool's own or its caller's (rlx_pool_workspaces) */
  int32_t threads, holders;
  pthread_t *th;
  rlx_scratch *ws; /* one workspace per thread; [0] for the caller */
  pthread_mutex_t mu;
  pthread_cond_t wake;
  atomic_uint gen;        /* the loop being run (changes under mu) */
  atomic_flag busy;
  int stop;
  rlx_pool *next; /* the shared list */
};

static pthread_mutex_t pools_mu = PTHREAD_MUTEX_INITIALIZER;
static rlx_pool *pools;
RLX_POOL_CURRENT(_Thread_local)
static atomic_size_t min_work = RLX_PARALLEL_MIN_WORK;

void rlx_parallel_set_min_work(size_t units) { atomic_store(&min_work, units); }

typedef struct {
  rlx_pool *p;
  int32_t index;
} worker_arg;

static void *worker(void *arg) {
  rlx_pool *p = ((worker_arg *)arg)->p;
  const int32_t index = ((worker_arg *)arg)->index;
  free(arg);
  unsigned seen = atomic_load_explicit(&p->gen, memory_order_acquire);
  for (;;) {
    unsigned g = seen;
    for (int i = 0; i < SPIN_WAIT && g == seen; i++) {
      CPU_RELAX();
      g = atomic_load_explicit(&p->gen, memory_order_acquire);
    }
    if (g == seen) {
      pthread_mutex_lock(&p->mu);
      while (!p->stop && (g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen)
        pthread_cond_wait(&p->wake, &p->mu);
      const int stop = p->stop;
      pthread_mutex_unlock(&p->mu);
      if (stop) return NULL;
    }
    seen = g;
    rlx_pool_loop_run(&p->loop, g, index);
  }
}

static void pool_destroy(rlx_pool *p, int32_t started) {
  pthread_mutex_lock(&p->mu);
  p->stop = 1;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int32_t i = 0; i < started; i++) pthread_join(p->th[i], NULL);
  for (int32_t i = 0; i < p->threads; i++) rlx_scratch_release(&p->ws[i]);
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->wake);
  free(p->th);
  free(p->ws);
  free(p);
}

static rlx_status pool_create(int32_t threads, rlx_pool **out) {
  rlx_pool *p = calloc(1, sizeof *p);
  if (!p) return rlx_error(RLX_ERR_NO_MEMORY, "thread pool: out of memory");
  p->threads = threads;
  p->th = calloc((size_t)threads, sizeof *p->th);
  p->ws = calloc((size_t)threads, sizeof *p->ws);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  atomic_init(&p->gen, 0);
  atomic_init(&p->loop.claim, 0);
  atomic_init(&p->loop.done, 0);
  atomic_flag_clear(&p->busy);
  if (!p->th || !p->ws) {
    pool_destroy(p, 0);
    return rlx_error(RLX_ERR_NO_MEMORY, "thread pool: out of memory");
  }
  for (int32_t i = 1; i < threads; i++) {
    worker_arg *a = malloc(sizeof *a);
    int rc = a ? 0 : -1;
    if (a) {
      a->p = p;
      a->index = i;
      rc = pthread_create(&p->th[i - 1], NULL, worker, a);
      if (rc) free(a);
    }
    if (rc) {
      pool_destroy(p, i - 1);
      return rlx_error(RLX_ERR_NO_MEMORY, "thread pool: could not start thread %d of %d", (int)i + 1, (int)threads);
    }
  }
  *out = p;
  return RLX_OK;
}

rlx_status rlx_pool_acquire(int32_t threads, rlx_pool **out) {
  *out = NULL;
  if (threads < 1 || threads > RLX_MAX_THREADS)
    return rlx_error(RLX_ERR_INVALID_ARG, "thread pool: %d threads (1 .. %d)", (int)threads, RLX_MAX_THREADS);
  if (threads == 1) return RLX_OK;
  pthread_mutex_lock(&pools_mu);
  rlx_pool *p = pools;
  while (p && p->threads != threads) p = p->next;
  rlx_status st = RLX_OK;
  if (!p && (st = pool_create(threads, &p)) == RLX_OK) {
    p->next = pools;
    pools = p;
  }
  if (p) p->holders++;
  pthread_mutex_unlock(&pools_mu);
  *out = p;
  return st;
}

void rlx_pool_release(rlx_pool *p) {
  if (!p) return;
  pthread_mutex_lock(&pools_mu);
  const int last = --p->holders == 0;
  if (last) {
    rlx_pool **at = &pools;
    while (*at != p) at = &(*at)->next;
    *at = p->next;
  }
  pthread_mutex_unlock(&pools_mu);
  if (last) pool_destroy(p, p->threads - 1);
}


void rlx_parallel_for(size_t n, size_t grain, size_t work, rlx_task_fn fn, void *ctx, rlx_scratch *ws) {
  rlx_pool *p = current;
  if (!n) return;
  size_t ranges;
  if (!p || !(ranges = rlx_pool_loop_ranges(n, &grain, work, atomic_load_explicit(&min_work, memory_order_relaxed),
                                             p->threads)) ||
      atomic_flag_test_and_set_explicit(&p->busy, memory_order_acquire)) {
    fn(ctx, 0, n, ws);
    return;
  }
  pthread_mutex_lock(&p->mu);
  const unsigned g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
  rlx_pool_loop_publish(&p->loop, g, ranges, n, grain, fn, ctx, current_ws ? current_ws : p->ws);
  atomic_store_explicit(&p->gen, g, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  /* The caller runs ranges too (a loop inside one runs inline: busy). */
  rlx_pool_loop_run(&p->loop, g, 0);
  for (unsigned spins = 0; atomic_load_explicit(&p->loop.done, memory_order_acquire) < ranges; spins++) {
    CPU_RELAX();
    if (spins > 256) sched_yield();
  }
  atomic_flag_clear_explicit(&p->busy, memory_order_release);
}

/* Distinct (package, core) pairs among the CPUs this process may use. */
static int32_t physical_cores(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int32_t)n : 1;
  }
  int32_t logical = CPU_COUNT(&set), cores = 0;
  long seen[RLX_MAX_THREADS];
  for (int cpu = 0; cpu < CPU_SETSIZE && cores < RLX_MAX_THREADS; cpu++) {
    if (!CPU_ISSET(cpu, &set)) continue;
    long ids[2] = {-1, -1};
    const char *what[2] = {"physical_package_id", "core_id"};
    for (int k = 0; k < 2; k++) {
      char path[96];
      snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", cpu, what[k]);
      FILE *f = fopen(path, "r");
      if (f) {
        if (fscanf(f, "%ld", &ids[k]) != 1) ids[k] = -1;
        fclose(f);
      }
    }
    if (ids[1] < 0) return logical > 0 ? logical : 1; /* no topology: count logical CPUs */
    const long key = ids[0] * 65536 + ids[1];
    int dup = 0;
    for (int32_t i = 0; i < cores && !dup; i++) dup = seen[i] == key;
    if (!dup) seen[cores++] = key;
  }
  return cores > 0 ? cores : 1;
}

int32_t rlx_threads_default(void) {
  const int32_t env = env_threads();
  if (env > 0) return env; /* a bad value: refused by rlx_threads_resolve, the cores here */
  static atomic_int cached;
  int v = atomic_load(&cached);
  if (!v) atomic_store(&cached, v = physical_cores());
  return v;
}

#endif
