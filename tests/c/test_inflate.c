/* test_inflate.c - the DEFLATE/gzip decoder (src/core/inflate.c) that
 * unpacks the embedded shader sources, against zlib's encoder: texts of
 * every kind (empty, random bytes = stored blocks, repetitive text =
 * fixed and dynamic Huffman blocks, long matches at the far end of the
 * window) at every level and strategy must come back byte for byte; a
 * truncated member, a wrong size or CRC, header flags it does not read and
 * random bit flips must be refused (or, for a flip the checks cannot see,
 * give the original text) without reading or writing out of bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "../../src/core/inflate.h"

static uint32_t rng = 2463534242u;
static uint32_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 17;
  rng ^= rng << 5;
  return rng;
}

/* A gzip member of src (zlib, windowBits 31 = gzip wrapper, no name). */
static unsigned char *gzip_of(const unsigned char *src, size_t n, int level, int strategy, size_t *out_len) {
  z_stream z;
  memset(&z, 0, sizeof z);
  assert_int_equal(deflateInit2(&z, level, Z_DEFLATED, 31, 9, strategy), Z_OK);
  size_t cap = deflateBound(&z, (uLong)n) + 64;
  unsigned char *out = malloc(cap);
  assert_non_null(out);
  z.next_in = (unsigned char *)src;
  z.avail_in = (uInt)n;
  z.next_out = out;
  z.avail_out = (uInt)cap;
  assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
  *out_len = z.total_out;
  deflateEnd(&z);
  return out;
}

/* Texts: kind 0 random bytes, 1 shader-like text, 2 a few symbols, 3 one
 * block repeated 32 KB apart (the farthest distance). */
static unsigned char *make_text(int kind, size_t n) {
  static const char *words[] = {"fn ", "let ", "var ", "u32", "f32", "vec4<f32>", "(", ")", "{\n", "}\n", " = ", ";",
                                "@binding(", "workgroup", "return ", "+", "*", "0u", "1.0", "i", "j"};
  unsigned char *t = malloc(n + 1);
  assert_non_null(t);
  for (size_t i = 0; i < n;) {
    if (kind == 0) {
      t[i++] = (unsigned char)next_rand();
    } else if (kind == 1) {
      const char *w = words[next_rand() % (sizeof words / sizeof *words)];
      for (; *w && i < n; w++) t[i++] = (unsigned char)*w;
    } else if (kind == 2) {
      t[i++] = (unsigned char)("ab\n"[next_rand() % 3]);
    } else {
      t[i] = i < 1000 ? (unsigned char)next_rand() : i >= 32768 && i < 33768 ? t[i - 32768] : (unsigned char)(i % 7);
      i++;
    }
  }
  return t;
}

static void test_round_trip(void **state) {
  (void)state;
  static const size_t sizes[] = {0, 1, 7, 300, 5000, 70000};
  static const int levels[] = {0, 1, 6, 9};
  static const int strategies[] = {Z_DEFAULT_STRATEGY, Z_FIXED, Z_HUFFMAN_ONLY, Z_RLE, Z_FILTERED};
  int runs = 0;
  for (int kind = 0; kind < 4; kind++)
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++) {
      size_t n = sizes[si];
      unsigned char *text = make_text(kind, n);
      for (size_t li = 0; li < sizeof levels / sizeof *levels; li++)
        for (size_t st = 0; st < sizeof strategies / sizeof *strategies; st++) {
          size_t gz_len;
          unsigned char *gz = gzip_of(text, n, levels[li], strategies[st], &gz_len);
          unsigned char *out = malloc(n + 1);
          memset(out, 0xAB, n + 1);
          if (rlx_gunzip(gz, gz_len, out, n) != 0 || memcmp(out, text, n) != 0)
            fail_msg("kind %d, %zu bytes, level %d, strategy %d: not decoded", kind, n, levels[li], strategies[st]);
          assert_int_equal(out[n], 0xAB); /* nothing past the end */
          /* The raw stream alone, with room to spare. */
          unsigned char *big = malloc(n + 100);
          assert_int_equal(rlx_inflate(gz + 10, gz_len - 18, big, n + 100), n);
          assert_memory_equal(big, text, n);
          free(big);
          free(out);
          free(gz);
          runs++;
        }
      free(text);
    }
  assert_int_equal(runs, 4 * 6 * 4 * 5);
}

static void test_crc32(void **state) {
  (void)state;
  unsigned char *t = make_text(0, 4096);
  for (size_t n = 0; n <= 4096; n += 173) assert_int_equal(rlx_crc32(t, n), crc32(0, t, (uInt)n));
  assert_int_equal(rlx_crc32((const unsigned char *)"123456789", 9), 0xCBF43926ul); /* the check value */
  free(t);
}

