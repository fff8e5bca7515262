/* gguf.c - the GGUF reader: a memory buffer (zero-copy), a seekable
 * FILE streamed tensor by tensor, or the header alone from the first bytes
 * of a file (rlx_gguf_open_head: the tensor data is elsewhere, e.g. on a
 * GPU, and tensors are known by their file offsets).  The format is described
 * in include/rlx_gguf.h; the weight types are in gguf_quants.c, the writer
 * in gguf_write.c, what both use in gguf_common.c.
 *
 * The reader trusts nothing in the file.  Every length and count is checked
 * against the bytes that are left before anything is read or allocated,
 * and allocations grow with what was actually read (each metadata entry,
 * string or tensor info consumes at least a few bytes of the file), so a
 * lying header costs at most a small multiple of its own size; metadata is
 * also capped at META_LIMIT bytes and at MAX_ENTRIES entries and tensors,
 * which bounds a streamed file whose header claims its tensor data.
 * Sizes are computed with overflow checks; tensors must be of a supported
 * type, whole blocks per row, aligned, inside the data section and not
 * overlapping; keys and tensor names must be unique.  Lookups by key and by
 * tensor name go through hash indexes built while parsing. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fseeko / ftello (the wasm build's flags do not set it) */
#endif
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "rlx_gguf.h"
#include "gguf_common.h"
#include "gguf_quants.h"
#include "../core/core.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "GGUF arrays are read in place: this code assumes a little-endian host (x86, arm, wasm)"
#endif

#define META_LIMIT ((uint64_t)256 << 20) /* bytes of metadata held in memory */
#define MIN_KV_BYTES 13                  /* key length (8), type (4), a 1-byte value */
#define MIN_TENSOR_BYTES 24              /* name length (8), n_dims (4), type (4), offset (8) */

/* A printable, bounded copy of a name from the file, for messages. */
static const char *show(char *buf, size_t cap, const char *s, size_t len) {
  size_t o = 0, limit = cap > 4 ? cap - 4 : 0;
  for (size_t i = 0; i < len && o < limit; i++) buf[o++] = (s[i] >= 32 && s[i] < 127) ? s[i] : '?';
  if (o < len && o == limit) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o < cap ? o : cap - 1] = 0;
  return buf;
}

/* ---- the parsed file ------------------------------------------------------- */
typedef struct {
  uint64_t key_off; /* arena: key bytes, NUL */
  uint64_t key_len;
  uint32_t type, elem_type;
  uint64_t count;   /* arrays: elements; strings: bytes */
  uint64_t off;     /* strings, number arrays: arena offset; string arrays: first index in strs */
  union {
    uint64_t u;
    int64_t i;
    double f;
  } num;
} kv_entry;

typedef struct {
  uint64_t off, len;
} str_ref;

typedef struct {
  uint64_t name_off, name_len;
  uint32_t type;
  int32_t n_dims;
  int64_t dims[RLX_GGUF_MAX_DIMS];
  int64_t n_elements;
  uint64_t offset; /* from the start of the data section */
  uint64_t bytes;
  uint32_t part;   /* the part of a split model that holds it (0: the first, or the only file) */
  const uint8_t *base; /* memory mode: the start of its part's data section */
  uint64_t part_data_offset; /* where that data section starts in its part */
} tensor_entry;

struct rlx_gguf {
  const uint8_t *mem;  /* memory mode (head mode: the header's bytes) */
  uint64_t head_len;   /* head mode: bytes of the file at mem (0: not head mode) */
  uint64_t need;       /* head mode: bytes the header needed past head_len (0: none) */
  FILE *file;          /* stream mode */
  int own_file;
  uint64_t base;       /* stream: file position of byte 0 */
  uint64_t size;       /* bytes from byte 0 to the end */
  uint32_t version, alignment;
  uint64_t data_offset, data_bytes;
  kv_entry *kvs;
  int64_t n_kv;
  size_t cap_kv;
  tensor_entry *tensors;
  int64_t n_tensors;
  size_t cap_tensors;
  str_ref *strs;
  size_t n_strs, cap_strs;
  char *arena;
  size_t arena_len, arena_cap;
  rlx_name_set kv_set, tensor_set;
};

static const char *kv_name_at(const void *ctx, uint32_t idx, size_t *len) {
  const rlx_gguf *g = ctx;
  *len = (size_t)g->kvs[idx].key_len;
  return g->arena + g->kvs[idx].key_off;
}
static const char *tensor_name_at(const void *ctx, uint32_t idx, size_t *len) {
  const rlx_gguf *g = ctx;
  *len = (size_t)g->tensors[idx].name_len;
  return g->arena + g->tensors[idx].name_off;
}

void rlx_gguf_free(rlx_gguf *g) {
  if (!g) return;
  if (g->own_file && g->file) fclose(g->file);
  rlx_free(g->kvs, g->cap_kv * sizeof *g->kvs);
  rlx_free(g->tensors, g->cap_tensors * sizeof *g->tensors);
  rlx_free(g->strs, g->cap_strs * sizeof *g->strs);
  rlx_free(g->arena, g->arena_cap);
  rlx_name_set_free(&g->kv_set);
  rlx_name_set_free(&g->tensor_set);
  rlx_free(g, sizeof *g);
}

/* ---- parsing ------------------------------------------------------------------ */
typedef struct {
  rlx_gguf *g;
  uint64_t pos;
  char where[160]; /* "metadata entry 3 ('general.name')", for messages */
} parser;

static uint64_t left(const parser *p) { return p->g->size - p->pos; }

