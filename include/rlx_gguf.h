/* rlx_gguf.h - GGUF model files (version 3; version 2 is read too): a
 * bounds-checked reader (from memory, zero-copy, or streamed from a file),
 * a writer, and the weight types' row kernels (dequantize, quantize, dot).
 * Same conventions as rlx.h: calls return rlx_status and leave a message in
 * rlx_last_error(); *_free(NULL) is harmless; a malformed file is refused
 * with RLX_ERR_INVALID_ARG (RLX_ERR_UNSUPPORTED for a tensor type or a
 * nested array this library does not read), never a crash, and nothing is
 * allocated beyond a small multiple of the header bytes the file really has.
 *
 * Layout of a file: header ("GGUF", version, tensor count, metadata count),
 * metadata key/value pairs, tensor infos (name, dims, type, offset), zero
 * padding to the alignment (metadata "general.alignment", a u32 power of
 * two, default 32), then the tensor data; every tensor's offset (from the
 * start of the data) is a multiple of the alignment.  Dims are in GGUF
 * order: dims[0] is the contiguous one (the row length), a multiple of the
 * type's block size.
 *
 * Memory budget.  A wasm32 instance addresses at most 4 GiB (65,536 pages of
 * 64 KiB).  Keeping 512 MiB for the runtime (module data, stack, the
 * allocator, activations, the KV cache and the file's header), tensor data
 * gets RLX_GGUF_WASM32_DATA_BUDGET = 3.5 GiB: about 6.7 billion weights at
 * Q4_0 / Q4_K (4.5 bits each), 3.5 billion at Q8_0, 1.9 billion at F16.
 * A 7B model at Q4_0 (3.8 GB) does not fit; 3B models at Q4_K or Q8_0 do.
 * The open calls take a byte budget and refuse, before anything is
 * allocated for tensor data, a file whose tensor data exceeds it. */
#ifndef RLX_GGUF_H
#define RLX_GGUF_H

#include <stdio.h>
#include "rlx.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLX_GGUF_WASM32_DATA_BUDGET ((uint64_t)3584 << 20) /* 3.5 GiB */
#define RLX_GGUF_NO_BUDGET UINT64_MAX
#define RLX_GGUF_MAX_DIMS 4
#define RLX_GGUF_DEFAULT_ALIGNMENT 32
#define RLX_GGUF_MAX_NAME 64     /* bytes of a tensor name */
#define RLX_GGUF_MAX_KEY 65535   /* bytes of a metadata key */

/* ---- weight types (include/rlx_gguf_types.def) ----------------------------
 * The values are the GGUF codes.  Kernels read blocks byte by byte: src and
 * dst need no alignment. */
typedef enum {
#define RLX_GGUF_TYPE(ID, name, code, block_elems, block_bytes) RLX_GGUF_TYPE_##ID = code,
#include "rlx_gguf_types.def"
#undef RLX_GGUF_TYPE
} rlx_gguf_type;

/* "q4_K", ... for a supported type, else NULL. */
const char *rlx_gguf_type_name(rlx_gguf_type t);
/* The supported type of that name, or -1. */
int32_t rlx_gguf_type_from_name(const char *name);
/* Values per block and bytes per block; 0 when t is not supported. */
int32_t rlx_gguf_type_block_elems(rlx_gguf_type t);
int32_t rlx_gguf_type_block_bytes(rlx_gguf_type t);
/* Bytes of n values (n a multiple of the block size). */
rlx_status rlx_gguf_row_bytes(rlx_gguf_type t, int64_t n, uint64_t *bytes);
/* n values (a multiple of the block size) from src_bytes >= row bytes. */
rlx_status rlx_gguf_dequantize(rlx_gguf_type t, const void *src, size_t src_bytes, float *dst, int64_t n);
/* Round to nearest per block: every type.  Block types refuse a non-finite
 * value and a block whose scale overflows f16 (RLX_ERR_NUMERIC). */
rlx_status rlx_gguf_quantize(rlx_gguf_type t, const float *src, int64_t n, void *dst, size_t dst_bytes);
/* *out = sum_i dequantized(row)_i * x_i over n values. */
rlx_status rlx_gguf_dot(rlx_gguf_type t, const void *row, size_t row_bytes, const float *x, int64_t n, float *out);

