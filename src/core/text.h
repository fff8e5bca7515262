/* text.h - a growing text buffer and the JSON pieces the plan documents
 * are made of (src/webgpu/plan_json.c, src/webgl/plan_json.c): one writer,
 * so both backends escape strings and print numbers the same way.  Out of
 * memory is sticky: `failed` is set and later appends do nothing. */
#ifndef RLX_TEXT_H
#define RLX_TEXT_H

#include "core.h"

typedef struct {
  char *buf; /* NUL-terminated; allocated with rlx_malloc, cap bytes */
  size_t len, cap;
  int failed; /* out of memory */
} rlx_text;

void rlx_text_append(rlx_text *t, const char *s, size_t n);
void rlx_text_puts(rlx_text *t, const char *s);
void rlx_text_printf(rlx_text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void rlx_text_free(rlx_text *t); /* and zero it */

/* A JSON string: '"' and '\\' escaped, '\n' as \n, other control bytes as
 * \u00XX, everything else (UTF-8 included) as is. */
void rlx_json_string(rlx_text *t, const char *s);
/* A float as %.9g; NaN and infinities as the strings "NaN", "Infinity",
 * "-Infinity" (JSON has no literal for them). */
void rlx_json_float(rlx_text *t, float v);
/* [v0,v1,...] without spaces (shapes: rlx_json_ints(t, s->dims, s->rank)). */
void rlx_json_ints(rlx_text *t, const int32_t *v, int32_t n);

#endif