static rlx_status truncated(const parser *p, const char *what, uint64_t n) {
  return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: truncated: %s%s%s needs %llu bytes at byte %llu, the file has %llu left",
                   what, p->where[0] ? " of " : "", p->where, (unsigned long long)n, (unsigned long long)p->pos,
                   (unsigned long long)left(p));
}

static rlx_status take(parser *p, void *dst, uint64_t n, const char *what) {
  if (n > left(p)) return truncated(p, what, n);
  if (n == 0) return RLX_OK;
  if (p->g->head_len && n > p->g->head_len - p->pos) {
    p->g->need = p->pos + n;
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: the header needs %llu bytes, past the first %llu given",
                     (unsigned long long)(p->pos + n), (unsigned long long)p->g->head_len);
  }
  if (p->g->mem) {
    memcpy(dst, p->g->mem + p->pos, (size_t)n);
  } else if (n > SIZE_MAX || fread(dst, 1, (size_t)n, p->g->file) != (size_t)n) {
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: cannot read %s%s%s (%llu bytes at byte %llu): the file is shorter "
                     "than at open or unreadable", what, p->where[0] ? " of " : "", p->where,
                     (unsigned long long)n, (unsigned long long)p->pos);
  }
  p->pos += n;
  return RLX_OK;
}

static rlx_status take_u32(parser *p, uint32_t *v, const char *what) {
  uint8_t b[4];
  rlx_status st = take(p, b, 4, what);
  *v = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
  return st;
}

static rlx_status take_u64(parser *p, uint64_t *v, const char *what) {
  uint8_t b[8];
  rlx_status st = take(p, b, 8, what);
  *v = 0;
  for (int k = 7; k >= 0; k--) *v = (*v << 8) | b[k];
  return st;
}

/* Room for n bytes in the arena (8-aligned start); counts toward META_LIMIT. */
static rlx_status arena_alloc(parser *p, uint64_t n, uint64_t *off) {
  rlx_gguf *g = p->g;
  uint64_t start = ((uint64_t)g->arena_len + 7) & ~(uint64_t)7, end = start + n;
  if (n > META_LIMIT || end + (uint64_t)g->n_strs * sizeof(str_ref) > META_LIMIT)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: metadata past %llu MiB at %s: refused",
                     (unsigned long long)(META_LIMIT >> 20), p->where);
  if (end > g->arena_cap) {
    size_t cap = g->arena_cap ? g->arena_cap : 1024;
    while (cap < end) cap *= 2;
    char *a = rlx_realloc(g->arena, g->arena_cap, cap);
    if (!a) return rlx_error(RLX_ERR_NO_MEMORY, "GGUF: out of memory for %zu bytes of metadata", cap);
    g->arena = a;
    g->arena_cap = cap;
  }
  g->arena_len = (size_t)end;
  *off = start;
  return RLX_OK;
}

/* A GGUF string of at most max_len bytes into the arena, NUL-terminated. */
static rlx_status take_string(parser *p, uint64_t max_len, const char *what, uint64_t *off, uint64_t *len) {
  rlx_status st = take_u64(p, len, what);
  if (st != RLX_OK) return st;
  if (*len > max_len)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s%s%s at byte %llu is %llu bytes long (at most %llu)", what,
                     p->where[0] ? " of " : "", p->where, (unsigned long long)(p->pos - 8),
                     (unsigned long long)*len, (unsigned long long)max_len);
  if (*len > left(p)) return truncated(p, what, *len);
  if ((st = arena_alloc(p, *len + 1, off)) != RLX_OK) return st;
  p->g->arena[*off + *len] = 0;
  return take(p, p->g->arena + *off, *len, what);
}

/* Grows an array of entries to hold one more, at most to `most`. */
static rlx_status parse_value(parser *p, kv_entry *e) {
  rlx_gguf *g = p->g;
  rlx_status st;
  if (e->type == RLX_GGUF_VAL_STRING) return take_string(p, UINT64_MAX, "the string", &e->off, &e->count);
  if (e->type != RLX_GGUF_VAL_ARRAY) {
    uint8_t b[8] = {0};
    if ((st = take(p, b, rlx_gguf_vsize[e->type], "the value")) != RLX_OK) return st;
    uint64_t u = 0;
    for (int k = rlx_gguf_vsize[e->type] - 1; k >= 0; k--) u = (u << 8) | b[k];
    switch (e->type) {
      case RLX_GGUF_VAL_I8: e->num.i = (int8_t)u; break;
      case RLX_GGUF_VAL_I16: e->num.i = (int16_t)u; break;
      case RLX_GGUF_VAL_I32: e->num.i = (int32_t)u; break;
      case RLX_GGUF_VAL_I64: e->num.i = (int64_t)u; break;
      case RLX_GGUF_VAL_F32: { float f; uint32_t u32 = (uint32_t)u; memcpy(&f, &u32, 4); e->num.f = f; break; }
      case RLX_GGUF_VAL_F64: memcpy(&e->num.f, &u, 8); break;
      case RLX_GGUF_VAL_BOOL:
        if (u > 1)
          return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: bool value of %s at byte %llu is %llu (0 or 1)", p->where,
                           (unsigned long long)(p->pos - 1), (unsigned long long)u);
        /* fall through */
      default: e->num.u = u; break;
    }
    return RLX_OK;
  }
  uint32_t et;
  if ((st = take_u32(p, &et, "the array's element type")) != RLX_OK) return st;
  if ((st = take_u64(p, &e->count, "the array's length")) != RLX_OK) return st;
  if (et == RLX_GGUF_VAL_ARRAY)
    return rlx_error(RLX_ERR_UNSUPPORTED, "GGUF: %s is an array of arrays, which this reader does not read", p->where);
  if (et >= 13)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s is an array of unknown type %u", p->where, et);
  e->elem_type = et;
  uint64_t min_size = et == RLX_GGUF_VAL_STRING ? 8 : rlx_gguf_vsize[et];
  if (e->count > left(p) / min_size)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s claims %llu %s elements (at least %llu bytes each), the file has "
                     "%llu bytes left", p->where, (unsigned long long)e->count, rlx_gguf_vname[et],
                     (unsigned long long)min_size, (unsigned long long)left(p));
  if (et != RLX_GGUF_VAL_STRING) {
    uint64_t n = e->count * min_size;
    if ((st = arena_alloc(p, n ? n : 1, &e->off)) != RLX_OK) return st;
    if ((st = take(p, g->arena + e->off, n, "the array")) != RLX_OK) return st;
    if (et == RLX_GGUF_VAL_BOOL)
      for (uint64_t i = 0; i < n; i++)
        if ((uint8_t)g->arena[e->off + i] > 1)
          return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: bool element %llu of %s is %u (0 or 1)", (unsigned long long)i,
                           p->where, (unsigned)(uint8_t)g->arena[e->off + i]);
    return RLX_OK;
  }
  e->off = g->n_strs;
  for (uint64_t i = 0; i < e->count; i++) {
    size_t most = (size_t)(META_LIMIT / sizeof(str_ref));
    if ((st = rlx_gguf_grow((void **)&g->strs, &g->cap_strs, g->n_strs, sizeof *g->strs, most, "strings")) != RLX_OK) return st;
    str_ref *s = &g->strs[g->n_strs];
    if ((st = take_string(p, UINT64_MAX, "a string element", &s->off, &s->len)) != RLX_OK) return st;
    g->n_strs++;
  }
  return RLX_OK;
}

