/* inflate.h - a small DEFLATE (RFC 1951) decoder for gzip (RFC 1952)
 * members, used to unpack the shader sources the build embeds compressed
 * (tools/embed_sources.sh --gzip).  No allocation, no global state. */
#ifndef RLX_INFLATE_H
#define RLX_INFLATE_H

#include <stddef.h>

/* Decodes the raw DEFLATE stream src[0..src_len) into dst (room for cap
 * bytes).  Returns the number of bytes written, or (size_t)-1 when the
 * stream is malformed, truncated or does not fit in cap. */
size_t rlx_inflate(const unsigned char *src, size_t src_len, unsigned char *dst, size_t cap);

/* Decodes the gzip member gz[0..gz_len) (no optional header fields, as
 * `gzip -n` writes) into dst, which must be exactly its uncompressed size
 * dst_len.  Returns 0 on success, -1 when the header, the size or the
 * CRC-32 does not match or the stream is malformed. */
int rlx_gunzip(const unsigned char *gz, size_t gz_len, unsigned char *dst, size_t dst_len);

/* CRC-32 (the gzip/zlib polynomial) of p[0..n). */
unsigned long rlx_crc32(const unsigned char *p, size_t n);

#endif
