/*
 * s3:// storage backend: the vtable over the request engine (s3_http.c).
 * URL s3://BUCKET[/PREFIX]; keys map to PREFIX/KEY.
 * Owner: the thread using the storage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3.h"
#include "base/util.h"
#include "ksnap/log.h"

#define MIN_PART_SIZE (5u * 1024 * 1024)

/* A streamed write. Without a head: buf fills to part_size, then parts
 * 1, 2, ... go up as it fills again (one PUT if it never does). With a
 * head of head_len bytes: part 1 is `first`, the head (set last) and the
 * data after it up to MIN_PART_SIZE (S3's minimum for every part but the
 * last), held in memory and uploaded at commit; buf makes parts 2, ...
 * Memory: buf (part_size) plus `first` (5 MiB) with a head. */
struct ksnap__bwriter_s {
  ksnap__s3_t *s3;
  char *key; /* full */
  size_t head_len, first_cap;
  ksnap_buf_t first;
  ksnap_buf_t buf;
  int next_part;
  ksnap__s3_mpu_t *mpu;
};

static char *full_key(const ksnap__s3_t *s3, const char *key) {
  size_t n = strlen(s3->prefix) + strlen(key) + 1;
  char *k = malloc(n);
  if (k)
    snprintf(k, n, "%s%s", s3->prefix, key);
  return k;
}

#define WITH_KEY(s3, key, fk, error)                                 \
  char *fk = full_key((s3), (key));                                  \
  if (!fk)                                                           \
  return ksnap_error_set((error), KSNAP_ERR_NOMEM, "out of memory")

static ksnap_err_t put_one(ksnap__s3_t *s3, const char *fk,
                           const struct iovec *iov, int iovcnt,
                           ksnap_error_t *error) {
  ksnap__s3_req_t req = {.method = "PUT", .key = fk, .iov = iov,
                         .iovcnt = iovcnt};
  uint64_t total = 0;
  ksnap_err_t err;

  for (int i = 0; i < iovcnt; i++)
    total += iov[i].iov_len;
  if (total > s3->part_size)
    return ksnap__s3_multipart_put(s3, fk, iov, iovcnt, total, error);
  err = ksnap__s3_run1(s3, &req, error);
  ksnap__s3_req_cleanup(&req);
  return err;
}

static ksnap_err_t s3_put(ksnap_storage_t *st, const char *key,
                          const struct iovec *iov, int iovcnt,
                          ksnap_error_t *error) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  WITH_KEY(s3, key, fk, error);
  ksnap_err_t err = put_one(s3, fk, iov, iovcnt, error);
  free(fk);
  return err;
}

static ksnap_err_t s3_put_many(ksnap_storage_t *st,
                               const ksnap__raw_item_t *items, size_t n,
                               ksnap_error_t *error) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  ksnap__s3_req_t *reqs = calloc(n ? n : 1, sizeof(*reqs));
  ksnap__s3_req_t **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
  char **keys = calloc(n ? n : 1, sizeof(*keys));
  size_t nsmall = 0;
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!reqs || !ptrs || !keys)
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n && !err; i++) {
    if (!(keys[i] = full_key(s3, items[i].key))) {
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    } else if (items[i].iov[0].iov_len + items[i].iov[1].iov_len >
               s3->part_size) {
      err = put_one(s3, keys[i], items[i].iov, 2, error); /* multipart */
    } else {
      ksnap__s3_req_t *req = &reqs[nsmall];
      req->method = "PUT";
      req->key = keys[i];
      req->iov = items[i].iov;
      req->iovcnt = 2;
      ptrs[nsmall++] = req;
    }
  }
  if (!err)
    err = ksnap__s3_run(s3, ptrs, nsmall, error);
  for (size_t i = 0; i < n; i++) {
    if (reqs)
      ksnap__s3_req_cleanup(&reqs[i]);
    if (keys)
      free(keys[i]);
  }
  free(reqs);
  free(ptrs);
  free(keys);
  return err;
}

static ksnap_err_t s3_get(ksnap_storage_t *st, const char *key,
                          const ksnap__sink_t *sink, ksnap_error_t *error) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  WITH_KEY(s3, key, fk, error);
  ksnap__s3_req_t req = {.method = "GET", .key = fk, .sink = sink};
  ksnap_err_t err = ksnap__s3_run1(s3, &req, error);
  ksnap__s3_req_cleanup(&req);
  free(fk);
  return err;
}