static rlx_status parse_kvs(parser *p, uint64_t n_kv) {
  rlx_gguf *g = p->g;
  rlx_status st;
  for (uint64_t i = 0; i < n_kv; i++) {
    snprintf(p->where, sizeof p->where, "metadata entry %llu", (unsigned long long)i);
    if ((st = rlx_gguf_grow((void **)&g->kvs, &g->cap_kv, (size_t)g->n_kv, sizeof *g->kvs, (size_t)n_kv, "metadata entries")))
      return st;
    kv_entry *e = &g->kvs[g->n_kv];
    memset(e, 0, sizeof *e);
    if ((st = take_string(p, RLX_GGUF_MAX_KEY, "the key", &e->key_off, &e->key_len)) != RLX_OK) return st;
    char shown[96];
    snprintf(p->where, sizeof p->where, "metadata entry %llu ('%s')", (unsigned long long)i,
             show(shown, sizeof shown, g->arena + e->key_off, (size_t)e->key_len));
    if (rlx_name_set_find(&g->kv_set, kv_name_at, g, g->arena + e->key_off, (size_t)e->key_len) >= 0)
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s repeats a key", p->where);
    if ((st = take_u32(p, &e->type, "the value type")) != RLX_OK) return st;
    if (e->type >= 13)
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s has unknown value type %u", p->where, e->type);
    e->elem_type = e->type;
    if ((st = parse_value(p, e)) != RLX_OK) return st;
    g->n_kv++;
    if ((st = rlx_gguf_name_add(&g->kv_set, kv_name_at, g, (uint32_t)(g->n_kv - 1))) != RLX_OK) return st;
  }
  p->where[0] = 0;
  return RLX_OK;
}

static rlx_status parse_tensor(parser *p, tensor_entry *t) {
  rlx_gguf *g = p->g;
  rlx_status st;
  if ((st = take_string(p, RLX_GGUF_MAX_NAME, "the name", &t->name_off, &t->name_len)) != RLX_OK) return st;
  char shown[96];
  size_t at = strlen(p->where);
  snprintf(p->where + at, sizeof p->where - at, " ('%s')",
           show(shown, sizeof shown, g->arena + t->name_off, (size_t)t->name_len));
  uint32_t n_dims;
  if ((st = take_u32(p, &n_dims, "the number of dims")) != RLX_OK) return st;
  if (n_dims > RLX_GGUF_MAX_DIMS)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s has %u dims (at most %d)", p->where, n_dims, RLX_GGUF_MAX_DIMS);
  t->n_dims = (int32_t)n_dims;
  uint64_t n = 1;
  for (int k = 0; k < RLX_GGUF_MAX_DIMS; k++) {
    uint64_t d = 1;
    if ((uint32_t)k < n_dims && (st = take_u64(p, &d, "a dim")) != RLX_OK) return st;
    if (d > (uint64_t)INT64_MAX || (d && n > (uint64_t)INT64_MAX / d))
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s: dim %d (%llu) makes more than 2^63 elements", p->where, k,
                       (unsigned long long)d);
    t->dims[k] = (int64_t)d;
    n *= d;
  }
  t->n_elements = (int64_t)n;
  if ((st = take_u32(p, &t->type, "the type")) != RLX_OK) return st;
  const rlx_wtype *w = rlx_wtype_get(t->type);
  if (!w) {
    const char *known = rlx_wtype_known_name(t->type);
    if (known)
      return rlx_error(RLX_ERR_UNSUPPORTED, "GGUF: %s has type %s (%u), which this reader does not support", p->where,
                       known, t->type);
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s has unknown type %u", p->where, t->type);
  }
  if (t->dims[0] % w->block_elems)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s: rows of %lld values are not whole %s blocks of %d", p->where,
                     (long long)t->dims[0], w->name, (int)w->block_elems);
  uint64_t blocks = n / (uint64_t)w->block_elems;
  if (blocks > UINT64_MAX / (uint64_t)w->block_bytes)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s: byte size overflows", p->where);
  t->bytes = blocks * (uint64_t)w->block_bytes;
  if ((st = take_u64(p, &t->offset, "the data offset")) != RLX_OK) return st;
  if (t->offset % g->alignment)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s: data offset %llu is not a multiple of the alignment %u", p->where,
                     (unsigned long long)t->offset, g->alignment);
  return RLX_OK;
}

