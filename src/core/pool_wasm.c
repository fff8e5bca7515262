/* pool_wasm.c - rlx_parallel_for (pool.h) over Web Workers, for wasm
 * builds with RLX_WASM_THREADS (web/pkg/rlx_llm_threads*.wasm,
 * rlx_llm_train_threads*.wasm and rlx_web_threads*.wasm; compiled with
 * -matomics and linked with --import-memory --shared-memory, so the
 * module's memory is one SharedArrayBuffer).  JS (web/runtime/threads.js)
 * starts the pool once per instance, before the model opens: it asks for
 * `threads` (the caller and threads - 1 Workers), instantiates the same
 * module in each Worker on the same memory, points the Worker's
 * __stack_pointer at a stack carved here (rlx_wasm_thread_stack), and calls
 * rlx_wasm_thread_run there, which returns only after rlx_wasm_threads_stop.
 * A loop is handed out as in pool.c (pool_loop.h): a generation number,
 * ranges claimed through one 64-bit word; workers spin briefly, then sleep
 * in memory.atomic.wait32 on the generation and are woken by
 * memory.atomic.notify.  The caller never waits (memory.atomic.wait32 traps
 * on a page's main thread): it runs ranges too, then spins for the join.
 *
 * What the Workers run and what that relies on: only kernel ranges
 * (src/cpu), whose one call into libc state is the allocator, through
 * rlx_malloc / rlx_free, which core.c serializes with a spinlock in this
 * build (Debian's wasi-libc has no threads build: its malloc has no lock).
 * The main thread runs nothing else while a loop is out (it is inside
 * rlx_parallel_for), so its direct malloc calls never overlap a Worker's.
 * No _Thread_local is used in wasm builds (core.c's error message is one
 * global: a range that fails writes it, the caller reads it after the
 * join), so the Workers need no TLS block.  A Worker that traps sets
 * `dead` from JS; the caller's join then traps too, and the model is lost
 * (a 'fatal' RlxError) instead of hanging. */
#include "pool.h"

#if defined(__wasm__) && defined(RLX_WASM_THREADS)
#include <stdatomic.h>
#include <stdlib.h>

#include "../cpu/kernels.h"
#include "core.h"
#include "pool_loop.h"

/* Spins of a worker on the generation before it sleeps. */
#define SPIN_WAIT 20000

struct rlx_pool {
  rlx_pool_loop loop;
  int32_t threads;
  rlx_scratch ws[RLX_WASM_MAX_THREADS]; /* the pool's own workspaces */
  atomic_int gen;                     /* the loop being run (wait32 needs an int) */
  atomic_int stop, dead;
  atomic_flag busy;
};

static rlx_pool pool; /* one per instance: a model owns its instance */
static unsigned char *stacks;
static size_t stack_bytes;
RLX_POOL_CURRENT()
static size_t min_work = RLX_PARALLEL_MIN_WORK;

void rlx_parallel_set_min_work(size_t units) { min_work = units; }

rlx_status rlx_wasm_threads_start(int32_t threads, size_t stack) {
  if (pool.threads)
    return rlx_error(RLX_ERR_INVALID_ARG, "threads: the pool of this instance is already started (%d)",
                     (int)pool.threads);
  if (threads < 1 || threads > RLX_WASM_MAX_THREADS)
    return rlx_error(RLX_ERR_INVALID_ARG, "threads: %d (1 .. %d)", (int)threads, RLX_WASM_MAX_THREADS);
  stack = (stack + 15) & ~(size_t)15;
  if (threads > 1 && !(stacks = aligned_alloc(16, stack * (size_t)(threads - 1))))
    return rlx_error(RLX_ERR_NO_MEMORY, "threads: cannot allocate %d stacks of %zu bytes", (int)threads - 1, stack);
  stack_bytes = stack;
  pool.threads = threads;
  return RLX_OK;
}

void *rlx_wasm_thread_stack(int32_t index) {
  if (index < 1 || index >= pool.threads) return NULL;
  return stacks + stack_bytes * (size_t)index; /* the top of stack index - 1: stacks grow down */
}

int32_t *rlx_wasm_thread_dead_flag(void) { return (int32_t *)&pool.dead; }

void rlx_wasm_thread_run(int32_t index) {
  if (index < 1 || index >= pool.threads) return;
  int seen = atomic_load(&pool.gen);
  while (!atomic_load(&pool.stop)) {
    int g = seen;
    for (int i = 0; i < SPIN_WAIT && g == seen; i++) g = atomic_load(&pool.gen);
    if (g == seen) {
      __builtin_wasm_memory_atomic_wait32((int *)&pool.gen, seen, -1);
      continue;
    }
    seen = g;
    rlx_pool_loop_run(&pool.loop, (unsigned)g, index);
  }
}

void rlx_wasm_threads_stop(void) {
  atomic_store(&pool.stop, 1);
  atomic_fetch_add(&pool.gen, 1);
  __builtin_wasm_memory_atomic_notify((int *)&pool.gen, (unsigned)-1);
}

int32_t rlx_threads_default(void) { return pool.threads > 0 ? pool.threads : 1; }

rlx_status rlx_threads_resolve(int32_t threads, const char *who, int32_t *out) {
  const int32_t started = rlx_threads_default();
  if (threads != 0 && threads != 1 && threads != started)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: threads is %d; this module started %d (give 0 for them, or 1)", who,
                     (int)threads, (int)started);
  *out = threads ? threads : started;
  return RLX_OK;
}

rlx_status rlx_pool_acquire(int32_t threads, rlx_pool **out) {
  *out = NULL;
  if (threads == 1) return RLX_OK;
  if (threads != pool.threads)
    return rlx_error(RLX_ERR_INVALID_ARG, "thread pool: %d threads, but this module started %d", (int)threads,
                     (int)pool.threads);
  *out = &pool;
  return RLX_OK;
}

void rlx_pool_release(rlx_pool *p) {
  (void)p; /* the Workers stay until JS stops them (rlx_wasm_threads_stop) */
}

void rlx_parallel_for(size_t n, size_t grain, size_t work, rlx_task_fn fn, void *ctx, rlx_scratch *ws) {
  rlx_pool *p = current;
  if (!n) return;
  size_t ranges;
  if (!p || !(ranges = rlx_pool_loop_ranges(n, &grain, work, min_work, p->threads)) ||
      atomic_flag_test_and_set(&p->busy)) {
    fn(ctx, 0, n, ws);
    return;
  }
  const unsigned g = (unsigned)atomic_load(&p->gen) + 1;
  rlx_pool_loop_publish(&p->loop, g, ranges, n, grain, fn, ctx, current_ws ? current_ws : p->ws);
  atomic_store(&p->gen, (int)g);
  __builtin_wasm_memory_atomic_notify((int *)&p->gen, (unsigned)-1);
  rlx_pool_loop_run(&p->loop, g, 0);
  /* Spin, never wait: this may be a page's main thread. */
  while (atomic_load_explicit(&p->loop.done, memory_order_acquire) < ranges)
    if (atomic_load_explicit(&p->dead, memory_order_relaxed)) __builtin_trap(); /* a Worker trapped in a range */
  atomic_flag_clear(&p->busy);
}

#else
typedef int rlx_pool_wasm_unused; /* an empty translation unit elsewhere */
#endif
