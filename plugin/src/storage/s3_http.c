/*
 * The S3 request engine: every request (one or a batch) runs on the
 * storage's curl multi handle, so connections are reused across calls and
 * batches run in parallel. Each request is retried on its own (5xx, 429,
 * timeouts, resets) with exponential backoff and jitter, bounded by
 * max_retries and the retry deadline; other 4xx fail at once. Also
 * libcurl's version (storage_version.h).
 * Owner: the thread using the storage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ksnap/log.h"
#include "s3.h"
#include "storage_version.h"
#include "base/util.h"

#define EMPTY_SHA256 \
  "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

ksnap__s3_verdict_t ksnap__s3_classify(CURLcode cc, long status) {
  switch (cc) {
  case CURLE_OK:
    break;
  case CURLE_COULDNT_RESOLVE_HOST:
  case CURLE_COULDNT_CONNECT:
  case CURLE_OPERATION_TIMEDOUT:
  case CURLE_SEND_ERROR:
  case CURLE_RECV_ERROR:
  case CURLE_GOT_NOTHING:
  case CURLE_SEND_FAIL_REWIND:
  case CURLE_PARTIAL_FILE:
  case CURLE_SSL_CONNECT_ERROR:
  case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM:
    return KSNAP__S3_RETRY;
  default:
    return KSNAP__S3_FAIL;
  }
  if (status >= 200 && status < 300)
    return KSNAP__S3_OK;
  if (status >= 500 || status == 429 || status == 408)
    return KSNAP__S3_RETRY;
  return KSNAP__S3_FAIL;
}

int ksnap__s3_backoff_ms(int attempt, int base_ms, int cap_ms, uint32_t rnd) {
  int64_t d = base_ms;

  for (int i = 1; i < attempt && d < cap_ms; i++)
    d *= 2;
  if (d > cap_ms)
    d = cap_ms;
  return (int)(d / 2 + rnd % (uint32_t)(d / 2 + 1));
}

/* ---- callbacks ---- */

static size_t on_read(char *buf, size_t size, size_t nmemb, void *ud) {
  ksnap__s3_req_t *req = ud;
  size_t room = size * nmemb, done = 0;

  while (done < room && req->iov_idx < (size_t)req->iovcnt) {
    const struct iovec *v = &req->iov[req->iov_idx];
    size_t n = KSNAP_MIN(room - done, v->iov_len - req->iov_off);
    memcpy(buf + done, (const char *)v->iov_base + req->iov_off, n);
    done += n;
    req->iov_off += n;
    if (req->iov_off == v->iov_len) {
      req->iov_idx++;
      req->iov_off = 0;
    }
  }
  return done;
}

/* Lets curl rewind the body (e.g. to resend on a fresh connection). */
static int on_seek(void *ud, curl_off_t offset, int origin) {
  ksnap__s3_req_t *req = ud;
  if (origin != SEEK_SET || offset < 0)
    return CURL_SEEKFUNC_CANTSEEK;
  req->iov_idx = req->iov_off = 0;
  while (req->iov_idx < (size_t)req->iovcnt &&
         (size_t)offset >= req->iov[req->iov_idx].iov_len) {
    offset -= (curl_off_t)req->iov[req->iov_idx].iov_len;
    req->iov_idx++;
  }
  if (req->iov_idx == (size_t)req->iovcnt && offset > 0)
    return CURL_SEEKFUNC_FAIL;
  req->iov_off = (size_t)offset;
  return CURL_SEEKFUNC_OK;
}

static int is_2xx(long status) { return status >= 200 && status < 300; }

static size_t on_write(char *data, size_t size, size_t nmemb, void *ud) {
  ksnap__s3_req_t *req = ud;
  size_t n = size * nmemb;
  long status = 0;

  curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
  if (is_2xx(status) && req->sink) {
    if (status == 200 && req->attempt_bytes < req->resume_from) {
      /* the server ignored our Range: skip what the sink already has */
      size_t skip = (size_t)KSNAP_MIN((uint64_t)n,
                                      req->resume_from - req->attempt_bytes);
      req->attempt_bytes += skip;
      data += skip;
      if (skip == n)
        return n;
      n -= skip;
      req->attempt_bytes += n;
      if (req->sink->write(req->sink->opaque, (uint8_t *)data, n)) {
        req->sink_failed = 1;
        return 0;
      }
      req->received += n;
      return size * nmemb;
    }
    req->attempt_bytes += n;
    if (req->sink->write(req->sink->opaque, (uint8_t *)data, n)) {
      req->sink_failed = 1;
      return 0;
    }
    req->received += n;
    return n;
  }
  return ksnap_buf_append(&req->body, data, n) ? 0 : n;
}