typedef struct {
  uint64_t offset, bytes;
  int64_t idx;
} extent;
static int extent_cmp(const void *a, const void *b) {
  const extent *x = a, *y = b;
  return x->offset < y->offset ? -1 : x->offset > y->offset ? 1 : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Data section: aligned start, budget, every tensor inside, none overlapping. */
static rlx_status check_data(parser *p, uint64_t budget) {
  rlx_gguf *g = p->g;
  uint64_t a = g->alignment, pad = (a - p->pos % a) % a;
  if (p->pos > UINT64_MAX - pad) return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: data offset overflows");
  g->data_offset = p->pos + pad;
  uint64_t total = 0;
  for (int64_t i = 0; i < g->n_tensors; i++) {
    if (g->tensors[i].bytes > UINT64_MAX - total) return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: tensor bytes overflow");
    total += g->tensors[i].bytes;
  }
  g->data_bytes = total;
  if (total > budget)
    return rlx_error(RLX_ERR_NO_MEMORY, "GGUF: the tensor data takes %llu bytes (%.2f GiB), past the budget of %llu "
                     "bytes (%.2f GiB)%s", (unsigned long long)total, (double)total / (1 << 30),
                     (unsigned long long)budget, (double)budget / (1 << 30),
                     budget == RLX_GGUF_WASM32_DATA_BUDGET ? ", the most a wasm32 instance can hold" : "");
  if (g->n_tensors == 0) return RLX_OK;
  if (g->data_offset > g->size)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: the data section starts at byte %llu, past the end (%llu bytes)",
                     (unsigned long long)g->data_offset, (unsigned long long)g->size);
  uint64_t room = g->size - g->data_offset;
  extent *ex = rlx_malloc((size_t)g->n_tensors * sizeof *ex);
  if (!ex) return rlx_error(RLX_ERR_NO_MEMORY, "GGUF: out of memory for %lld tensor extents", (long long)g->n_tensors);
  rlx_status st = RLX_OK;
  char shown[96];
  for (int64_t i = 0; i < g->n_tensors && st == RLX_OK; i++) {
    const tensor_entry *t = &g->tensors[i];
    ex[i] = (extent){t->offset, t->bytes, i};
    if (t->offset > room || t->bytes > room - t->offset)
      st = rlx_error(RLX_ERR_INVALID_ARG, "GGUF: tensor %lld ('%s'): %llu bytes at data offset %llu end past the "
                     "file (%llu bytes of data)", (long long)i, show(shown, sizeof shown, g->arena + t->name_off,
                     (size_t)t->name_len), (unsigned long long)t->bytes, (unsigned long long)t->offset,
                     (unsigned long long)room);
  }
  if (st == RLX_OK) {
    qsort(ex, (size_t)g->n_tensors, sizeof *ex, extent_cmp);
    const extent *prev = NULL;
    for (int64_t i = 0; i < g->n_tensors && st == RLX_OK; i++) {
      if (!ex[i].bytes) continue;
      if (prev && prev->offset + prev->bytes > ex[i].offset) {
        char s2[96];
        const tensor_entry *a1 = &g->tensors[prev->idx], *b1 = &g->tensors[ex[i].idx];
        st = rlx_error(RLX_ERR_INVALID_ARG, "GGUF: the data of tensors '%s' and '%s' overlap",
                       show(shown, sizeof shown, g->arena + a1->name_off, (size_t)a1->name_len),
                       show(s2, sizeof s2, g->arena + b1->name_off, (size_t)b1->name_len));
      }
      prev = &ex[i];
    }
  }
  rlx_free(ex, (size_t)g->n_tensors * sizeof *ex);
  return st;
}

