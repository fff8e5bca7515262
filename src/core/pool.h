/* pool.h - the one parallel-for of the C core.  A kernel cuts its OUTPUT
 * (rows, tiles, channels, heads) into fixed ranges and hands them to
 * rlx_parallel_for; every element is computed by the same code whatever
 * thread runs its range, and no reduction is ever split, so results are
 * bitwise the same for any thread count.  Natively the ranges run on a
 * pthread pool (pool.c), in wasm builds with RLX_WASM_THREADS on Web
 * Workers sharing the module's memory (pool_wasm.c); in the other wasm
 * builds (and with RLX_NO_THREADS) the parallel-for is this header's
 * inline loop: one call of the task over the whole range, nothing else
 * compiled in.
 *
 * The executor makes a session's pool current on its thread for a run
 * (rlx_pool_use); kernels never see a pool, only rlx_parallel_for. */
#ifndef RLX_CORE_POOL_H
#define RLX_CORE_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "rlx.h"

struct rlx_scratch;
typedef struct rlx_pool rlx_pool;

/* Runs items [begin, end) of the caller's loop.  ws: a workspace of the
 * thread running the range (rlx_scratch_get on it; kept by the pool across
 * calls), or the kernel's own scratch when the loop runs inline. */
typedef void (*rlx_task_fn)(void *ctx, size_t begin, size_t end, struct rlx_scratch *ws);

/* Largest thread count a session or model accepts. */
#define RLX_MAX_THREADS 256

/* Below this many units of work (about one multiply-add, or a quarter of
 * an element of an elementwise op, each) a parallel-for runs inline on the
 * calling thread.  Measured with bench/bench_threads.c (make bench-threads)
 * on the 2-core AMD EPYC test machine: one thread adds 8,192 floats in
 * about 1 us, 131,072 in 18 us, and a 256^3 GEMM (2^24 units) takes 0.33
 * ms, while handing a loop to a woken worker and joining it costs a few us
 * (more when the worker sleeps, tens of us when the OS runs it late).
 * 2^17 units, some 30-60 us of one thread's work, keeps that cost under a
 * tenth of the loop's.  On that machine, shared with other jobs, no size
 * ran faster on two threads than on one (2026-12-06), so the value is the
 * cost ratio above, not a measured break-even. */
#define RLX_PARALLEL_MIN_WORK ((size_t)1 << 17)

#if (defined(__wasm__) && !defined(RLX_WASM_THREADS)) || defined(RLX_NO_THREADS)

/* 0 where every loop runs inline: code only a threaded build needs can be
 * written as `if (RLX_THREADED && ...)` and vanishes from this one. */
#define RLX_THREADED 0

static inline int32_t rlx_threads_default(void) { return 1; }
/* Every loop runs on the calling thread: the option is ignored. */
static inline rlx_status rlx_threads_resolve(int32_t threads, const char *who, int32_t *out) {
  (void)threads, (void)who;
  *out = 1;
  return RLX_OK;
}
static inline rlx_status rlx_pool_acquire(int32_t threads, rlx_pool **out) {
  (void)threads;
  *out = NULL;
  return RLX_OK;
}
static inline void rlx_pool_release(rlx_pool *p) { (void)p; }
static inline rlx_pool *rlx_pool_use(rlx_pool *p) { return p; }
static inline struct rlx_scratch *rlx_pool_workspaces(struct rlx_scratch *ws) { return ws; }
static inline int32_t rlx_parallel_threads(void) { return 1; }
static inline void rlx_parallel_for(size_t n, size_t grain, size_t work, rlx_task_fn fn, void *ctx,
                                    struct rlx_scratch *ws) {
  (void)grain;
  (void)work;
  if (n) fn(ctx, 0, n, ws);
}

#else

#define RLX_THREADED 1

/* RLX_THREADS when set (1 .. RLX_MAX_THREADS), else the physical cores
 * this process may run on (at least 1); in wasm the threads JS started
 * (rlx_wasm_threads_start; 1 before). */
int32_t rlx_threads_default(void);
/* Checks a threads option (0: the default; else 1 .. RLX_MAX_THREADS) and
 * gives the count to use, or an RLX_ERR_INVALID_ARG naming `who`. */
rlx_status rlx_threads_resolve(int32_t threads, const char *who, int32_t *out);
/* A pool of `threads` threads in all (the caller counts as one), shared by
 * every holder of the same count and started on its first acquire; *out is
 * NULL for 1 thread.  threads 1 .. RLX_MAX_THREADS. */
rlx_status rlx_pool_acquire(int32_t threads, rlx_pool **out);
/* Drops one hold; the last one joins the pool's threads and frees it. */
void rlx_pool_release(rlx_pool *p);
/* RLX_PARALLEL_MIN_WORK, lowered by tests (to 1) so that tiny op cases
 * split too. */
void rlx_parallel_set_min_work(size_t units);
/* Makes p the calling thread's pool (NULL: none) and returns the previous. */
rlx_pool *rlx_pool_use(rlx_pool *p);
/* The workspaces the calling thread's loops hand their ranges from now on:
 * ws[0] for the caller, ws[i] for worker i, one per thread of the pool
 * (NULL: the pool's own, kept until the pool is freed).  A session passes
 * its own, so that what its kernels ask for is freed with it.  Returns the
 * previous. */
struct rlx_scratch *rlx_pool_workspaces(struct rlx_scratch *ws);
/* Threads of the calling thread's pool (1 without one). */
int32_t rlx_parallel_threads(void);
/* fn over [0, n) in ranges whose bounds are multiples of grain (the last
 * ends at n), spread over the current pool; inline (fn(ctx, 0, n, ws))
 * without a pool, when the pool is busy (a nested loop, another session),
 * or when n * work (work: units per item) is under RLX_PARALLEL_MIN_WORK.
 * Returns once every range has run. */
void rlx_parallel_for(size_t n, size_t grain, size_t work, rlx_task_fn fn, void *ctx, struct rlx_scratch *ws);

#if defined(__wasm__)
/* The Web Worker pool of a wasm build with threads (pool_wasm.c), driven
 * by JS: one pool per instance, started before any session; a threads
 * option other than 0, 1 or the started count is refused. */
#define RLX_WASM_MAX_THREADS 64
/* `threads` in all (the caller and threads - 1 Workers), each Worker with
 * a stack of stack_bytes carved from the heap. */
rlx_status rlx_wasm_threads_start(int32_t threads, size_t stack_bytes);
/* The top of Worker index's stack (1 .. threads - 1; NULL otherwise). */
void *rlx_wasm_thread_stack(int32_t index);
/* Worker index's loop: runs ranges until rlx_wasm_threads_stop. */
void rlx_wasm_thread_run(int32_t index);
/* Wakes every Worker and makes its loop return. */
void rlx_wasm_threads_stop(void);
/* A word JS sets (Atomics.store) when a Worker traps: the caller's join
 * traps then instead of waiting for a range that never ends. */
int32_t *rlx_wasm_thread_dead_flag(void);
#endif

#endif

/* Elements per range of a large elementwise op: whole vector blocks, and
 * enough work per range to pay for handing it out. */
#define RLX_ELEMENTWISE_GRAIN 4096

/* A range's failure, written from any thread into the loop's context (read
 * by the caller once the loop returned). */
static inline void rlx_task_failed(int *flag, int value) { __atomic_store_n(flag, value, __ATOMIC_RELAXED); }


#endif
