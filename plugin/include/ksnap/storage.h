/**
 * @file storage.h
 * @brief Checkpoint storage: one interface over S3-compatible object stores
 *        and a local directory, chosen by URL.
 *
 * URLs:
 *  - `s3://BUCKET/PREFIX`  S3 over HTTP(S) with SigV4 (libcurl).
 *  - `file:///PATH` or a plain path (`/tmp/ckpt`, `./ckpt`): a directory.
 * Keys passed to the calls below are relative to the URL's prefix; a key
 * is a non-empty '/'-separated name without "." or ".." segments.
 *
 * Integrity: every object ksnap writes ends with a 16-byte trailer
 * (magic "KSC1", CRC32C of the data, data length; both big-endian), on
 * both backends. Readers verify it and strip it: a changed byte is
 * KSNAP_ERR_CHECKSUM, a short or cut object KSNAP_ERR_TRUNCATED, always
 * naming the object. One format is used everywhere because a streamed
 * (multipart) upload learns its checksum only at the end, after S3 user
 * metadata has been fixed. Sizes reported by head/list are data sizes
 * (stored size - 16).
 *
 * Errors common to every call: KSNAP_ERR_INVALID_ARG (bad key/URL),
 * KSNAP_ERR_NOT_FOUND (no such object), KSNAP_ERR_ACCESS_DENIED (403:
 * AccessDenied, SignatureDoesNotMatch, InvalidAccessKeyId; never retried),
 * KSNAP_ERR_NO_SUCH_BUCKET, KSNAP_ERR_HTTP (other 4xx, or 5xx/429 after
 * retries), KSNAP_ERR_CONNECT / KSNAP_ERR_TIMEOUT (after retries),
 * KSNAP_ERR_IO (file backend), KSNAP_ERR_CHECKSUM / KSNAP_ERR_TRUNCATED
 * (reads). The message is one line: "OP URL: server Code: Message (HTTP n)".
 * Secrets and signatures never appear in messages or logs.
 *
 * Threading: a ksnap_storage_t belongs to one thread at a time (it keeps
 * curl handles and connections). Open one per thread for parallel use;
 * use ksnap_storage_put_many() for parallel transfers from one thread.
 * A writer opened with a buffer_size stores its data from a thread of its
 * own: until it is committed or aborted, make no other call on its
 * storage.
 */
#ifndef KSNAP_STORAGE_H
#define KSNAP_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/buf.h"
#include "ksnap/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ksnap_storage_s ksnap_storage_t;
typedef struct ksnap_storage_writer_s ksnap_storage_writer_t;

/** Default multipart part size (16 MiB); S3 requires >= 5 MiB. */
#define KSNAP_STORAGE_DEFAULT_PART_SIZE (16u * 1024 * 1024)
/** Bytes of the integrity trailer appended to every object. */
#define KSNAP_STORAGE_TRAILER_SIZE 16

/**
 * Options (a plain struct: fill it from properties or the environment).
 * Strings are borrowed for the duration of ksnap_storage_open() only (the
 * storage object copies them). 0 / NULL means "default".
 */
typedef struct ksnap_storage_opts_s {
  const char *endpoint;      /**< "http://127.0.0.1:9000"; default AWS */
  const char *region;        /**< default "us-east-1" */
  const char *access_key;
  const char *secret_key;    /**< never logged */
  const char *session_token; /**< optional (x-amz-security-token) */
  int path_style;            /**< 1 path-style, 0 virtual-host,
                                  -1 auto (path-style iff endpoint given) */
  size_t part_size;          /**< multipart part size, >= 5 MiB */
  int max_retries;           /**< default 5; 0 = no retry (-1 = default) */
  int connect_timeout_ms;    /**< default 5000 */
  int request_timeout_ms;    /**< stall: < 1 byte/s for this long; 30000 */
  int retry_deadline_ms;     /**< total time for one call's retries; 60000 */
  int max_parallel;          /**< transfers in flight (batch/multipart); 8 */
  const char *ca_file;       /**< PEM CA bundle for https; NULL: system */
  int tls_skip_verify;       /**< 1: no certificate check (logged) */
} ksnap_storage_opts_t;

/** Sets every field to its "default" value (zeroes, path_style -1). */
void ksnap_storage_opts_init(ksnap_storage_opts_t *opts);

/**
 * Fills the unset (NULL) string fields of @p opts from AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION (or
 * AWS_DEFAULT_REGION) and AWS_ENDPOINT_URL. The strings point into the
 * environment.
 */
void ksnap_storage_opts_from_env(ksnap_storage_opts_t *opts);

