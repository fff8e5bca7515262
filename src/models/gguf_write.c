/* gguf_write.c - the GGUF writer (include/rlx_gguf.h): metadata entries
 * encoded as they are added, tensors recorded by reference, and the file
 * laid out (header, entries, tensor infos, aligned data) when written to a
 * buffer or a FILE.  Keys and tensor names must be unique; sizes are
 * checked for overflow; the reader (gguf.c) reads every file it writes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_gguf.h"
#include "gguf_common.h"
#include "gguf_quants.h"
#include "../core/core.h"

typedef struct {
  char *name;
  size_t name_len;
  uint32_t type;
  int32_t n_dims;
  int64_t dims[RLX_GGUF_MAX_DIMS];
  const void *data;
  uint64_t bytes;
} w_tensor;

struct rlx_gguf_writer {
  uint8_t *kv;          /* the metadata entries as written */
  size_t kv_len, kv_cap;
  uint64_t *key_at;     /* offset of each entry (its key length) in kv */
  size_t n_kv, cap_key_at;
  size_t align_value_at; /* offset of general.alignment's u32; 0: none */
  uint32_t alignment;
  w_tensor *tensors;
  size_t n_tensors, cap_tensors;
  rlx_name_set keys, names;
};

static const char *w_key_at(const void *ctx, uint32_t idx, size_t *len) {
  const rlx_gguf_writer *w = ctx;
  const uint8_t *p = w->kv + w->key_at[idx];
  uint64_t l = 0;
  for (int k = 7; k >= 0; k--) l = (l << 8) | p[k];
  *len = (size_t)l;
  return (const char *)p + 8;
}
static const char *w_name_at(const void *ctx, uint32_t idx, size_t *len) {
  const rlx_gguf_writer *w = ctx;
  *len = w->tensors[idx].name_len;
  return w->tensors[idx].name;
}

rlx_status rlx_gguf_writer_new(rlx_gguf_writer **out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_new: out is NULL");
  *out = rlx_calloc(1, sizeof **out);
  if (!*out) return rlx_error(RLX_ERR_NO_MEMORY, "rlx_gguf_writer_new: out of memory");
  (*out)->alignment = RLX_GGUF_DEFAULT_ALIGNMENT;
  return RLX_OK;
}

void rlx_gguf_writer_free(rlx_gguf_writer *w) {
  if (!w) return;
  rlx_free(w->kv, w->kv_cap);
  rlx_free(w->key_at, w->cap_key_at * sizeof *w->key_at);
  for (size_t i = 0; i < w->n_tensors; i++) rlx_free(w->tensors[i].name, w->tensors[i].name_len + 1);
  rlx_free(w->tensors, w->cap_tensors * sizeof *w->tensors);
  rlx_name_set_free(&w->keys);
  rlx_name_set_free(&w->names);
  rlx_free(w, sizeof *w);
}

/* Appends n bytes to the metadata (reserve first so an entry never half-fails
 * after its bytes were partly written). */
static rlx_status w_reserve(rlx_gguf_writer *w, uint64_t n) {
  if (n > SIZE_MAX - w->kv_len) return rlx_error(RLX_ERR_NO_MEMORY, "GGUF writer: metadata too large");
  size_t need = w->kv_len + (size_t)n;
  if (need <= w->kv_cap) return RLX_OK;
  size_t cap = w->kv_cap ? w->kv_cap : 256;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  uint8_t *p = rlx_realloc(w->kv, w->kv_cap, cap);
  if (!p) return rlx_error(RLX_ERR_NO_MEMORY, "GGUF writer: out of memory for %zu bytes of metadata", cap);
  w->kv = p;
  w->kv_cap = cap;
  return RLX_OK;
}
static void w_put(rlx_gguf_writer *w, const void *p, size_t n) {
  if (n) memcpy(w->kv + w->kv_len, p, n);
  w->kv_len += n;
}
static void w_put_u32(rlx_gguf_writer *w, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  w_put(w, b, 4);
}
static void w_put_u64(rlx_gguf_writer *w, uint64_t v) {
  uint8_t b[8];
  for (int k = 0; k < 8; k++) b[k] = (uint8_t)(v >> (8 * k));
  w_put(w, b, 8);
}

