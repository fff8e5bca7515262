/* scratch.c - the kernels' workspace (kernels.h): one 64-byte aligned
 * block grown on demand and kept across calls, through the allocator hook.
 * The executor holds one per session, the thread pool one per thread. */
#include "kernels.h"

void *rlx_scratch_get(rlx_scratch *s, size_t bytes) {
  if (bytes <= s->bytes) return s->ptr;
  size_t want = (bytes + 63) & ~(size_t)63;
  void *p = NULL;
  rlx_scratch_release(s);
  p = rlx_malloc(want + 64);
  if (!p) return NULL;
  s->ptr = p;
  s->bytes = want;
  /* Keep the raw pointer for free: store alignment offset before the block. */
  uintptr_t aligned = ((uintptr_t)p + 64) & ~(uintptr_t)63;
  ((unsigned char *)aligned)[-1] = (unsigned char)(aligned - (uintptr_t)p);
  s->ptr = (void *)aligned;
  return s->ptr;
}

void rlx_scratch_release(rlx_scratch *s) {
  if (s->ptr) {
    unsigned char *aligned = s->ptr;
    rlx_free(aligned - aligned[-1], s->bytes + 64);
  }
  s->ptr = NULL;
  s->bytes = 0;
}
