/* gguf_common.c - the GGUF reader's and writer's shared pieces
 * (gguf_common.h): value types, the growing array, names added to an index. */
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

rlx_status rlx_gguf_name_add(rlx_name_set *s, rlx_name_at_fn at, const void *ctx, uint32_t idx) {
  if (rlx_name_set_add(s, at, ctx, idx) == RLX_OK) return RLX_OK;
  return rlx_error(RLX_ERR_NO_MEMORY, "GGUF: out of memory for a name index of %u entries", s->n + 1);
}