/* Starts an entry: checks the key, reserves key + type + body bytes, writes
 * the key and type. */
static rlx_status w_begin(rlx_gguf_writer *w, const char *key, uint32_t type, uint64_t body, const char *fn) {
  if (!w || !key) return rlx_error(RLX_ERR_INVALID_ARG, "%s: NULL argument", fn);
  size_t len = strlen(key);
  if (len > RLX_GGUF_MAX_KEY)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: key of %zu bytes (at most %d)", fn, len, RLX_GGUF_MAX_KEY);
  if (rlx_name_set_find(&w->keys, w_key_at, w, key, len) >= 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: key '%s' is already set", fn, key);
  if (w->n_kv >= MAX_ENTRIES) return rlx_error(RLX_ERR_INVALID_ARG, "%s: more than %u entries", fn, MAX_ENTRIES);
  if (body > UINT64_MAX - 12 - len) return rlx_error(RLX_ERR_NO_MEMORY, "%s: value too large", fn);
  rlx_status st = w_reserve(w, 12 + len + body);
  if (st == RLX_OK)
    st = rlx_gguf_grow((void **)&w->key_at, &w->cap_key_at, w->n_kv, sizeof *w->key_at, SIZE_MAX / sizeof *w->key_at, "keys");
  if (st != RLX_OK) return st;
  size_t start = w->kv_len;
  w->key_at[w->n_kv] = start;
  w_put_u64(w, len);
  w_put(w, key, len);
  w_put_u32(w, type);
  if ((st = rlx_gguf_name_add(&w->keys, w_key_at, w, (uint32_t)w->n_kv)) != RLX_OK) {
    w->kv_len = start;
    return st;
  }
  w->n_kv++;
  return RLX_OK;
}

rlx_status rlx_gguf_writer_set_alignment(rlx_gguf_writer *w, uint32_t alignment) {
  if (!w) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_set_alignment: w is NULL");
  if (alignment == 0 || (alignment & (alignment - 1)))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_set_alignment: %u is not a power of two", alignment);
  if (!w->align_value_at) {
    rlx_status st = w_begin(w, "general.alignment", RLX_GGUF_VAL_U32, 4, "rlx_gguf_writer_set_alignment");
    if (st != RLX_OK) return st;
    w->align_value_at = w->kv_len;
    w_put_u32(w, alignment);
  }
  uint8_t *p = w->kv + w->align_value_at;
  for (int k = 0; k < 4; k++) p[k] = (uint8_t)(alignment >> (8 * k));
  w->alignment = alignment;
  return RLX_OK;
}

/* Native values of a number type into little-endian bytes (bools as 0/1). */
static void w_put_numbers(rlx_gguf_writer *w, uint32_t type, const void *values, uint64_t count) {
  size_t n = (size_t)count * rlx_gguf_vsize[type];
  w_put(w, values, n);
  if (type == RLX_GGUF_VAL_BOOL)
    for (size_t i = 0; i < n; i++) w->kv[w->kv_len - n + i] = w->kv[w->kv_len - n + i] != 0;
}

rlx_status rlx_gguf_writer_add(rlx_gguf_writer *w, const char *key, rlx_gguf_vtype type, const void *value) {
  if (!rlx_gguf_vtype_number((uint32_t)type))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add: type %d is not a number or bool type (use "
                     "add_string / add_array)", (int)type);
  if (!value) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add: value is NULL");
  if (key && strcmp(key, "general.alignment") == 0) {
    if (type != RLX_GGUF_VAL_U32)
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add: general.alignment must be a u32");
    uint32_t a;
    memcpy(&a, value, 4);
    return rlx_gguf_writer_set_alignment(w, a);
  }
  rlx_status st = w_begin(w, key, (uint32_t)type, rlx_gguf_vsize[type], "rlx_gguf_writer_add");
  if (st == RLX_OK) w_put_numbers(w, (uint32_t)type, value, 1);
  return st;
}

rlx_status rlx_gguf_writer_add_string(rlx_gguf_writer *w, const char *key, const char *s, uint64_t len) {
  if (!s && len) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add_string: s is NULL");
  if (len > SIZE_MAX - 8) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add_string: string too long");
  rlx_status st = w_begin(w, key, RLX_GGUF_VAL_STRING, 8 + len, "rlx_gguf_writer_add_string");
  if (st != RLX_OK) return st;
  w_put_u64(w, len);
  w_put(w, s, (size_t)len);
  return RLX_OK;
}

rlx_status rlx_gguf_writer_add_array(rlx_gguf_writer *w, const char *key, rlx_gguf_vtype elem_type,
                                     const void *values, uint64_t count) {
  if (!rlx_gguf_vtype_number((uint32_t)elem_type))
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add_array: element type %d is not a number or bool type "
                     "(strings: add_string_array; arrays of arrays are not written)", (int)elem_type);
  if (!values && count) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add_array: values is NULL");
  if (count > (SIZE_MAX - 12) / 8) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add_array: too many values");
  rlx_status st = w_begin(w, key, RLX_GGUF_VAL_ARRAY, 12 + count * rlx_gguf_vsize[elem_type], "rlx_gguf_writer_add_array");
  if (st != RLX_OK) return st;
  w_put_u32(w, (uint32_t)elem_type);
  w_put_u64(w, count);
  w_put_numbers(w, (uint32_t)elem_type, values, count);
  return RLX_OK;
}

