/* The coordinator's HTTP status endpoint (coord_rest.h) on a free port,
 * and the dashboard page it serves (coord_dashboard.h). */
#include <check.h>
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "driver/coord_dashboard.h"
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

static size_t header_line(char *ptr, size_t size, size_t n, void *opaque) {
  ksnap_buf_append(opaque, ptr, size * n);
  return size * n;
}

/* The response headers of GET http://127.0.0.1:PORT/PATH. */
static void headers_of(int port, const char *path, ksnap_buf_t *out) {
  CURL *h = curl_easy_init();
  char url[256];

  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
  ksnap_buf_reset(out);
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_line);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, out);
  curl_easy_setopt(h, CURLOPT_TIMEOUT, 10L);
  ck_assert_int_eq(curl_easy_perform(h), CURLE_OK);
  curl_easy_cleanup(h);
  ksnap_buf_append(out, "", 1);
}

/* GET / and /dashboard: the page, as HTML that may load nothing but its
 * own inline script and this server's JSON. */
START_TEST(serves_the_dashboard) {
  ksnap_error_t error;
  ksnap__rest_t *rest = ksnap__rest_start("127.0.0.1", 0, &error);
  ksnap_buf_t body;
  char type[128];
  int port;

  ck_assert_msg(rest != NULL, "%s", error.msg);
  port = ksnap__rest_port(rest);
  ksnap_buf_init(&body);
  ck_assert_int_eq(request(port, "GET", "/", &body, type, sizeof(type)),
                   200);
  ck_assert_str_eq(type, "text/html; charset=utf-8");
  ck_assert_str_eq((char *)body.data, ksnap__dashboard_html);
  ck_assert_int_eq(request(port, "GET", "/dashboard", &body, type,
                           sizeof(type)), 200);
  ck_assert_str_eq((char *)body.data, ksnap__dashboard_html);
  headers_of(port, "/", &body);
  ck_assert_ptr_nonnull(strstr((char *)body.data,
                               "Content-Security-Policy: default-src 'none'; "
                               "script-src 'unsafe-inline'; "));
  ck_assert_ptr_nonnull(strstr((char *)body.data, "connect-src 'self'"));
  ck_assert_ptr_nonnull(strstr((char *)body.data, "Cache-Control: no-store"));
  headers_of(port, "/checkpoints", &body); /* JSON: no page policy */
  ck_assert_ptr_null(strstr((char *)body.data, "Content-Security-Policy"));
  ksnap_buf_cleanup(&body);
  ksnap__rest_stop(rest);
}
END_TEST

/* The page is self-contained and shows data as text only: it references
 * no other resource, never parses strings as markup, and reads the
 * statistics from this server's /checkpoints. */
START_TEST(dashboard_is_self_contained_and_shows_text_only) {
  static const char *const banned[] = {
      "src=", "href=", "url(", "@import", "innerHTML", "outerHTML",
      "insertAdjacentHTML", "document.write", "eval(", "new Function",
      "<link", "<iframe", "<object", "<embed", "<img"};
  const char *page = ksnap__dashboard_html, *p;

  ck_assert_ptr_nonnull(strstr(page, "<!DOCTYPE html>"));
  for (size_t i = 0; i < sizeof(banned) / sizeof(banned[0]); i++)
    ck_assert_msg(!strstr(page, banned[i]), "the page contains \"%s\"",
                  banned[i]);
  /* the only absolute URL is the SVG namespace's name */
  for (p = page; (p = strstr(p, "http")); p += 4)
    ck_assert_msg(!strncmp(p, "http://www.w3.org/2000/svg\"", 27),
                  "the page names a URL: %.40s", p);
  ck_assert_ptr_nonnull(strstr(page, "fetch(\"/checkpoints\""));
  ck_assert_ptr_nonnull(strstr(page, "createTextNode"));
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
  tcase_add_test(tc, serves_the_dashboard);
  tcase_add_test(tc, dashboard_is_self_contained_and_shows_text_only);
  tcase_add_test(tc, bad_address_and_busy_port_are_errors);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
