/* pool_loop.h - the loop a thread pool hands out, shared by the pthread
 * pool (pool.c) and the Web Worker pool (pool_wasm.c); how the threads
 * sleep and are woken is theirs.  A loop of n items is cut into `ranges`
 * fixed ranges whose bounds are multiples of grain (the same cut whichever
 * thread runs a range); ranges are claimed through one 64-bit word holding
 * (generation, ranges, next range), so a thread late from an earlier loop
 * can never claim a range of the next one, and the loop's other fields are
 * read only after a claim succeeded. */
#ifndef RLX_CORE_POOL_LOOP_H
#define RLX_CORE_POOL_LOOP_H

#include <stdatomic.h>

#include "../cpu/kernels.h"
#include "pool.h"

/* Ranges per thread in one loop: a few more ranges than threads let a
 * thread that finishes early (or one the OS runs late) even out the load. */
#define RLX_RANGES_PER_THREAD 2

typedef struct {
  atomic_uint_fast64_t claim; /* gen << 32 | ranges << 16 | next range */
  atomic_size_t done;         /* ranges finished in this loop */
  /* the loop (written before its generation is published) */
  rlx_task_fn fn;
  void *ctx;
  size_t n, grain, units;
  struct rlx_scratch *ws; /* one workspace per thread; [0] for the caller */
} rlx_pool_loop;

/* The units of grain items in a loop of n (the last one may be short). */
static inline size_t rlx_pool_loop_units(size_t n, size_t grain) { return (n + grain - 1) / grain; }

/* The ranges of a loop of n items (grain raised to 1) on `threads`
 * threads, or 0 where it runs inline: a single unit, or n * work under
 * `least` units of work. */
static inline size_t rlx_pool_loop_ranges(size_t n, size_t *grain, size_t work, size_t least, int32_t threads) {
  if (*grain < 1) *grain = 1;
  const size_t units = rlx_pool_loop_units(n, *grain);
  if (units < 2 || work == 0 || (n <= least / work && n * work < least)) return 0;
  const size_t ranges = (size_t)threads * RLX_RANGES_PER_THREAD;
  return ranges < units ? ranges : units;
}

/* Writes the loop, then makes its ranges claimable as generation g. */
static inline void rlx_pool_loop_publish(rlx_pool_loop *l, unsigned g, size_t ranges, size_t n, size_t grain,
                                         rlx_task_fn fn, void *ctx, struct rlx_scratch *ws) {
  l->fn = fn;
  l->ctx = ctx;
  l->n = n;
  l->grain = grain;
  l->units = rlx_pool_loop_units(n, grain);
  l->ws = ws;
  atomic_store_explicit(&l->done, 0, memory_order_relaxed);
  atomic_store_explicit(&l->claim, (uint_fast64_t)g << 32 | (uint_fast64_t)ranges << 16, memory_order_release);
}

/* Claims and runs ranges of generation g until none is left, as thread `index`. */
static inline void rlx_pool_loop_run(rlx_pool_loop *l, unsigned g, int32_t index) {
  uint_fast64_t c = atomic_load_explicit(&l->claim, memory_order_acquire);
  for (;;) {
    const size_t r = (size_t)(c & 0xffff), ranges = (size_t)((c >> 16) & 0xffff);
    if ((unsigned)(c >> 32) != g || r >= ranges) return;
    if (!atomic_compare_exchange_weak_explicit(&l->claim, &c, c + 1, memory_order_acq_rel, memory_order_acquire))
      continue;
    const size_t u0 = l->units * r / ranges, u1 = l->units * (r + 1) / ranges;
    size_t b = u0 * l->grain, e = u1 * l->grain;
    if (e > l->n) e = l->n;
    if (b < e) l->fn(l->ctx, b, e, &l->ws[index]);
    atomic_fetch_add_explicit(&l->done, 1, memory_order_acq_rel);
  }
}

/* The calling thread's pool and workspaces (TLS: _Thread_local in the
 * pthread pool; empty in wasm, where only the thread that calls the library
 * sets them) and the functions of pool.h over them. */
#define RLX_POOL_CURRENT(TLS)                                                       \
  static TLS rlx_pool *current;                                                     \
  static TLS struct rlx_scratch *current_ws;                                        \
  rlx_pool *rlx_pool_use(rlx_pool *p) {                                             \
    rlx_pool *prev = current;                                                       \
    current = p;                                                                    \
    return prev;                                                                    \
  }                                                                                 \
  struct rlx_scratch *rlx_pool_workspaces(struct rlx_scratch *ws) {                 \
    struct rlx_scratch *prev = current_ws;                                          \
    current_ws = ws;                                                                \
    return prev;                                                                    \
  }                                                                                 \
  int32_t rlx_parallel_threads(void) { return current ? current->threads : 1; }

#endif