rlx_status rlx_gguf_writer_add_string_array(rlx_gguf_writer *w, const char *key, const char *const *strs,
                                            const uint64_t *lens, uint64_t count) {
  if (!strs && count) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add_string_array: strs is NULL");
  uint64_t body = 12;
  for (uint64_t i = 0; i < count; i++) {
    if (!strs[i] && (!lens || lens[i]))
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add_string_array: string %llu is NULL",
                       (unsigned long long)i);
    uint64_t l = lens ? lens[i] : strlen(strs[i]);
    if (l > UINT64_MAX - 8 - body)
      return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_add_string_array: strings too long");
    body += 8 + l;
  }
  rlx_status st = w_begin(w, key, RLX_GGUF_VAL_ARRAY, body, "rlx_gguf_writer_add_string_array");
  if (st != RLX_OK) return st;
  w_put_u32(w, RLX_GGUF_VAL_STRING);
  w_put_u64(w, count);
  for (uint64_t i = 0; i < count; i++) {
    uint64_t l = lens ? lens[i] : strlen(strs[i]);
    w_put_u64(w, l);
    w_put(w, strs[i], (size_t)l);
  }
  return RLX_OK;
}

rlx_status rlx_gguf_writer_add_kv(rlx_gguf_writer *w, const rlx_gguf *g, int64_t i) {
  const char *fn = "rlx_gguf_writer_add_kv", *key;
  if (!w || !g) return rlx_error(RLX_ERR_INVALID_ARG, "%s: %s is NULL", fn, w ? "g" : "w");
  rlx_gguf_value v;
  rlx_status st = rlx_gguf_kv(g, i, &key, &v);
  if (st != RLX_OK) return st;
  if (v.type == RLX_GGUF_VAL_STRING) return rlx_gguf_writer_add_string(w, key, v.str, v.count);
  if (v.type == RLX_GGUF_VAL_ARRAY && v.elem_type != RLX_GGUF_VAL_STRING)
    return rlx_gguf_writer_add_array(w, key, v.elem_type, v.data, v.count);
  if (v.type == RLX_GGUF_VAL_ARRAY) { /* strings: written straight from the reader's */
    const char *s;
    uint64_t len, body = 12;
    for (uint64_t k = 0; k < v.count; k++) {
      if ((st = rlx_gguf_array_string(g, i, k, &s, &len)) != RLX_OK) return st;
      if (len > SIZE_MAX - 8 - body) return rlx_error(RLX_ERR_NO_MEMORY, "%s: '%s' is too large", fn, key);
      body += 8 + len;
    }
    if ((st = w_begin(w, key, RLX_GGUF_VAL_ARRAY, body, fn)) != RLX_OK) return st;
    w_put_u32(w, RLX_GGUF_VAL_STRING);
    w_put_u64(w, v.count);
    for (uint64_t k = 0; k < v.count; k++) {
      rlx_gguf_array_string(g, i, k, &s, &len);
      w_put_u64(w, len);
      w_put(w, s, (size_t)len);
    }
    return RLX_OK;
  }
  union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; float f32; uint64_t u64;
          int64_t i64; double f64; } n;
  switch (v.type) { /* the value as its native type */
    case RLX_GGUF_VAL_I8: n.i8 = (int8_t)v.i64; break;
    case RLX_GGUF_VAL_U16: n.u16 = (uint16_t)v.u64; break;
    case RLX_GGUF_VAL_I16: n.i16 = (int16_t)v.i64; break;
    case RLX_GGUF_VAL_U32: n.u32 = (uint32_t)v.u64; break;
    case RLX_GGUF_VAL_I32: n.i32 = (int32_t)v.i64; break;
    case RLX_GGUF_VAL_F32: n.f32 = (float)v.f64; break;
    case RLX_GGUF_VAL_U64: n.u64 = v.u64; break;
    case RLX_GGUF_VAL_I64: n.i64 = v.i64; break;
    case RLX_GGUF_VAL_F64: n.f64 = v.f64; break;
    default: n.u8 = (uint8_t)v.u64; break; /* u8, bool */
  }
  return rlx_gguf_writer_add(w, key, v.type, &n);
}

