/* gguf_split.c - build/gguf_split IN.gguf N PREFIX: writes IN as N parts
 * PREFIX-00001-of-0000N.gguf ... the way llama.cpp's gguf-split
 * --split-max-tensors does (tools/gguf_split.h), for the split-model tests. */
#include <stdio.h>
#include <stdlib.h>

#include "gguf_split.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s IN.gguf N PREFIX\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  long size = -1;
  if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  unsigned char *buf = size > 0 && fseek(f, 0, SEEK_SET) == 0 ? malloc((size_t)size) : NULL;
  if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "gguf_split: cannot read %s\n", argv[1]);
    return 1;
  }
  fclose(f);
  rlx_gguf *g;
  rlx_status st = rlx_gguf_open_memory(buf, (size_t)size, RLX_GGUF_NO_BUDGET, &g);
  if (st == RLX_OK) st = gguf_split_write(g, atoi(argv[2]), argv[3]);
  if (st != RLX_OK) fprintf(stderr, "gguf_split: %s\n", st == RLX_ERR_INVALID_ARG && g ? "N must be from 1 to the tensor count" : rlx_last_error());
  rlx_gguf_free(g);
  free(buf);
  return st == RLX_OK ? 0 : 1;
}
