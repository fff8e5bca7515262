/* name_set.c - the set of names over indexes (name_set.h). */
#include <string.h>

#include "name_set.h"
#include "core.h"

/* The slot holding name[len], or the empty slot where it would go. */
static uint32_t *slot_of(const rlx_name_set *s, rlx_name_at_fn at, const void *ctx, const char *name, size_t len) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (size_t i = 0; i < len; i++) h = (h ^ (uint8_t)name[i]) * 1099511628211ull;
  for (uint32_t i = (uint32_t)h & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
    size_t l;
    const char *n = s->slots[i] ? at(ctx, s->slots[i] - 1, &l) : NULL;
    if (!n || (l == len && memcmp(n, name, len) == 0)) return &s->slots[i];
  }
}

int64_t rlx_name_set_find(const rlx_name_set *s, rlx_name_at_fn at, const void *ctx, const char *name, size_t len) {
  const uint32_t *slot = s->cap ? slot_of(s, at, ctx, name, len) : NULL;
  return slot && *slot ? (int64_t)*slot - 1 : -1;
}

/* Puts idx (its name not in the set) where its name goes. */
static void place(rlx_name_set *s, rlx_name_at_fn at, const void *ctx, uint32_t idx) {
  size_t l;
  const char *n = at(ctx, idx, &l);
  *slot_of(s, at, ctx, n, l) = idx + 1;
}

rlx_status rlx_name_set_add(rlx_name_set *s, rlx_name_at_fn at, const void *ctx, uint32_t idx) {
  if ((uint64_t)(s->n + 1) * 2 > s->cap) {
    const uint32_t cap = s->cap ? s->cap * 2 : 16, old_cap = s->cap;
    uint32_t *slots = cap ? rlx_calloc(cap, sizeof *slots) : NULL, *old = s->slots;
    if (!slots) return RLX_ERR_NO_MEMORY;
    s->slots = slots;
    s->cap = cap;
    for (uint32_t i = 0; i < old_cap; i++)
      if (old[i]) place(s, at, ctx, old[i] - 1);
    rlx_free(old, (size_t)old_cap * sizeof *old);
  }
  place(s, at, ctx, idx);
  s->n++;
  return RLX_OK;
}

void rlx_name_set_free(rlx_name_set *s) {
  rlx_free(s->slots, (size_t)s->cap * sizeof *s->slots);
  memset(s, 0, sizeof *s);
}
