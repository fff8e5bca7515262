/* replay_main.c - a main for a fuzz target built without libFuzzer: runs
 * LLVMFuzzerTestOneInput once on each file named (make's llm seed models,
 * tests/fuzz/fuzz.mk, are written this way with the plain library). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    FILE *f = fopen(argv[i], "rb");
    if (!f) {
      fprintf(stderr, "replay: cannot open %s\n", argv[i]);
      return 1;
    }
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0, got;
    do {
      if (n == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 4096))) return 1;
      got = fread(buf + n, 1, cap - n, f);
      n += got;
    } while (got);
    fclose(f);
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
  }
  return 0;
}
