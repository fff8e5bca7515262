/* unicode_tables.h - Unicode category classes for the BPE pre-tokenizers
 * (generated data in unicode_tables.c, tools/gen_unicode_tables.py). */
#ifndef RLX_UNICODE_TABLES_H
#define RLX_UNICODE_TABLES_H

#include <stdint.h>

/* Class bits (one per code point). */
enum {
  RLX_UC_UNDEFINED = 1,  /* Cn */
  RLX_UC_NUMBER = 2,     /* N* */
  RLX_UC_LETTER = 4,     /* L* */
  RLX_UC_SEPARATOR = 8,  /* Z* */
  RLX_UC_MARK = 16,      /* M* */
  RLX_UC_PUNCT = 32,     /* P* */
  RLX_UC_SYMBOL = 64,    /* S* */
  RLX_UC_CONTROL = 128   /* Cc Cf Co Cs */
};

extern const char rlx_uc_version[];
extern const uint32_t rlx_uc_count;
extern const uint32_t rlx_uc_starts[];
extern const uint8_t rlx_uc_classes[];

#endif
