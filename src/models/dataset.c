/* dataset.c - reads a Fashion-MNIST style pair of IDX files (an image file,
 * magic 0x00000803: count x rows x cols unsigned bytes, and a label file,
 * magic 0x00000801: count unsigned bytes), raw or gzip-compressed (detected
 * by the 1f 8b magic; gzip needs zlib, i.e. RLX_HAVE_ZLIB, which the wasm
 * build lacks).  Every header field is checked, counts must agree, labels
 * must be class ids 0..9, and truncated or over-long files are refused with
 * a message naming the file.  Pixels are scaled to [0, 1].  The buffers grow
 * with the data actually read, so a header announcing a huge count cannot
 * make us allocate more than about twice what the file really holds. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "rlx_models.h"
#include "../core/core.h"

#ifdef RLX_HAVE_ZLIB
#include <zlib.h>
#endif

/* The reason of a failed fopen/fread.  errno is thread-local in wasi-libc,
 * which clang 14 cannot compile with bulk memory but without atomics, so the
 * wasm build says less. */
#if defined(__wasm__)
#define SYSTEM_REASON() "missing or unreadable"
#else
#define SYSTEM_REASON() strerror(errno)
#endif

#define IDX_MAGIC_LABELS 0x00000801u
#define IDX_MAGIC_IMAGES 0x00000803u
#define IDX_MAX_SIDE 65535u             /* rows and cols */
#define IDX_MAX_SAMPLE (1u << 24)       /* rows * cols */
#define IDX_NUM_CLASSES 10
#define IDX_CHUNK 16384                 /* bytes read per call */
#define IDX_FIRST_CAPACITY (1u << 20)   /* elements before the first growth */

/* One open IDX file, raw (stdio) or gzip (zlib). */
typedef struct {
  const char *path;
  const char *what; /* "images" or "labels", for messages */
  FILE *file;
#ifdef RLX_HAVE_ZLIB
  gzFile gz;
#endif
} idx_file;

static rlx_status idx_open(idx_file *r, const char *path, const char *what) {
  memset(r, 0, sizeof *r);
  r->path = path;
  r->what = what;
  r->file = fopen(path, "rb");
  if (!r->file)
    return rlx_error(RLX_ERR_NOT_FOUND, "cannot open %s file '%s': %s", what, path, SYSTEM_REASON());
  unsigned char head[2] = {0, 0};
  size_t got = fread(head, 1, 2, r->file);
  if (got == 2 && head[0] == 0x1f && head[1] == 0x8b) {
    fclose(r->file);
    r->file = NULL;
#ifdef RLX_HAVE_ZLIB
    r->gz = gzopen(path, "rb");
    if (!r->gz) return rlx_error(RLX_ERR_NOT_FOUND, "cannot open %s file '%s' with zlib", what, path);
    gzbuffer(r->gz, 1u << 17);
    return RLX_OK;
#else
    return rlx_error(RLX_ERR_UNSUPPORTED,
                     "%s file '%s' is gzip-compressed, but this build has no zlib (wasm): decompress it first",
                     what, path);
#endif
  }
  rewind(r->file);
  return RLX_OK;
}

static void idx_close(idx_file *r) {
  if (r->file) fclose(r->file);
#ifdef RLX_HAVE_ZLIB
  if (r->gz) gzclose(r->gz);
#endif
  memset(r, 0, sizeof *r);
}

