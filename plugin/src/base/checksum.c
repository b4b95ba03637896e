/*
 * CRC32C (Castagnoli, reflected polynomial 0x82F63B78) and the storage
 * object trailer: "KSC1" | crc32c (BE32) | data length (BE64).
 */
#include "checksum.h"

#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static uint32_t crc_table[8][256];
static int crc_hw; /* 0 table, 1 SSE4.2 */
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++)
      c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    crc_table[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; i++)
    for (int t = 1; t < 8; t++)
      crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
                        crc_table[0][crc_table[t - 1][i] & 0xff];
#if defined(__x86_64__)
  __builtin_cpu_init();
  crc_hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
#else
  crc_hw = 0;
#endif
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len) {
  while (len >= 8) {
    uint32_t lo, hi;
    memcpy(&lo, p, 4);
    memcpy(&hi, p + 4, 4);
    lo ^= crc; /* little-endian hosts only reach this path in practice */
    crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
          crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
          crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
          crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
    p += 8;
    len -= 8;
  }
  while (len--)
    crc = (crc >> 8) ^ crc_table[0][(crc ^ *p++) & 0xff];
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t
crc_sse42(uint32_t crc, const uint8_t *p, size_t len) {
  uint64_t c = crc;
  while (len >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c = _mm_crc32_u64(c, v);
    p += 8;
    len -= 8;
  }
  crc = (uint32_t)c;
  while (len--)
    crc = _mm_crc32_u8(crc, *p++);
  return crc;
}
#endif

uint32_t ksnap__crc32c(uint32_t crc, const void *data, size_t len) {
  pthread_once(&crc_once, crc_init);
  crc = ~crc;
#if defined(__x86_64__)
  if (crc_hw == 1)
    return ~crc_sse42(crc, data, len);
#endif
  return ~crc_sw(crc, data, len);
}

/* a(x) * b(x) modulo the (reflected) polynomial; bit 31 is x^0. */
static uint32_t multmodp(uint32_t a, uint32_t b) {
  uint32_t m = 1u << 31, p = 0;

  for (;;) {
    if (a & m) {
      p ^= b;
      if ((a & (m - 1)) == 0)
        break;
    }
    m >>= 1;
    b = b & 1 ? (b >> 1) ^ 0x82F63B78u : b >> 1;
  }
  return p;
}

uint32_t ksnap__crc32c_combine(uint32_t crc_a, uint32_t crc_b,
                               uint64_t len_b) {
  uint32_t x2n = 1u << 30; /* x^1, then x^2, x^4, ... (squared per bit) */
  uint32_t shift = 1u << 31; /* x^0 */

  /* x^(8 * len_b): appending len_b zero bytes multiplies by it */
  for (uint64_t n = len_b * 8; n; n >>= 1) {
    if (n & 1)
      shift = multmodp(x2n, shift);
    x2n = multmodp(x2n, x2n);
  }
  return multmodp(shift, crc_a) ^ crc_b;
}

void ksnap__trailer_encode(uint8_t out[KSNAP__TRAILER_SIZE], uint32_t crc,
                           uint64_t len) {
  memcpy(out, KSNAP__TRAILER_MAGIC, 4);
  for (int i = 0; i < 4; i++)
    out[4 + i] = (uint8_t)(crc >> (24 - 8 * i));
  for (int i = 0; i < 8; i++)
    out[8 + i] = (uint8_t)(len >> (56 - 8 * i));
}

ksnap_err_t ksnap__trailer_decode(const uint8_t *trailer, uint64_t stored_len,
                                  uint32_t *crcp, uint64_t *lenp,
                                  const char *what, ksnap_error_t *error) {
  uint32_t crc = 0;
  uint64_t len = 0;

  if (stored_len < KSNAP__TRAILER_SIZE)
    return ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                           "%s: object truncated (%llu bytes, no trailer)",
                           what, (unsigned long long)stored_len);
  if (memcmp(trailer, KSNAP__TRAILER_MAGIC, 4))
    return ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                           "%s: object truncated or not written by ksnap "
                           "(no KSC1 trailer)", what);
  for (int i = 0; i < 4; i++)
    crc = (crc << 8) | trailer[4 + i];
  for (int i = 0; i < 8; i++)
    len = (len << 8) | trailer[8 + i];
  if (len != stored_len - KSNAP__TRAILER_SIZE)
    return ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                           "%s: object truncated (%llu data bytes, trailer "
                           "says %llu)", what,
                           (unsigned long long)(stored_len -
                                                KSNAP__TRAILER_SIZE),
                           (unsigned long long)len);
  *crcp = crc;
  if (lenp)
    *lenp = len;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__trailer_verify(const uint8_t *obj, size_t stored_len,
                                  const char *what, ksnap_error_t *error) {
  uint32_t want, got;
  ksnap_err_t err;

  if (stored_len < KSNAP__TRAILER_SIZE)
    return ksnap__trailer_decode(obj, stored_len, &want, NULL, what, error);
  err = ksnap__trailer_decode(obj + stored_len - KSNAP__TRAILER_SIZE,
                              stored_len, &want, NULL, what, error);
  if (err)
    return err;
  got = ksnap__crc32c(0, obj, stored_len - KSNAP__TRAILER_SIZE);
  if (got != want)
    return ksnap_error_set(error, KSNAP_ERR_CHECKSUM,
                           "%s: checksum mismatch (crc32c %08x, expected "
                           "%08x)", what, got, want);
  return KSNAP_ERR_OK;
}