rlx_status rlx_gguf_writer_add_tensor(rlx_gguf_writer *w, const char *name, rlx_gguf_type type, int32_t n_dims,
                                      const int64_t *dims, const void *data, uint64_t bytes) {
  const char *fn = "rlx_gguf_writer_add_tensor";
  if (!w || !name || (!dims && n_dims > 0)) return rlx_error(RLX_ERR_INVALID_ARG, "%s: NULL argument", fn);
  size_t len = strlen(name);
  if (len > RLX_GGUF_MAX_NAME)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: name '%s' has %zu bytes (at most %d)", fn, name, len, RLX_GGUF_MAX_NAME);
  if (rlx_name_set_find(&w->names, w_name_at, w, name, len) >= 0)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: tensor '%s' is already added", fn, name);
  if (n_dims < 0 || n_dims > RLX_GGUF_MAX_DIMS)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: tensor '%s' has %d dims (0 to %d)", fn, name, (int)n_dims,
                     RLX_GGUF_MAX_DIMS);
  if (w->n_tensors >= MAX_ENTRIES) return rlx_error(RLX_ERR_INVALID_ARG, "%s: more than %u tensors", fn, MAX_ENTRIES);
  w_tensor t = {0};
  int64_t n = 1;
  for (int k = 0; k < RLX_GGUF_MAX_DIMS; k++) {
    t.dims[k] = k < n_dims ? dims[k] : 1;
    if (t.dims[k] < 0 || (t.dims[k] && n > INT64_MAX / t.dims[k]))
      return rlx_error(RLX_ERR_INVALID_ARG, "%s: tensor '%s': dim %d (%lld) is negative or overflows", fn, name, k,
                       (long long)t.dims[k]);
    n *= t.dims[k];
  }
  const rlx_wtype *wt = rlx_wtype_get((uint32_t)type);
  if (wt && t.dims[0] % wt->block_elems)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: tensor '%s': rows of %lld values are not whole %s blocks of %d", fn,
                     name, (long long)t.dims[0], wt->name, (int)wt->block_elems);
  uint64_t need;
  rlx_status st = rlx_gguf_row_bytes(type, n, &need);
  if (st != RLX_OK) return st;
  if (bytes != need || (!data && bytes))
    return rlx_error(RLX_ERR_INVALID_ARG, "%s: tensor '%s' needs %llu bytes of data, got %llu%s", fn, name,
                     (unsigned long long)need, (unsigned long long)bytes, data ? "" : " (NULL)");
  if ((st = rlx_gguf_grow((void **)&w->tensors, &w->cap_tensors, w->n_tensors, sizeof *w->tensors, MAX_ENTRIES, "tensors")))
    return st;
  t.name = rlx_malloc(len + 1);
  if (!t.name) return rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory", fn);
  memcpy(t.name, name, len + 1);
  t.name_len = len;
  t.type = (uint32_t)type;
  t.n_dims = n_dims;
  t.data = data;
  t.bytes = bytes;
  w->tensors[w->n_tensors] = t;
  if ((st = rlx_gguf_name_add(&w->names, w_name_at, w, (uint32_t)w->n_tensors)) != RLX_OK) {
    rlx_free(t.name, len + 1);
    return st;
  }
  w->n_tensors++;
  return RLX_OK;
}

