/**
 * @file log.h
 * @brief Logging: one process-wide sink with a level and a debug-context mask.
 *
 * Levels follow syslog (KSNAP_LOG_ERR=3 .. KSNAP_LOG_DEBUG=7). A debug line
 * is emitted only when its context bit is set in the debug mask (as
 * librdkafka's `debug=` contexts). The level is checked BEFORE a message is
 * formatted, so a disabled log line costs one atomic load.
 *
 * Secrets: no ksnap code formats a value of a property flagged secret (see
 * ksnap/conf.h), an access key or a signature into a log line; callers of
 * ksnap_log() must keep to the same rule.
 *
 * Threading: all functions may be called from any thread. The callback is
 * called from the logging thread and must be reentrant.
 */
#ifndef KSNAP_LOG_H
#define KSNAP_LOG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ksnap_log_level_e {
  KSNAP_LOG_ERR = 3,
  KSNAP_LOG_WARNING = 4,
  KSNAP_LOG_NOTICE = 5,
  KSNAP_LOG_INFO = 6,
  KSNAP_LOG_DEBUG = 7,
} ksnap_log_level_t;

/* Debug contexts: X(name, bit). */
#define KSNAP_DBG_CONTEXTS(X) \
  X(CONF, 0)                  \
  X(STORAGE, 1)               \
  X(STATE, 2)                 \
  X(BARRIER, 3)               \
  X(SNAPSHOT, 4)              \
  X(KAFKA, 5)                 \
  X(COORD, 6)                 \
  X(SINK, 7)                  \
  X(CODEC, 8)                 \
  X(TASK, 9)                  \
  X(HTTP, 10)

typedef enum ksnap_dbg_e {
#define KSNAP__DBG_ENUM(name, bit) KSNAP_DBG_##name = 1u << (bit),
  KSNAP_DBG_CONTEXTS(KSNAP__DBG_ENUM)
#undef KSNAP__DBG_ENUM
  KSNAP_DBG_ALL = 0xffffffffu
} ksnap_dbg_t;

/**
 * Log callback. @p fac is a short facility ("CONF", "S3", "ALIGN"),
 * @p msg the formatted line without trailing newline.
 */
typedef void(ksnap_log_cb_t)(void *opaque, int level, const char *fac,
                             const char *msg);

/** Sets the callback (NULL restores the default: stderr). */
void ksnap_log_set_callback(ksnap_log_cb_t *cb, void *opaque);

/** Sets the highest level emitted (default KSNAP_LOG_INFO). */
void ksnap_log_set_level(int level);

/** @returns the current level. */
int ksnap_log_get_level(void);

/** Sets the debug-context mask (default 0: no debug lines). */
void ksnap_log_set_debug(uint32_t mask);

/**
 * Parses a comma-separated list of context names ("storage,barrier", "all")
 * into a mask. @returns 0 on success, -1 naming the bad token in errstr.
 */
int ksnap_log_parse_debug(const char *list, uint32_t *maskp, char *errstr,
                          size_t errstr_size);

/** @returns 1 if a line at @p level (and @p dbg context, for DEBUG) is on. */
int ksnap_log_enabled(int level, uint32_t dbg);

/** Formats and emits one line. Prefer the KSNAP_LOG* macros. */
void ksnap_log(int level, const char *fac, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define KSNAP_LOG(level, fac, ...)                 \
  do {                                             \
    if (ksnap_log_enabled((level), 0))             \
      ksnap_log((level), (fac), __VA_ARGS__);      \
  } while (0)

#define KSNAP_DBG(ctx, fac, ...)                              \
  do {                                                        \
    if (ksnap_log_enabled(KSNAP_LOG_DEBUG, KSNAP_DBG_##ctx))  \
      ksnap_log(KSNAP_LOG_DEBUG, (fac), __VA_ARGS__);         \
  } while (0)

#define KSNAP_ERR(fac, ...) KSNAP_LOG(KSNAP_LOG_ERR, fac, __VA_ARGS__)
#define KSNAP_WARN(fac, ...) KSNAP_LOG(KSNAP_LOG_WARNING, fac, __VA_ARGS__)
#define KSNAP_INFO(fac, ...) KSNAP_LOG(KSNAP_LOG_INFO, fac, __VA_ARGS__)

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_LOG_H */
