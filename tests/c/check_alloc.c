/* check_alloc.c - the checking allocator of check_alloc.h.  Each block is
 * [header | user bytes | tail guard]; the header holds the size, a serial
 * number and links in a list of live blocks.  Realloc always moves the
 * block (a pointer kept across a realloc then reads freed memory, which
 * ASan reports and which, without ASan, holds a fill pattern), new bytes
 * are filled with 0xA5 and freed ones with 0x5A (outside ASan, which
 * poisons them itself).  Single-threaded, like the library. */
#include "check_alloc.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx.h"
#include "rlx_models.h"

#if defined(__SANITIZE_ADDRESS__)
#define CHECK_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CHECK_ASAN 1
#endif
#endif
#ifndef CHECK_ASAN
#define CHECK_ASAN 0
#endif

#define MAGIC_LIVE 0x6c697665626c6b31ull /* "liveblk1" */
#define MAGIC_DEAD 0x646561646465616full
#define GUARD 0xc3

typedef struct block {
  struct block *prev, *next;
  size_t size;
  unsigned long long serial, magic;
  unsigned long long pad; /* keeps the user bytes 16-aligned */
} block;

enum { TAIL = CHECK_ASAN ? 0 : 8 };

static struct {
  int active;
  block head; /* circular list of live blocks */
  size_t live_blocks, live_bytes, peak;
  unsigned long long serial;
  long count, refused, fail_at, mismatches;
  int sticky;
} st = {.fail_at = -1};

extern void __sanitizer_print_stack_trace(void) __attribute__((weak));

static void trace(void) {
  if (__sanitizer_print_stack_trace) __sanitizer_print_stack_trace();
}

static block *header_of(void *p) {
  block *b = (block *)p - 1;
  if (b->magic != MAGIC_LIVE) {
    fprintf(stderr, "check_alloc: %p is not a live block (%s)\n", p,
            b->magic == MAGIC_DEAD ? "freed already" : "not ours");
    trace();
    abort();
  }
  for (int i = 0; i < TAIL; i++)
    if (((unsigned char *)p)[b->size + i] != GUARD) {
      fprintf(stderr, "check_alloc: block %p of %zu bytes (serial %llu) was written past its end\n", p, b->size,
              b->serial);
      trace();
      abort();
    }
  return b;
}

static void unlink_block(block *b) {
  b->prev->next = b->next;
  b->next->prev = b->prev;
  st.live_blocks--;
  st.live_bytes -= b->size;
}

/* Through a volatile pointer: a fill just before free is not a dead store. */
static void *(*volatile fill)(void *, int, size_t) = memset;

static void release(block *b) {
  unlink_block(b);
  b->magic = MAGIC_DEAD;
  if (!CHECK_ASAN) fill(b + 1, 0x5a, b->size + TAIL);
  free(b);
}

static void check_osize(block *b, size_t osize, const char *what) {
  if (b->size == osize) return;
  st.mismatches++;
  fprintf(stderr, "check_alloc: %s of a %zu-byte block (serial %llu) with osize %zu\n", what, b->size, b->serial,
          osize);
  trace();
}

__attribute__((unused)) /* installed only natively */
static void *check_fn(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  if (!st.head.next) st.head.next = st.head.prev = &st.head;
  block *old = ptr ? header_of(ptr) : NULL;
  if (old) check_osize(old, osize, nsize ? "realloc" : "free");
  else if (osize != 0 && nsize != 0) {
    st.mismatches++;
    fprintf(stderr, "check_alloc: new block of %zu bytes asked with osize %zu (not 0)\n", nsize, osize);
    trace();
  }
  if (nsize == 0) {
    if (old) release(old);
    return NULL;
  }
  long n = st.count++;
  if (st.fail_at >= 0 && (n == st.fail_at || (st.sticky && n > st.fail_at))) {
    st.refused++;
    return NULL;
  }
  if (nsize > SIZE_MAX - sizeof(block) - TAIL) return NULL;
  block *b = malloc(sizeof(block) + nsize + TAIL);
  if (!b) return NULL;
  b->size = nsize;
  b->serial = ++st.serial;
  b->magic = MAGIC_LIVE;
  b->pad = 0;
  b->next = st.head.next;
  b->prev = &st.head;
  st.head.next->prev = b;
  st.head.next = b;
  st.live_blocks++;
  st.live_bytes += nsize;
  if (st.live_bytes > st.peak) st.peak = st.live_bytes;
  unsigned char *user = (unsigned char *)(b + 1);
  size_t keep = old ? (old->size < nsize ? old->size : nsize) : 0;
  if (keep) memcpy(user, old + 1, keep);
  if (!CHECK_ASAN) memset(user + keep, 0xa5, nsize - keep);
  memset(user + nsize, GUARD, TAIL);
  if (old) release(old);
  return user;
}

int check_alloc_active(void) { return st.active; }

void check_alloc_fail_at(long n, int sticky) {
  st.fail_at = n;
  st.sticky = sticky;
  st.count = 0;
  st.refused = 0;
}

long check_alloc_count(void) { return st.count; }
long check_alloc_refused(void) { return st.refused; }
size_t check_alloc_live_blocks(void) { return st.live_blocks; }
size_t check_alloc_live_bytes(void) { return st.live_bytes; }
size_t check_alloc_peak_bytes(void) { return st.peak; }
void check_alloc_reset_peak(void) { st.peak = st.live_bytes; }
long check_alloc_mismatches(void) { return st.mismatches; }

const char *check_alloc_sweep(int (*life)(void *user), void *user, long max_runs) {
  static char why[160];
  const size_t live = st.live_bytes;
  check_alloc_fail_at(-1, 0);
  int rc = life(user);
  const long total = st.count;
  if (rc != 0) return snprintf(why, sizeof why, "without failures the run returned %d", rc), why;
  for (long k = 0; k < total; k += max_runs > 0 ? total / max_runs + 1 : 1) {
    check_alloc_fail_at(k, 0);
    rc = life(user);
    check_alloc_fail_at(-1, 0);
    if (rc == 0) return snprintf(why, sizeof why, "allocation %ld of %ld failed, yet the run succeeded", k, total), why;
    if (st.live_bytes != live)
      return snprintf(why, sizeof why, "allocation %ld of %ld failed: %zu bytes live after, %zu before", k, total,
                      st.live_bytes, live), why;
  }
  return NULL;
}

#if !defined(__wasm__)
#include <unistd.h>

__attribute__((constructor)) static void check_alloc_start(void) {
  const char *env = getenv("RLX_CHECK_ALLOC");
  if (!st.head.next) st.head.next = st.head.prev = &st.head;
  if (env && strcmp(env, "0") == 0) return;
  rlx_set_allocator(check_fn, NULL);
  st.active = 1;
}

/* At exit: the model cache is the library's only state that outlives its
 * handles; once it is cleared nothing may be live. */
__attribute__((destructor)) static void check_alloc_finish(void) {
  if (!st.active) return;
  st.fail_at = -1;
  rlx_models_clear_cache();
  if (st.live_blocks == 0 && st.mismatches == 0) return;
  fprintf(stderr, "check_alloc: %ld osize mismatch(es); %zu block(s), %zu byte(s) still live at exit\n",
          st.mismatches, st.live_blocks, st.live_bytes);
  int shown = 0;
  for (block *b = st.head.next; b != &st.head && shown < 10; b = b->next, shown++)
    fprintf(stderr, "  live: %zu bytes, serial %llu\n", b->size, b->serial);
  fflush(stderr);
  _exit(1);
}
#endif