static uint64_t pad_to(uint64_t n, uint64_t a) { return (a - n % a) % a; }

/* Bytes before the data section, and the whole file. */
static rlx_status w_layout(const rlx_gguf_writer *w, uint64_t *head, uint64_t *total) {
  uint64_t h = 24 + (uint64_t)w->kv_len, d = 0;
  for (size_t i = 0; i < w->n_tensors; i++) h += 8 + w->tensors[i].name_len + 4 + 8 * (uint64_t)w->tensors[i].n_dims + 12;
  h += pad_to(h, w->alignment);
  for (size_t i = 0; i < w->n_tensors; i++) {
    uint64_t b = w->tensors[i].bytes, p = b + pad_to(b, w->alignment);
    if (p < b || d > UINT64_MAX - p || h > UINT64_MAX - d - p)
      return rlx_error(RLX_ERR_INVALID_ARG, "GGUF writer: the file size overflows");
    d += p;
  }
  *head = h;
  *total = h + d;
  return RLX_OK;
}

rlx_status rlx_gguf_writer_size(const rlx_gguf_writer *w, uint64_t *bytes) {
  uint64_t head;
  if (!w || !bytes) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_size: NULL argument");
  return w_layout(w, &head, bytes);
}

typedef struct {
  uint8_t *buf; /* memory */
  FILE *f;      /* or a stream */
  uint64_t pos;
} sink;

static rlx_status put(sink *s, const void *p, uint64_t n) {
  if (!n) return RLX_OK;
  if (s->buf) memcpy(s->buf + s->pos, p, (size_t)n);
  else if (n > SIZE_MAX || fwrite(p, 1, (size_t)n, s->f) != (size_t)n)
    return rlx_error(RLX_ERR_INVALID_ARG, "GGUF writer: cannot write %llu bytes at byte %llu", (unsigned long long)n,
                     (unsigned long long)s->pos);
  s->pos += n;
  return RLX_OK;
}
static rlx_status put_zeros(sink *s, uint64_t n) {
  static const uint8_t zeros[64];
  rlx_status st = RLX_OK;
  while (n && st == RLX_OK) {
    uint64_t k = n < sizeof zeros ? n : sizeof zeros;
    st = put(s, zeros, k);
    n -= k;
  }
  return st;
}
static rlx_status put_u32(sink *s, uint32_t v) {
  uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
  return put(s, b, 4);
}
static rlx_status put_u64(sink *s, uint64_t v) {
  uint8_t b[8];
  for (int k = 0; k < 8; k++) b[k] = (uint8_t)(v >> (8 * k));
  return put(s, b, 8);
}