/* Reads up to n bytes; *got is how many arrived (fewer at the end of file). */
static rlx_status idx_read(idx_file *r, void *buf, size_t n, size_t *got) {
  *got = 0;
#ifdef RLX_HAVE_ZLIB
  if (r->gz) {
    while (*got < n) {
      size_t want = n - *got;
      if (want > (1u << 30)) want = 1u << 30;
      int k = gzread(r->gz, (unsigned char *)buf + *got, (unsigned)want);
      if (k < 0) {
        int code = 0;
        const char *msg = gzerror(r->gz, &code);
        return rlx_error(RLX_ERR_INVALID_ARG, "%s file '%s' is not valid gzip: %s", r->what, r->path,
                         msg ? msg : "read error");
      }
      if (k == 0) break;
      *got += (size_t)k;
    }
    return RLX_OK;
  }
#endif
  *got = fread(buf, 1, n, r->file);
  if (*got < n && ferror(r->file))
    return rlx_error(RLX_ERR_INVALID_ARG, "cannot read %s file '%s': %s", r->what, r->path, SYSTEM_REASON());
  return RLX_OK;
}

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Reads the header: magic, then n_dims big-endian u32 dims. */
static rlx_status idx_header(idx_file *r, uint32_t magic, int n_dims, uint32_t *dims) {
  unsigned char buf[16];
  size_t want = 4 + 4 * (size_t)n_dims, got;
  rlx_status st = idx_read(r, buf, want, &got);
  if (st != RLX_OK) return st;
  if (got < 4)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s file '%s' is too short for an IDX header (%zu bytes)", r->what,
                     r->path, got);
  uint32_t m = be32(buf);
  if (m != magic) {
    if (m == IDX_MAGIC_LABELS || m == IDX_MAGIC_IMAGES)
      return rlx_error(RLX_ERR_INVALID_ARG, "%s file '%s' is an IDX %s file (magic 0x%08x), not an %s file",
                       r->what, r->path, m == IDX_MAGIC_LABELS ? "label" : "image", (unsigned)m, r->what);
    return rlx_error(RLX_ERR_INVALID_ARG,
                     "%s file '%s' has bad magic 0x%08x (want 0x%08x: unsigned bytes, %d dims); "
                     "is it a decompressed IDX file?",
                     r->what, r->path, (unsigned)m, (unsigned)magic, n_dims);
  }
  if (got < want)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s file '%s' is truncated inside its header (%zu of %zu bytes)", r->what,
                     r->path, got, want);
  for (int i = 0; i < n_dims; i++) dims[i] = be32(buf + 4 + 4 * i);
  if (dims[0] == 0 || dims[0] > (uint32_t)INT32_MAX)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s file '%s' announces %u samples (want 1 to %d)", r->what, r->path,
                     (unsigned)dims[0], INT32_MAX);
  return RLX_OK;
}

/* Reads n bytes of body in chunks, handing each chunk to sink; grows
 * nothing itself.  Refuses truncation and trailing bytes. */
typedef rlx_status (*idx_sink)(void *ctx, const unsigned char *bytes, size_t offset, size_t n);

static rlx_status idx_body(idx_file *r, size_t n, const char *unit, idx_sink sink, void *ctx) {
  unsigned char chunk[IDX_CHUNK];
  size_t done = 0;
  while (done < n) {
    size_t want = n - done < sizeof chunk ? n - done : sizeof chunk, got;
    rlx_status st = idx_read(r, chunk, want, &got);
    if (st != RLX_OK) return st;
    if (got > 0) {
      st = sink(ctx, chunk, done, got);
      if (st != RLX_OK) return st;
      done += got;
    }
    if (got < want)
      return rlx_error(RLX_ERR_INVALID_ARG,
                       "%s file '%s' is truncated: its header announces %zu bytes of %s but only %zu follow",
                       r->what, r->path, n, unit, done);
  }
  size_t extra;
  rlx_status st = idx_read(r, chunk, 1, &extra);
  if (st != RLX_OK) return st;
  if (extra)
    return rlx_error(RLX_ERR_INVALID_ARG, "%s file '%s' has bytes after the %zu bytes of %s its header announces",
                     r->what, r->path, n, unit);
  return RLX_OK;
}

/* A float or int32 array that grows with the data read, up to its target. */
typedef struct {
  void *data;
  size_t cap, target, elem; /* in elements; elem = element size */
} grow_buf;

static rlx_status grow_to(grow_buf *b, size_t need) {
  if (need <= b->cap) return RLX_OK;
  size_t cap = b->cap ? b->cap : IDX_FIRST_CAPACITY;
  while (cap < need) cap = cap > b->target / 2 ? b->target : cap * 2;
  if (cap > b->target) cap = b->target;
  void *p = rlx_realloc(b->data, b->cap * b->elem, cap * b->elem);
  if (!p) return rlx_error(RLX_ERR_NO_MEMORY, "out of memory reading a dataset (%zu bytes)", cap * b->elem);
  b->data = p;
  b->cap = cap;
  return RLX_OK;
}

static rlx_status pixel_sink(void *ctx, const unsigned char *bytes, size_t offset, size_t n) {
  grow_buf *b = ctx;
  rlx_status st = grow_to(b, offset + n);
  if (st != RLX_OK) return st;
  float *out = (float *)b->data + offset;
  for (size_t i = 0; i < n; i++) out[i] = (float)bytes[i] / 255.0f; /* exact for 0 and 255 */
  return RLX_OK;
}

typedef struct {
  grow_buf buf;
  const idx_file *file;
} label_ctx;

