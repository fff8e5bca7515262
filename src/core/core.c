/* core.c - allocator hook, thread-local error message, checked sizes, RNG. */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  return realloc(ptr, nsize);
}

static rlx_alloc_fn g_alloc = default_alloc;
static void *g_alloc_ud = NULL;

void rlx_set_allocator(rlx_alloc_fn fn, void *ud) {
  g_alloc = fn ? fn : default_alloc;
  g_alloc_ud = fn ? ud : NULL;
}

/* The kernels' ranges on the thread pool (pool.c) allocate their
 * workspaces from several threads at once: the hook is called under a lock,
 * so a hook written for one thread stays correct. */
#if defined(__wasm__) && defined(RLX_WASM_THREADS)
/* The Web Worker pool (pool_wasm.c): a spinlock, as a page's main thread
 * cannot wait; it also keeps wasi-libc's malloc, which has no lock of its
 * own, to one thread at a time. */
#include <stdatomic.h>
static atomic_flag alloc_mu = ATOMIC_FLAG_INIT;
static void *call_alloc(void *ptr, size_t osize, size_t nsize) {
  while (atomic_flag_test_and_set_explicit(&alloc_mu, memory_order_acquire)) {
  }
  void *r = g_alloc(g_alloc_ud, ptr, osize, nsize);
  atomic_flag_clear_explicit(&alloc_mu, memory_order_release);
  return r;
}
#elif defined(__wasm__) || defined(RLX_NO_THREADS)
static void *call_alloc(void *ptr, size_t osize, size_t nsize) { return g_alloc(g_alloc_ud, ptr, osize, nsize); }
#else
#include <pthread.h>
static pthread_mutex_t alloc_mu = PTHREAD_MUTEX_INITIALIZER;
static void *call_alloc(void *ptr, size_t osize, size_t nsize) {
  pthread_mutex_lock(&alloc_mu);
  void *r = g_alloc(g_alloc_ud, ptr, osize, nsize);
  pthread_mutex_unlock(&alloc_mu);
  return r;
}
/* A zeroed block: the default allocator's calloc, whose fresh pages from
 * the OS are zero without being written (a model's KV cache is then
 * touched only where used); *zeroed says whether it came zeroed.  Native
 * only: wasi-libc's calloc clears every block itself. */
#define RLX_CALLOC_ZEROED 1
static void *call_calloc(size_t n, int *zeroed) {
  pthread_mutex_lock(&alloc_mu);
  void *r = (*zeroed = g_alloc == default_alloc) ? calloc(1, n) : g_alloc(g_alloc_ud, NULL, 0, n);
  pthread_mutex_unlock(&alloc_mu);
  return r;
}
#endif

void *rlx_malloc(size_t n) { return n ? call_alloc(NULL, 0, n) : NULL; }

void *rlx_calloc(size_t count, size_t size) {
  size_t n;
  if (!rlx_mul_size(count, size, &n) || n == 0) return NULL;
#ifdef RLX_CALLOC_ZEROED
  int zeroed;
  void *p = call_calloc(n, &zeroed);
  if (p && !zeroed) memset(p, 0, n);
#else
  void *p = rlx_malloc(n);
  if (p) memset(p, 0, n);
#endif
  return p;
}

void *rlx_realloc(void *p, size_t old_n, size_t new_n) {
  if (new_n == 0) {
    rlx_free(p, old_n);
    return NULL;
  }
  return call_alloc(p, p ? old_n : 0, new_n);
}

void rlx_free(void *p, size_t n) {
  if (p) call_alloc(p, n, 0);
}

char *rlx_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = rlx_malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

void rlx_strfree(char *s) {
  if (s) rlx_free(s, strlen(s) + 1);
}

#if defined(__wasm__)
#define RLX_TLS /* one message per instance, threads or not (pool_wasm.c) */
#else
#define RLX_TLS _Thread_local
#endif
static RLX_TLS char g_msg[1024];

const char *rlx_last_error(void) { return g_msg; }
void rlx_clear_error(void) { g_msg[0] = 0; }

rlx_status rlx_error(rlx_status code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_msg, sizeof g_msg, fmt, ap);
  va_end(ap);
  return code;
}

const char *rlx_status_name(rlx_status s) {
  switch (s) {
    case RLX_OK: return "ok";
    case RLX_ERR_INVALID_ARG: return "invalid argument";
    case RLX_ERR_SHAPE: return "shape error";
    case RLX_ERR_GRAPH: return "graph error";
    case RLX_ERR_NO_MEMORY: return "out of memory";
    case RLX_ERR_NOT_FOUND: return "not found";
    case RLX_ERR_UNSUPPORTED: return "unsupported";
    case RLX_ERR_STATE: return "bad state";
    case RLX_ERR_NUMERIC: return "numeric error";
  }
  return "unknown status";
}

const char *rlx_version(void) { return "0.1.0"; }

void rlx_format_dims(char *buf, size_t cap, int32_t rank, const int32_t *dims) {
  size_t used = 0;
  if (cap == 0) return;
  buf[0] = 0;
  used += (size_t)snprintf(buf + used, cap - used, "[");
  for (int32_t i = 0; i < rank && used < cap; i++)
    used += (size_t)snprintf(buf + used, cap - used, i ? ", %d" : "%d", (int)dims[i]);
  if (used < cap) snprintf(buf + used, cap - used, "]");
}

int rlx_mul_size(size_t a, size_t b, size_t *out) {
  if (a != 0 && b > SIZE_MAX / a) return 0;
  *out = a * b;
  return 1;
}

uint64_t rlx_hash64(uint64_t seed, uint64_t i) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + i + 0x632BE59BD9B4E019ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  z += i * 0xD6E8FEB86659FD93ull;
  z = (z ^ (z >> 32)) * 0xD6E8FEB86659FD93ull;
  return z ^ (z >> 32);
}

float rlx_uniform(uint64_t seed, uint64_t i) {
  return (float)(rlx_hash64(seed, i) >> 40) * (1.0f / 16777216.0f);
}
