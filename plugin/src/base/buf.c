/* Growable byte buffer (see ksnap/buf.h). */
#include "ksnap/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ksnap_buf_init(ksnap_buf_t *buf) {
  buf->data = NULL;
  buf->len = 0;
  buf->cap = 0;
}

void ksnap_buf_cleanup(ksnap_buf_t *buf) {
  free(buf->data);
  ksnap_buf_init(buf);
}

void ksnap_buf_reset(ksnap_buf_t *buf) {
  buf->len = 0;
  if (buf->data)
    buf->data[0] = '\0';
}

ksnap_err_t ksnap_buf_reserve(ksnap_buf_t *buf, size_t extra) {
  size_t need = buf->len + extra + 1; /* room for the NUL */
  size_t cap = buf->cap ? buf->cap : 64;
  uint8_t *data;

  if (need < buf->len)
    return KSNAP_ERR_NOMEM; /* overflow */
  if (need <= buf->cap)
    return KSNAP_ERR_OK;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  data = realloc(buf->data, cap);
  if (!data)
    return KSNAP_ERR_NOMEM;
  buf->data = data;
  buf->cap = cap;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_buf_append(ksnap_buf_t *buf, const void *data, size_t len) {
  if (ksnap_buf_reserve(buf, len))
    return KSNAP_ERR_NOMEM;
  if (len)
    memcpy(buf->data + buf->len, data, len);
  buf->len += len;
  buf->data[buf->len] = '\0';
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_buf_appendf(ksnap_buf_t *buf, const char *fmt, ...) {
  va_list ap;
  int n;

  va_start(ap, fmt);
  n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return KSNAP_ERR_INVALID_ARG;
  if (ksnap_buf_reserve(buf, (size_t)n))
    return KSNAP_ERR_NOMEM;
  va_start(ap, fmt);
  vsnprintf((char *)buf->data + buf->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  buf->len += (size_t)n;
  return KSNAP_ERR_OK;
}

uint8_t *ksnap_buf_detach(ksnap_buf_t *buf, size_t *lenp) {
  uint8_t *data = buf->data;

  if (lenp)
    *lenp = buf->len;
  ksnap_buf_init(buf);
  return data;
}
