/* fuzz_check.h - what the fuzz targets share: CHECK (a failed property
 * aborts with the library's last message, so libFuzzer keeps the input) and
 * a strict UTF-8 test for text the library hands out. */
#ifndef RLX_FUZZ_CHECK_H
#define RLX_FUZZ_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "rlx.h"

#define CHECK(c)                                                                  \
  do {                                                                            \
    if (!(c)) {                                                                   \
      fprintf(stderr, "%s:%d: check failed: %s (%s)\n", __FILE__, __LINE__, #c, \
              rlx_last_error());                                                  \
      abort();                                                                    \
    }                                                                             \
  } while (0)

/* Strictly well-formed UTF-8 (no overlongs, surrogates or values past U+10FFFF)? */
static inline int valid_utf8(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n;) {
    uint8_t c = s[i];
    size_t L = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!L || i + L > n) return 0;
    uint8_t lo = c == 0xE0 ? 0xA0 : c == 0xF0 ? 0x90 : 0x80, hi = c == 0xED ? 0x9F : c == 0xF4 ? 0x8F : 0xBF;
    for (size_t k = 1; k < L; k++)
      if (s[i + k] < (k == 1 ? lo : 0x80) || s[i + k] > (k == 1 ? hi : 0xBF)) return 0;
    i += L;
  }
  return 1;
}

#endif