static rlx_status w_write(const rlx_gguf_writer *w, sink *s) {
  uint64_t head, total;
  rlx_status st = w_layout(w, &head, &total);
  if (st == RLX_OK) st = put(s, GGUF_MAGIC, 4);
  if (st == RLX_OK) st = put_u32(s, 3);
  if (st == RLX_OK) st = put_u64(s, w->n_tensors);
  if (st == RLX_OK) st = put_u64(s, w->n_kv);
  if (st == RLX_OK) st = put(s, w->kv, w->kv_len);
  uint64_t off = 0;
  for (size_t i = 0; i < w->n_tensors && st == RLX_OK; i++) {
    const w_tensor *t = &w->tensors[i];
    st = put_u64(s, t->name_len);
    if (st == RLX_OK) st = put(s, t->name, t->name_len);
    if (st == RLX_OK) st = put_u32(s, (uint32_t)t->n_dims);
    for (int k = 0; k < t->n_dims && st == RLX_OK; k++) st = put_u64(s, (uint64_t)t->dims[k]);
    if (st == RLX_OK) st = put_u32(s, t->type);
    if (st == RLX_OK) st = put_u64(s, off);
    off += t->bytes + pad_to(t->bytes, w->alignment);
  }
  if (st == RLX_OK) st = put_zeros(s, head - s->pos);
  for (size_t i = 0; i < w->n_tensors && st == RLX_OK; i++) {
    st = put(s, w->tensors[i].data, w->tensors[i].bytes);
    if (st == RLX_OK) st = put_zeros(s, pad_to(w->tensors[i].bytes, w->alignment));
  }
  return st;
}

rlx_status rlx_gguf_writer_write_memory(const rlx_gguf_writer *w, void *buf, size_t cap) {
  uint64_t total;
  rlx_status st = rlx_gguf_writer_size(w, &total);
  if (st != RLX_OK) return st;
  if (!buf || total > (uint64_t)cap)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_write_memory: the file takes %llu bytes, the buffer %zu",
                     (unsigned long long)total, buf ? cap : 0);
  sink s = {buf, NULL, 0};
  return w_write(w, &s);
}

rlx_status rlx_gguf_writer_write_stream(const rlx_gguf_writer *w, FILE *f) {
  if (!w || !f) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_write_stream: NULL argument");
  sink s = {NULL, f, 0};
  return w_write(w, &s);
}

rlx_status rlx_gguf_writer_write_file(const rlx_gguf_writer *w, const char *path) {
  if (!w || !path) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_gguf_writer_write_file: NULL argument");
  FILE *f = fopen(path, "wb");
  if (!f) return rlx_error(RLX_ERR_NOT_FOUND, "GGUF writer: cannot create '%s'", path);
  rlx_status st = rlx_gguf_writer_write_stream(w, f);
  if (fclose(f) != 0 && st == RLX_OK) st = rlx_error(RLX_ERR_INVALID_ARG, "GGUF writer: cannot finish '%s'", path);
  return st;
}

rlx_status rlx_gguf_write_file_whole(const rlx_gguf_writer *w, const char *path, const char *fn) {
  const size_t len = strlen(path);
  char *tmp = rlx_malloc(len + 5);
  if (!tmp) return rlx_error(RLX_ERR_NO_MEMORY, "%s: out of memory", fn);
  memcpy(tmp, path, len);
  memcpy(tmp + len, ".tmp", 5);
  rlx_status st = rlx_gguf_writer_write_file(w, tmp);
  if (st == RLX_OK && rename(tmp, path) != 0)
    st = rlx_error(RLX_ERR_INVALID_ARG, "%s: cannot rename '%s' to '%s'", fn, tmp, path);
  if (st != RLX_OK) remove(tmp);
  rlx_free(tmp, len + 5);
  return st;
}
