/* Why a codec helper failed: a thread-local message instead of avro-c's
 * process-wide avro_strerror() (see codec.h). The lowest file of the
 * codec: it calls no other. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "codec.h"

static _Thread_local char fail_msg[256];

int ksnap__codec_fail(int rc, const char *fmt, ...) {
  va_list ap;

  va_start(ap, fmt);
  vsnprintf(fail_msg, sizeof(fail_msg), fmt, ap);
  va_end(ap);
  return rc;
}

/* The helper's own message if it left one, else avro-c's. */
static ksnap_err_t report(ksnap_error_t *error, ksnap_err_t code,
                          const char *op, const char *what) {
  ksnap_error_set(error, code, "cannot %s %s record: %s", op, what,
                  fail_msg[0] ? fail_msg : avro_strerror());
  fail_msg[0] = '\0';
  return code;
}

ksnap_err_t ksnap__codec_encode_error(ksnap_error_t *error, int rc,
                                      const char *what) {
  return report(error, rc == ENOMEM ? KSNAP_ERR_NOMEM : KSNAP_ERR_INVALID_ARG,
                "encode", what);
}

ksnap_err_t ksnap__codec_decode_error(ksnap_error_t *error, int rc,
                                      const char *what) {
  return report(error, rc == ENOMEM ? KSNAP_ERR_NOMEM : KSNAP_ERR_CORRUPT,
                "decode", what);
}
