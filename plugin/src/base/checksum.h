/* CRC32C (Castagnoli) and the 16-byte object trailer of ksnap storage;
 * CRC-32 (IEEE), the checksum inside snapshot files. */
#ifndef KSNAP_CHECKSUM_H
#define KSNAP_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/error.h"

/** Extends @p crc (0 to start) over @p len bytes. SSE4.2 when present. */
uint32_t ksnap__crc32c(uint32_t crc, const void *data, size_t len);

/**
 * The CRC32C of A followed by B from @p crc_a = crc32c(A), @p crc_b =
 * crc32c(B) and @p len_b = |B| (zlib's crc32_combine for CRC32C): O(log
 * len_b). Lets a streamed object whose first bytes are written last get
 * its checksum without a second pass.
 */
uint32_t ksnap__crc32c_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b);

/** CRC-32 (IEEE, as zlib's crc32()): extends @p crc (0 to start).
 *  PCLMULQDQ when present (crc32.c). */
uint32_t ksnap__crc32(uint32_t crc, const void *data, size_t len);

#define KSNAP__TRAILER_MAGIC "KSC1"
#define KSNAP__TRAILER_SIZE 16

/** Writes the trailer for data of @p len bytes with CRC @p crc. */
void ksnap__trailer_encode(uint8_t out[KSNAP__TRAILER_SIZE], uint32_t crc,
                           uint64_t len);

/**
 * Parses a trailer. @p stored_len is the object's total stored size.
 * @returns KSNAP_ERR_OK with *crcp and *lenp, or KSNAP_ERR_TRUNCATED (object
 * shorter than a trailer, no magic, or length not matching) naming @p what.
 */
ksnap_err_t ksnap__trailer_decode(const uint8_t *trailer, uint64_t stored_len,
                                  uint32_t *crcp, uint64_t *lenp,
                                  const char *what, ksnap_error_t *error);

/** Verifies a whole stored object (data + trailer) in memory. */
ksnap_err_t ksnap__trailer_verify(const uint8_t *obj, size_t stored_len,
                                  const char *what, ksnap_error_t *error);

#endif /* KSNAP_CHECKSUM_H */