/**
 * Opens the storage at @p url. @p opts may be NULL (defaults, no
 * credentials). Does no I/O (a file:// directory is created by the first
 * write; reading a missing one lists nothing and gets NOT_FOUND).
 * @returns KSNAP_ERR_OK and *out (destroy with ksnap_storage_destroy()),
 *          KSNAP_ERR_INVALID_ARG (unknown scheme, bad bucket, part size
 *          < 5 MiB).
 */
ksnap_err_t ksnap_storage_open(const char *url,
                               const ksnap_storage_opts_t *opts,
                               ksnap_storage_t **out, ksnap_error_t *error);

/** Frees @p storage; NULL is a no-op. Pending writers must be finished. */
void ksnap_storage_destroy(ksnap_storage_t *storage);

/** @returns the URL it was opened with (for messages). */
const char *ksnap_storage_url(const ksnap_storage_t *storage);

/**
 * Stores @p len bytes under @p key, replacing any object there. Objects
 * larger than the part size go up as a parallel multipart upload (aborted
 * on failure). Atomic: readers see the old or the new object, never part.
 */
ksnap_err_t ksnap_storage_put(ksnap_storage_t *storage, const char *key,
                              const void *data, size_t len,
                              ksnap_error_t *error);

/** Reads @p key, verified, and appends its data to @p out. */
ksnap_err_t ksnap_storage_get(ksnap_storage_t *storage, const char *key,
                              ksnap_buf_t *out, ksnap_error_t *error);

/**
 * Streaming read callback: called with consecutive chunks of the data.
 * Return 0 to continue, non-zero to stop (the get fails with
 * KSNAP_ERR_INTERRUPTED). The last chunk is delivered only once the whole
 * object is received; the checksum is verified at the end, so a callback
 * may see data of an object that later fails with KSNAP_ERR_CHECKSUM and
 * must not commit anything until ksnap_storage_get_stream() returns OK.
 */
typedef int(ksnap_storage_read_cb_t)(void *opaque, const uint8_t *data,
                                     size_t len);

ksnap_err_t ksnap_storage_get_stream(ksnap_storage_t *storage,
                                     const char *key,
                                     ksnap_storage_read_cb_t *cb,
                                     void *opaque, ksnap_error_t *error);

/** What ksnap_storage_head() reports. */
typedef struct ksnap_storage_stat_s {
  uint64_t size;   /**< data bytes (without the trailer) */
  uint32_t crc32c; /**< CRC32C of the data, from the trailer */
} ksnap_storage_stat_t;

/**
 * Size and checksum of @p key, read from its trailer only (file: pread of
 * the last 16 bytes; S3: HEAD, then a GET of the last 16 bytes).
 */
ksnap_err_t ksnap_storage_head(ksnap_storage_t *storage, const char *key,
                               ksnap_storage_stat_t *stat,
                               ksnap_error_t *error);

/**
 * Lists @p prefix (its first key at most) to learn whether the store takes
 * this process's settings, before anything depends on it: @returns
 * KSNAP_ERR_OK unless the answer is one that no retry changes, refused
 * credentials (KSNAP_ERR_ACCESS_DENIED), an untrusted certificate
 * (KSNAP_ERR_TLS) or a missing bucket (KSNAP_ERR_NO_SUCH_BUCKET); then
 * that code, the store's message prefixed "checkpoint storage: ". No key
 * under @p prefix, or a store that does not answer, is no such error. (A
 * list, not a HEAD: an S3 HEAD's answer has no body to tell a missing
 * bucket from a missing key.)
 */
ksnap_err_t ksnap_storage_probe(ksnap_storage_t *storage, const char *prefix,
                                ksnap_error_t *error);

/**
 * List callback: called once per key under the prefix, in lexicographic
 * order, with the key relative to the storage URL and its data size.
 * Return 0 to continue, non-zero to stop listing (not an error).
 */
typedef int(ksnap_storage_list_cb_t)(void *opaque, const char *key,
                                     uint64_t size);

/** Lists keys starting with @p prefix ("" = all); follows pagination. */
ksnap_err_t ksnap_storage_list(ksnap_storage_t *storage, const char *prefix,
                               ksnap_storage_list_cb_t *cb, void *opaque,
                               ksnap_error_t *error);

/** Deletes @p key. Deleting a missing key is OK (as S3). */
ksnap_err_t ksnap_storage_delete(ksnap_storage_t *storage, const char *key,
                                 ksnap_error_t *error);

/** One object of a batch put. */
typedef struct ksnap_storage_item_s {
  const char *key;
  const void *data;
  size_t len;
} ksnap_storage_item_t;

