/* json_value.h - a JSON document read into a tree (json_value.c): strict
 * RFC 8259 text, object members kept in their written order, strings
 * decoded to UTF-8, numbers kept as written.  For the JSON Schema to
 * grammar converter (json_schema.c); nesting is bounded, every read is
 * bounded by the length given. */
#ifndef RLX_JSON_VALUE_H
#define RLX_JSON_VALUE_H

#include <stddef.h>
#include "rlx.h"

enum { RLX_JV_NULL, RLX_JV_BOOL, RLX_JV_NUMBER, RLX_JV_STRING, RLX_JV_ARRAY, RLX_JV_OBJECT };

typedef struct rlx_jv rlx_jv;
struct rlx_jv {
  int type;
  int b;               /* a boolean's value */
  const char *s;       /* a string (decoded) or a number (as written); NUL-terminated */
  size_t len;          /* its bytes */
  const char *key;     /* a member's name (decoded, NUL-terminated) */
  size_t key_len;
  size_t n;            /* an array's or object's children */
  rlx_jv *first, *next;
};

typedef struct rlx_jdoc rlx_jdoc;

/* Parses len bytes of JSON.  A malformed text -> RLX_ERR_INVALID_ARG with
 * rlx_last_error() "<what>: <problem> at byte N" (what names the caller's
 * input, e.g. "json schema"). */
rlx_status rlx_jdoc_parse(const char *text, size_t len, const char *what, rlx_jdoc **out);
const rlx_jv *rlx_jdoc_root(const rlx_jdoc *d);
void rlx_jdoc_free(rlx_jdoc *d);

/* An object's member by name, or NULL (also when obj is no object). */
const rlx_jv *rlx_jv_get(const rlx_jv *obj, const char *key);

#endif
