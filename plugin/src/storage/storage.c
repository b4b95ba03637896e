/*
 * Storage dispatch (see ksnap/storage.h): URL -> backend vtable, key
 * checks, and the integrity trailer added on writes and verified on reads.
 * Owner: the thread using the ksnap_storage_t.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/checksum.h"
#include "storage_int.h"

void ksnap_storage_opts_init(ksnap_storage_opts_t *opts) {
  memset(opts, 0, sizeof(*opts));
  opts->path_style = -1;
  opts->max_retries = -1;
}

static const char *env_or(const char *cur, const char *name) {
  const char *v;
  if (cur)
    return cur;
  v = getenv(name);
  return v && *v ? v : NULL;
}

void ksnap_storage_opts_from_env(ksnap_storage_opts_t *opts) {
  opts->access_key = env_or(opts->access_key, "AWS_ACCESS_KEY_ID");
  opts->secret_key = env_or(opts->secret_key, "AWS_SECRET_ACCESS_KEY");
  opts->session_token = env_or(opts->session_token, "AWS_SESSION_TOKEN");
  opts->region = env_or(opts->region, "AWS_REGION");
  opts->region = env_or(opts->region, "AWS_DEFAULT_REGION");
  opts->endpoint = env_or(opts->endpoint, "AWS_ENDPOINT_URL_S3");
  opts->endpoint = env_or(opts->endpoint, "AWS_ENDPOINT_URL");
  opts->ca_file = env_or(opts->ca_file, "AWS_CA_BUNDLE");
}

ksnap_err_t ksnap_storage_open(const char *url,
                               const ksnap_storage_opts_t *opts,
                               ksnap_storage_t **out, ksnap_error_t *error) {
  ksnap_storage_opts_t defaults;

  *out = NULL;
  if (!url || !*url)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "storage URL is empty");
  if (!opts) {
    ksnap_storage_opts_init(&defaults);
    opts = &defaults;
  }
  if (!strncmp(url, "s3://", 5))
    return ksnap__storage_s3_open(url, url + 5, opts, out, error);
  if (!strncmp(url, "file://", 7)) {
    if (url[7] != '/')
      return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                             "%s: file URL must be file:///absolute/path",
                             url);
    return ksnap__storage_file_open(url, url + 7, out, error);
  }
  if (strstr(url, "://"))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: unsupported storage URL scheme (use s3:// "
                           "or file://)", url);
  return ksnap__storage_file_open(url, url, out, error);
}

ksnap_err_t ksnap__storage_check_key(const ksnap_storage_t *st,
                                     const char *key, int allow_empty,
                                     ksnap_error_t *error) {
  const char *seg = key;

  if (!key || (!*key && !allow_empty))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: empty object key", st->url);
  if (!*key)
    return KSNAP_ERR_OK;
  if (key[0] == '/')
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: key \"%s\" starts with '/'", st->url, key);
  for (;;) {
    const char *end = strchr(seg, '/');
    size_t n = end ? (size_t)(end - seg) : strlen(seg);
    if ((n == 1 && seg[0] == '.') || (n == 2 && !memcmp(seg, "..", 2)) ||
        n == 0)
      return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                             "%s: key \"%s\" has an empty, \".\" or \"..\" "
                             "segment", st->url, key);
    if (!end)
      return KSNAP_ERR_OK;
    seg = end + 1;
  }
}

ksnap_err_t ksnap_storage_put(ksnap_storage_t *st, const char *key,
                              const void *data, size_t len,
                              ksnap_error_t *error) {
  uint8_t trailer[KSNAP__TRAILER_SIZE];
  struct iovec iov[2];

  if (ksnap__storage_check_key(st, key, 0, error))
    return error ? error->code : KSNAP_ERR_INVALID_ARG;
  ksnap__trailer_encode(trailer, ksnap__crc32c(0, data, len), len);
  iov[0].iov_base = (void *)data;
  iov[0].iov_len = len;
  iov[1].iov_base = trailer;
  iov[1].iov_len = sizeof(trailer);
  return st->ops->put(st, key, iov, 2, error);
}

ksnap_err_t ksnap_storage_put_many(ksnap_storage_t *st,
                                   const ksnap_storage_item_t *items,
                                   size_t n, ksnap_error_t *error) {
  ksnap__raw_item_t *raw;
  uint8_t *trailers;
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!st->ops->put_many) {
    for (size_t i = 0; i < n && !err; i++)
      err = ksnap_storage_put(st, items[i].key, items[i].data, items[i].len,
                              error);
    return err;
  }
  for (size_t i = 0; i < n; i++)
    if (ksnap__storage_check_key(st, items[i].key, 0, error))
      return error ? error->code : KSNAP_ERR_INVALID_ARG;
  raw = calloc(n ? n : 1, sizeof(*raw));
  trailers = malloc((n ? n : 1) * KSNAP__TRAILER_SIZE);
  if (!raw || !trailers) {
    free(raw);
    free(trailers);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++) {
    uint8_t *t = trailers + i * KSNAP__TRAILER_SIZE;
    ksnap__trailer_encode(t, ksnap__crc32c(0, items[i].data, items[i].len),
                          items[i].len);
    raw[i].key = items[i].key;
    raw[i].iov[0].iov_base = (void *)items[i].data;
    raw[i].iov[0].iov_len = items[i].len;
    raw[i].iov[1].iov_base = t;
    raw[i].iov[1].iov_len = KSNAP__TRAILER_SIZE;
  }
  err = st->ops->put_many(st, raw, n, error);
  free(raw);
  free(trailers);
  return err;
}

ksnap_err_t ksnap__storage_put_raw(ksnap_storage_t *st, const char *key,
                                   const void *data, size_t len,
                                   ksnap_error_t *error) {
  struct iovec iov = {(void *)data, len};
  return st->ops->put(st, key, &iov, 1, error);
}

/* ---- reads ---- */

