/* fuzz_idx.c - libFuzzer target: the IDX reader (src/models/dataset.c).
 * The bytes become an image file and a label file (written to /tmp, each
 * raw or gzip-compressed by zlib), then rlx_dataset_load reads them.
 * Byte 0: bit 0/1 gzip the images/labels, bit 2 build well-formed headers
 * from the next bytes (count, rows, cols; bit 3 makes the label count
 * differ) so the bodies get exercised; else bytes 1-2 split the rest
 * between the two files as they are.  A load that succeeds must describe
 * what it read: sizes in range, pixels in [0, 1], labels 0..9. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "rlx_models.h"

static char img_path[64], lab_path[64];

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

static void write_file(const char *path, const unsigned char *p, size_t n, int gzip) {
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (gzip) {
    z_stream z;
    memset(&z, 0, sizeof z);
    if (deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
    uLong bound = deflateBound(&z, (uLong)n) + 32;
    unsigned char *packed = malloc(bound);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = packed;
    z.avail_out = (uInt)bound;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
    fwrite(packed, 1, z.total_out, f);
    deflateEnd(&z);
    free(packed);
  } else if (n) {
    fwrite(p, 1, n, f);
  }
  fclose(f);
}

static void remove_files(void) {
  unlink(img_path);
  unlink(lab_path);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  snprintf(img_path, sizeof img_path, "/tmp/rlx_fuzz_idx_%d_images", (int)getpid());
  snprintf(lab_path, sizeof lab_path, "/tmp/rlx_fuzz_idx_%d_labels", (int)getpid());
  atexit(remove_files);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  uint8_t flags = data[0];
  const uint8_t *rest = data + 3;
  size_t n_rest = size - 3;
  unsigned char *img = NULL, *lab = NULL;
  size_t n_img, n_lab;
  if (flags & 4) {
    uint32_t count = 1 + data[1] % 4, rows = 1 + (data[2] & 7), cols = 1 + (data[2] >> 3) % 8;
    uint32_t lab_count = (flags & 8) ? count + 1 : count;
    size_t body = (size_t)count * rows * cols;
    /* Bodies from the rest (cycled), one byte short or long now and then. */
    size_t img_body = body + ((flags & 16) ? 1 : 0) - ((flags & 32) && body ? 1 : 0);
    n_img = 16 + img_body;
    n_lab = 8 + lab_count;
    img = malloc(n_img);
    lab = malloc(n_lab);
    put_be32(img, 0x803), put_be32(img + 4, count), put_be32(img + 8, rows), put_be32(img + 12, cols);
    put_be32(lab, 0x801), put_be32(lab + 4, lab_count);
    for (size_t i = 0; i < img_body; i++) img[16 + i] = n_rest ? rest[i % n_rest] : 0;
    for (size_t i = 0; i < lab_count; i++) lab[8 + i] = n_rest ? (flags & 64 ? rest[i % n_rest] : rest[i % n_rest] % 10) : 0;
  } else {
    size_t split = ((size_t)data[1] << 8 | data[2]) % (n_rest + 1);
    n_img = split;
    n_lab = n_rest - split;
    img = malloc(n_img + 1);
    lab = malloc(n_lab + 1);
    memcpy(img, rest, n_img);
    memcpy(lab, rest + split, n_lab);
  }
  write_file(img_path, img, n_img, flags & 1);
  write_file(lab_path, lab, n_lab, (flags >> 1) & 1);
  free(img);
  free(lab);
  rlx_dataset d;
  rlx_status st = rlx_dataset_load(img_path, lab_path, &d);
  if (st == RLX_OK) {
    if (d.count <= 0 || d.rows <= 0 || d.cols <= 0 || !d.images || !d.labels) abort();
    size_t n = (size_t)d.count * (size_t)d.rows * (size_t)d.cols;
    for (size_t i = 0; i < n; i++)
      if (!(d.images[i] >= 0.0f && d.images[i] <= 1.0f)) abort();
    for (int32_t i = 0; i < d.count; i++)
      if (d.labels[i] < 0 || d.labels[i] > 9) abort();
  } else {
    if (!rlx_last_error()[0]) abort();
    if (d.count != 0 || d.images || d.labels) abort(); /* cleared on failure */
  }
  rlx_dataset_free(&d);
  return 0;
}