static size_t on_header(char *line, size_t size, size_t nmemb, void *ud) {
  ksnap__s3_req_t *req = ud;
  size_t n = size * nmemb;
  long status = 0;
  char value[160];
  const char *colon = memchr(line, ':', n);
  size_t vlen;

  if (!colon)
    return n;
  vlen = n - (size_t)(colon + 1 - line);
  snprintf(value, sizeof(value), "%.*s", (int)KSNAP_MIN(vlen, 159),
           colon + 1);
  value[strcspn(value, "\r\n")] = '\0';
  curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &status);
  if (!strncasecmp(line, "etag:", 5)) {
    snprintf(req->etag, sizeof(req->etag), "%s", value + strspn(value, " "));
  } else if (!strncasecmp(line, "content-range:", 14)) {
    const char *slash = strchr(value, '/');
    if (slash)
      req->total_size = strtoull(slash + 1, NULL, 10);
  } else if (!strncasecmp(line, "content-length:", 15) && is_2xx(status) &&
             !req->range) {
    req->total_size = strtoull(value, NULL, 10);
    if (req->sink && req->sink->expect && req->received == 0)
      req->sink->expect(req->sink->opaque, req->total_size);
  }
  return n;
}

/* ---- one attempt ---- */

static CURL *easy_get(ksnap__s3_t *s3) {
  if (s3->npool > 0) {
    CURL *easy = s3->pool[--s3->npool];
    curl_easy_reset(easy);
    return easy;
  }
  return curl_easy_init();
}

static void easy_put(ksnap__s3_t *s3, CURL *easy) {
  if (s3->npool < s3->max_parallel + 1)
    s3->pool[s3->npool++] = easy;
  else
    curl_easy_cleanup(easy);
}

static size_t body_len(const ksnap__s3_req_t *req) {
  size_t n = 0;
  for (int i = 0; i < req->iovcnt; i++)
    n += req->iov[i].iov_len;
  return n;
}

#define SMALL_BODY (64 * 1024)

/* Copies a small body into req->flat once (kept across attempts). */
static int flatten(ksnap__s3_req_t *req) {
  if (req->flat.len == body_len(req) && req->flat.data)
    return 0;
  ksnap_buf_reset(&req->flat);
  for (int i = 0; i < req->iovcnt; i++)
    if (ksnap_buf_append(&req->flat, req->iov[i].iov_base,
                         req->iov[i].iov_len))
      return -1;
  return 0;
}

static struct curl_slist *add_hdr(struct curl_slist *list, int *failed,
                                  const char *fmt, const char *value) {
  char line[2048];
  struct curl_slist *next;

  snprintf(line, sizeof(line), fmt, value);
  next = curl_slist_append(list, line);
  if (!next)
    *failed = 1;
  return next ? next : list;
}

