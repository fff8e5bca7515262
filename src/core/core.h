/* core.h - internal basics shared by every module: the allocator hook,
 * error reporting, checked size arithmetic and a small deterministic RNG.
 * Nothing here knows about ops or devices. */
#ifndef RLX_CORE_H
#define RLX_CORE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "rlx.h"

/* Allocation through the hook.  rlx_malloc/rlx_calloc return NULL on failure
 * (and on size 0 overflow); rlx_free takes the block's size. */
void *rlx_malloc(size_t n);
void *rlx_calloc(size_t count, size_t size);
void *rlx_realloc(void *p, size_t old_n, size_t new_n);
void rlx_free(void *p, size_t n);
char *rlx_strdup(const char *s);
void rlx_strfree(char *s);

/* Sets the thread's last error message (printf style) and returns code. */
rlx_status rlx_error(rlx_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void rlx_clear_error(void);

/* Writes "[d0, d1, ...]" into buf (always NUL-terminated). */
void rlx_format_dims(char *buf, size_t cap, int32_t rank, const int32_t *dims);

/* Checked arithmetic: return 0 on overflow. */
int rlx_mul_size(size_t a, size_t b, size_t *out);

/* Counter-based RNG (splitmix64 over seed and index): the same (seed, i)
 * always gives the same number, on every platform. */
uint64_t rlx_hash64(uint64_t seed, uint64_t i);
float rlx_uniform(uint64_t seed, uint64_t i); /* in [0, 1) */

#endif
