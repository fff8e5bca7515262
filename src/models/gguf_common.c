/* gguf_common.c - the GGUF reader's and writer's shared pieces
 * (gguf_common.h): value types, the growing array, the set of names. */
#include <string.h>

#include "gguf_common.h"
#include "../core/core.h"

const uint8_t rlx_gguf_vsize[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8}; /* by rlx_gguf_vtype */
const char *const rlx_gguf_vname[13] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool",
                                      "string", "array", "u64", "i64", "f64"};

const char *rlx_gguf_vtype_name(rlx_gguf_vtype t) { return (unsigned)t < 13 ? rlx_gguf_vname[t] : NULL; }
int rlx_gguf_vtype_number(uint32_t t) { return t < 13 && t != RLX_GGUF_VAL_STRING && t != RLX_GGUF_VAL_ARRAY; }

rlx_status rlx_gguf_grow(void **items, size_t *cap, size_t used, size_t item, size_t most, const char *what) {
  if (used < *cap) return RLX_OK;
  size_t cap2 = *cap ? *cap * 2 : 16;
  if (cap2 > most) cap2 = most;
  if (cap2 <= used) cap2 = used + 1;
  void *p = rlx_realloc(*items, *cap * item, cap2 * item);
  if (!p) return rlx_error(RLX_ERR_NO_MEMORY, "GGUF: out of memory for %zu %s", cap2, what);
  *items = p;
  *cap = cap2;
  return RLX_OK;
}

static uint64_t hash_name(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
  return h;
}

int64_t rlx_gguf_set_find(const name_set *s, name_at_fn at, const void *ctx, const char *name, size_t len) {
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

rlx_status rlx_gguf_set_add(name_set *s, name_at_fn at, const void *ctx, uint32_t idx) {
  if ((uint64_t)(s->n + 1) * 2 > s->cap) {
    uint32_t cap = s->cap ? s->cap * 2 : 16;
    uint32_t *slots = rlx_calloc(cap, sizeof *slots);
    if (!slots) return rlx_error(RLX_ERR_NO_MEMORY, "GGUF: out of memory for a name index of %u entries", cap);
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

void rlx_gguf_set_free(name_set *s) {
  rlx_free(s->slots, (size_t)s->cap * sizeof *s->slots);
  memset(s, 0, sizeof *s);
}
