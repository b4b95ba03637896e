/* Error codes and the error object (see ksnap/error.h). */
#include "ksnap/error.h"

#include <stdio.h>
#include <string.h>

#include "util.h"

const char *ksnap_err2str(ksnap_err_t err) {
  switch (err) {
#define KSNAP__ERR_STR(name, value, desc) \
  case KSNAP_ERR_##name:                  \
    return desc;
    KSNAP_ERRORS(KSNAP__ERR_STR)
#undef KSNAP__ERR_STR
  }
  return "Unknown error";
}

const char *ksnap_err2name(ksnap_err_t err) {
  switch (err) {
#define KSNAP__ERR_NAME(name, value, desc) \
  case KSNAP_ERR_##name:                   \
    return #name;
    KSNAP_ERRORS(KSNAP__ERR_NAME)
#undef KSNAP__ERR_NAME
  }
  return "UNKNOWN";
}

void ksnap_error_clear(ksnap_error_t *error) {
  if (!error)
    return;
  error->code = KSNAP_ERR_OK;
  error->retriable = 0;
  error->fatal = 0;
  error->msg[0] = '\0';
}

ksnap_err_t ksnap_error_vset(ksnap_error_t *error, ksnap_err_t code,
                             const char *fmt, va_list ap) {
  if (!error)
    return code;
  error->code = code;
  error->retriable = 0;
  error->fatal = 0;
  vsnprintf(error->msg, sizeof(error->msg), fmt, ap);
  return code;
}

ksnap_err_t ksnap_error_set(ksnap_error_t *error, ksnap_err_t code,
                            const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ksnap_error_vset(error, code, fmt, ap);
  va_end(ap);
  return code;
}

ksnap_err_t ksnap_error_set_retriable(ksnap_error_t *error, ksnap_err_t code,
                                      const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  ksnap_error_vset(error, code, fmt, ap);
  va_end(ap);
  if (error)
    error->retriable = 1;
  return code;
}

ksnap_err_t ksnap_error_prefix(ksnap_error_t *error, const char *fmt, ...) {
  char joined[KSNAP_ERROR_MSG_SIZE];
  size_t len;
  va_list ap;

  if (!error)
    return KSNAP_ERR_OK;
  va_start(ap, fmt);
  vsnprintf(joined, sizeof(joined), fmt, ap);
  va_end(ap);
  len = strlen(joined);
  if (len + 2 < sizeof(joined)) {
    memcpy(joined + len, ": ", 3);
    len += 2;
    memcpy(joined + len, error->msg,
           KSNAP_MIN(strlen(error->msg) + 1, sizeof(joined) - len));
    joined[sizeof(joined) - 1] = '\0';
  }
  memcpy(error->msg, joined, sizeof(error->msg));
  return error->code;
}

void ksnap_error_to_errstr(const ksnap_error_t *error, char *errstr,
                           size_t errstr_size) {
  if (!errstr || errstr_size == 0)
    return;
  snprintf(errstr, errstr_size, "%s", error ? error->msg : "");
}