static rlx_status parse(rlx_gguf *g, uint64_t budget) {
  parser p = {g, 0, {0}};
  rlx_status st;
  char magic[4];
  if (g->size < 4 || (st = take(&p, magic, 4, "the magic")) != RLX_OK)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %llu bytes: too short for a GGUF header",
                     (unsigned long long)g->size);
  if (memcmp(magic, GGUF_MAGIC, 4) != 0) {
    char shown[16];
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: not a GGUF file (magic '%s', want 'GGUF')",
                     show(shown, sizeof shown, magic, 4));
  }
  if ((st = take_u32(&p, &g->version, "the version")) != RLX_OK) return st;
  if (g->version != 2 && g->version != 3) {
    if (g->version == 1)
      return rlx_error(RLX_ERR_UNSUPPORTED, "GGUF: version 1 files (32-bit counts) are not supported; convert to v3");
    if (g->version == 0x03000000u || g->version == 0x02000000u)
      return rlx_error(RLX_ERR_UNSUPPORTED, "GGUF: a big-endian file; only little-endian files are read");
    return rlx_error(RLX_ERR_UNSUPPORTED, "GGUF: unknown version %u (2 and 3 are read)", g->version);
  }
  uint64_t n_tensors, n_kv;
  if ((st = take_u64(&p, &n_tensors, "the tensor count")) != RLX_OK) return st;
  if ((st = take_u64(&p, &n_kv, "the metadata count")) != RLX_OK) return st;
  if (n_kv > MAX_ENTRIES || n_kv > left(&p) / MIN_KV_BYTES)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %llu metadata entries cannot be right: the file has %llu bytes left "
                     "(at least %d each; at most %u entries)", (unsigned long long)n_kv,
                     (unsigned long long)left(&p), MIN_KV_BYTES, MAX_ENTRIES);
  if (n_tensors > MAX_ENTRIES || n_tensors > left(&p) / MIN_TENSOR_BYTES)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %llu tensors cannot be right: the file has %llu bytes left (at least "
                     "%d each; at most %u tensors)", (unsigned long long)n_tensors, (unsigned long long)left(&p),
                     MIN_TENSOR_BYTES, MAX_ENTRIES);
  if ((st = parse_kvs(&p, n_kv)) != RLX_OK) return st;

  g->alignment = RLX_GGUF_DEFAULT_ALIGNMENT;
  int64_t ai = rlx_gguf_find_kv(g, "general.alignment");
  if (ai >= 0) {
    const kv_entry *e = &g->kvs[ai];
    if (e->type != RLX_GGUF_VAL_U32)
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: general.alignment has type %s, not u32", rlx_gguf_vname[e->type]);
    if (e->num.u == 0 || (e->num.u & (e->num.u - 1)))
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: general.alignment is %llu, not a power of two",
                       (unsigned long long)e->num.u);
    g->alignment = (uint32_t)e->num.u;
  }

  for (uint64_t i = 0; i < n_tensors; i++) {
    snprintf(p.where, sizeof p.where, "tensor %llu", (unsigned long long)i);
    if ((st = rlx_gguf_grow((void **)&g->tensors, &g->cap_tensors, (size_t)g->n_tensors, sizeof *g->tensors, (size_t)n_tensors,
                   "tensor infos")) != RLX_OK)
      return st;
    tensor_entry *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    if ((st = parse_tensor(&p, t)) != RLX_OK) return st;
    if (rlx_name_set_find(&g->tensor_set, tensor_name_at, g, g->arena + t->name_off, (size_t)t->name_len) >= 0)
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s repeats a tensor name", p.where);
    g->n_tensors++;
    if ((st = rlx_gguf_name_add(&g->tensor_set, tensor_name_at, g, (uint32_t)(g->n_tensors - 1))) != RLX_OK)
      return st;
  }
  p.where[0] = 0;
  if ((st = check_data(&p, budget)) != RLX_OK) return st;
  for (int64_t i = 0; i < g->n_tensors; i++) {
    g->tensors[i].base = g->mem && !g->head_len ? g->mem + g->data_offset : NULL;
    g->tensors[i].part_data_offset = g->data_offset;
  }
  return RLX_OK;
}

static rlx_status open_common(rlx_gguf *g, uint64_t budget, rlx_gguf **out) {
  rlx_status st = parse(g, budget);
  if (st != RLX_OK) {
    rlx_gguf_free(g);
    return st;
  }
  *out = g;
  return RLX_OK;
}

rlx_status rlx_gguf_open_memory(const void *data, size_t size, uint64_t budget, rlx_gguf **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_memory: out is NULL");
  *out = NULL;
  if (!data && size) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_memory: data is NULL");
  rlx_gguf *g = rlx_calloc(1, sizeof *g);
  if (!g) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_gguf_open_memory: out of memory");
  g->mem = data ? data : (const uint8_t *)"";
  g->size = size;
  return open_common(g, budget, out);
}

rlx_status rlx_gguf_open_head(const void *head, size_t head_len, uint64_t file_size, uint64_t *need,
                              rlx_gguf **out) {
  if (!out || !need) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_head: %s is NULL", out ? "need" : "out");
  *out = NULL;
  *need = 0;
  if (!head || !head_len || head_len > file_size)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_head: %zu header bytes of a %llu-byte file", head ? head_len : 0,
                     (unsigned long long)file_size);
  rlx_gguf *g = rlx_calloc(1, sizeof *g);
  if (!g) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_gguf_open_head: out of memory");
  g->mem = head;
  g->head_len = head_len;
  g->size = file_size;
  rlx_status st = parse(g, RLX_GGUF_NO_BUDGET);
  if (st != RLX_OK) {
    *need = g->need;
    rlx_gguf_free(g);
    return st;
  }
  *out = g;
  return RLX_OK;
}

static rlx_status open_file(FILE *f, int own, const char *what, uint64_t budget, rlx_gguf **out) {
  rlx_gguf *g = rlx_calloc(1, sizeof *g);
  if (!g) {
    if (own) fclose(f);
    return rlx_error(RLX_ERR_NO_MEMORY, "GGUF: out of memory");
  }
  g->file = f;
  g->own_file = own;
  off_t start = ftello(f), end = -1;
  if (start >= 0 && fseeko(f, 0, SEEK_END) == 0) end = ftello(f);
  if (start < 0 || end < start || fseeko(f, start, SEEK_SET) != 0) {
    rlx_gguf_free(g);
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: %s is not seekable", what);
  }
  g->base = (uint64_t)start;
  g->size = (uint64_t)(end - start);
  return open_common(g, budget, out);
}

rlx_status rlx_gguf_open_stream(FILE *f, uint64_t budget, rlx_gguf **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_stream: out is NULL");
  *out = NULL;
  if (!f) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_stream: f is NULL");
  return open_file(f, 0, "the stream", budget, out);
}

rlx_status rlx_gguf_open_file(const char *path, uint64_t budget, rlx_gguf **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_file: out is NULL");
  *out = NULL;
  if (!path) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_file: path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) return rlx_error(RLX_ERR_NOT_FOUND, "GGUF: cannot open '%s'", path);
  rlx_status st = open_file(f, 1, "the file", budget, out);
  if (st != RLX_OK) {
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", rlx_last_error());
    rlx_error(st, "%s (in '%s')", msg, path);
  }
  return st;
}

