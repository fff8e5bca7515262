/* make_subset.c - writes a compact, class-balanced Fashion-MNIST subset for
 * the browser demo (run by `make` into web/data/).
 *
 *   build/make_subset train|test OUT [--count N] [--data DIR]
 *
 * Reads the IDX files of the split (DIR defaults to $RLX_DATA_DIR or
 * /usr/share/datasets/fashion-mnist) with rlx_dataset_load and keeps the
 * first N/10 samples of each class, in file order (N defaults to 3000 for
 * train and 1000 for test; N must be a multiple of 10).
 *
 * File format (all integers little-endian uint32):
 *
 *   offset  size          field
 *   0       4             magic, the bytes "RLXD"
 *   4       4             version, 1
 *   8       4             count    number of samples
 *   12      4             rows     28
 *   16      4             cols     28
 *   20      4             classes  10
 *   24      count*rows*cols  pixels, uint8 0..255 (0 = background), sample
 *                         after sample, each rows x cols row-major, exactly
 *                         the bytes of the IDX file
 *   24+count*rows*cols  count   labels, uint8 class ids 0..classes-1
 *
 * Total size 24 + count * (rows * cols + 1) bytes: 2,355,024 for the train
 * subset and 785,024 for the test subset.  To feed a model, divide the
 * pixels by 255 (what rlx_dataset_load does). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlx_models.h"

#define SUBSET_VERSION 1
#define SUBSET_CLASSES 10
#define SUBSET_HEADER 24

static int usage(const char *msg) {
  fprintf(stderr, "make_subset: %s\nusage: make_subset train|test OUT [--count N] [--data DIR]\n", msg);
  return 2;
}

static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Picks per_class samples of each class in file order; 0 if some class has
 * too few. */
static int select_samples(const rlx_dataset *d, int32_t per_class, int32_t *picked) {
  int32_t taken[SUBSET_CLASSES] = {0}, n = 0;
  for (int32_t i = 0; i < d->count; i++) {
    int32_t c = d->labels[i];
    if (taken[c] < per_class) {
      taken[c]++;
      picked[n++] = i;
    }
  }
  return n == per_class * SUBSET_CLASSES;
}

static int write_subset(const rlx_dataset *d, const int32_t *picked, int32_t count, const char *out_path) {
  size_t pixels = (size_t)d->rows * (size_t)d->cols;
  size_t size = SUBSET_HEADER + (size_t)count * (pixels + 1);
  unsigned char *buf = malloc(size);
  if (!buf) {
    fprintf(stderr, "make_subset: out of memory\n");
    return 0;
  }
  memcpy(buf, "RLXD", 4);
  put_u32(buf + 4, SUBSET_VERSION);
  put_u32(buf + 8, (uint32_t)count);
  put_u32(buf + 12, (uint32_t)d->rows);
  put_u32(buf + 16, (uint32_t)d->cols);
  put_u32(buf + 20, SUBSET_CLASSES);
  unsigned char *px = buf + SUBSET_HEADER, *lab = px + (size_t)count * pixels;
  for (int32_t k = 0; k < count; k++) {
    const float *img = d->images + (size_t)picked[k] * pixels;
    for (size_t j = 0; j < pixels; j++) px[(size_t)k * pixels + j] = (unsigned char)lrintf(img[j] * 255.0f);
    lab[k] = (unsigned char)d->labels[picked[k]];
  }
  /* Written next to the target and renamed, so a failed run leaves no
   * partial file that make would take as up to date. */
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", out_path);
  FILE *f = fopen(tmp, "wb");
  int ok = f && fwrite(buf, 1, size, f) == size;
  if (f && fclose(f) != 0) ok = 0;
  if (ok && rename(tmp, out_path) != 0) ok = 0;
  if (!ok) {
    fprintf(stderr, "make_subset: cannot write '%s'\n", out_path);
    remove(tmp);
  }
  free(buf);
  return ok;
}

int main(int argc, char **argv) {
  if (argc < 3) return usage("a split and an output path are required");
  const char *split = argv[1], *out_path = argv[2];
  const char *env = getenv("RLX_DATA_DIR");
  const char *dir = env && env[0] ? env : "/usr/share/datasets/fashion-mnist";
  long count;
  if (strcmp(split, "train") == 0) count = 3000;
  else if (strcmp(split, "test") == 0) count = 1000;
  else return usage("the split must be 'train' or 'test'");
  for (int i = 3; i < argc; i++) {
    if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      char *end;
      count = strtol(argv[++i], &end, 10);
      if (*end || count <= 0 || count % SUBSET_CLASSES || count > 100000)
        return usage("--count must be a positive multiple of 10 up to 100000");
    } else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
      dir = argv[++i];
    } else {
      return usage("unknown or incomplete option");
    }
  }

  const char *prefix = strcmp(split, "train") == 0 ? "train" : "t10k";
  char images[4096], labels[4096];
  snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
  snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
  rlx_dataset d;
  if (rlx_dataset_load(images, labels, &d) != RLX_OK) {
    fprintf(stderr, "make_subset: %s\n", rlx_last_error());
    return 1;
  }
  int32_t *picked = malloc((size_t)count * sizeof(int32_t));
  int ok = picked != NULL;
  if (ok && !select_samples(&d, (int32_t)(count / SUBSET_CLASSES), picked)) {
    fprintf(stderr, "make_subset: '%s' has fewer than %ld samples of some class\n", labels, count / SUBSET_CLASSES);
    ok = 0;
  }
  if (ok) ok = write_subset(&d, picked, (int32_t)count, out_path);
  if (ok) printf("make_subset: %s: %ld %s samples (%dx%d), %ld bytes\n", out_path, count, split, (int)d.rows,
                 (int)d.cols, SUBSET_HEADER + count * ((long)d.rows * d.cols + 1));
  free(picked);
  rlx_dataset_free(&d);
  return ok ? 0 : 1;
}
