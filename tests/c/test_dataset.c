/* test_dataset.c - the Fashion-MNIST reader: the real files load with the
 * known counts, sizes, pixel and label ranges; small IDX files written to a
 * temporary directory round-trip raw and gzip-compressed; corrupt files
 * (bad magic, swapped files, truncation, count mismatch, huge counts,
 * labels out of range, trailing bytes, broken gzip) give errors naming the
 * file, never crashes or huge allocations; the browser subset files made by
 * tools/make_subset.c hold exactly the samples they promise.
 * The data directory is $RLX_DATA_DIR or /usr/share/datasets/fashion-mnist. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>

#include <cmocka.h>
#include <zlib.h>

#include "check_alloc.h"
#include "rlx_models.h"

static char tmp_dir[] = "/tmp/rlx_test_dataset_XXXXXX";

static const char *data_dir(void) {
  const char *env = getenv("RLX_DATA_DIR");
  return env && env[0] ? env : "/usr/share/datasets/fashion-mnist";
}

static void load_split(const char *prefix, rlx_dataset *d) {
  char images[1024], labels[1024];
  snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", data_dir(), prefix);
  snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", data_dir(), prefix);
  rlx_status st = rlx_dataset_load(images, labels, d);
  if (st != RLX_OK) print_message("%s (run tools/setup.sh or set RLX_DATA_DIR)\n", rlx_last_error());
  assert_int_equal(st, RLX_OK);
}

/* Range checks shared by both splits; every class appears count/10 times. */
static void check_split(const rlx_dataset *d, int32_t count) {
  assert_int_equal(d->count, count);
  assert_int_equal(d->rows, 28);
  assert_int_equal(d->cols, 28);
  assert_non_null(d->images);
  assert_non_null(d->labels);
  size_t n = (size_t)count * 28 * 28;
  float lo = 1, hi = 0;
  for (size_t i = 0; i < n; i++) {
    float v = d->images[i];
    assert_true(v >= 0.0f && v <= 1.0f);
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  assert_true(lo == 0.0f && hi == 1.0f);
  int32_t per_class[10] = {0};
  for (int32_t i = 0; i < count; i++) {
    assert_in_range(d->labels[i], 0, 9);
    per_class[d->labels[i]]++;
  }
  for (int c = 0; c < 10; c++) assert_int_equal(per_class[c], count / 10);
}

static void real_training_set_loads(void **state) {
  (void)state;
  rlx_dataset d;
  load_split("train", &d);
  check_split(&d, 60000);
  assert_int_equal(d.labels[0], 9); /* the first training image is an ankle boot */
  assert_int_equal(d.labels[1], 0);
  /* pixels are byte / 255 */
  for (size_t i = 0; i < 784; i++) {
    float b = d.images[i] * 255.0f;
    assert_float_equal(b, roundf(b), 1e-3);
  }
  rlx_dataset_free(&d);
  assert_int_equal(d.count, 0);
  assert_null(d.images);
  rlx_dataset_free(&d); /* a second free is harmless */
  rlx_dataset_free(NULL);
}

static void real_test_set_loads(void **state) {
  (void)state;
  rlx_dataset d;
  load_split("t10k", &d);
  check_split(&d, 10000);
  assert_int_equal(d.labels[0], 9);
  assert_int_equal(d.labels[1], 2);
  rlx_dataset_free(&d);
}

/* ---- small IDX files in a temporary directory ------------------------------- */

static void put_be32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)(v >> 24);
  p[1] = (unsigned char)(v >> 16);
  p[2] = (unsigned char)(v >> 8);
  p[3] = (unsigned char)v;
}

/* dir/name in a ring of buffers large enough for every path one test keeps. */
static const char *tmp_path(const char *name) {
  static char buf[64][320];
  static int next;
  char *p = buf[next++ % 64];
  snprintf(p, sizeof buf[0], "%s/%.255s", tmp_dir, name);
  return p;
}

