/* name_set.h - a set of names over indexes: open addressing on the name's
 * FNV-1a hash, the names read through a callback (the set holds only the
 * indexes), grown at half full.  Finds GGUF keys and tensor names, graph
 * inputs and params, a session's params: lookups by name that stay
 * constant-time however many names there are. */
#ifndef RLX_NAME_SET_H
#define RLX_NAME_SET_H

#include <stddef.h>
#include <stdint.h>
#include "rlx.h"

/* The name of index idx (not NUL-terminated: *len bytes). */
typedef const char *(*rlx_name_at_fn)(const void *ctx, uint32_t idx, size_t *len);
typedef struct {
  uint32_t *slots; /* 0 empty, else index + 1 */
  uint32_t cap, n;
} rlx_name_set;

/* The index whose name is name[len], or -1. */
int64_t rlx_name_set_find(const rlx_name_set *s, rlx_name_at_fn at, const void *ctx, const char *name, size_t len);
/* Adds idx (whose name is not in the set yet); RLX_ERR_NO_MEMORY, with no
 * message (the caller's), when the set cannot grow, the set unchanged. */
rlx_status rlx_name_set_add(rlx_name_set *s, rlx_name_at_fn at, const void *ctx, uint32_t idx);
void rlx_name_set_free(rlx_name_set *s);

#endif