/**
 * Stores @p n objects with up to max_parallel transfers in flight (curl
 * multi on S3; sequential on file://). Each item is retried on its own.
 * On the first permanent failure the remaining items are cancelled and
 * the error names the failing key; items already stored stay stored.
 */
ksnap_err_t ksnap_storage_put_many(ksnap_storage_t *storage,
                                   const ksnap_storage_item_t *items,
                                   size_t n, ksnap_error_t *error);

/**
 * Reads @p n objects with up to max_parallel transfers in flight (curl
 * multi on S3; sequential on file://), each verified; object i's data is
 * appended to outs[i]. Stops at the first failure, whose error names the
 * key; on failure the contents of @p outs are unspecified.
 */
ksnap_err_t ksnap_storage_get_many(ksnap_storage_t *storage,
                                   const char *const *keys, size_t n,
                                   ksnap_buf_t *outs, ksnap_error_t *error);

/**
 * Reads the data bytes [@p off, @p off + @p len) of @p key into @p dst
 * (file: pread; S3: one ranged GET). The trailer's checksum covers the
 * whole object, so a ranged read cannot verify it: callers check what
 * they read with checksums of their own (snapshot files carry one per
 * key group). Stay within the data size (ksnap_storage_head()).
 * @returns OK, TRUNCATED (fewer bytes there) or an error common to every
 * call.
 */
ksnap_err_t ksnap_storage_read_range(ksnap_storage_t *storage,
                                     const char *key, uint64_t off,
                                     size_t len, void *dst,
                                     ksnap_error_t *error);

/**
 * Starts a streamed write of @p key. Nothing is visible under @p key until
 * ksnap_storage_writer_commit() succeeds. On S3, data is sent in parts of
 * part_size once it exceeds one part (multipart upload); memory use is one
 * part.
 */
ksnap_err_t ksnap_storage_writer_open(ksnap_storage_t *storage,
                                      const char *key,
                                      ksnap_storage_writer_t **out,
                                      ksnap_error_t *error);

/** Options of a streamed write (zero: as ksnap_storage_writer_open()). */
typedef struct ksnap_storage_writer_opts_s {
  /** Bytes reserved at the start of the object and supplied last, by
   *  ksnap_storage_writer_set_head() (a header whose contents are known
   *  only once the rest is written); writer_write() appends after them.
   *  On S3 the first part (these bytes and the data after them up to
   *  5 MiB, S3's minimum part) is held in memory and uploaded last. */
  size_t head_len;
  /** > 0: writer_write() copies into buffers of this size and hands each
   *  full one to a thread of the writer that stores it, so the caller's
   *  work overlaps the I/O; two buffers at most (one filling, one being
   *  stored). An error of that thread is returned by a later call.
   *  0: writer_write() stores before it returns. */
  size_t buffer_size;
} ksnap_storage_writer_opts_t;

/** As ksnap_storage_writer_open(), with @p opts (may be NULL). */
ksnap_err_t ksnap_storage_writer_open_opts(
    ksnap_storage_t *storage, const char *key,
    const ksnap_storage_writer_opts_t *opts, ksnap_storage_writer_t **out,
    ksnap_error_t *error);

/** Appends @p len bytes. On error the writer must be aborted. */
ksnap_err_t ksnap_storage_writer_write(ksnap_storage_writer_t *writer,
                                       const void *data, size_t len,
                                       ksnap_error_t *error);

/**
 * Supplies the head reserved by opts.head_len: exactly that many bytes,
 * once, after the last writer_write(). The object's checksum is then
 * computed without reading anything again.
 * @returns OK, INVALID_ARG (wrong length, no head reserved, set twice) or
 * an error of the storage; on error the writer must be aborted.
 */
ksnap_err_t ksnap_storage_writer_set_head(ksnap_storage_writer_t *writer,
                                          const void *data, size_t len,
                                          ksnap_error_t *error);

/**
 * The data size and CRC32C of what was written so far (the head included
 * once set): once committed, what ksnap_storage_head() reports.
 */
void ksnap_storage_writer_stat(const ksnap_storage_writer_t *writer,
                               ksnap_storage_stat_t *stat);

/**
 * Finishes the object and frees @p writer (also on error, in which case
 * any partial upload is aborted/removed). A reserved head must have been
 * set (INVALID_ARG otherwise).
 */
ksnap_err_t ksnap_storage_writer_commit(ksnap_storage_writer_t *writer,
                                        ksnap_error_t *error);

/** Discards the object (aborts a multipart upload) and frees @p writer.
 *  NULL is a no-op. */
void ksnap_storage_writer_abort(ksnap_storage_writer_t *writer);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_STORAGE_H */