/* HEAD for the size, then an explicit byte range (s3rver 4.0.4 answers
 * the suffix range "bytes=-16" with bytes 0-16). */
static ksnap_err_t s3_get_many(ksnap_storage_t *st, const char *const *keys,
                               size_t n, const ksnap__sink_t *sinks,
                               ksnap_error_t *error) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  ksnap__s3_req_t *reqs = calloc(n ? n : 1, sizeof(*reqs));
  ksnap__s3_req_t **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
  char **fks = calloc(n ? n : 1, sizeof(*fks));
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!reqs || !ptrs || !fks)
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n && !err; i++) {
    if (!(fks[i] = full_key(s3, keys[i])))
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    reqs[i].method = "GET";
    reqs[i].key = fks[i];
    reqs[i].sink = &sinks[i];
    ptrs[i] = &reqs[i];
  }
  if (!err)
    err = ksnap__s3_run(s3, ptrs, n, error);
  for (size_t i = 0; i < n; i++) {
    if (reqs)
      ksnap__s3_req_cleanup(&reqs[i]);
    if (fks)
      free(fks[i]);
  }
  free(reqs);
  free(ptrs);
  free(fks);
  return err;
}

static ksnap_err_t s3_tail(ksnap_storage_t *st, const char *key,
                           uint64_t *size, uint8_t tail[16],
                           ksnap_error_t *error) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  WITH_KEY(s3, key, fk, error);
  ksnap__s3_req_t head = {.method = "HEAD", .key = fk};
  ksnap__s3_req_t req = {.method = "GET", .key = fk};
  char range[64];
  ksnap_err_t err = ksnap__s3_run1(s3, &head, error);

  *size = head.total_size;
  if (!err && *size > 0) {
    uint64_t from = *size > 16 ? *size - 16 : 0;
    snprintf(range, sizeof(range), "bytes=%llu-%llu",
             (unsigned long long)from, (unsigned long long)(*size - 1));
    req.range = range;
    err = ksnap__s3_run1(s3, &req, error);
    if (!err && req.body.len != *size - from) {
      char what[1200];
      ksnap__s3_what(s3, "GET", fk, what, sizeof(what));
      err = ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                            "%s: short ranged read (%zu bytes)", what,
                            req.body.len);
    }
    if (!err)
      memcpy(tail, req.body.data, req.body.len);
  }
  ksnap__s3_req_cleanup(&head);
  ksnap__s3_req_cleanup(&req);
  free(fk);
  return err;
}

typedef struct list_ctx_s {
  ksnap_storage_list_cb_t *cb;
  void *opaque;
  size_t strip;
} list_ctx_t;

static int list_page_cb(void *opaque, const char *key, uint64_t size) {
  list_ctx_t *ctx = opaque;
  return ctx->cb(ctx->opaque, key + ctx->strip, size);
}

static ksnap_err_t s3_list(ksnap_storage_t *st, const char *prefix,
                           ksnap_storage_list_cb_t *cb, void *opaque,
                           ksnap_error_t *error) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  WITH_KEY(s3, prefix, fp, error);
  list_ctx_t ctx = {cb, opaque, strlen(s3->prefix)};
  ksnap_buf_t token;
  ksnap_err_t err = KSNAP_ERR_OK;
  int truncated = 1;

  ksnap_buf_init(&token);
  while (!err && truncated) {
    const char *pairs[8] = {"encoding-type", "url", "list-type", "2",
                            "prefix", fp, "continuation-token",
                            (char *)token.data};
    ksnap__s3_req_t req = {.method = "GET", .op = "LIST", .what_key = fp};
    char what[1200];
    int rc;

    req.query = ksnap__s3_query(pairs, token.len ? 4 : 3);
    if (!req.query) {
      err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
      break;
    }
    err = ksnap__s3_run1(s3, &req, error);
    if (!err) {
      ksnap_buf_t next;
      ksnap_buf_init(&next);
      rc = ksnap__s3_parse_list((char *)req.body.data, req.body.len,
                                list_page_cb, &ctx, &truncated, &next);
      ksnap_buf_cleanup(&token);
      token = next;
      ksnap__s3_what(s3, "LIST", fp, what, sizeof(what));
      if (rc < 0)
        err = ksnap_error_set(error, KSNAP_ERR_HTTP,
                              "%s: malformed ListObjectsV2 response", what);
      else if (rc > 0)
        truncated = 0; /* the callback stopped */
    }
    free((char *)req.query);
    ksnap__s3_req_cleanup(&req);
  }
  ksnap_buf_cleanup(&token);
  free(fp);
  return err;
}