static ksnap_err_t attempt_start(ksnap__s3_t *s3, ksnap__s3_req_t *req) {
  int body = req->iov != NULL, failed = 0;
  struct curl_slist *h = NULL;
  char *url;
  CURL *easy;

  if (!(easy = easy_get(s3)))
    return KSNAP_ERR_NOMEM;
  if (!(url = ksnap__s3_url(s3, req->key, req->query))) {
    easy_put(s3, easy);
    return KSNAP_ERR_NOMEM;
  }
  req->easy = easy;
  req->iov_idx = req->iov_off = 0;
  req->status = 0;
  req->etag[0] = '\0';
  req->resume_from = req->range ? 0 : req->received;
  req->attempt_bytes = 0;
  ksnap_buf_reset(&req->body);
  curl_easy_setopt(easy, CURLOPT_URL, url);
  free(url);
  ksnap__s3_setup_auth(s3, easy);
  curl_easy_setopt(easy, CURLOPT_PRIVATE, req);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, req);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, req);
  h = add_hdr(h, &failed, "x-amz-content-sha256: %s",
              body ? "UNSIGNED-PAYLOAD" : EMPTY_SHA256);
  if (s3->session_token)
    h = add_hdr(h, &failed, "x-amz-security-token: %s", s3->session_token);
  if (req->range) {
    h = add_hdr(h, &failed, "Range: %s", req->range);
  } else if (req->received > 0) {
    /* resume a streamed GET where the previous attempt stopped */
    snprintf(req->range_buf, sizeof(req->range_buf), "bytes=%llu-",
             (unsigned long long)req->received);
    h = add_hdr(h, &failed, "Range: %s", req->range_buf);
  }
  if (body) {
    h = add_hdr(h, &failed, "Content-Type: %s",
                req->content_type ? req->content_type
                                  : "application/octet-stream");
    /* POST mode: no Expect: 100-continue below 1 MiB (curl 7.88); above,
     * Expect is sent but not waited for (EXPECT_100_TIMEOUT_MS 0) */
    curl_easy_setopt(easy, CURLOPT_POST, 1L);
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                     (curl_off_t)body_len(req));
    if (body_len(req) <= SMALL_BODY && !flatten(req)) {
      /* small: one contiguous buffer, sent with the headers */
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS,
                       req->flat.data ? (char *)req->flat.data : "");
    } else {
      curl_easy_setopt(easy, CURLOPT_READFUNCTION, on_read);
      curl_easy_setopt(easy, CURLOPT_READDATA, req);
      curl_easy_setopt(easy, CURLOPT_SEEKFUNCTION, on_seek);
      curl_easy_setopt(easy, CURLOPT_SEEKDATA, req);
    }
  }
  if (!strcmp(req->method, "HEAD"))
    curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
  else if (strcmp(req->method, "GET") && strcmp(req->method, "POST"))
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, req->method);
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, h);
  req->headers = h;
  if (failed || curl_multi_add_handle(s3->multi, easy) != CURLM_OK) {
    curl_slist_free_all(h);
    req->headers = NULL;
    req->easy = NULL;
    easy_put(s3, easy);
    return KSNAP_ERR_NOMEM;
  }
  s3->base.requests++;
  req->attempt++;
  req->in_flight = 1;
  if (!req->first_us)
    req->first_us = ksnap__now_us();
  return KSNAP_ERR_OK;
}

static ksnap_err_t curl_error(ksnap__s3_req_t *req, CURLcode cc,
                              const char *what) {
  ksnap_err_t code = KSNAP_ERR_IO;

  if (cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST)
    code = KSNAP_ERR_CONNECT;
  else if (cc == CURLE_OPERATION_TIMEDOUT)
    code = KSNAP_ERR_TIMEOUT;
  else if (cc == CURLE_PEER_FAILED_VERIFICATION || cc == CURLE_SSL_CACERT_BADFILE)
    return ksnap_error_set(&req->error, KSNAP_ERR_TLS,
                           "%s: the S3 endpoint's TLS certificate is not "
                           "trusted: %s (s3.ca-file names the CA to trust)",
                           what, curl_easy_strerror(cc));
  return ksnap_error_set(&req->error, code, "%s: %s (after %d attempt%s)",
                         what, curl_easy_strerror(cc), req->attempt,
                         req->attempt == 1 ? "" : "s");
}

