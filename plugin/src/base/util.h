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

#endif /* KSNAP_UTIL_H */
