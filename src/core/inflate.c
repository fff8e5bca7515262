/* inflate.c - DEFLATE decoder (stored, fixed and dynamic Huffman blocks)
 * and the gzip member check around it; see inflate.h.  Canonical Huffman
 * codes are decoded a bit at a time from per-length counts, as in zlib's
 * reference decoder "puff": slow per bit but tiny, and the embedded shader
 * text (about 100 KB) is unpacked once. */
#include "inflate.h"

#include <stdint.h>
#include <string.h>

#define MAX_BITS 15
#define MAX_LIT 288
#define MAX_DIST 30

typedef struct {
  const unsigned char *src, *end;
  unsigned char *dst;
  size_t len, cap;
  uint32_t bits;
  int nbits;
  int failed; /* ran past the input */
} reader;

typedef struct {
  uint16_t count[MAX_BITS + 1]; /* codes of each length */
  uint16_t symbol[MAX_LIT];     /* symbols ordered by code */
} huffman;

static uint32_t get_bits(reader *r, int n) {
  while (r->nbits < n) {
    if (r->src == r->end) {
      r->failed = 1;
      return 0;
    }
    r->bits |= (uint32_t)*r->src++ << r->nbits;
    r->nbits += 8;
  }
  uint32_t v = r->bits & ((1u << n) - 1u);
  r->bits >>= n;
  r->nbits -= n;
  return v;
}

/* Builds the decoding table from n code lengths; 0 on success, -1 when the
 * lengths over-subscribe the code space (incomplete codes are accepted: an
 * unused code then fails in decode). */
static int build(huffman *h, const unsigned char *length, int n) {
  uint16_t offs[MAX_BITS + 1];
  memset(h->count, 0, sizeof h->count);
  for (int s = 0; s < n; s++) h->count[length[s]]++;
  int left = 1;
  for (int len = 1; len <= MAX_BITS; len++) {
    left = 2 * left - h->count[len];
    if (left < 0) return -1;
  }
  offs[1] = 0;
  for (int len = 1; len < MAX_BITS; len++) offs[len + 1] = (uint16_t)(offs[len] + h->count[len]);
  for (int s = 0; s < n; s++)
    if (length[s]) h->symbol[offs[length[s]]++] = (uint16_t)s;
  return 0;
}

/* The next symbol, or -1 for a code the table does not have. */
static int decode(reader *r, const huffman *h) {
  int code = 0, first = 0, index = 0;
  for (int len = 1; len <= MAX_BITS; len++) {
    code |= (int)get_bits(r, 1);
    int count = h->count[len];
    if (code - count < first) return h->symbol[index + (code - first)];
    index += count;
    first = (first + count) << 1;
    code <<= 1;
  }
  return -1;
}

