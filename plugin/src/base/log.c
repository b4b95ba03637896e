/*
 * Process-wide logger (see ksnap/log.h). The settings are atomics so the
 * enabled check on every log site is one relaxed load; the callback pair is
 * replaced under a mutex and read under it.
 */
#include "ksnap/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

static atomic_int log_level = KSNAP_LOG_INFO;
static atomic_uint log_debug_mask = 0;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static ksnap_log_cb_t *log_cb = NULL;
static void *log_opaque = NULL;

static const char *level_name(int level) {
  switch (level) {
  case KSNAP_LOG_ERR:
    return "ERROR";
  case KSNAP_LOG_WARNING:
    return "WARN";
  case KSNAP_LOG_NOTICE:
    return "NOTICE";
  case KSNAP_LOG_INFO:
    return "INFO";
  default:
    return "DEBUG";
  }
}

static void log_stderr(int level, const char *fac, const char *msg) {
  struct timespec ts;
  struct tm tm;
  char when[32];

  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
  fprintf(stderr, "%s.%03ldZ %-5s %s: %s\n", when, ts.tv_nsec / 1000000,
          level_name(level), fac, msg);
}

void ksnap_log_set_callback(ksnap_log_cb_t *cb, void *opaque) {
  pthread_mutex_lock(&log_lock);
  log_cb = cb;
  log_opaque = opaque;
  pthread_mutex_unlock(&log_lock);
}

void ksnap_log_set_level(int level) {
  atomic_store(&log_level, level);
}

int ksnap_log_get_level(void) {
  return atomic_load(&log_level);
}

void ksnap_log_set_debug(uint32_t mask) {
  atomic_store(&log_debug_mask, mask);
  if (mask)
    atomic_store(&log_level, KSNAP_LOG_DEBUG);
}

int ksnap_log_parse_debug(const char *list, uint32_t *maskp, char *errstr,
                          size_t errstr_size) {
  static const struct {
    const char *name;
    uint32_t bit;
  } names[] = {
#define KSNAP__DBG_NAME(name, bit) {#name, 1u << (bit)},
      KSNAP_DBG_CONTEXTS(KSNAP__DBG_NAME)
#undef KSNAP__DBG_NAME
  };
  uint32_t mask = 0;
  const char *s = list;

  while (s && *s) {
    size_t len = strcspn(s, ",");
    int found = 0;

    if (len == 3 && !strncasecmp(s, "all", 3)) {
      mask = KSNAP_DBG_ALL;
      found = 1;
    }
    for (size_t i = 0; !found && i < sizeof(names) / sizeof(names[0]); i++) {
      if (strlen(names[i].name) == len && !strncasecmp(s, names[i].name, len)) {
        mask |= names[i].bit;
        found = 1;
      }
    }
    if (!found && len > 0) {
      snprintf(errstr, errstr_size, "unknown debug context \"%.*s\"",
               (int)len, s);
      return -1;
    }
    s += len;
    if (*s == ',')
      s++;
  }
  *maskp = mask;
  return 0;
}

int ksnap_log_enabled(int level, uint32_t dbg) {
  if (level > atomic_load_explicit(&log_level, memory_order_relaxed))
    return 0;
  if (level == KSNAP_LOG_DEBUG && dbg &&
      !(atomic_load_explicit(&log_debug_mask, memory_order_relaxed) & dbg))
    return 0;
  return 1;
}

void ksnap_log(int level, const char *fac, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  ksnap_log_cb_t *cb;
  void *opaque;

  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);

  pthread_mutex_lock(&log_lock);
  cb = log_cb;
  opaque = log_opaque;
  pthread_mutex_unlock(&log_lock);

  if (cb)
    cb(opaque, level, fac, msg);
  else
    log_stderr(level, fac, msg);
}