static int buf_write(void *opaque, const uint8_t *data, size_t len) {
  return ksnap_buf_append(opaque, data, len) ? -1 : 0;
}

static void buf_expect(void *opaque, uint64_t stored_len) {
  ksnap_buf_reserve(opaque, (size_t)stored_len);
}

ksnap_err_t ksnap__storage_get_raw(ksnap_storage_t *st, const char *key,
                                   ksnap_buf_t *out, ksnap_error_t *error) {
  ksnap__sink_t sink = {buf_write, buf_expect, out};
  return st->ops->get(st, key, &sink, error);
}

ksnap_err_t ksnap_storage_get(ksnap_storage_t *st, const char *key,
                              ksnap_buf_t *out, ksnap_error_t *error) {
  size_t start = out->len;
  ksnap_err_t err;

  if (ksnap__storage_check_key(st, key, 0, error))
    return error ? error->code : KSNAP_ERR_INVALID_ARG;
  err = ksnap__storage_get_raw(st, key, out, error);
  if (!err) {
    char what[1024];
    snprintf(what, sizeof(what), "%s/%s", st->url, key);
    err = ksnap__trailer_verify(out->data ? out->data + start : NULL,
                                out->len - start, what, error);
  }
  if (err) {
    out->len = start;
  } else {
    out->len -= KSNAP__TRAILER_SIZE;
  }
  if (out->data)
    out->data[out->len] = '\0';
  return err;
}

ksnap_err_t ksnap_storage_get_many(ksnap_storage_t *st,
                                   const char *const *keys, size_t n,
                                   ksnap_buf_t *outs, ksnap_error_t *error) {
  ksnap__sink_t *sinks;
  size_t *starts;
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!st->ops->get_many) {
    for (size_t i = 0; i < n && !err; i++)
      err = ksnap_storage_get(st, keys[i], &outs[i], error);
    return err;
  }
  for (size_t i = 0; i < n; i++)
    if (ksnap__storage_check_key(st, keys[i], 0, error))
      return error ? error->code : KSNAP_ERR_INVALID_ARG;
  sinks = calloc(n ? n : 1, sizeof(*sinks));
  starts = calloc(n ? n : 1, sizeof(*starts));
  if (!sinks || !starts)
    err = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n && !err; i++) {
    sinks[i].write = buf_write;
    sinks[i].expect = buf_expect;
    sinks[i].opaque = &outs[i];
    starts[i] = outs[i].len;
  }
  if (!err)
    err = st->ops->get_many(st, keys, n, sinks, error);
  for (size_t i = 0; i < n && !err; i++) {
    char what[1024];
    snprintf(what, sizeof(what), "%s/%s", st->url, keys[i]);
    err = ksnap__trailer_verify(outs[i].data ? outs[i].data + starts[i]
                                             : NULL,
                                outs[i].len - starts[i], what, error);
    if (!err) {
      outs[i].len -= KSNAP__TRAILER_SIZE;
      outs[i].data[outs[i].len] = '\0';
    }
  }
  free(sinks);
  free(starts);
  return err;
}

/* Streaming: hold back the last 16 bytes (the trailer candidate). */
typedef struct stream_s {
  ksnap_storage_read_cb_t *cb;
  void *opaque;
  uint8_t held[KSNAP__TRAILER_SIZE];
  size_t nheld;
  uint64_t total;
  uint32_t crc;
  int stopped;
} stream_t;

static int stream_deliver(stream_t *s, const uint8_t *p, size_t n) {
  if (!n)
    return 0;
  s->crc = ksnap__crc32c(s->crc, p, n);
  if (s->cb(s->opaque, p, n)) {
    s->stopped = 1;
    return -1;
  }
  return 0;
}

