/*
 * S3 request signing helpers. libcurl 7.88 signs (CURLOPT_AWS_SIGV4) the
 * path and query exactly as written, so this file writes them the way
 * AWS canonicalises them: keys URI-encoded with '/' kept, query names and
 * values encoded and sorted, "name=" for empty values.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "s3.h"

static int unreserved(unsigned char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
         (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.' ||
         c == '~';
}

ksnap_err_t ksnap__s3_uri_encode(ksnap_buf_t *out, const char *s,
                                 int keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(s);

  if (ksnap_buf_reserve(out, n * 3))
    return KSNAP_ERR_NOMEM;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (unreserved(*p) || (keep_slash && *p == '/')) {
      out->data[out->len++] = *p;
    } else {
      out->data[out->len++] = '%';
      out->data[out->len++] = hex[*p >> 4];
      out->data[out->len++] = hex[*p & 15];
    }
  }
  out->data[out->len] = '\0';
  return KSNAP_ERR_OK;
}

/* Orders encoded "name=value" strings by name, then by value. */
static int cmp_pair(const void *a, const void *b) {
  const char *x = *(char *const *)a, *y = *(char *const *)b;
  size_t nx = strcspn(x, "="), ny = strcspn(y, "=");
  int c = memcmp(x, y, nx < ny ? nx : ny);

  if (c)
    return c;
  if (nx != ny)
    return nx < ny ? -1 : 1;
  return strcmp(x + nx, y + ny);
}

char *ksnap__s3_query(const char *const *pairs, size_t n) {
  char **enc = calloc(n ? n : 1, sizeof(*enc));
  ksnap_buf_t out, one;
  int failed = 0;

  if (!enc)
    return NULL;
  ksnap_buf_init(&out);
  ksnap_buf_init(&one);
  for (size_t i = 0; i < n && !failed; i++) {
    ksnap_buf_reset(&one);
    failed = ksnap__s3_uri_encode(&one, pairs[2 * i], 0) ||
             ksnap_buf_append(&one, "=", 1) ||
             ksnap__s3_uri_encode(&one, pairs[2 * i + 1] ? pairs[2 * i + 1]
                                                         : "", 0) ||
             !(enc[i] = strdup((char *)one.data));
  }
  if (!failed)
    qsort(enc, n, sizeof(*enc), cmp_pair);
  for (size_t i = 0; i < n && !failed; i++)
    failed = (i && ksnap_buf_append(&out, "&", 1)) ||
             ksnap_buf_append(&out, enc[i], strlen(enc[i]));
  if (!failed && ksnap_buf_reserve(&out, 0))
    failed = 1;
  for (size_t i = 0; i < n; i++)
    free(enc[i]);
  free(enc);
  ksnap_buf_cleanup(&one);
  if (failed) {
    ksnap_buf_cleanup(&out);
    return NULL;
  }
  return (char *)ksnap_buf_detach(&out, NULL);
}

char *ksnap__s3_url(const ksnap__s3_t *s3, const char *key,
                    const char *query) {
  ksnap_buf_t url;
  int failed;

  ksnap_buf_init(&url);
  failed = ksnap_buf_append(&url, s3->base_url, strlen(s3->base_url)) ||
           /* the bucket itself: "/bucket" path-style, "/" virtual-host */
           ((key || !s3->path_style) && ksnap_buf_append(&url, "/", 1)) ||
           (key && ksnap__s3_uri_encode(&url, key, 1)) ||
           (query && *query &&
            ksnap_buf_appendf(&url, "?%s", query));
  if (failed) {
    ksnap_buf_cleanup(&url);
    return NULL;
  }
  return (char *)ksnap_buf_detach(&url, NULL);
}

void ksnap__s3_setup_auth(const ksnap__s3_t *s3, CURL *easy) {
  if (s3->access_key && s3->secret_key) {
    curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, s3->sigv4);
    curl_easy_setopt(easy, CURLOPT_USERNAME, s3->access_key);
    curl_easy_setopt(easy, CURLOPT_PASSWORD, s3->secret_key);
  }
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                   (long)s3->connect_timeout_ms);
  /* a stalled transfer: < 1 byte/s for request_timeout */
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME,
                   (long)((s3->request_timeout_ms + 999) / 1000));
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_TCP_NODELAY, 1L);
  curl_easy_setopt(easy, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
  if (s3->ca_file)
    curl_easy_setopt(easy, CURLOPT_CAINFO, s3->ca_file);
  if (s3->tls_skip_verify) {
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, 0L);
  }
}

void ksnap__s3_what(const ksnap__s3_t *s3, const char *method,
                    const char *key, char *out, size_t size) {
  snprintf(out, size, "%s s3://%s/%s", method, s3->bucket, key ? key : "");
}
