/* dump_opcases.c - runs every op case natively (debug_poison on, as in wasm)
 * and writes the outputs to FILE for tests/node/opcases.test.mjs, which
 * checks that wasm computes the same numbers.
 *
 * File format (little-endian):
 *   "RLXOPC1\0" (8 bytes), u32 case count, then per case:
 *   u32 name length, name bytes (no NUL), i32 status, u32 n_out,
 *   n_out float32 outputs (n_out is 0 when the case failed). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "op_case.h"

static int put_u32(FILE *f, uint32_t v) {
  unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                        (unsigned char)(v >> 24)};
  return fwrite(b, 1, 4, f) == 4;
}

static int put_f32(FILE *f, float x) {
  uint32_t v;
  memcpy(&v, &x, 4);
  return put_u32(f, v);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s FILE\n", argv[0]);
    return 2;
  }
  FILE *f = fopen(argv[1], "wb");
  if (!f) {
    perror(argv[1]);
    return 1;
  }
  int n = opcase_count(), ok = fwrite("RLXOPC1", 1, 8, f) == 8 && put_u32(f, (uint32_t)n), failed = 0;
  for (int i = 0; i < n && ok; i++) {
    const op_case *c = opcase_get(i);
    opcase_result r;
    memset(&r, 0, sizeof r);
    opcase_run(c, 1, &r);
    size_t n_out = (r.status == RLX_OK && r.out) ? r.n_out : 0;
    if (r.status != RLX_OK) {
      fprintf(stderr, "%s: %s\n", c->name, r.message);
      failed++;
    }
    uint32_t len = (uint32_t)strlen(c->name);
    ok = put_u32(f, len) && fwrite(c->name, 1, len, f) == len && put_u32(f, (uint32_t)r.status) &&
         put_u32(f, (uint32_t)n_out);
    for (size_t k = 0; k < n_out && ok; k++) ok = put_f32(f, r.out[k]);
    opcase_result_free(&r);
  }
  if (fclose(f) != 0 || !ok) {
    fprintf(stderr, "%s: write failed\n", argv[1]);
    remove(argv[1]);
    return 1;
  }
  printf("%s: %d cases (%d failed natively)\n", argv[1], n, failed);
  return 0;
}
