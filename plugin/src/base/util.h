/* Small internal helpers shared by every module (not installed). */
#ifndef KSNAP_UTIL_H
#define KSNAP_UTIL_H

#include <stdint.h>
#include <time.h>

#define KSNAP_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define KSNAP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define KSNAP_MAX(a, b) ((a) > (b) ? (a) : (b))

/** Monotonic clock in microseconds. */
static inline int64_t ksnap__now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/** Wall clock in milliseconds since the epoch (for timestamps in records). */
static inline int64_t ksnap__wallclock_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/** @p v at @p p, 8 bytes big-endian (state keys and values). */
static inline void ksnap__put_be64(uint8_t *p, int64_t v) {
  for (int i = 7; i >= 0; i--, v = (int64_t)((uint64_t)v >> 8))
    p[i] = (uint8_t)(v & 0xff);
}

static inline int64_t ksnap__get_be64(const uint8_t *p) {
  uint64_t v = 0;

  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return (int64_t)v;
}

#endif /* KSNAP_UTIL_H */
