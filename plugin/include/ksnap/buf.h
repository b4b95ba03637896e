/**
 * @file buf.h
 * @brief A growable byte buffer, embedded by value (_init/_cleanup).
 *
 * Threading: none; a buffer belongs to one thread at a time.
 */
#ifndef KSNAP_BUF_H
#define KSNAP_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ksnap_buf_s {
  uint8_t *data; /**< owned; NUL-terminated after every append */
  size_t len;
  size_t cap;
} ksnap_buf_t;

void ksnap_buf_init(ksnap_buf_t *buf);

/** Frees the contents; the buffer may be reused after ksnap_buf_init(). */
void ksnap_buf_cleanup(ksnap_buf_t *buf);

/** Empties the buffer, keeping its memory. */
void ksnap_buf_reset(ksnap_buf_t *buf);

/** Makes room for @p extra more bytes. @returns KSNAP_ERR_NOMEM on failure. */
ksnap_err_t ksnap_buf_reserve(ksnap_buf_t *buf, size_t extra);

ksnap_err_t ksnap_buf_append(ksnap_buf_t *buf, const void *data, size_t len);

ksnap_err_t ksnap_buf_appendf(ksnap_buf_t *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/**
 * Hands the contents to the caller (free() it) and leaves @p buf empty.
 * @p lenp may be NULL.
 */
uint8_t *ksnap_buf_detach(ksnap_buf_t *buf, size_t *lenp);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_BUF_H */
