/* fuzz_gguf.c - libFuzzer target: the GGUF reader, writer and row kernels
 * (src/models/gguf.c, gguf_quants.c).  The bytes are a GGUF file.
 * rlx_gguf_open_memory either refuses them with a message, or describes
 * them consistently: every entry, array element and tensor is read (ASan
 * watches each byte), lookups by key and name find what was listed, tensor
 * data lies inside the buffer, each tensor dequantizes (directly, through
 * rlx_gguf_read_tensor_f32 and from a stream: the same floats) and its dot
 * with a vector matches the dequantized sum; the stream reader
 * (fmemopen) agrees with the memory reader; a budget one byte short is
 * refused; and the parsed file written back by the writer (each entry
 * copied by rlx_gguf_writer_add_kv) reads back equal. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_gguf.h"
#include "fuzz_check.h"


#define MAX_ELEMS (1 << 16)
static float f1[MAX_ELEMS], f2[MAX_ELEMS], xs[MAX_ELEMS];

static size_t vsize(rlx_gguf_vtype t) {
  static const size_t s[13] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
  return (unsigned)t < 13 ? s[t] : 0;
}

static volatile unsigned sink;
static void touch(const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) sink += b[i];
}

static int same_value(const rlx_gguf_value *a, const rlx_gguf_value *b) {
  if (a->type != b->type || a->elem_type != b->elem_type || a->count != b->count) return 0;
  if (a->type == RLX_GGUF_VAL_STRING) return memcmp(a->str, b->str, (size_t)a->count) == 0;
  if (a->type == RLX_GGUF_VAL_ARRAY)
    return a->elem_type == RLX_GGUF_VAL_STRING || memcmp(a->data, b->data, (size_t)a->count * vsize(a->elem_type)) == 0;
  if (isnan(a->f64) || isnan(b->f64)) return isnan(a->f64) && isnan(b->f64);
  return a->i64 == b->i64 && a->u64 == b->u64 && a->f64 == b->f64;
}

/* Writes g back; returns the writer or NULL when g has names the writer's
 * NUL-terminated calls cannot express. */
