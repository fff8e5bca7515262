/* fuzz_inflate.c - libFuzzer target: src/core/inflate.c against zlib.
 * Byte 0 picks the mode.  Even: the rest is a raw DEFLATE stream decoded
 * by both into a buffer of a capacity from byte 1; whatever zlib decodes
 * completely we must decode to the same bytes, and whatever we accept
 * zlib must have decoded the same way as far as it went (zlib refuses a
 * few streams we accept: incomplete codes, over 286 literal codes).  Odd:
 * the rest is text that zlib compresses (level and strategy from byte 1,
 * raw or gzip) and we must give back exactly, and refuse one byte short. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../src/core/inflate.h"

#define CAP_MAX (1u << 18)

static void fail(const char *what, size_t a, size_t b) {
  fprintf(stderr, "inflate differs from zlib: %s (%zu, %zu)\n", what, a, b);
  abort();
}

static void stream_mode(const uint8_t *src, size_t n, size_t cap) {
  unsigned char *ours = malloc(cap ? cap : 1), *theirs = malloc(cap + 1);
  size_t got = rlx_inflate(src, n, cap ? ours : NULL, cap);
  z_stream z;
  memset(&z, 0, sizeof z);
  if (inflateInit2(&z, -15) != Z_OK) abort();
  z.next_in = (Bytef *)src;
  z.avail_in = (uInt)n;
  z.next_out = theirs;
  z.avail_out = (uInt)cap;
  int zr = inflate(&z, Z_FINISH);
  size_t zlen = z.total_out;
  inflateEnd(&z);
  if (zr == Z_STREAM_END) {
    if (got != zlen) fail("zlib decoded the stream, we did not (or to another length)", got, zlen);
    if (zlen && memcmp(ours, theirs, zlen) != 0) fail("different bytes", got, zlen);
  } else if (got != (size_t)-1) {
    if (zlen > got || (zlen && memcmp(ours, theirs, zlen) != 0)) fail("we decoded what zlib read differently", got, zlen);
  }
  free(ours);
  free(theirs);
}

static void text_mode(const uint8_t *text, size_t n, uint8_t how) {
  int level = how % 10, strategy = (how / 10) % 5, gzip = how >= 128;
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, level, Z_DEFLATED, gzip ? 31 : -15, 8, strategy) != Z_OK) abort();
  uLong bound = deflateBound(&z, (uLong)n) + 32;
  unsigned char *packed = malloc(bound), *out = malloc(n + 1);
  z.next_in = (Bytef *)text;
  z.avail_in = (uInt)n;
  z.next_out = packed;
  z.avail_out = (uInt)bound;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END) abort();
  size_t len = z.total_out;
  deflateEnd(&z);
  if (gzip) {
    /* zlib writes no name or time with default headers: the member we read. */
    if (rlx_gunzip(packed, len, n ? out : NULL, n) != 0) fail("gzip member refused", len, n);
    if (n && memcmp(out, text, n) != 0) fail("gzip member decoded wrongly", len, n);
    if (n && rlx_gunzip(packed, len, out, n - 1) == 0) fail("gzip member accepted with a wrong size", len, n);
  } else {
    size_t got = rlx_inflate(packed, len, out, n);
    if (got != n) fail("raw stream refused", got, n);
    if (n && memcmp(out, text, n) != 0) fail("raw stream decoded wrongly", len, n);
    if (n && rlx_inflate(packed, len, out, n - 1) != (size_t)-1) fail("raw stream fit in one byte less", len, n);
  }
  free(packed);
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  if (data[0] & 1) {
    text_mode(data + 2, size - 2, data[1]);
  } else {
    size_t cap = data[1] == 255 ? CAP_MAX : (size_t)data[1] * 97 % 4096;
    stream_mode(data + 2, size - 2, cap);
  }
  return 0;
}