static const char *write_file(const char *name, const unsigned char *bytes, size_t n) {
  const char *path = tmp_path(name);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(bytes, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
  return path;
}

static const char *write_gzip(const char *name, const unsigned char *bytes, size_t n) {
  const char *path = tmp_path(name);
  gzFile f = gzopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(gzwrite(f, bytes, (unsigned)n), (int)n);
  assert_int_equal(gzclose(f), Z_OK);
  return path;
}

/* An image file of count images rows x cols (pixel i = i % 256) and a
 * label file (label i = i % 10); returns the sizes written. */
#define SMALL_COUNT 5
#define SMALL_ROWS 3
#define SMALL_COLS 4
static unsigned char small_images[16 + SMALL_COUNT * SMALL_ROWS * SMALL_COLS];
static unsigned char small_labels[8 + SMALL_COUNT];

static void make_small(void) {
  put_be32(small_images, 0x803);
  put_be32(small_images + 4, SMALL_COUNT);
  put_be32(small_images + 8, SMALL_ROWS);
  put_be32(small_images + 12, SMALL_COLS);
  for (size_t i = 0; i < SMALL_COUNT * SMALL_ROWS * SMALL_COLS; i++) small_images[16 + i] = (unsigned char)(i * 37 % 256);
  put_be32(small_labels, 0x801);
  put_be32(small_labels + 4, SMALL_COUNT);
  for (int i = 0; i < SMALL_COUNT; i++) small_labels[8 + i] = (unsigned char)(i * 3 % 10);
}

static void check_small(const rlx_dataset *d) {
  assert_int_equal(d->count, SMALL_COUNT);
  assert_int_equal(d->rows, SMALL_ROWS);
  assert_int_equal(d->cols, SMALL_COLS);
  for (size_t i = 0; i < SMALL_COUNT * SMALL_ROWS * SMALL_COLS; i++)
    assert_float_equal(d->images[i], (float)small_images[16 + i] / 255.0f, 1e-7);
  for (int i = 0; i < SMALL_COUNT; i++) assert_int_equal(d->labels[i], small_labels[8 + i]);
}

static void small_files_round_trip_raw_and_gzip(void **state) {
  (void)state;
  make_small();
  rlx_dataset d;
  const char *img = write_file("img.idx", small_images, sizeof small_images);
  const char *lab = write_file("lab.idx", small_labels, sizeof small_labels);
  assert_int_equal(rlx_dataset_load(img, lab, &d), RLX_OK);
  check_small(&d);
  rlx_dataset_free(&d);
  const char *gimg = write_gzip("img.idx.gz", small_images, sizeof small_images);
  const char *glab = write_gzip("lab.idx.gz", small_labels, sizeof small_labels);
  assert_int_equal(rlx_dataset_load(gimg, glab, &d), RLX_OK);
  check_small(&d);
  rlx_dataset_free(&d);
  /* mixed: gzip images, raw labels */
  assert_int_equal(rlx_dataset_load(gimg, lab, &d), RLX_OK);
  check_small(&d);
  rlx_dataset_free(&d);
}

/* Loads and expects status, a message naming `names`, and a zeroed out. */
static void expect_error(const char *img, const char *lab, rlx_status want, const char *names, const char *phrase) {
  rlx_dataset d;
  memset(&d, 0x5a, sizeof d);
  rlx_status st = rlx_dataset_load(img, lab, &d);
  if (st != want || !strstr(rlx_last_error(), names) || (phrase && !strstr(rlx_last_error(), phrase)))
    print_message("got status %d, message: %s\n", (int)st, rlx_last_error());
  assert_int_equal(st, want);
  assert_non_null(strstr(rlx_last_error(), names));
  if (phrase) assert_non_null(strstr(rlx_last_error(), phrase));
  assert_int_equal(d.count, 0);
  assert_null(d.images);
  assert_null(d.labels);
  rlx_dataset_free(&d);
}

/* A copy of the small image file with a header field replaced. */
static const char *images_with(const char *name, size_t offset, uint32_t value) {
  unsigned char copy[sizeof small_images];
  memcpy(copy, small_images, sizeof copy);
  put_be32(copy + offset, value);
  return write_file(name, copy, sizeof copy);
}

static void corrupt_files_give_errors(void **state) {
  (void)state;
  make_small();
  const char *img = write_file("ok_img.idx", small_images, sizeof small_images);
  const char *lab = write_file("ok_lab.idx", small_labels, sizeof small_labels);

  const char *bad_magic = images_with("bad_magic.idx", 0, 0x12345678);
  expect_error(bad_magic, lab, RLX_ERR_INVALID_ARG, "bad_magic.idx", "magic");
  expect_error(lab, img, RLX_ERR_INVALID_ARG, "ok_lab.idx", "label file"); /* swapped */
  expect_error(img, img, RLX_ERR_INVALID_ARG, "ok_img.idx", "image file");

  const char *cut = write_file("cut.idx", small_images, sizeof small_images - 7);
  expect_error(cut, lab, RLX_ERR_INVALID_ARG, "cut.idx", "truncated");
  const char *cut_header = write_file("cut_header.idx", small_images, 10);
  expect_error(cut_header, lab, RLX_ERR_INVALID_ARG, "cut_header.idx", "truncated");
  const char *empty = write_file("empty.idx", small_images, 0);
  expect_error(empty, lab, RLX_ERR_INVALID_ARG, "empty.idx", "too short");
  const char *cut_labels = write_file("cut_lab.idx", small_labels, sizeof small_labels - 1);
  expect_error(img, cut_labels, RLX_ERR_INVALID_ARG, "cut_lab.idx", "truncated");

  const char *more = images_with("more.idx", 4, SMALL_COUNT + 1);
  expect_error(more, lab, RLX_ERR_SHAPE, "more.idx", "lab.idx");
  const char *zero = images_with("zero.idx", 4, 0);
  expect_error(zero, lab, RLX_ERR_INVALID_ARG, "zero.idx", NULL);
  const char *no_rows = images_with("no_rows.idx", 8, 0);
  expect_error(no_rows, lab, RLX_ERR_INVALID_ARG, "no_rows.idx", "size");
  const char *wide = images_with("wide.idx", 12, 1u << 20);
  expect_error(wide, lab, RLX_ERR_INVALID_ARG, "wide.idx", "size");

  unsigned char extra[sizeof small_images + 3];
  memcpy(extra, small_images, sizeof small_images);
  memset(extra + sizeof small_images, 7, 3);
  const char *trailing = write_file("trailing.idx", extra, sizeof extra);
  expect_error(trailing, lab, RLX_ERR_INVALID_ARG, "trailing.idx", "after");

  unsigned char bad_label[sizeof small_labels];
  memcpy(bad_label, small_labels, sizeof bad_label);
  bad_label[8 + 3] = 10;
  const char *lab10 = write_file("label10.idx", bad_label, sizeof bad_label);
  expect_error(img, lab10, RLX_ERR_INVALID_ARG, "label10.idx", "index 3");

  expect_error(tmp_path("missing.idx"), lab, RLX_ERR_NOT_FOUND, "missing.idx", NULL);
  expect_error(img, tmp_path("missing_lab.idx"), RLX_ERR_NOT_FOUND, "missing_lab.idx", NULL);
  expect_error(tmp_dir, lab, RLX_ERR_INVALID_ARG, tmp_dir, NULL); /* a directory */
}

static void broken_gzip_gives_errors(void **state) {
  (void)state;
  make_small();
  const char *lab = write_file("gz_lab.idx", small_labels, sizeof small_labels);
  /* compressed, then cut in the middle of the deflate stream */
  const char *gz = write_gzip("full.gz", small_images, sizeof small_images);
  FILE *f = fopen(gz, "rb");
  assert_non_null(f);
  unsigned char buf[256];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  assert_true(n > 20);
  const char *half = write_file("half.gz", buf, n / 2);
  expect_error(half, lab, RLX_ERR_INVALID_ARG, "half.gz", NULL);
  /* the gzip magic followed by garbage */
  unsigned char junk[64];
  for (size_t i = 0; i < sizeof junk; i++) junk[i] = (unsigned char)(i * 91 + 3);
  junk[0] = 0x1f;
  junk[1] = 0x8b;
  const char *garbage = write_file("garbage.gz", junk, sizeof junk);
  expect_error(garbage, lab, RLX_ERR_INVALID_ARG, "garbage.gz", NULL);
}

static void huge_counts_allocate_only_what_the_file_holds(void **state) {
  (void)state;
  make_small();
  const char *lab = write_file("huge_lab.idx", small_labels, sizeof small_labels);
  const char *huge = images_with("huge.idx", 4, 0x7fffffff);
  unsigned char labels_huge[sizeof small_labels];
  memcpy(labels_huge, small_labels, sizeof labels_huge);
  put_be32(labels_huge + 4, 0x7fffffff);
  const char *lab_huge = write_file("huge_lab2.idx", labels_huge, sizeof labels_huge);
  const char *beyond = images_with("beyond.idx", 4, 0x80000000u);

  if (!check_alloc_active()) skip();
  size_t live = check_alloc_live_bytes();
  check_alloc_reset_peak();
  expect_error(huge, lab, RLX_ERR_SHAPE, "huge.idx", NULL);         /* counts differ */
  expect_error(huge, lab_huge, RLX_ERR_INVALID_ARG, "huge.idx", "truncated");
  expect_error(beyond, lab, RLX_ERR_INVALID_ARG, "beyond.idx", NULL); /* over INT32_MAX */
  assert_true(check_alloc_peak_bytes() - live < (16u << 20)); /* not the 6.7 TB the header asks for */
  assert_int_equal(check_alloc_live_bytes(), live);
}

static void bad_arguments_are_refused(void **state) {
  (void)state;
  rlx_dataset d;
  assert_int_equal(rlx_dataset_load(NULL, "x", &d), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_dataset_load("x", NULL, &d), RLX_ERR_INVALID_ARG);
  assert_int_equal(rlx_dataset_load("x", "y", NULL), RLX_ERR_INVALID_ARG);
}

/* ---- the browser subsets (web/data, made by `make`) -------------------------- */

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The subset holds the first count/10 samples of each class of the split,
 * in file order, as the IDX bytes. */
static void check_subset(const char *path, const char *prefix, uint32_t want_count) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    print_message("%s is missing (built by `make`): skipped\n", path);
    skip();
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  assert_true(size > 24);
  unsigned char *buf = malloc((size_t)size);
  assert_non_null(buf);
  assert_int_equal(fread(buf, 1, (size_t)size, f), (size_t)size);
  fclose(f);
  assert_memory_equal(buf, "RLXD", 4);
  assert_int_equal(le32(buf + 4), 1);
  uint32_t count = le32(buf + 8), rows = le32(buf + 12), cols = le32(buf + 16);
  assert_int_equal(count, want_count);
  assert_int_equal(rows, 28);
  assert_int_equal(cols, 28);
  assert_int_equal(le32(buf + 20), 10);
  assert_int_equal((size_t)size, 24 + (size_t)count * (rows * cols + 1));

  rlx_dataset d;
  load_split(prefix, &d);
  const unsigned char *px = buf + 24, *lab = px + (size_t)count * 784;
  uint32_t taken[10] = {0}, k = 0;
  for (int32_t i = 0; i < d.count && k < count; i++) {
    int32_t c = d.labels[i];
    if (taken[c] == count / 10) continue;
    taken[c]++;
    assert_int_equal(lab[k], c);
    for (size_t j = 0; j < 784; j++)
      assert_int_equal(px[(size_t)k * 784 + j], (int)lrintf(d.images[(size_t)i * 784 + j] * 255.0f));
    k++;
  }
  assert_int_equal(k, count);
  rlx_dataset_free(&d);
  free(buf);
}