static ksnap_err_t s3_del(ksnap_storage_t *st, const char *key,
                          ksnap_error_t *error) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  WITH_KEY(s3, key, fk, error);
  ksnap__s3_req_t req = {.method = "DELETE", .key = fk};
  ksnap_err_t err = ksnap__s3_run1(s3, &req, error);
  if (err == KSNAP_ERR_NOT_FOUND) {
    err = KSNAP_ERR_OK;
    ksnap_error_clear(error);
  }
  ksnap__s3_req_cleanup(&req);
  free(fk);
  return err;
}

/* ---- streaming writer ---- */

static ksnap_err_t w_open(ksnap_storage_t *st, const char *key,
                          size_t head_len, ksnap__bwriter_t **out,
                          ksnap_error_t *error) {
  ksnap__bwriter_t *w = calloc(1, sizeof(*w));

  if (!w || !(w->key = full_key((ksnap__s3_t *)st, key))) {
    free(w);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  w->s3 = (ksnap__s3_t *)st;
  ksnap_buf_init(&w->buf);
  ksnap_buf_init(&w->first);
  w->head_len = head_len;
  w->next_part = head_len ? 2 : 1;
  if (head_len) {
    w->first_cap = head_len < MIN_PART_SIZE ? MIN_PART_SIZE : head_len;
    if (ksnap_buf_reserve(&w->first, head_len)) {
      free(w->key);
      free(w);
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    }
    memset(w->first.data, 0, head_len);
    w->first.len = head_len;
  }
  *out = w;
  return KSNAP_ERR_OK;
}

static ksnap_err_t w_flush(ksnap__bwriter_t *w, ksnap_error_t *error) {
  struct iovec iov = {w->buf.data, w->buf.len};
  ksnap_err_t err;

  if (!w->mpu && (err = ksnap__s3_mpu_begin(w->s3, w->key, &w->mpu, error)))
    return err;
  err = ksnap__s3_mpu_part(w->mpu, w->next_part++, &iov, 1, error);
  ksnap_buf_reset(&w->buf);
  return err;
}

static ksnap_err_t w_write(ksnap__bwriter_t *w, const void *data, size_t len,
                           ksnap_error_t *error) {
  const uint8_t *p = data;

  if (w->first.len < w->first_cap) {
    size_t n = KSNAP_MIN(len, w->first_cap - w->first.len);
    if (ksnap_buf_append(&w->first, p, n))
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    p += n;
    len -= n;
  }
  while (len) {
    size_t n;
    ksnap_err_t err;
    if (w->buf.len == w->s3->part_size && (err = w_flush(w, error)))
      return err;
    n = KSNAP_MIN(len, w->s3->part_size - w->buf.len);
    if (ksnap_buf_append(&w->buf, p, n))
      return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    p += n;
    len -= n;
  }
  return KSNAP_ERR_OK;
}

static ksnap_err_t w_head(ksnap__bwriter_t *w, const void *data, size_t len,
                          ksnap_error_t *error) {
  (void)error;
  memcpy(w->first.data, data, KSNAP_MIN(len, w->head_len));
  return KSNAP_ERR_OK;
}

static void w_free(ksnap__bwriter_t *w) {
  ksnap_buf_cleanup(&w->buf);
  ksnap_buf_cleanup(&w->first);
  free(w->key);
  free(w);
}

static void w_abort(ksnap__bwriter_t *w) {
  ksnap__s3_mpu_abort(w->mpu);
  w_free(w);
}

static ksnap_err_t w_commit(ksnap__bwriter_t *w, ksnap_error_t *error) {
  struct iovec first = {w->first.data, w->first.len};
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!w->mpu) { /* everything in memory: one object */
    struct iovec iov[2] = {first, {w->buf.data, w->buf.len}};
    err = put_one(w->s3, w->key, w->head_len ? iov : iov + 1,
                  w->head_len ? 2 : 1, error);
    w_free(w);
    return err;
  }
  if (w->buf.len)
    err = w_flush(w, error);
  if (!err && w->head_len)
    err = ksnap__s3_mpu_part(w->mpu, 1, &first, 1, error);
  if (err) {
    w_abort(w);
    return err;
  }
  err = ksnap__s3_mpu_complete(w->mpu, error); /* aborts on failure */
  w->mpu = NULL;
  w_free(w);
  return err;
}

