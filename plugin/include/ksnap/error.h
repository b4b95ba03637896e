/**
 * @file error.h
 * @brief ksnap error codes and the error object every fallible call fills.
 *
 * One list (KSNAP_ERRORS) generates the enum and the strings. Codes are
 * stable: append new codes at the end of their group, never renumber.
 *
 * Threading: everything here is reentrant; a ksnap_error_t belongs to the
 * caller that passed it in.
 */
#ifndef KSNAP_ERROR_H
#define KSNAP_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(name, value, description) */
#define KSNAP_ERRORS(X)                                                      \
  X(OK,              0,  "Success")                                          \
  X(INVALID_ARG,     1,  "Invalid argument")                                 \
  X(NOMEM,           2,  "Out of memory")                                    \
  X(IO,              3,  "I/O error")                                        \
  X(NOT_FOUND,       4,  "Not found")                                        \
  X(EXISTS,          5,  "Already exists")                                   \
  X(UNSUPPORTED,     6,  "Not supported")                                    \
  X(STATE,           7,  "Illegal state")                                    \
  X(TIMEOUT,         8,  "Timed out")                                        \
  X(INTERRUPTED,     9,  "Interrupted")                                      \
  X(CONF_SYNTAX,     20, "Configuration syntax error")                       \
  X(CONF_UNKNOWN,    21, "Unknown configuration property")                   \
  X(CONF_VALUE,      22, "Invalid configuration value")                      \
  X(CONF_MISSING,    23, "Missing required configuration property")          \
  X(CORRUPT,         40, "Corrupt data")                                     \
  X(TRUNCATED,       41, "Truncated data")                                   \
  X(CHECKSUM,        42, "Checksum mismatch")                                \
  X(SCHEMA_VERSION,  43, "Unsupported schema version")                       \
  X(ACCESS_DENIED,   60, "Access denied")                                    \
  X(NO_SUCH_BUCKET,  61, "No such bucket")                                   \
  X(HTTP,            62, "HTTP error")                                       \
  X(CONNECT,         63, "Connection failed")                                \
  X(TLS,             64, "TLS certificate not trusted")                      \
  X(AUTH,            65, "Authentication failed")                            \
  X(KAFKA,           80, "Kafka error")                                      \
  X(FENCED,          81, "Fenced by a newer instance")                       \
  X(TXN_ABORTABLE,   82, "Transaction must be aborted")                      \
  X(DECLINED,        100, "Checkpoint declined")                             \
  X(ABORTED,         101, "Checkpoint aborted")                              \
  X(RETENTION,       102, "Data needed for repair was deleted by retention") \
  X(OPERATOR,        103, "Operator failed")                               \
  X(JOB_FAILED,      104, "The job failed")                                \
  X(UNDECODABLE,     105, "Record cannot be decoded")                      \
  X(INCOMPATIBLE,    106, "Restore point does not fit the job")

typedef enum ksnap_err_e {
#define KSNAP__ERR_ENUM(name, value, desc) KSNAP_ERR_##name = value,
  KSNAP_ERRORS(KSNAP__ERR_ENUM)
#undef KSNAP__ERR_ENUM
} ksnap_err_t;

/** @returns a static, human-readable description of @p err. */
const char *ksnap_err2str(ksnap_err_t err);

/** @returns the enum's name without prefix ("CONF_UNKNOWN"), static. */
const char *ksnap_err2name(ksnap_err_t err);

#define KSNAP_ERROR_MSG_SIZE 512

/**
 * An error: code, message and what the caller may do about it.
 * Embedded by value; no cleanup needed.
 */
typedef struct ksnap_error_s {
  ksnap_err_t code;
  int retriable; /**< the same call may succeed if repeated */
  int fatal;     /**< the owning object is unusable from now on */
  char msg[KSNAP_ERROR_MSG_SIZE];
} ksnap_error_t;

/** Clears @p error to KSNAP_ERR_OK. NULL is allowed. */
void ksnap_error_clear(ksnap_error_t *error);

/**
 * Sets @p error (if not NULL) to @p code with a printf-formatted message.
 * Clears the retriable and fatal flags.
 * @returns @p code, so callers can `return ksnap_error_set(...)`.
 */
ksnap_err_t ksnap_error_set(ksnap_error_t *error, ksnap_err_t code,
                            const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** va_list variant of ksnap_error_set(). */
ksnap_err_t ksnap_error_vset(ksnap_error_t *error, ksnap_err_t code,
                             const char *fmt, va_list ap);

/** As ksnap_error_set(), and marks the error retriable. */
ksnap_err_t ksnap_error_set_retriable(ksnap_error_t *error, ksnap_err_t code,
                                      const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * Prefixes the message of @p error with "PREFIX: " (printf-formatted),
 * keeping code and flags, to add context as an error travels up.
 * @returns the error's code.
 */
ksnap_err_t ksnap_error_prefix(ksnap_error_t *error, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/**
 * Copies @p error's message into @p errstr (size @p errstr_size),
 * truncating; for APIs that report through a caller's errstr buffer.
 */
void ksnap_error_to_errstr(const ksnap_error_t *error, char *errstr,
                           size_t errstr_size);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_ERROR_H */