static const uint16_t len_base[29] = {3,  4,  5,  6,  7,  8,  9,  10, 11,  13,  15,  17,  19,  23, 27,
                                      31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,    65,    97,    129,
                                       193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* Literals and length/distance pairs until the end-of-block symbol. */
static int codes(reader *r, const huffman *lit, const huffman *dist) {
  for (;;) {
    int sym = decode(r, lit);
    if (sym < 0 || r->failed) return -1;
    if (sym < 256) {
      if (r->len == r->cap) return -1;
      r->dst[r->len++] = (unsigned char)sym;
    } else if (sym == 256) {
      return 0;
    } else {
      sym -= 257;
      if (sym >= 29) return -1;
      size_t n = len_base[sym] + get_bits(r, len_extra[sym]);
      int d = decode(r, dist);
      if (d < 0 || d >= 30 || r->failed) return -1;
      size_t back = dist_base[d] + get_bits(r, dist_extra[d]);
      if (r->failed || back > r->len || n > r->cap - r->len) return -1;
      for (; n > 0; n--, r->len++) r->dst[r->len] = r->dst[r->len - back];
    }
  }
}

static int stored(reader *r) {
  r->bits = 0; /* to a byte boundary; whole bytes still buffered go back */
  r->src -= r->nbits / 8;
  r->nbits = 0;
  if (r->end - r->src < 4) return -1;
  size_t n = (size_t)r->src[0] | (size_t)r->src[1] << 8;
  size_t check = (size_t)r->src[2] | (size_t)r->src[3] << 8;
  r->src += 4;
  if (n != (~check & 0xffffu) || (size_t)(r->end - r->src) < n || n > r->cap - r->len) return -1;
  if (n) memcpy(r->dst + r->len, r->src, n); /* dst may be NULL (cap 0) */
  r->src += n;
  r->len += n;
  return 0;
}

static int fixed(reader *r) {
  unsigned char length[MAX_LIT];
  huffman lit, dist;
  int s = 0;
  for (; s < 144; s++) length[s] = 8;
  for (; s < 256; s++) length[s] = 9;
  for (; s < 280; s++) length[s] = 7;
  for (; s < MAX_LIT; s++) length[s] = 8;
  build(&lit, length, MAX_LIT);
  for (s = 0; s < MAX_DIST; s++) length[s] = 5;
  build(&dist, length, MAX_DIST);
  return codes(r, &lit, &dist);
}

static int dynamic(reader *r) {
  static const uint8_t order[19] = {16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15};
  unsigned char length[MAX_LIT + MAX_DIST];
  huffman lencode, lit, dist;
  int nlit = (int)get_bits(r, 5) + 257, ndist = (int)get_bits(r, 5) + 1, ncode = (int)get_bits(r, 4) + 4;
  if (r->failed || nlit > MAX_LIT || ndist > MAX_DIST) return -1;
  memset(length, 0, 19);
  for (int i = 0; i < ncode; i++) length[order[i]] = (unsigned char)get_bits(r, 3);
  if (r->failed || build(&lencode, length, 19) != 0) return -1;
  for (int i = 0; i < nlit + ndist;) {
    int sym = decode(r, &lencode), rep, value = 0;
    if (sym < 0 || r->failed) return -1;
    if (sym < 16) {
      length[i++] = (unsigned char)sym;
      continue;
    }
    if (sym == 16) {
      if (i == 0) return -1;
      value = length[i - 1];
      rep = 3 + (int)get_bits(r, 2);
    } else if (sym == 17) {
      rep = 3 + (int)get_bits(r, 3);
    } else {
      rep = 11 + (int)get_bits(r, 7);
    }
    if (r->failed || i + rep > nlit + ndist) return -1;
    while (rep--) length[i++] = (unsigned char)value;
  }
  if (length[256] == 0) return -1; /* no end-of-block code */
  if (build(&lit, length, nlit) != 0 || build(&dist, length + nlit, ndist) != 0) return -1;
  return codes(r, &lit, &dist);
}

size_t rlx_inflate(const unsigned char *src, size_t src_len, unsigned char *dst, size_t cap) {
  if (!src || (!dst && cap)) return (size_t)-1;
  reader r = {src, src + src_len, dst, 0, cap, 0, 0, 0}; /* src + src_len only once src is known */
  int last;
  do {
    last = (int)get_bits(&r, 1);
    int type = (int)get_bits(&r, 2), st;
    if (r.failed) return (size_t)-1;
    if (type == 0) st = stored(&r);
    else if (type == 1) st = fixed(&r);
    else if (type == 2) st = dynamic(&r);
    else st = -1;
    if (st != 0 || r.failed) return (size_t)-1;
  } while (!last);
  return r.len;
}

unsigned long rlx_crc32(const unsigned char *p, size_t n) {
  uint32_t crc = 0xffffffffu;
  for (size_t i = 0; i < n; i++) {
    crc ^= p[i];
    for (int k = 0; k < 8; k++) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

static uint32_t le32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int rlx_gunzip(const unsigned char *gz, size_t gz_len, unsigned char *dst, size_t dst_len) {
  /* 10-byte header (magic, method 8 = deflate, flags 0), stream, CRC-32, size. */
  if (!gz || gz_len < 18 || gz[0] != 0x1f || gz[1] != 0x8b || gz[2] != 8 || gz[3] != 0) return -1;
  const unsigned char *tail = gz + gz_len - 8;
  if (le32(tail + 4) != (uint32_t)dst_len) return -1;
  if (rlx_inflate(gz + 10, gz_len - 18, dst, dst_len) != dst_len) return -1;
  return rlx_crc32(dst, dst_len) == le32(tail) ? 0 : -1;
}
