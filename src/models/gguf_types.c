/* gguf_types.c - the weight types' names and block sizes, from
 * include/rlx_gguf_types.def, without the row kernels: what shape rules and
 * messages need, so a module that runs no quantized kernel (the browser's
 * training module) does not link them in (the kernels' table is in
 * gguf_quants.c). */
#include <string.h>

#include "gguf_quants.h"

typedef struct {
  const char *name; /* NULL: not a supported code */
  int32_t block_elems, block_bytes;
} wt_size;

static const wt_size SIZES[RLX_WT_CODES] = {
#define RLX_GGUF_TYPE(ID, nm, cd, be, bb) [cd] = {nm, be, bb},
#include "rlx_gguf_types.def"
#undef RLX_GGUF_TYPE
};

static const wt_size *size_of(rlx_gguf_type t) {
  return (uint32_t)t < RLX_WT_CODES && SIZES[t].name ? &SIZES[t] : NULL;
}

const char *rlx_wtype_known_name(uint32_t code) {
  static const char *const names[RLX_WT_CODES] = {
#define RLX_GGUF_TYPE(ID, nm, cd, be, bb) [cd] = nm,
#define RLX_GGUF_TYPE_KNOWN(ID, nm, cd) [cd] = nm,
#include "rlx_gguf_types.def"
#undef RLX_GGUF_TYPE
#undef RLX_GGUF_TYPE_KNOWN
  };
  return code < RLX_WT_CODES ? names[code] : NULL;
}

const char *rlx_gguf_type_name(rlx_gguf_type t) {
  const wt_size *w = size_of(t);
  return w ? w->name : NULL;
}

int32_t rlx_gguf_type_from_name(const char *name) {
  if (!name) return -1;
  for (uint32_t c = 0; c < RLX_WT_CODES; c++)
    if (SIZES[c].name && strcmp(SIZES[c].name, name) == 0) return (int32_t)c;
  return -1;
}

int32_t rlx_gguf_type_block_elems(rlx_gguf_type t) {
  const wt_size *w = size_of(t);
  return w ? w->block_elems : 0;
}

int32_t rlx_gguf_type_block_bytes(rlx_gguf_type t) {
  const wt_size *w = size_of(t);
  return w ? w->block_bytes : 0;
}