/* ---- metadata values ----------------------------------------------------- */
typedef enum {
  RLX_GGUF_VAL_U8 = 0,
  RLX_GGUF_VAL_I8 = 1,
  RLX_GGUF_VAL_U16 = 2,
  RLX_GGUF_VAL_I16 = 3,
  RLX_GGUF_VAL_U32 = 4,
  RLX_GGUF_VAL_I32 = 5,
  RLX_GGUF_VAL_F32 = 6,
  RLX_GGUF_VAL_BOOL = 7,
  RLX_GGUF_VAL_STRING = 8,
  RLX_GGUF_VAL_ARRAY = 9,
  RLX_GGUF_VAL_U64 = 10,
  RLX_GGUF_VAL_I64 = 11,
  RLX_GGUF_VAL_F64 = 12
} rlx_gguf_vtype;

/* "u8", "i8", ..., "string", "array"; NULL when not a type. */
const char *rlx_gguf_vtype_name(rlx_gguf_vtype t);

typedef struct {
  rlx_gguf_vtype type;      /* the value's type */
  rlx_gguf_vtype elem_type; /* arrays: the elements' type (never an array) */
  uint64_t count;           /* arrays: elements; strings: bytes */
  /* Numbers and bools: the value in all three (bool 0 or 1).  The fields
   * of other kinds convert it: an integer to double; a float truncated
   * toward zero; a value out of an integer field's range saturates (a
   * negative one gives u64 0; NaN gives 0). */
  int64_t i64;
  uint64_t u64;
  double f64;
  const char *str;          /* strings: count bytes and a NUL after them */
  const void *data;         /* arrays of numbers or bools: count native values
                               (uint8_t ... double; bool as uint8_t 0/1);
                               NULL for arrays of strings */
} rlx_gguf_value;

/* ---- reading --------------------------------------------------------------- */
typedef struct rlx_gguf rlx_gguf;

typedef struct {
  const char *name;
  rlx_gguf_type type;
  int32_t n_dims;                   /* 0 to 4 (0: a scalar) */
  int64_t dims[RLX_GGUF_MAX_DIMS];  /* dims[0] contiguous; 1 past n_dims */
  int64_t n_elements;
  uint64_t file_offset;             /* of its data, from the start of the file */
  uint64_t bytes;
  const void *data;                 /* from memory: into the caller's buffer;
                                       streamed: NULL (use rlx_gguf_read_tensor) */
} rlx_gguf_tensor_info;

/* Parses data[0, size) without copying it: tensor data stays in the buffer
 * (which must outlive the handle; aligned to the file's alignment when data
 * is).  budget bounds the tensor data (RLX_GGUF_NO_BUDGET: none). */
rlx_status rlx_gguf_open_memory(const void *data, size_t size, uint64_t budget, rlx_gguf **out);
/* Reads the header and tensor infos of the file at path (kept open until
 * rlx_gguf_free), or of f from its current position (f must be seekable;
 * it is not closed).  Tensor data is then read with rlx_gguf_read_tensor*. */
rlx_status rlx_gguf_open_file(const char *path, uint64_t budget, rlx_gguf **out);
rlx_status rlx_gguf_open_stream(FILE *f, uint64_t budget, rlx_gguf **out);
/* The header alone (metadata and tensor table) from head[0, head_len), the
 * first bytes of a file of file_size bytes whose tensor data stays
 * elsewhere (streamed to a GPU): every tensor is checked against file_size
 * as in memory mode, info.data is NULL (file_offset says where it is) and
 * reading tensors is refused.  The metadata is copied: head may be freed
 * after the call.  A header longer than head_len
 * fails with *need = the bytes it needs (0 for any other failure): call
 * again with at least that many. */
rlx_status rlx_gguf_open_head(const void *head, size_t head_len, uint64_t file_size, uint64_t *need,
                              rlx_gguf **out);
void rlx_gguf_free(rlx_gguf *g);
/* A model split by llama.cpp's gguf-split (name-00001-of-0000N.gguf): the
 * n parts in order, data[k][0, sizes[k]) each used in place as by
 * rlx_gguf_open_memory.  Part k must say "split.no" k and "split.count" n;
 * the handle has the first part's metadata and the tensors of every part
 * ("split.tensors.count" of them).  A missing, repeated or misplaced part,
 * or a tensor in two parts, is refused naming the part.  n 1: one file (a
 * part of a larger split is refused). */
#define RLX_GGUF_MAX_PARTS 9999
rlx_status rlx_gguf_open_parts(const void *const *data, const size_t *sizes, int32_t n, uint64_t budget,
                               rlx_gguf **out);
/* The part (0-based) that holds tensor i. */
uint32_t rlx_gguf_tensor_part(const rlx_gguf *g, int64_t i);

uint32_t rlx_gguf_version(const rlx_gguf *g);
uint32_t rlx_gguf_alignment(const rlx_gguf *g);
uint64_t rlx_gguf_data_offset(const rlx_gguf *g); /* start of the tensor data in the file */
uint64_t rlx_gguf_data_bytes(const rlx_gguf *g);  /* sum of the tensors' bytes */

