/* gguf_common.h - what the GGUF reader (gguf.c) and writer (gguf_write.c)
 * share (internal): the magic, the entry limit, the value types' sizes and
 * names and an array grown by doubling up to a limit.  Keys and tensor
 * names are found (and duplicates refused) with src/core/name_set.h. */
#ifndef RLX_GGUF_COMMON_H
#define RLX_GGUF_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "rlx_gguf.h"
#include "../core/name_set.h"

#define GGUF_MAGIC "GGUF"
#define MAX_ENTRIES (1u << 20) /* metadata entries; tensors */

extern const uint8_t rlx_gguf_vsize[13];        /* bytes of a value, by rlx_gguf_vtype (0: string, array) */
extern const char *const rlx_gguf_vname[13];    /* its name in messages */
int rlx_gguf_vtype_number(uint32_t t);          /* a number type (bool included) */

/* *items (cap of *cap, used in use) grown to hold one more item: doubled,
 * at most `most` items; what names them in the out-of-memory message. */
rlx_status rlx_gguf_grow(void **items, size_t *cap, size_t used, size_t item, size_t most, const char *what);

/* rlx_name_set_add with the out-of-memory message. */
rlx_status rlx_gguf_name_add(rlx_name_set *s, rlx_name_at_fn at, const void *ctx, uint32_t idx);

/* rlx_gguf_writer_write_file to "<path>.tmp", then renamed to path: a
 * reader never sees half a file, and a failure leaves no file (messages
 * that are not the writer's begin with fn). */
rlx_status rlx_gguf_write_file_whole(const rlx_gguf_writer *w, const char *path, const char *fn);

#endif
