/* The coordinator's HTTP status endpoint (coord_rest.h) on a free port. */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "driver/coord_rest.h"
#include "ksnap/buf.h"
#include "testutil.h"

static size_t collect(char *ptr, size_t size, size_t n, void *opaque) {
  ksnap_buf_append(opaque, ptr, size * n);
  return size * n;
}

/* @returns the status of METHOD http://127.0.0.1:PORT/PATH; body in out. */
static long request(int port, const char *method, const char *path,
                    ksnap_buf_t *out, char *type, size_t type_size) {
  CURL *h = curl_easy_init();
  char url[256];
  char *ct = NULL;
  long status = 0;

  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  ksnap_buf_reset(out);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(h, CURLINFO_CONTENT_TYPE, &ct);
  snprintf(type, type_size, "%s", ct ? ct : "");
  curl_easy_cleanup(h);
  return status;
}

START_TEST(serves_the_published_documents) {
  ksnap_error_t error;
  ksnap__rest_t *rest = ksnap__rest_start("127.0.0.1", 0, &error);
  ksnap_buf_t body;
  char type[128];
  int port;

  ck_assert_msg(rest != NULL, "%s", error.msg);
  port = ksnap__rest_port(rest);
  ck_assert_int_gt(port, 0);
  ksnap_buf_init(&body);
  ck_assert_int_eq(request(port, "GET", "/checkpoints", &body, type,
                           sizeof(type)), 200);
  ck_assert_str_eq((char *)body.data, "{}");
  ksnap__rest_publish(rest, "{\"counts\": 1}", "m_total 3\n");
  ck_assert_int_eq(request(port, "GET", "/checkpoints", &body, type,
                           sizeof(type)), 200);
  ck_assert_str_eq((char *)body.data, "{\"counts\": 1}");
  ck_assert_str_eq(type, "application/json");
  ck_assert_int_eq(request(port, "GET", "/metrics", &body, type,
                           sizeof(type)), 200);
  ck_assert_str_eq((char *)body.data, "m_total 3\n");
  ck_assert_str_eq(type, "text/plain; version=0.0.4");
  ck_assert_int_eq(request(port, "GET", "/other", &body, type,
                           sizeof(type)), 404);
  ck_assert_int_eq(request(port, "POST", "/metrics", &body, type,
                           sizeof(type)), 405);
  ksnap_buf_cleanup(&body);
  ksnap__rest_stop(rest);
}
END_TEST

START_TEST(bad_address_and_busy_port_are_errors) {
  ksnap_error_t error;
  ksnap__rest_t *a, *b;

  ck_assert_ptr_null(ksnap__rest_start("localhost", 0, &error));
  ck_assert_int_eq(error.code, KSNAP_ERR_INVALID_ARG);
  ck_assert_str_eq(error.msg,
                   "rest.address \"localhost\" is not an IPv4 address");
  ck_assert_ptr_nonnull(a = ksnap__rest_start("127.0.0.1", 0, &error));
  b = ksnap__rest_start("127.0.0.1", ksnap__rest_port(a), &error);
  ck_assert_ptr_null(b);
  ck_assert_int_eq(error.code, KSNAP_ERR_IO);
  ck_assert_ptr_nonnull(strstr(error.msg, "cannot listen on 127.0.0.1:"));
  ksnap__rest_stop(a);
  ksnap__rest_stop(NULL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("coord_rest");
  TCase *tc = tcase_create("rest");

  tcase_add_test(tc, serves_the_published_documents);
  tcase_add_test(tc, bad_address_and_busy_port_are_errors);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
