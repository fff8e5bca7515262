/* name_set.c - the set of names over indexes (name_set.h). */
#include <string.h>

#include "name_set.h"
#include "core.h"

static uint64_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

int64_t rlx_name_set_find(const rlx_name_set *s, rlx_name_at_fn at, const void *ctx, const char *name, size_t len) {
  if (!s->cap) return -1;
  for (uint32_t i = (uint32_t)hash_name(name, len) & (s->cap - 1);; i = (i + 1) & (s->cap - 1)) {
    if (!s->slots[i]) return -1;
    size_t l;
    const char *n = at(ctx, s->slots[i] - 1, &l);
    if (l == len && memcmp(n, name, len) == 0) return s->slots[i] - 1;
  }
}

static void set_place(uint32_t *slots, uint32_t cap, uint64_t h, uint32_t idx) {
  uint32_t i = (uint32_t)h & (cap - 1);
  while (slots[i]) i = (i + 1) & (cap - 1);
  slots[i] = idx + 1;
}

rlx_status rlx_name_set_add(rlx_name_set *s, rlx_name_at_fn at, const void *ctx, uint32_t idx, const char *what) {
  if ((uint64_t)(s->n + 1) * 2 > s->cap) {
    if (s->cap >= (1u << 31)) return rlx_error(RLX_ERR_NO_MEMORY, "%s: too many names for an index", what);
    uint32_t cap = s->cap ? s->cap * 2 : 16;
    uint32_t *slots = rlx_calloc(cap, sizeof *slots);
    if (!slots) return rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory for a name index of %u entries", what, cap);
    for (uint32_t i = 0; i < s->cap; i++)
      if (s->slots[i]) {
        size_t l;
        const char *n = at(ctx, s->slots[i] - 1, &l);
        set_place(slots, cap, hash_name(n, l), s->slots[i] - 1);
      }
    rlx_free(s->slots, (size_t)s->cap * sizeof *s->slots);
    s->slots = slots;
    s->cap = cap;
  }
  size_t l;
  const char *n = at(ctx, idx, &l);
  set_place(s->slots, s->cap, hash_name(n, l), idx);
  s->n++;
  return RLX_OK;
}

void rlx_name_set_free(rlx_name_set *s) {
  rlx_free(s->slots, (size_t)s->cap * sizeof *s->slots);
  memset(s, 0, sizeof *s);
}