/* Data bytes [off, off + len) with one ranged GET, into req.body (each
 * attempt starts over, so a retry cannot duplicate bytes). */
static ksnap_err_t s3_get_range(ksnap_storage_t *st, const char *key,
                                uint64_t off, size_t len, uint8_t *dst,
                                ksnap_error_t *error) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  WITH_KEY(s3, key, fk, error);
  ksnap__s3_req_t req = {.method = "GET", .key = fk};
  char range[64];
  uint64_t skip = 0;
  ksnap_err_t err;

  snprintf(range, sizeof(range), "bytes=%llu-%llu", (unsigned long long)off,
           (unsigned long long)(off + len - 1));
  req.range = range;
  err = ksnap__s3_run1(s3, &req, error);
  if (!err && req.status == 200)
    skip = off; /* the server sent the whole object */
  if (!err && (req.body.len < skip || req.body.len - skip < len)) {
    char what[1200];
    ksnap__s3_what(s3, "GET", fk, what, sizeof(what));
    err = ksnap_error_set(error, KSNAP_ERR_TRUNCATED,
                          "%s: short ranged read (%zu bytes of %zu at "
                          "%llu)", what, req.body.len, len,
                          (unsigned long long)off);
  }
  if (!err)
    memcpy(dst, req.body.data + skip, len);
  ksnap__s3_req_cleanup(&req);
  free(fk);
  return err;
}

/* ---- open / destroy ---- */

static void s3_destroy(ksnap_storage_t *st) {
  ksnap__s3_t *s3 = (ksnap__s3_t *)st;
  for (int i = 0; i < s3->npool; i++)
    curl_easy_cleanup(s3->pool[i]);
  if (s3->multi)
    curl_multi_cleanup(s3->multi);
  free(s3->pool);
  free(s3->bucket);
  free(s3->prefix);
  free(s3->base_url);
  free(s3->sigv4);
  free(s3->access_key);
  if (s3->secret_key) /* do not leave the secret in freed memory */
    memset(s3->secret_key, 0, strlen(s3->secret_key));
  free(s3->secret_key);
  free(s3->session_token);
  free(s3->ca_file);
  free(s3);
}

static const ksnap__storage_ops_t s3_ops = {
    .scheme = "s3",
    .destroy = s3_destroy,
    .put = s3_put,
    .put_many = s3_put_many,
    .get = s3_get,
    .get_many = s3_get_many,
    .get_range = s3_get_range,
    .tail = s3_tail,
    .list = s3_list,
    .del = s3_del,
    .w_open = w_open,
    .w_write = w_write,
    .w_head = w_head,
    .w_commit = w_commit,
    .w_abort = w_abort,
};

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

static int valid_bucket(const char *b, size_t n) {
  if (n < 3 || n > 63)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= '0' && b[i] <= '9') ||
          b[i] == '.' || b[i] == '-' || (b[i] >= 'A' && b[i] <= 'Z') ||
          b[i] == '_'))
      return 0;
  return 1;
}

char *ksnap__s3_base_url(const char *endpoint, const char *bucket,
                         int path_style) {
  ksnap_buf_t url;
  const char *host;
  size_t n = strlen(endpoint);

  ksnap_buf_init(&url);
  while (n && endpoint[n - 1] == '/')
    n--;
  host = strstr(endpoint, "://");
  host = host ? host + 3 : endpoint;
  if (path_style)
    ksnap_buf_appendf(&url, "%.*s/%s", (int)n, endpoint, bucket);
  else
    ksnap_buf_appendf(&url, "%.*s%s.%.*s", (int)(host - endpoint), endpoint,
                      bucket, (int)(n - (size_t)(host - endpoint)), host);
  return (char *)ksnap_buf_detach(&url, NULL);
}