int64_t rlx_gguf_kv_count(const rlx_gguf *g);
/* Index of key, or -1. */
int64_t rlx_gguf_find_kv(const rlx_gguf *g, const char *key);
/* Entry i: its key (NUL-terminated) and value. */
rlx_status rlx_gguf_kv(const rlx_gguf *g, int64_t i, const char **key, rlx_gguf_value *value);
/* The value of key (RLX_ERR_NOT_FOUND). */
rlx_status rlx_gguf_get(const rlx_gguf *g, const char *key, rlx_gguf_value *value);
/* Element i of the string array at entry kv. */
rlx_status rlx_gguf_array_string(const rlx_gguf *g, int64_t kv, uint64_t i, const char **s, uint64_t *len);
/* Typed shortcuts: any integer or bool type (an unsigned value past
 * INT64_MAX is refused); any number; a string. */
rlx_status rlx_gguf_get_int(const rlx_gguf *g, const char *key, int64_t *out);
rlx_status rlx_gguf_get_float(const rlx_gguf *g, const char *key, double *out);
rlx_status rlx_gguf_get_string(const rlx_gguf *g, const char *key, const char **s, uint64_t *len);

int64_t rlx_gguf_tensor_count(const rlx_gguf *g);
/* Index of the tensor called name, or -1. */
int64_t rlx_gguf_find_tensor(const rlx_gguf *g, const char *name);
rlx_status rlx_gguf_tensor(const rlx_gguf *g, int64_t i, rlx_gguf_tensor_info *info);
/* Copies tensor i's bytes (as stored) into dst (dst_bytes >= its bytes). */
rlx_status rlx_gguf_read_tensor(rlx_gguf *g, int64_t i, void *dst, size_t dst_bytes);
/* Tensor i as n_elements floats (dequantized; streamed a chunk at a time, so
 * the quantized tensor is never held whole). */
rlx_status rlx_gguf_read_tensor_f32(rlx_gguf *g, int64_t i, float *dst, size_t n);

/* ---- writing ----------------------------------------------------------------
 * Metadata is kept in the order added; keys are unique.  Tensor data is
 * borrowed, not copied: it must stay valid until the file is written.
 * Files are version 3, each tensor's data padded to the alignment. */
typedef struct rlx_gguf_writer rlx_gguf_writer;

rlx_status rlx_gguf_writer_new(rlx_gguf_writer **out);
void rlx_gguf_writer_free(rlx_gguf_writer *w);
/* A power of two; written as "general.alignment" (u32). */
rlx_status rlx_gguf_writer_set_alignment(rlx_gguf_writer *w, uint32_t alignment);
/* A number or bool: value points at one native value of type (uint8_t ...
 * double; bool as uint8_t). */
rlx_status rlx_gguf_writer_add(rlx_gguf_writer *w, const char *key, rlx_gguf_vtype type, const void *value);
rlx_status rlx_gguf_writer_add_string(rlx_gguf_writer *w, const char *key, const char *s, uint64_t len);
/* count native values of a number or bool type. */
rlx_status rlx_gguf_writer_add_array(rlx_gguf_writer *w, const char *key, rlx_gguf_vtype elem_type,
                                     const void *values, uint64_t count);
/* lens NULL: NUL-terminated strings. */
rlx_status rlx_gguf_writer_add_string_array(rlx_gguf_writer *w, const char *key, const char *const *strs,
                                            const uint64_t *lens, uint64_t count);
/* Entry i of the file g read (its key, type and value, string arrays
 * too), as another add call would write it. */
rlx_status rlx_gguf_writer_add_kv(rlx_gguf_writer *w, const rlx_gguf *g, int64_t i);
/* data holds the tensor as stored (rlx_gguf_row_bytes of all its values). */
rlx_status rlx_gguf_writer_add_tensor(rlx_gguf_writer *w, const char *name, rlx_gguf_type type, int32_t n_dims,
                                      const int64_t *dims, const void *data, uint64_t bytes);
/* Bytes of the whole file. */
rlx_status rlx_gguf_writer_size(const rlx_gguf_writer *w, uint64_t *bytes);
rlx_status rlx_gguf_writer_write_memory(const rlx_gguf_writer *w, void *buf, size_t cap);
rlx_status rlx_gguf_writer_write_file(const rlx_gguf_writer *w, const char *path);
rlx_status rlx_gguf_writer_write_stream(const rlx_gguf_writer *w, FILE *f);

#ifdef __cplusplus
}
#endif
#endif
