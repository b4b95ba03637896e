#include "testnames.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

char *ksnap_test_unique_name(const char *prefix) {
  static unsigned counter;
  struct timespec ts;
  char buf[256];

  clock_gettime(CLOCK_REALTIME, &ts);
  snprintf(buf, sizeof(buf), "%s-%ld-%" PRId64 "-%u", prefix, (long)getpid(),
           (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, counter++);
  return strdup(buf);
}