static void test_refuses_bad_members(void **state) {
  (void)state;
  size_t n = 20000, gz_len;
  unsigned char *text = make_text(1, n);
  unsigned char *gz = gzip_of(text, n, 9, Z_DEFAULT_STRATEGY, &gz_len);
  unsigned char *out = malloc(n);
  assert_int_equal(rlx_gunzip(gz, gz_len, out, n), 0);
  /* Every truncation, including inside the header and the trailer. */
  for (size_t len = 0; len < gz_len; len++) {
    unsigned char *cut = malloc(len ? len : 1);
    memcpy(cut, gz, len);
    if (rlx_gunzip(cut, len, out, n) == 0) fail_msg("a member cut to %zu of %zu bytes was accepted", len, gz_len);
    free(cut);
  }
  /* Wrong expected size, either way. */
  assert_int_equal(rlx_gunzip(gz, gz_len, out, n - 1), -1);
  unsigned char *more = malloc(n + 1);
  assert_int_equal(rlx_gunzip(gz, gz_len, more, n + 1), -1);
  free(more);
  /* Header: magic, method, and flags (FNAME etc.) it does not read. */
  for (int byte = 0; byte < 4; byte++) {
    gz[byte] ^= byte == 3 ? 0x08 : 0x01;
    assert_int_equal(rlx_gunzip(gz, gz_len, out, n), -1);
    gz[byte] ^= byte == 3 ? 0x08 : 0x01;
  }
  /* CRC of the trailer. */
  gz[gz_len - 8] ^= 0x10;
  assert_int_equal(rlx_gunzip(gz, gz_len, out, n), -1);
  gz[gz_len - 8] ^= 0x10;
  /* Output too small for the raw stream. */
  assert_true(rlx_inflate(gz + 10, gz_len - 18, out, n / 2) == (size_t)-1);
  /* NULL input. */
  assert_int_equal(rlx_gunzip(NULL, 0, out, n), -1);
  assert_true(rlx_inflate(NULL, 0, out, n) == (size_t)-1);
  /* Bit flips in the stream: refused, or (when the CRC cannot tell) the text. */
  int refused = 0;
  for (int k = 0; k < 3000; k++) {
    size_t at = 10 + next_rand() % (gz_len - 18);
    unsigned char bit = (unsigned char)(1u << (next_rand() % 8));
    gz[at] ^= bit;
    if (rlx_gunzip(gz, gz_len, out, n) != 0) refused++;
    else assert_memory_equal(out, text, n);
    gz[at] ^= bit;
  }
  assert_true(refused > 2900);
  /* A reserved block type (3) and a stored block whose length check fails. */
  const unsigned char reserved[] = {0x07, 0x00};
  assert_true(rlx_inflate(reserved, sizeof reserved, out, n) == (size_t)-1);
  const unsigned char stored_bad[] = {0x01, 0x03, 0x00, 0xfc, 0xfe, 'a', 'b', 'c'};
  assert_true(rlx_inflate(stored_bad, sizeof stored_bad, out, n) == (size_t)-1);
  const unsigned char stored_ok[] = {0x01, 0x03, 0x00, 0xfc, 0xff, 'a', 'b', 'c'};
  assert_true(rlx_inflate(stored_ok, sizeof stored_ok, out, n) == 3);
  assert_memory_equal(out, "abc", 3);
  free(out);
  free(gz);
  free(text);
}

/* Empty output: a stored block of length 0 into a NULL buffer of capacity
 * 0, and NULL input, are fine (no pointer arithmetic or memcpy on NULL:
 * UBSan checks). */
static void test_null_buffers(void **state) {
  (void)state;
  const unsigned char empty_stored[] = {0x01, 0x00, 0x00, 0xff, 0xff};
  assert_true(rlx_inflate(empty_stored, sizeof empty_stored, NULL, 0) == 0);
  const unsigned char one_byte[] = {0x01, 0x01, 0x00, 0xfe, 0xff, 'a'};
  assert_true(rlx_inflate(one_byte, sizeof one_byte, NULL, 0) == (size_t)-1);
  assert_true(rlx_inflate(NULL, 0, NULL, 0) == (size_t)-1);
  assert_true(rlx_inflate(NULL, 5, NULL, 0) == (size_t)-1);
  unsigned char out[4];
  assert_true(rlx_inflate(empty_stored, sizeof empty_stored, out, 0) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_round_trip),
      cmocka_unit_test(test_crc32),
      cmocka_unit_test(test_refuses_bad_members),
      cmocka_unit_test(test_null_buffers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