static rlx_gguf_writer *rewrite(const rlx_gguf *g) {
  rlx_gguf_writer *w;
  CHECK(rlx_gguf_writer_new(&w) == RLX_OK);
  for (int64_t i = 0; i < rlx_gguf_kv_count(g); i++) CHECK(rlx_gguf_writer_add_kv(w, g, i) == RLX_OK);
  for (int64_t i = 0; i < rlx_gguf_tensor_count(g); i++) {
    rlx_gguf_tensor_info t;
    CHECK(rlx_gguf_tensor(g, i, &t) == RLX_OK);
    CHECK(rlx_gguf_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims, t.data, t.bytes) == RLX_OK);
  }
  return w;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  rlx_gguf *g = NULL;
  rlx_status st = rlx_gguf_open_memory(data, size, (uint64_t)1 << 24, &g);
  if (st != RLX_OK) {
    CHECK(g == NULL && rlx_last_error()[0]);
    return 0;
  }
  int names_exact = 1; /* every key and name found again (no embedded NUL) */
  for (int64_t i = 0; i < rlx_gguf_kv_count(g); i++) {
    const char *key;
    rlx_gguf_value v;
    CHECK(rlx_gguf_kv(g, i, &key, &v) == RLX_OK);
    int64_t j = rlx_gguf_find_kv(g, key);
    if (j != i) names_exact = 0;
    if (j >= 0) {
      const char *k2;
      CHECK(rlx_gguf_kv(g, j, &k2, NULL) == RLX_OK && strcmp(k2, key) == 0);
    }
    CHECK(v.type <= RLX_GGUF_VAL_F64);
    if (v.type == RLX_GGUF_VAL_STRING) {
      touch(v.str, (size_t)v.count + 1);
      CHECK(v.str[v.count] == 0);
    } else if (v.type == RLX_GGUF_VAL_ARRAY && v.elem_type == RLX_GGUF_VAL_STRING) {
      CHECK(v.data == NULL);
      for (uint64_t k = 0; k < v.count; k++) {
        const char *s;
        uint64_t len;
        CHECK(rlx_gguf_array_string(g, i, k, &s, &len) == RLX_OK);
        touch(s, (size_t)len + 1);
      }
      const char *s;
      CHECK(rlx_gguf_array_string(g, i, v.count, &s, NULL) == RLX_ERR_INVALID_ARG);
    } else if (v.type == RLX_GGUF_VAL_ARRAY) {
      CHECK(v.elem_type != RLX_GGUF_VAL_ARRAY && vsize(v.elem_type) > 0);
      touch(v.data, (size_t)v.count * vsize(v.elem_type));
      if (v.elem_type == RLX_GGUF_VAL_BOOL)
        for (uint64_t k = 0; k < v.count; k++) CHECK(((const uint8_t *)v.data)[k] <= 1);
    } else if (v.type == RLX_GGUF_VAL_BOOL) {
      CHECK(v.u64 <= 1);
    }
  }
  uint32_t a = rlx_gguf_alignment(g);
  CHECK(a && (a & (a - 1)) == 0 && rlx_gguf_data_offset(g) % a == 0);
  uint64_t total = 0;
  for (int64_t i = 0; i < rlx_gguf_tensor_count(g); i++) {
    rlx_gguf_tensor_info t;
    CHECK(rlx_gguf_tensor(g, i, &t) == RLX_OK);
    if (rlx_gguf_find_tensor(g, t.name) != i) names_exact = 0;
    CHECK(t.n_dims >= 0 && t.n_dims <= RLX_GGUF_MAX_DIMS && t.n_elements >= 0);
    CHECK(rlx_gguf_type_block_elems(t.type) > 0 && t.dims[0] % rlx_gguf_type_block_elems(t.type) == 0);
    uint64_t bytes;
    CHECK(rlx_gguf_row_bytes(t.type, t.n_elements, &bytes) == RLX_OK && bytes == t.bytes);
    CHECK(t.file_offset % a == 0 && t.file_offset <= size && t.bytes <= size - t.file_offset);
    CHECK((const uint8_t *)t.data == data + t.file_offset);
    total += t.bytes;
    touch(t.data, (size_t)t.bytes);
    if (t.n_elements > MAX_ELEMS) continue;
    size_t n = (size_t)t.n_elements;
    CHECK(rlx_gguf_dequantize(t.type, t.data, (size_t)t.bytes, f1, t.n_elements) == RLX_OK);
    CHECK(rlx_gguf_read_tensor_f32(g, i, f2, n) == RLX_OK);
    CHECK(memcmp(f1, f2, n * sizeof *f1) == 0);
    double want = 0, mag = 0;
    for (size_t k = 0; k < n; k++) {
      xs[k] = (float)((k * 7) % 13) / 13.0f - 0.5f;
      want += (double)f1[k] * xs[k];
      mag += fabs((double)f1[k] * xs[k]);
    }
    float got;
    CHECK(rlx_gguf_dot(t.type, t.data, (size_t)t.bytes, xs, t.n_elements, &got) == RLX_OK);
    if (isfinite(want) && mag < 1e30) CHECK(fabs(got - want) <= 1e-4 * mag + 1e-30);
  }
  CHECK(total == rlx_gguf_data_bytes(g));

  /* a budget one byte short */
  if (total) {
    rlx_gguf *h = (rlx_gguf *)1;
    CHECK(rlx_gguf_open_memory(data, size, total - 1, &h) == RLX_ERR_NO_MEMORY && h == NULL);
  }

  /* the stream reader agrees */
  FILE *f = fmemopen((void *)data, size, "rb");
  if (f) {
    rlx_gguf *s;
    CHECK(rlx_gguf_open_stream(f, (uint64_t)1 << 24, &s) == RLX_OK);
    CHECK(rlx_gguf_kv_count(s) == rlx_gguf_kv_count(g) && rlx_gguf_tensor_count(s) == rlx_gguf_tensor_count(g));
    CHECK(rlx_gguf_data_offset(s) == rlx_gguf_data_offset(g));
    for (int64_t i = 0; i < rlx_gguf_tensor_count(g); i++) {
      rlx_gguf_tensor_info t;
      CHECK(rlx_gguf_tensor(g, i, &t) == RLX_OK);
      uint8_t *copy = malloc((size_t)t.bytes + 1);
      CHECK(rlx_gguf_read_tensor(s, i, copy, (size_t)t.bytes) == RLX_OK);
      CHECK(memcmp(copy, t.data, (size_t)t.bytes) == 0);
      free(copy);
      if (t.n_elements <= MAX_ELEMS) {
        CHECK(rlx_gguf_read_tensor_f32(s, i, f2, (size_t)t.n_elements) == RLX_OK);
        CHECK(rlx_gguf_dequantize(t.type, t.data, (size_t)t.bytes, f1, t.n_elements) == RLX_OK);
        CHECK(memcmp(f1, f2, (size_t)t.n_elements * sizeof *f1) == 0);
      }
    }
    rlx_gguf_free(s);
    fclose(f);
  }

  /* written back, read back equal */
  if (names_exact) {
    rlx_gguf_writer *w = rewrite(g);
    uint64_t wsize;
    CHECK(rlx_gguf_writer_size(w, &wsize) == RLX_OK);
    if (wsize <= (16u << 20)) {
      uint8_t *buf = malloc((size_t)wsize);
      CHECK(rlx_gguf_writer_write_memory(w, buf, (size_t)wsize) == RLX_OK);
      rlx_gguf *r;
      CHECK(rlx_gguf_open_memory(buf, (size_t)wsize, RLX_GGUF_NO_BUDGET, &r) == RLX_OK);
      CHECK(rlx_gguf_kv_count(r) == rlx_gguf_kv_count(g) && rlx_gguf_tensor_count(r) == rlx_gguf_tensor_count(g));
      CHECK(rlx_gguf_alignment(r) == rlx_gguf_alignment(g));
      for (int64_t i = 0; i < rlx_gguf_kv_count(g); i++) {
        const char *k1, *k2;
        rlx_gguf_value v1, v2;
        CHECK(rlx_gguf_kv(g, i, &k1, &v1) == RLX_OK && rlx_gguf_kv(r, i, &k2, &v2) == RLX_OK);
        CHECK(strcmp(k1, k2) == 0 && same_value(&v1, &v2));
        for (uint64_t k = 0; v1.type == RLX_GGUF_VAL_ARRAY && v1.elem_type == RLX_GGUF_VAL_STRING && k < v1.count;
             k++) {
          const char *s1, *s2;
          uint64_t l1, l2;
          CHECK(rlx_gguf_array_string(g, i, k, &s1, &l1) == RLX_OK && rlx_gguf_array_string(r, i, k, &s2, &l2) == RLX_OK);
          CHECK(l1 == l2 && memcmp(s1, s2, (size_t)l1) == 0);
        }
      }
      for (int64_t i = 0; i < rlx_gguf_tensor_count(g); i++) {
        rlx_gguf_tensor_info t1, t2;
        CHECK(rlx_gguf_tensor(g, i, &t1) == RLX_OK && rlx_gguf_tensor(r, i, &t2) == RLX_OK);
        CHECK(strcmp(t1.name, t2.name) == 0 && t1.type == t2.type && t1.n_dims == t2.n_dims && t1.bytes == t2.bytes);
        CHECK(memcmp(t1.dims, t2.dims, sizeof t1.dims) == 0 && memcmp(t1.data, t2.data, (size_t)t1.bytes) == 0);
      }
      rlx_gguf_free(r);
      free(buf);
    }
    rlx_gguf_writer_free(w);
  }
  rlx_gguf_free(g);
  return 0;
}