/* ---- split models (llama.cpp's gguf-split) ----------------------------------
 * Part k (0-based) of n is a GGUF file with "split.no" k and "split.count"
 * n; the first holds the metadata (and "split.tensors.count", the tensors of
 * all parts), every part some tensors.  The parts merge into the first
 * part's handle: its metadata, and every part's tensors read in place. */
static rlx_status split_int(const rlx_gguf *g, const char *key, int32_t part, int64_t dflt, int64_t *out) {
  *out = dflt;
  if (rlx_gguf_find_kv(g, key) < 0) return RLX_OK;
  if (rlx_gguf_get_int(g, key, out) != RLX_OK || *out < 0 || *out > MAX_ENTRIES)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: part %d: %s is not a count from 0 to %u", part + 1, key,
                     MAX_ENTRIES);
  return RLX_OK;
}

/* Appends part k's tensors to g (names unique over every part). */
static rlx_status merge_part(rlx_gguf *g, const rlx_gguf *q, uint32_t k) {
  parser p = {g, 0, {0}};
  rlx_status st;
  char shown[96];
  for (int64_t i = 0; i < q->n_tensors; i++) {
    const tensor_entry *src = &q->tensors[i];
    const char *name = q->arena + src->name_off;
    int64_t had = rlx_name_set_find(&g->tensor_set, tensor_name_at, g, name, (size_t)src->name_len);
    if (had >= 0)
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: tensor '%s' is in part %u and in part %u of the split model",
                       show(shown, sizeof shown, name, (size_t)src->name_len), g->tensors[had].part + 1, k + 1);
    if ((st = rlx_gguf_grow((void **)&g->tensors, &g->cap_tensors, (size_t)g->n_tensors, sizeof *g->tensors,
                            MAX_ENTRIES, "tensor infos")) != RLX_OK)
      return st;
    tensor_entry *t = &g->tensors[g->n_tensors];
    *t = *src;
    t->part = k;
    if ((st = arena_alloc(&p, src->name_len + 1, &t->name_off)) != RLX_OK) return st;
    memcpy(g->arena + t->name_off, name, (size_t)src->name_len + 1);
    g->n_tensors++;
    if ((st = rlx_gguf_name_add(&g->tensor_set, tensor_name_at, g, (uint32_t)(g->n_tensors - 1))) != RLX_OK) return st;
    g->data_bytes += t->bytes;
  }
  return RLX_OK;
}

static rlx_status open_parts(const void *const *data, const size_t *sizes, int32_t n, uint64_t budget,
                             rlx_gguf **out) {
  rlx_gguf *g = NULL;
  rlx_status st = RLX_OK;
  int64_t count = 0, no = 0, total = 0;
  for (int32_t k = 0; k < n && st == RLX_OK; k++) {
    rlx_gguf *q = NULL;
    if (!data[k] || !sizes[k]) {
      st = rlx_error(RLX_ERR_INVALID_ARG, "GGUF: part %d of %d is empty", k + 1, n);
      break;
    }
    if ((st = rlx_gguf_open_memory(data[k], sizes[k], budget, &q)) != RLX_OK) {
      char msg[512];
      snprintf(msg, sizeof msg, "%s", rlx_last_error());
      st = rlx_error(st, "%s (in part %d of %d)", msg, k + 1, n);
      break;
    }
    if ((st = split_int(q, "split.count", k, 1, &count)) == RLX_OK) st = split_int(q, "split.no", k, 0, &no);
    if (st == RLX_OK && count != n)
      st = n == 1 ? rlx_error(RLX_ERR_INVALID_ARG, "GGUF: this file is part %lld of a model split in %lld parts "
                              "(split.count): give all %lld parts", (long long)no + 1, (long long)count, (long long)count)
                  : rlx_error(RLX_ERR_INVALID_ARG, "GGUF: part %d of the %d given says the model has %lld parts "
                              "(split.count)", k + 1, n, (long long)count);
    if (st == RLX_OK && no != k)
      st = rlx_error(RLX_ERR_INVALID_ARG, "GGUF: part %d of %d is split.no %lld (part %lld)%s", k + 1, n,
                     (long long)no, (long long)no + 1,
                     no < k ? ": a part given twice" : ": the parts must come in order, each once");
    if (st == RLX_OK && k == 0) {
      g = q;
      q = NULL;
      st = split_int(g, "split.tensors.count", 0, g->n_tensors, &total);
    } else if (st == RLX_OK) {
      st = merge_part(g, q, (uint32_t)k);
    }
    rlx_gguf_free(q);
  }
  if (st == RLX_OK && g->n_tensors != total)
    st = rlx_error(RLX_ERR_INVALID_ARG, "GGUF: the %d part(s) hold %lld tensors; part 1 says %lld "
                   "(split.tensors.count)", n, (long long)g->n_tensors, (long long)total);
  if (st == RLX_OK && g->data_bytes > budget)
    st = rlx_error(RLX_ERR_NO_MEMORY, "GGUF: the tensor data of the %d parts takes %llu bytes (%.2f GiB), past the "
                   "budget of %llu bytes", n, (unsigned long long)g->data_bytes, (double)g->data_bytes / (1 << 30),
                   (unsigned long long)budget);
  if (st != RLX_OK) {
    rlx_gguf_free(g);
    return st;
  }
  *out = g;
  return RLX_OK;
}

rlx_status rlx_gguf_open_parts(const void *const *data, const size_t *sizes, int32_t n, uint64_t budget,
                               rlx_gguf **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_parts: out is NULL");
  *out = NULL;
  if (n < 1 || n > RLX_GGUF_MAX_PARTS || !data || !sizes)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_open_parts: %d parts (1 to %d, with data and sizes)", n,
                     RLX_GGUF_MAX_PARTS);
  return open_parts(data, sizes, n, budget, out);
}