static void browser_subsets_round_trip(void **state) {
  (void)state;
  check_subset("web/data/fashion-mnist-train.bin", "train", 3000);
  check_subset("web/data/fashion-mnist-test.bin", "t10k", 1000);
  FILE *train = fopen("web/data/fashion-mnist-train.bin", "rb"), *test = fopen("web/data/fashion-mnist-test.bin", "rb");
  assert_non_null(train);
  assert_non_null(test);
  fseek(train, 0, SEEK_END);
  fseek(test, 0, SEEK_END);
  assert_true(ftell(train) + ftell(test) < 4000000); /* small enough to serve */
  fclose(train);
  fclose(test);
}

static int make_tmp_dir(void **state) {
  (void)state;
  return mkdtemp(tmp_dir) ? 0 : -1;
}

static int remove_tmp_dir(void **state) {
  (void)state;
  DIR *dir = opendir(tmp_dir);
  if (!dir) return -1;
  struct dirent *e;
  while ((e = readdir(dir)) != NULL)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) unlink(tmp_path(e->d_name));
  closedir(dir);
  return rmdir(tmp_dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(real_training_set_loads),
      cmocka_unit_test(real_test_set_loads),
      cmocka_unit_test(small_files_round_trip_raw_and_gzip),
      cmocka_unit_test(corrupt_files_give_errors),
      cmocka_unit_test(broken_gzip_gives_errors),
      cmocka_unit_test(huge_counts_allocate_only_what_the_file_holds),
      cmocka_unit_test(bad_arguments_are_refused),
      cmocka_unit_test(browser_subsets_round_trip),
  };
  return cmocka_run_group_tests(tests, make_tmp_dir, remove_tmp_dir);
}