static rlx_status label_sink(void *ctx, const unsigned char *bytes, size_t offset, size_t n) {
  label_ctx *c = ctx;
  rlx_status st = grow_to(&c->buf, offset + n);
  if (st != RLX_OK) return st;
  int32_t *out = (int32_t *)c->buf.data + offset;
  for (size_t i = 0; i < n; i++) {
    if (bytes[i] >= IDX_NUM_CLASSES)
      return rlx_error(RLX_ERR_INVALID_ARG, "labels file '%s': label %u at index %zu is not a class id 0..%d",
                       c->file->path, (unsigned)bytes[i], offset + i, IDX_NUM_CLASSES - 1);
    out[i] = bytes[i];
  }
  return RLX_OK;
}

static rlx_status load(idx_file *img, idx_file *lab, const char *images_path, const char *labels_path,
                       rlx_dataset *out, grow_buf *pixels, label_ctx *labels) {
  uint32_t idims[3], ldims[1];
  rlx_status st = idx_open(img, images_path, "images");
  if (st == RLX_OK) st = idx_header(img, IDX_MAGIC_IMAGES, 3, idims);
  if (st != RLX_OK) return st;
  if (idims[1] == 0 || idims[2] == 0 || idims[1] > IDX_MAX_SIDE || idims[2] > IDX_MAX_SIDE ||
      (uint64_t)idims[1] * idims[2] > IDX_MAX_SAMPLE)
    return rlx_error(RLX_ERR_INVALID_ARG, "images file '%s' has unusable image size %ux%u", images_path,
                     (unsigned)idims[1], (unsigned)idims[2]);
  size_t n_pixels;
  if (!rlx_mul_size((size_t)idims[0], (size_t)idims[1] * idims[2], &n_pixels) ||
      !rlx_mul_size(n_pixels, sizeof(float), &(size_t){0}))
    return rlx_error(RLX_ERR_INVALID_ARG, "images file '%s' announces %u images of %ux%u: too many for memory",
                     images_path, (unsigned)idims[0], (unsigned)idims[1], (unsigned)idims[2]);

  st = idx_open(lab, labels_path, "labels");
  if (st == RLX_OK) st = idx_header(lab, IDX_MAGIC_LABELS, 1, ldims);
  if (st != RLX_OK) return st;
  if (ldims[0] != idims[0])
    return rlx_error(RLX_ERR_SHAPE, "images file '%s' holds %u images but labels file '%s' holds %u labels",
                     images_path, (unsigned)idims[0], labels_path, (unsigned)ldims[0]);

  pixels->target = n_pixels;
  st = idx_body(img, n_pixels, "pixels", pixel_sink, pixels);
  if (st != RLX_OK) return st;
  labels->buf.target = ldims[0];
  labels->file = lab;
  st = idx_body(lab, ldims[0], "labels", label_sink, labels);
  if (st != RLX_OK) return st;

  out->count = (int32_t)idims[0];
  out->rows = (int32_t)idims[1];
  out->cols = (int32_t)idims[2];
  out->images = pixels->data;
  out->labels = labels->buf.data;
  return RLX_OK;
}

rlx_status rlx_dataset_load(const char *images_path, const char *labels_path, rlx_dataset *out) {
  if (!out) return rlx_error(RLX_ERR_INVALID_ARG, "rlx_dataset_load: out is NULL");
  memset(out, 0, sizeof *out);
  if (!images_path || !labels_path)
    return rlx_error(RLX_ERR_INVALID_ARG, "rlx_dataset_load: the images and labels paths are required");
  idx_file img, lab;
  memset(&img, 0, sizeof img);
  memset(&lab, 0, sizeof lab);
  grow_buf pixels = {NULL, 0, 0, sizeof(float)};
  label_ctx labels = {{NULL, 0, 0, sizeof(int32_t)}, NULL};
  rlx_status st = load(&img, &lab, images_path, labels_path, out, &pixels, &labels);
  idx_close(&img);
  idx_close(&lab);
  if (st != RLX_OK) {
    rlx_free(pixels.data, pixels.cap * pixels.elem);
    rlx_free(labels.buf.data, labels.buf.cap * labels.buf.elem);
    memset(out, 0, sizeof *out);
  }
  return st;
}

void rlx_dataset_free(rlx_dataset *d) {
  if (!d) return;
  if (d->count > 0) {
    size_t n = (size_t)d->count * (size_t)d->rows * (size_t)d->cols;
    rlx_free(d->images, n * sizeof(float));
    rlx_free(d->labels, (size_t)d->count * sizeof(int32_t));
  }
  memset(d, 0, sizeof *d);
}
