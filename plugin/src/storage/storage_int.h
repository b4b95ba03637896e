/*
 * Storage backends: each is a vtable over raw objects (data + trailer are
 * just bytes to a backend). storage.c validates keys, adds the trailer on
 * writes and verifies/strips it on reads; backends never see checksums.
 */
#ifndef KSNAP_STORAGE_INT_H
#define KSNAP_STORAGE_INT_H

#include <sys/uio.h>

#include "ksnap/storage.h"

/** A raw byte sink for reads. */
typedef struct ksnap__sink_s {
  /** Returns 0 to continue. */
  int (*write)(void *opaque, const uint8_t *data, size_t len);
  /** Optional: the stored size, once known (to pre-allocate). */
  void (*expect)(void *opaque, uint64_t stored_len);
  void *opaque;
} ksnap__sink_t;

typedef struct ksnap__raw_item_s {
  const char *key;
  struct iovec iov[2];
} ksnap__raw_item_t;

typedef struct ksnap__bwriter_s ksnap__bwriter_t; /* backend writer */

typedef struct ksnap__storage_ops_s {
  const char *scheme;
  void (*destroy)(ksnap_storage_t *st);
  ksnap_err_t (*put)(ksnap_storage_t *st, const char *key,
                     const struct iovec *iov, int iovcnt, ksnap_error_t *e);
  /** Optional (NULL: storage.c loops over put). */
  ksnap_err_t (*put_many)(ksnap_storage_t *st, const ksnap__raw_item_t *items,
                          size_t n, ksnap_error_t *e);
  ksnap_err_t (*get)(ksnap_storage_t *st, const char *key,
                     const ksnap__sink_t *sink, ksnap_error_t *e);
  /** Optional (NULL: storage.c loops over get). */
  ksnap_err_t (*get_many)(ksnap_storage_t *st, const char *const *keys,
                          size_t n, const ksnap__sink_t *sinks,
                          ksnap_error_t *e);
  /** Stored size and the last min(16, size) bytes into tail. */
  ksnap_err_t (*tail)(ksnap_storage_t *st, const char *key, uint64_t *size,
                      uint8_t tail[16], ksnap_error_t *e);
  ksnap_err_t (*list)(ksnap_storage_t *st, const char *prefix,
                      ksnap_storage_list_cb_t *cb, void *opaque,
                      ksnap_error_t *e);
  ksnap_err_t (*del)(ksnap_storage_t *st, const char *key, ksnap_error_t *e);
  /** Stored bytes [off, off + len) of @p key into @p dst (all of them, or
   *  TRUNCATED). */
  ksnap_err_t (*get_range)(ksnap_storage_t *st, const char *key,
                           uint64_t off, size_t len, uint8_t *dst,
                           ksnap_error_t *e);
  /** A writer whose first @p head_len bytes come last, through w_head;
   *  w_write appends after them. */
  ksnap_err_t (*w_open)(ksnap_storage_t *st, const char *key,
                        size_t head_len, ksnap__bwriter_t **out,
                        ksnap_error_t *e);
  ksnap_err_t (*w_write)(ksnap__bwriter_t *w, const void *data, size_t len,
                         ksnap_error_t *e);
  /** The reserved head (exactly head_len bytes), before w_commit. */
  ksnap_err_t (*w_head)(ksnap__bwriter_t *w, const void *data, size_t len,
                        ksnap_error_t *e);
  /** Commits and frees (also on failure). */
  ksnap_err_t (*w_commit)(ksnap__bwriter_t *w, ksnap_error_t *e);
  void (*w_abort)(ksnap__bwriter_t *w);
} ksnap__storage_ops_t;

/** Every backend's struct starts with this (destroy and accessors:
 *  storage_base.c). */
struct ksnap_storage_s {
  const ksnap__storage_ops_t *ops;
  char *url;
  uint64_t requests; /**< backend requests/attempts made (for tests) */
};

/** Backend constructors: @p rest is the URL after "scheme://" (file: path). */
ksnap_err_t ksnap__storage_file_open(const char *url, const char *path,
                                     ksnap_storage_t **out, ksnap_error_t *e);
ksnap_err_t ksnap__storage_s3_open(const char *url, const char *rest,
                                   const ksnap_storage_opts_t *opts,
                                   ksnap_storage_t **out, ksnap_error_t *e);

/** Refuses an empty key (unless @p allow_empty), a leading '/' and empty,
 *  "." or ".." segments: INVALID_ARG naming the storage. */
ksnap_err_t ksnap__storage_check_key(const ksnap_storage_t *st,
                                     const char *key, int allow_empty,
                                     ksnap_error_t *error);

/* White-box helpers for tests: raw bytes without the trailer logic. */
ksnap_err_t ksnap__storage_put_raw(ksnap_storage_t *st, const char *key,
                                   const void *data, size_t len,
                                   ksnap_error_t *e);
ksnap_err_t ksnap__storage_get_raw(ksnap_storage_t *st, const char *key,
                                   ksnap_buf_t *out, ksnap_error_t *e);
/** @returns how many backend requests (HTTP attempts) were made. */
uint64_t ksnap__storage_requests(const ksnap_storage_t *st);

#endif /* KSNAP_STORAGE_INT_H */