static int stream_write(void *opaque, const uint8_t *data, size_t len) {
  stream_t *s = opaque;
  size_t keep;

  s->total += len;
  if (s->nheld + len <= KSNAP__TRAILER_SIZE) {
    memcpy(s->held + s->nheld, data, len);
    s->nheld += len;
    return 0;
  }
  /* Deliver all but the last 16 bytes of held+data. */
  keep = KSNAP__TRAILER_SIZE;
  if (len >= keep) {
    if (stream_deliver(s, s->held, s->nheld) ||
        stream_deliver(s, data, len - keep))
      return -1;
    memcpy(s->held, data + len - keep, keep);
  } else {
    size_t out = s->nheld + len - keep; /* from held */
    if (stream_deliver(s, s->held, out))
      return -1;
    memmove(s->held, s->held + out, s->nheld - out);
    memcpy(s->held + s->nheld - out, data, len);
  }
  s->nheld = keep;
  return 0;
}

ksnap_err_t ksnap_storage_get_stream(ksnap_storage_t *st, const char *key,
                                     ksnap_storage_read_cb_t *cb,
                                     void *opaque, ksnap_error_t *error) {
  stream_t s = {.cb = cb, .opaque = opaque};
  ksnap__sink_t sink = {stream_write, NULL, &s};
  char what[1024];
  uint32_t want;
  ksnap_err_t err;

  if (ksnap__storage_check_key(st, key, 0, error))
    return error ? error->code : KSNAP_ERR_INVALID_ARG;
  snprintf(what, sizeof(what), "%s/%s", st->url, key);
  err = st->ops->get(st, key, &sink, error);
  if (s.stopped)
    return ksnap_error_set(error, KSNAP_ERR_INTERRUPTED,
                           "%s: read stopped by the callback", what);
  if (err)
    return err;
  err = ksnap__trailer_decode(s.held, s.total, &want, NULL, what, error);
  if (err)
    return err;
  if (s.crc != want)
    return ksnap_error_set(error, KSNAP_ERR_CHECKSUM,
                           "%s: checksum mismatch (crc32c %08x, expected "
                           "%08x)", what, s.crc, want);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_storage_read_range(ksnap_storage_t *st, const char *key,
                                     uint64_t off, size_t len, void *dst,
                                     ksnap_error_t *error) {
  if (ksnap__storage_check_key(st, key, 0, error))
    return error ? error->code : KSNAP_ERR_INVALID_ARG;
  if (!len)
    return KSNAP_ERR_OK;
  return st->ops->get_range(st, key, off, len, dst, error);
}

ksnap_err_t ksnap_storage_head(ksnap_storage_t *st, const char *key,
                               ksnap_storage_stat_t *stat,
                               ksnap_error_t *error) {
  uint8_t tail[KSNAP__TRAILER_SIZE];
  uint64_t size = 0, len = 0;
  char what[1024];
  ksnap_err_t err;

  if (ksnap__storage_check_key(st, key, 0, error))
    return error ? error->code : KSNAP_ERR_INVALID_ARG;
  err = st->ops->tail(st, key, &size, tail, error);
  if (err)
    return err;
  snprintf(what, sizeof(what), "%s/%s", st->url, key);
  err = ksnap__trailer_decode(tail, size, &stat->crc32c, &len, what, error);
  stat->size = len;
  return err;
}

static int probe_first(void *opaque, const char *key, uint64_t size) {
  (void)opaque;
  (void)key;
  (void)size;
  return 1; /* one key is answer enough */
}

ksnap_err_t ksnap_storage_probe(ksnap_storage_t *st, const char *prefix,
                                ksnap_error_t *error) {
  ksnap_error_t e;
  ksnap_err_t err = ksnap_storage_list(st, prefix, probe_first, NULL, &e);

  if (err != KSNAP_ERR_ACCESS_DENIED && err != KSNAP_ERR_TLS &&
      err != KSNAP_ERR_NO_SUCH_BUCKET)
    return KSNAP_ERR_OK;
  return ksnap_error_set(error, err, "checkpoint storage: %s", e.msg);
}

typedef struct list_ctx_s {
  ksnap_storage_list_cb_t *cb;
  void *opaque;
} list_ctx_t;

static int list_strip(void *opaque, const char *key, uint64_t size) {
  list_ctx_t *ctx = opaque;
  return ctx->cb(ctx->opaque, key,
                 size >= KSNAP__TRAILER_SIZE ? size - KSNAP__TRAILER_SIZE : 0);
}

ksnap_err_t ksnap_storage_list(ksnap_storage_t *st, const char *prefix,
                               ksnap_storage_list_cb_t *cb, void *opaque,
                               ksnap_error_t *error) {
  list_ctx_t ctx = {cb, opaque};
  if (!prefix)
    prefix = "";
  if (prefix[0] == '/')
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: prefix \"%s\" starts with '/'", st->url,
                           prefix);
  return st->ops->list(st, prefix, list_strip, &ctx, error);
}

ksnap_err_t ksnap_storage_delete(ksnap_storage_t *st, const char *key,
                                 ksnap_error_t *error) {
  if (ksnap__storage_check_key(st, key, 0, error))
    return error ? error->code : KSNAP_ERR_INVALID_ARG;
  return st->ops->del(st, key, error);
}