uint32_t rlx_gguf_tensor_part(const rlx_gguf *g, int64_t i) {
  return g && i >= 0 && i < g->n_tensors ? g->tensors[i].part : 0;
}

/* ---- queries ---------------------------------------------------------------------- */
uint32_t rlx_gguf_version(const rlx_gguf *g) { return g ? g->version : 0; }
uint32_t rlx_gguf_alignment(const rlx_gguf *g) { return g ? g->alignment : 0; }
uint64_t rlx_gguf_data_offset(const rlx_gguf *g) { return g ? g->data_offset : 0; }
uint64_t rlx_gguf_data_bytes(const rlx_gguf *g) { return g ? g->data_bytes : 0; }
int64_t rlx_gguf_kv_count(const rlx_gguf *g) { return g ? g->n_kv : 0; }
int64_t rlx_gguf_tensor_count(const rlx_gguf *g) { return g ? g->n_tensors : 0; }

int64_t rlx_gguf_find_kv(const rlx_gguf *g, const char *key) {
  return g && key ? rlx_name_set_find(&g->kv_set, kv_name_at, g, key, strlen(key)) : -1;
}
int64_t rlx_gguf_find_tensor(const rlx_gguf *g, const char *name) {
  return g && name ? rlx_name_set_find(&g->tensor_set, tensor_name_at, g, name, strlen(name)) : -1;
}

static void fill_value(const rlx_gguf *g, const kv_entry *e, rlx_gguf_value *v) {
  memset(v, 0, sizeof *v);
  v->type = (rlx_gguf_vtype)e->type;
  v->elem_type = (rlx_gguf_vtype)e->elem_type;
  v->count = e->count;
  switch (e->type) {
    case RLX_GGUF_VAL_STRING: v->str = g->arena + e->off; return;
    case RLX_GGUF_VAL_ARRAY:
      if (e->elem_type != RLX_GGUF_VAL_STRING) v->data = g->arena + e->off;
      return;
    case RLX_GGUF_VAL_I8: case RLX_GGUF_VAL_I16: case RLX_GGUF_VAL_I32: case RLX_GGUF_VAL_I64:
      v->i64 = e->num.i;
      v->u64 = e->num.i < 0 ? 0 : (uint64_t)e->num.i;
      v->f64 = (double)e->num.i;
      return;
    case RLX_GGUF_VAL_F32: case RLX_GGUF_VAL_F64: {
      double f = e->num.f;
      v->f64 = f;
      v->i64 = f != f ? 0 : f >= 0x1p63 ? INT64_MAX : f <= -0x1p63 ? INT64_MIN : (int64_t)f;
      v->u64 = !(f > 0) ? 0 : f >= 0x1p64 ? UINT64_MAX : (uint64_t)f;
      return;
    }
    default: /* unsigned, bool */
      v->u64 = e->num.u;
      v->i64 = e->num.u > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)e->num.u;
      v->f64 = (double)e->num.u;
      return;
  }
}

rlx_status rlx_gguf_kv(const rlx_gguf *g, int64_t i, const char **key, rlx_gguf_value *value) {
  if (!g || i < 0 || i >= g->n_kv)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_kv: entry %lld is out of range (%lld entries)", (long long)i,
                     (long long)(g ? g->n_kv : 0));
  if (key) *key = g->arena + g->kvs[i].key_off;
  if (value) fill_value(g, &g->kvs[i], value);
  return RLX_OK;
}

rlx_status rlx_gguf_get(const rlx_gguf *g, const char *key, rlx_gguf_value *value) {
  if (!g || !key || !value) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_get: NULL argument");
  int64_t i = rlx_gguf_find_kv(g, key);
  if (i < 0) return rlx_error(RLX_ERR_NOT_FOUND, "GGUF: no metadata key '%s'", key);
  fill_value(g, &g->kvs[i], value);
  return RLX_OK;
}

rlx_status rlx_gguf_array_string(const rlx_gguf *g, int64_t kv, uint64_t i, const char **s, uint64_t *len) {
  if (!g || kv < 0 || kv >= g->n_kv || !s)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_array_string: bad entry %lld or NULL argument", (long long)kv);
  const kv_entry *e = &g->kvs[kv];
  if (e->type != RLX_GGUF_VAL_ARRAY || e->elem_type != RLX_GGUF_VAL_STRING)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_array_string: '%s' is not an array of strings",
                     g->arena + e->key_off);
  if (i >= e->count)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_array_string: element %llu of '%s' is out of range (%llu)",
                     (unsigned long long)i, g->arena + e->key_off, (unsigned long long)e->count);
  const str_ref *r = &g->strs[e->off + i];
  *s = g->arena + r->off;
  if (len) *len = r->len;
  return RLX_OK;
}

static rlx_status get_typed(const rlx_gguf *g, const char *key, rlx_gguf_value *v, const char *fn) {
  if (!g || !key) return rlx_error(RLX_ERR_INVALID_ARG, "%s: NULL argument", fn);
  return rlx_gguf_get(g, key, v);
}

rlx_status rlx_gguf_get_int(const rlx_gguf *g, const char *key, int64_t *out) {
  rlx_gguf_value v;
  rlx_status st = get_typed(g, key, &v, "rlx_gguf_get_int");
  if (st != RLX_OK) return st;
  switch (v.type) {
    case RLX_GGUF_VAL_U8: case RLX_GGUF_VAL_U16: case RLX_GGUF_VAL_U32: case RLX_GGUF_VAL_U64: case RLX_GGUF_VAL_BOOL:
      if (v.u64 > (uint64_t)INT64_MAX)
        return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: '%s' is %llu, past int64", key, (unsigned long long)v.u64);
      /* fall through */
    case RLX_GGUF_VAL_I8: case RLX_GGUF_VAL_I16: case RLX_GGUF_VAL_I32: case RLX_GGUF_VAL_I64:
      if (out) *out = v.i64;
      return RLX_OK;
    default:
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: '%s' has type %s, not an integer type", key, rlx_gguf_vname[v.type]);
  }
}

