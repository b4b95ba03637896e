/*
 * S3 backend internals: the request engine (s3_http.c) on one curl multi
 * handle with pooled easy handles (connection reuse, parallel transfers,
 * retries), SigV4/URL helpers (s3_sign.c), XML scanning (s3_list.c) and
 * multipart upload (s3_multipart.c).
 * Owner: the thread using the storage; nothing here is thread-safe.
 */
#ifndef KSNAP_S3_H
#define KSNAP_S3_H

#include <curl/curl.h>
#include <sys/uio.h>

#include "ksnap/buf.h"
#include "storage_int.h"

typedef struct ksnap__s3_s {
  ksnap_storage_t base;
  char *bucket;
  char *prefix;   /* "" or ends with '/' */
  char *base_url; /* "http://host:port/bucket" or "https://bucket.host" */
  char *sigv4;    /* "aws:amz:REGION:s3" */
  int path_style;
  char *access_key, *secret_key, *session_token;
  char *ca_file;       /* NULL: libcurl's default trust store */
  int tls_skip_verify; /* 1: no certificate check (logged at open) */
  size_t part_size;
  int max_retries, connect_timeout_ms, request_timeout_ms;
  int retry_deadline_ms, max_parallel;
  CURLM *multi;
  CURL **pool; /* idle easy handles, kept for connection reuse */
  int npool;
} ksnap__s3_t;

/** One HTTP request and its retry state. Zero it, then fill the inputs. */
typedef struct ksnap__s3_req_s {
  /* inputs */
  const char *method;  /* GET PUT POST DELETE HEAD */
  const char *op;      /* for messages instead of method ("LIST") */
  const char *what_key; /* for messages instead of key */
  const char *key;     /* full object key (prefix included), or NULL */
  const char *query;   /* already sorted and encoded (ksnap__s3_query) */
  const char *range;   /* "bytes=-16" or NULL */
  const struct iovec *iov; /* request body */
  int iovcnt;
  const char *content_type; /* default application/octet-stream */
  const ksnap__sink_t *sink; /* 2xx body; NULL: collected into body */
  /* outputs */
  long status;
  ksnap_buf_t body;    /* 2xx body without sink, or the error body */
  char etag[128];
  uint64_t total_size; /* Content-Range total or Content-Length */
  ksnap_error_t error;
  /* engine state */
  int attempt, done, in_flight;
  int64_t first_us, not_before_us;
  uint64_t received; /* 2xx body bytes handed to the sink */
  uint64_t resume_from, attempt_bytes; /* resumed GET answered 200 */
  size_t iov_idx, iov_off;
  CURL *easy;
  struct curl_slist *headers;
  char range_buf[64];
  ksnap_buf_t flat; /* small bodies, contiguous */
  int sink_failed;
  ksnap__s3_t *s3;
} ksnap__s3_req_t;

/**
 * Runs @p n requests with up to max_parallel in flight, each retried on its
 * own (5xx, 429, timeouts, resets) with backoff and jitter, bounded by
 * max_retries and retry_deadline_ms. Stops starting new requests after the
 * first permanent failure, whose error is copied to @p error.
 */
ksnap_err_t ksnap__s3_run(ksnap__s3_t *s3, ksnap__s3_req_t **reqs, size_t n,
                          ksnap_error_t *error);

/** Runs one request; on failure fills @p error. */
ksnap_err_t ksnap__s3_run1(ksnap__s3_t *s3, ksnap__s3_req_t *req,
                           ksnap_error_t *error);

/** Frees what a request holds (body, headers). */
void ksnap__s3_req_cleanup(ksnap__s3_req_t *req);

/* ---- retry policy (s3_http.c) ---- */
typedef enum {
  KSNAP__S3_OK,
  KSNAP__S3_RETRY,
  KSNAP__S3_FAIL
} ksnap__s3_verdict_t;

/** Decides what a finished attempt means. */
ksnap__s3_verdict_t ksnap__s3_classify(CURLcode cc, long status);

/**
 * Backoff before retry number @p attempt (1 = first retry): a random
 * delay in [d/2, d] with d = min(cap_ms, base_ms * 2^(attempt-1));
 * @p rnd is a random 32-bit value.
 */
