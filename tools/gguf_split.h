/* gguf_split.h - writes a GGUF model as llama.cpp's gguf-split does
 * (examples/gguf-split: part k of n is "<prefix>-%05d-of-%05d.gguf", every
 * part a GGUF file with "split.no" k, "split.count" n and
 * "split.tensors.count"; the first part holds the metadata), the tensors in
 * n contiguous runs.  For tools/gguf_split.c and the split-model tests. */
#ifndef RLX_TOOLS_GGUF_SPLIT_H
#define RLX_TOOLS_GGUF_SPLIT_H

#include <stdio.h>
#include <string.h>

#include "rlx.h"
#include "rlx_gguf.h"

/* Splits g (opened from memory) into n parts named after prefix (n from 1
 * to its tensor count; the library's errors in rlx_last_error()). */
static rlx_status gguf_split_write(const rlx_gguf *g, int32_t n, const char *prefix) {
  const int64_t total = rlx_gguf_tensor_count(g);
  if (n < 1 || n > total) return RLX_ERR_INVALID_ARG; /* 1 to one part per tensor */
  rlx_status st = RLX_OK;
  for (int32_t k = 0; k < n && st == RLX_OK; k++) {
    rlx_gguf_writer *w;
    if ((st = rlx_gguf_writer_new(&w)) != RLX_OK) return st;
    const uint16_t no = (uint16_t)k, count = (uint16_t)n;
    const int32_t tensors = (int32_t)total;
    st = rlx_gguf_writer_set_alignment(w, rlx_gguf_alignment(g));
    for (int64_t i = 0; k == 0 && st == RLX_OK && i < rlx_gguf_kv_count(g); i++) {
      const char *key;
      rlx_gguf_value v;
      if ((st = rlx_gguf_kv(g, i, &key, &v)) == RLX_OK && strncmp(key, "split.", 6) != 0 &&
          strcmp(key, "general.alignment") != 0)
        st = rlx_gguf_writer_add_kv(w, g, i);
    }
    if (st == RLX_OK) st = rlx_gguf_writer_add(w, "split.no", RLX_GGUF_VAL_U16, &no);
    if (st == RLX_OK) st = rlx_gguf_writer_add(w, "split.count", RLX_GGUF_VAL_U16, &count);
    if (st == RLX_OK) st = rlx_gguf_writer_add(w, "split.tensors.count", RLX_GGUF_VAL_I32, &tensors);
    for (int64_t i = total * k / n; st == RLX_OK && i < total * (k + 1) / n; i++) {
      rlx_gguf_tensor_info t;
      if ((st = rlx_gguf_tensor(g, i, &t)) == RLX_OK)
        st = rlx_gguf_writer_add_tensor(w, t.name, t.type, t.n_dims, t.dims, t.data, t.bytes);
    }
    char path[4096];
    snprintf(path, sizeof path, "%s-%05d-of-%05d.gguf", prefix, k + 1, n);
    if (st == RLX_OK) st = rlx_gguf_writer_write_file(w, path);
    rlx_gguf_writer_free(w);
  }
  return st;
}

#endif