rlx_status rlx_gguf_get_float(const rlx_gguf *g, const char *key, double *out) {
  rlx_gguf_value v;
  rlx_status st = get_typed(g, key, &v, "rlx_gguf_get_float");
  if (st != RLX_OK) return st;
  if (!rlx_gguf_vtype_number(v.type) || v.type == RLX_GGUF_VAL_BOOL)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: '%s' has type %s, not a number type", key, rlx_gguf_vname[v.type]);
  if (out) *out = v.f64;
  return RLX_OK;
}

rlx_status rlx_gguf_get_string(const rlx_gguf *g, const char *key, const char **s, uint64_t *len) {
  rlx_gguf_value v;
  rlx_status st = get_typed(g, key, &v, "rlx_gguf_get_string");
  if (st != RLX_OK) return st;
  if (v.type != RLX_GGUF_VAL_STRING)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: '%s' has type %s, not string", key, rlx_gguf_vname[v.type]);
  if (s) *s = v.str;
  if (len) *len = v.count;
  return RLX_OK;
}

rlx_status rlx_gguf_tensor(const rlx_gguf *g, int64_t i, rlx_gguf_tensor_info *info) {
  if (!g || !info || i < 0 || i >= g->n_tensors)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_tensor: tensor %lld is out of range (%lld tensors)", (long long)i,
                     (long long)(g ? g->n_tensors : 0));
  const tensor_entry *t = &g->tensors[i];
  info->name = g->arena + t->name_off;
  info->type = (rlx_gguf_type)t->type;
  info->n_dims = t->n_dims;
  memcpy(info->dims, t->dims, sizeof info->dims);
  info->n_elements = t->n_elements;
  info->file_offset = t->part_data_offset + t->offset;
  info->bytes = t->bytes;
  info->data = t->base ? t->base + t->offset : NULL;
  return RLX_OK;
}

/* Reads bytes [from, from + n) of the file (from the data of tensor t). */
static rlx_status read_at(rlx_gguf *g, const tensor_entry *t, uint64_t from, void *dst, uint64_t n) {
  uint64_t at = g->data_offset + t->offset + from;
  if (g->head_len)
    return rlx_error(RLX_ERR_UNSUPPORTED, "GGUF: tensor '%s' is not in memory (only the file's header was read)",
                     g->arena + t->name_off);
  if (t->base) {
    memcpy(dst, t->base + t->offset + from, (size_t)n);
    return RLX_OK;
  }
  if (g->base > (uint64_t)INT64_MAX - at || n > SIZE_MAX || fseeko(g->file, (off_t)(g->base + at), SEEK_SET) != 0 ||
      fread(dst, 1, (size_t)n, g->file) != (size_t)n)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF: cannot read %llu bytes of tensor '%s' at byte %llu: the file is "
                     "shorter than at open or unreadable", (unsigned long long)n, g->arena + t->name_off,
                     (unsigned long long)at);
  return RLX_OK;
}

rlx_status rlx_gguf_read_tensor(rlx_gguf *g, int64_t i, void *dst, size_t dst_bytes) {
  if (!g || i < 0 || i >= g->n_tensors)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_read_tensor: tensor %lld is out of range", (long long)i);
  const tensor_entry *t = &g->tensors[i];
  if (t->bytes > (uint64_t)dst_bytes || (!dst && t->bytes))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_read_tensor: tensor '%s' has %llu bytes, the buffer %zu",
                     g->arena + t->name_off, (unsigned long long)t->bytes, dst ? dst_bytes : 0);
  return t->bytes ? read_at(g, t, 0, dst, t->bytes) : RLX_OK;
}

rlx_status rlx_gguf_read_tensor_f32(rlx_gguf *g, int64_t i, float *dst, size_t n) {
  if (!g || i < 0 || i >= g->n_tensors)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_read_tensor_f32: tensor %lld is out of range", (long long)i);
  const tensor_entry *t = &g->tensors[i];
  if ((uint64_t)t->n_elements != (uint64_t)n || (!dst && n))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_read_tensor_f32: tensor '%s' has %lld values, the buffer %zu",
                     g->arena + t->name_off, (long long)t->n_elements, dst ? n : 0);
  const rlx_wtype *w = rlx_wtype_get(t->type);
  int64_t blocks = t->n_elements / w->block_elems;
  if (t->base) {
    if (blocks) w->dequant(t->base + t->offset, dst, blocks);
    return RLX_OK;
  }
  int64_t chunk = 65536 / w->block_bytes;
  if (chunk < 1) chunk = 1;
  if (chunk > blocks) chunk = blocks;
  if (!chunk) return RLX_OK;
  size_t cap = (size_t)chunk * (size_t)w->block_bytes;
  uint8_t *buf = rlx_malloc(cap);
  if (!buf) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_gguf_read_tensor_f32: out of memory");
  rlx_status st = RLX_OK;
  for (int64_t b = 0; b < blocks && st == RLX_OK; b += chunk) {
    int64_t nb = blocks - b < chunk ? blocks - b : chunk;
    st = read_at(g, t, (uint64_t)b * (uint64_t)w->block_bytes, buf, (uint64_t)nb * (uint64_t)w->block_bytes);
    if (st == RLX_OK) w->dequant(buf, dst + b * w->block_elems, nb);
  }
  rlx_free(buf, cap);
  return st;
}