int ksnap__s3_backoff_ms(int attempt, int base_ms, int cap_ms, uint32_t rnd);

/* ---- encoding and URLs (s3_sign.c) ---- */

/** AWS URI-encoding of @p s appended to @p out; '/' kept iff keep_slash. */
ksnap_err_t ksnap__s3_uri_encode(ksnap_buf_t *out, const char *s,
                                 int keep_slash);

/**
 * Builds a canonical query string from @p n name/value pairs (values may
 * be NULL, meaning ""): each AWS-encoded, sorted by name, "name=value"
 * joined by '&'. Returns a malloc'd string or NULL.
 */
char *ksnap__s3_query(const char *const *pairs, size_t n);

/**
 * The URL of @p bucket at @p endpoint: "ENDPOINT/BUCKET" path-style,
 * "SCHEME://BUCKET.HOST" virtual-host. malloc'd.
 */
char *ksnap__s3_base_url(const char *endpoint, const char *bucket,
                         int path_style);

/** Full request URL for @p key (may be NULL: the bucket) and @p query. */
char *ksnap__s3_url(const ksnap__s3_t *s3, const char *key,
                    const char *query);

/** Sets SigV4 signing, credentials and timeouts on @p easy. */
void ksnap__s3_setup_auth(const ksnap__s3_t *s3, CURL *easy);

/* ---- XML (s3_list.c) ---- */

/**
 * Extracts and XML-unescapes the text of the first <tag>...</tag> at or
 * after *pos in [xml, xml+len), appending it to @p out. Advances *pos past
 * the element. @returns 1 if found, 0 if not.
 */
int ksnap__xml_text(const char *xml, size_t len, size_t *pos,
                    const char *tag, ksnap_buf_t *out);

/** Fills @p error from an S3 error body: "WHAT: Code: Message (HTTP n)". */
ksnap_err_t ksnap__s3_error_from_body(const char *xml, size_t len,
                                      long status, const char *what,
                                      ksnap_error_t *error);

/** Callback per <Contents> of a ListObjectsV2 page (full key, size). */
typedef int(ksnap__s3_list_page_cb_t)(void *opaque, const char *key,
                                      uint64_t size);

/**
 * Parses one ListObjectsV2 page: calls @p cb per object, sets *truncated
 * and (if truncated) the continuation token into @p token.
 * @returns 0, -1 on malformed XML, 1 if the callback stopped.
 */
int ksnap__s3_parse_list(const char *xml, size_t len,
                         ksnap__s3_list_page_cb_t *cb, void *opaque,
                         int *truncated, ksnap_buf_t *token);

/* ---- multipart (s3_multipart.c) ---- */

/** Uploads the concatenation of @p iov as a parallel multipart upload. */
ksnap_err_t ksnap__s3_multipart_put(ksnap__s3_t *s3, const char *key,
                                    const struct iovec *iov, int iovcnt,
                                    uint64_t total, ksnap_error_t *error);

/** A multipart upload in progress (for the streaming writer). */
typedef struct ksnap__s3_mpu_s ksnap__s3_mpu_t;
ksnap_err_t ksnap__s3_mpu_begin(ksnap__s3_t *s3, const char *key,
                                ksnap__s3_mpu_t **out, ksnap_error_t *error);
/** Uploads part @p number (1-based; any order) from @p iov. */
ksnap_err_t ksnap__s3_mpu_part(ksnap__s3_mpu_t *mpu, int number,
                               const struct iovec *iov, int iovcnt,
                               ksnap_error_t *error);
/** Completes and frees (aborting the upload on failure). */
ksnap_err_t ksnap__s3_mpu_complete(ksnap__s3_mpu_t *mpu,
                                   ksnap_error_t *error);
/** Aborts (best effort) and frees. NULL is a no-op. */
void ksnap__s3_mpu_abort(ksnap__s3_mpu_t *mpu);

/** "s3://bucket/key" for messages, into @p out. */
void ksnap__s3_what(const ksnap__s3_t *s3, const char *method,
                    const char *key, char *out, size_t size);

#endif /* KSNAP_S3_H */
