/* gguf_common.h - what the GGUF reader (gguf.c) and writer (gguf_write.c)
 * share (internal): the magic, the entry limit, the value types' sizes and
 * names, an array grown by doubling up to a limit, and a set of names
 * (open addressing over indexes, the names read through a callback) that
 * finds keys and tensor names and refuses duplicates. */
#ifndef RLX_GGUF_COMMON_H
#define RLX_GGUF_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "rlx_gguf.h"

#define GGUF_MAGIC "GGUF"
#define MAX_ENTRIES (1u << 20) /* metadata entries; tensors */

extern const uint8_t rlx_gguf_vsize[13];        /* bytes of a value, by rlx_gguf_vtype (0: string, array) */
extern const char *const rlx_gguf_vname[13];    /* its name in messages */
int rlx_gguf_vtype_number(uint32_t t);          /* a number type (bool included) */

/* *items (cap of *cap, used in use) grown to hold one more item: doubled,
 * at most `most` items; what names them in the out-of-memory message. */
rlx_status rlx_gguf_grow(void **items, size_t *cap, size_t used, size_t item, size_t most, const char *what);

typedef const char *(*name_at_fn)(const void *ctx, uint32_t idx, size_t *len);
typedef struct {
  uint32_t *slots; /* 0 empty, else index + 1 */
  uint32_t cap, n;
} name_set;

/* The index whose name is name[len], or -1. */
int64_t rlx_gguf_set_find(const name_set *s, name_at_fn at, const void *ctx, const char *name, size_t len);
/* Adds idx (whose name is not in the set yet); grows at half full. */
rlx_status rlx_gguf_set_add(name_set *s, name_at_fn at, const void *ctx, uint32_t idx);
void rlx_gguf_set_free(name_set *s);

#endif