ksnap_err_t ksnap__storage_s3_open(const char *url, const char *rest,
                                   const ksnap_storage_opts_t *opts,
                                   ksnap_storage_t **out,
                                   ksnap_error_t *error) {
  ksnap__s3_t *s3;
  const char *slash = strchr(rest, '/');
  size_t blen = slash ? (size_t)(slash - rest) : strlen(rest);
  const char *region = opts->region ? opts->region : "us-east-1";
  char endpoint[512];
  int path_style = opts->path_style;
  const char *prefix = slash ? slash + 1 : "";
  size_t plen = strlen(prefix);

  if (!valid_bucket(rest, blen))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: invalid bucket name \"%.*s\"", url, (int)blen,
                           rest);
  if (opts->part_size && opts->part_size < MIN_PART_SIZE)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: part size %zu is below the S3 minimum of "
                           "5 MiB", url, opts->part_size);
  if (opts->endpoint)
    snprintf(endpoint, sizeof(endpoint), "%s", opts->endpoint);
  else
    snprintf(endpoint, sizeof(endpoint), "https://s3.%s.amazonaws.com",
             region);
  if (path_style < 0)
    path_style = opts->endpoint != NULL || memchr(rest, '.', blen);
  if (!(s3 = calloc(1, sizeof(*s3))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  s3->base.ops = &s3_ops;
  s3->base.url = strdup(url);
  s3->bucket = strndup(rest, blen);
  while (plen && prefix[plen - 1] == '/')
    plen--;
  s3->prefix = malloc(plen + 2);
  if (s3->prefix)
    snprintf(s3->prefix, plen + 2, "%.*s%s", (int)plen, prefix,
             plen ? "/" : "");
  s3->path_style = path_style;
  s3->base_url = s3->bucket ? ksnap__s3_base_url(endpoint, s3->bucket,
                                                 path_style)
                            : NULL;
  s3->sigv4 = malloc(strlen(region) + 16);
  if (s3->sigv4)
    sprintf(s3->sigv4, "aws:amz:%s:s3", region);
  s3->access_key = dup_or_null(opts->access_key);
  s3->secret_key = dup_or_null(opts->secret_key);
  s3->session_token = dup_or_null(opts->session_token);
  s3->ca_file = dup_or_null(opts->ca_file);
  s3->tls_skip_verify = opts->tls_skip_verify;
  if (s3->tls_skip_verify && !strncmp(endpoint, "https://", 8))
    KSNAP_WARN("S3", "s3.tls.skip-verify=true: the certificate of %s is NOT "
               "verified; anyone on the path can read and change the "
               "checkpoints (use it for tests only)", endpoint);
  s3->part_size = opts->part_size ? opts->part_size
                                  : KSNAP_STORAGE_DEFAULT_PART_SIZE;
  s3->max_retries = opts->max_retries >= 0 ? opts->max_retries : 5;
  s3->connect_timeout_ms =
      opts->connect_timeout_ms > 0 ? opts->connect_timeout_ms : 5000;
  s3->request_timeout_ms =
      opts->request_timeout_ms > 0 ? opts->request_timeout_ms : 30000;
  s3->retry_deadline_ms =
      opts->retry_deadline_ms > 0 ? opts->retry_deadline_ms : 60000;
  s3->max_parallel = opts->max_parallel > 0 ? opts->max_parallel : 8;
  s3->pool = calloc((size_t)s3->max_parallel + 1, sizeof(*s3->pool));
  curl_global_init(CURL_GLOBAL_DEFAULT);
  s3->multi = curl_multi_init();
  if (!s3->base.url || !s3->bucket || !s3->prefix || !s3->base_url ||
      !s3->sigv4 || !s3->pool || !s3->multi ||
      (opts->access_key && !s3->access_key) ||
      (opts->secret_key && !s3->secret_key) ||
      (opts->session_token && !s3->session_token) ||
      (opts->ca_file && !s3->ca_file)) {
    ksnap_storage_destroy(&s3->base);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  curl_multi_setopt(s3->multi, CURLMOPT_MAX_HOST_CONNECTIONS,
                    (long)s3->max_parallel);
  *out = &s3->base;
  return KSNAP_ERR_OK;
}