/* An attempt finished: decide done / retry / fail. */
static void attempt_finish(ksnap__s3_t *s3, ksnap__s3_req_t *req,
                           CURLcode cc) {
  ksnap__s3_verdict_t v;
  char what[1200];
  int64_t now = ksnap__now_us();

  curl_easy_getinfo(req->easy, CURLINFO_RESPONSE_CODE, &req->status);
  curl_multi_remove_handle(s3->multi, req->easy);
  easy_put(s3, req->easy);
  req->easy = NULL;
  curl_slist_free_all(req->headers);
  req->headers = NULL;
  req->in_flight = 0;
  ksnap__s3_what(s3, req->op ? req->op : req->method,
                 req->what_key ? req->what_key : req->key, what, sizeof(what));
  if (req->sink_failed) {
    req->done = 1;
    ksnap_error_set(&req->error, KSNAP_ERR_INTERRUPTED,
                    "%s: read stopped by the caller", what);
    return;
  }
  v = ksnap__s3_classify(cc, req->status);
  if (v == KSNAP__S3_OK) {
    req->done = 1;
    ksnap_error_clear(&req->error);
    return;
  }
  if (cc != CURLE_OK)
    curl_error(req, cc, what);
  else
    ksnap__s3_error_from_body((char *)req->body.data, req->body.len,
                              req->status, what, &req->error);
  if (v == KSNAP__S3_RETRY) {
    int delay = ksnap__s3_backoff_ms(req->attempt, 100, 5000,
                                     (uint32_t)random());
    if (req->attempt <= s3->max_retries &&
        now + (int64_t)delay * 1000 - req->first_us <=
            (int64_t)s3->retry_deadline_ms * 1000) {
      KSNAP_DBG(STORAGE, "S3", "%s: attempt %d failed (%s), retrying in %d ms",
                what, req->attempt, req->error.msg, delay);
      req->not_before_us = now + (int64_t)delay * 1000;
      return;
    }
    req->error.retriable = 1;
  }
  req->done = 1;
}

static int waiting(const ksnap__s3_req_t *req) {
  return !req->done && !req->in_flight && req->attempt > 0;
}

ksnap_err_t ksnap__s3_run(ksnap__s3_t *s3, ksnap__s3_req_t **reqs, size_t n,
                          ksnap_error_t *error) {
  size_t next = 0;
  int active = 0;
  ksnap__s3_req_t *failed = NULL;

  for (size_t i = 0; i < n; i++)
    reqs[i]->s3 = s3;
  for (;;) {
    int64_t now = ksnap__now_us(), wake = now + 100000;
    int pending = 0, running;
    CURLMsg *msg;

    for (size_t i = 0; i < next; i++) {
      ksnap__s3_req_t *req = reqs[i];
      if (!waiting(req))
        continue;
      if (failed) {
        req->done = 1;
        continue;
      }
      if (req->not_before_us <= now && active < s3->max_parallel) {
        if (attempt_start(s3, req))
          goto nomem;
        active++;
      } else {
        pending = 1;
        wake = KSNAP_MIN(wake, req->not_before_us);
      }
    }
    while (!failed && next < n && active < s3->max_parallel) {
      if (attempt_start(s3, reqs[next]))
        goto nomem;
      next++;
      active++;
    }
    if (active == 0 && !pending)
      break;
    curl_multi_perform(s3->multi, &running);
    while ((msg = curl_multi_info_read(s3->multi, &running))) {
      ksnap__s3_req_t *req = NULL;
      if (msg->msg != CURLMSG_DONE)
        continue;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&req);
      attempt_finish(s3, req, msg->data.result);
      active--;
      if (req->done && req->error.code && !failed)
        failed = req;
    }
    if (active > 0 || pending) {
      int64_t ms = (wake - ksnap__now_us()) / 1000;
      curl_multi_poll(s3->multi, NULL, 0, (int)KSNAP_MAX(0, ms), NULL);
    }
  }
  if (failed) {
    if (error)
      *error = failed->error;
    return failed->error.code;
  }
  return KSNAP_ERR_OK;

nomem:
  /* let in-flight transfers go; remove them */
  for (size_t i = 0; i < n; i++) {
    ksnap__s3_req_t *req = reqs[i];
    if (req->in_flight) {
      curl_multi_remove_handle(s3->multi, req->easy);
      easy_put(s3, req->easy);
      curl_slist_free_all(req->headers);
      req->headers = NULL;
      req->easy = NULL;
      req->in_flight = 0;
    }
  }
  return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
}

ksnap_err_t ksnap__s3_run1(ksnap__s3_t *s3, ksnap__s3_req_t *req,
                           ksnap_error_t *error) {
  return ksnap__s3_run(s3, &req, 1, error);
}

void ksnap__s3_req_cleanup(ksnap__s3_req_t *req) {
  ksnap_buf_cleanup(&req->body);
  ksnap_buf_cleanup(&req->flat);
  curl_slist_free_all(req->headers);
  req->headers = NULL;
}

const char *ksnap__storage_curl_version(void) {
  return curl_version_info(CURLVERSION_NOW)->version;
}
