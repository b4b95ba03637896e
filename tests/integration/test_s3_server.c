/*
 * Proof that the test S3 server is real enough: against
 * KSNAP_TEST_S3_ENDPOINT (tests/servers/s3.sh), a SigV4-signed PUT and GET
 * of an object in KSNAP_TEST_S3_BUCKET round-trip the bytes, a wrong secret
 * is refused with 403, and a missing key is 404. Uses plain libcurl:
 * CURLOPT_AWS_SIGV4 signs the request, and x-amz-content-sha256 is added
 * by hand (curl 7.88 does not send it; strict servers answer 400).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "testnames.h"
#include "testutil.h"

typedef struct body_s {
  char data[4096];
  size_t len;
} body_t;

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *opaque) {
  body_t *body = opaque;
  size_t n = size * nmemb;
  size_t room = sizeof(body->data) - 1 - body->len;

  memcpy(body->data + body->len, ptr, n < room ? n : room);
  body->len += n < room ? n : room;
  body->data[body->len] = '\0';
  return n;
}

/*
 * Sends @p method for @p key with @p secret; @p payload (may be NULL) is
 * the body of a PUT. @returns the HTTP status; the response body in @p body.
 */
static long s3_request(const char *method, const char *key, const char *secret,
                       const char *payload, body_t *body) {
  char url[1024], sigv4[128];
  CURL *curl = curl_easy_init();
  struct curl_slist *headers = NULL;
  long status = 0;
  CURLcode rc;

  snprintf(url, sizeof(url), "%s/%s/%s",
           ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT"),
           ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"), key);
  snprintf(sigv4, sizeof(sigv4), "aws:amz:%s:s3",
           ksnap_test_require_env("KSNAP_TEST_S3_REGION"));
  headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
  headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
  ck_assert_ptr_nonnull(curl);
  curl_easy_setopt(curl, CURLOPT_URL, url);
  curl_easy_setopt(curl, CURLOPT_AWS_SIGV4, sigv4);
  curl_easy_setopt(curl, CURLOPT_USERNAME,
                   ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY"));
  curl_easy_setopt(curl, CURLOPT_PASSWORD, secret);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
  if (payload) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, payload);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, (long)strlen(payload));
  }
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
  body->len = 0;
  body->data[0] = '\0';
  rc = curl_easy_perform(curl);
  ck_assert_msg(rc == CURLE_OK, "%s %s: %s", method, url,
                curl_easy_strerror(rc));
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  return status;
}

static const char *secret(void) {
  return ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY");
}

START_TEST(put_then_get_round_trips) {
  char *key = ksnap_test_unique_name("infra/roundtrip");
  const char *payload = "checkpoint bytes \x01\x02 end";
  body_t body;

  ck_assert_int_eq(s3_request("PUT", key, secret(), payload, &body), 200);
  ck_assert_int_eq(s3_request("GET", key, secret(), NULL, &body), 200);
  ck_assert_str_eq(body.data, payload);
  ck_assert_int_eq(s3_request("DELETE", key, secret(), NULL, &body), 204);
  ck_assert_int_eq(s3_request("GET", key, secret(), NULL, &body), 404);
  free(key);
}
END_TEST

START_TEST(wrong_secret_is_refused) {
  char *key = ksnap_test_unique_name("infra/denied");
  body_t body;

  ck_assert_int_eq(s3_request("PUT", key, "not-the-secret", "x", &body), 403);
  ck_assert_ptr_nonnull(strstr(body.data, "SignatureDoesNotMatch"));
  ck_assert_int_eq(s3_request("GET", key, secret(), NULL, &body), 404);
  free(key);
}
END_TEST

int main(void) {
  Suite *s = suite_create("s3_server");
  TCase *tc = tcase_create("sigv4");
  int rc;

  curl_global_init(CURL_GLOBAL_DEFAULT);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, put_then_get_round_trips);
  tcase_add_test(tc, wrong_secret_is_refused);
  suite_add_tcase(s, tc);
  rc = ksnap_test_run(s);
  curl_global_cleanup();
  return rc;
}
