/* S3 helpers without a server: SigV4 path/query encoding, URLs, the XML
 * scanner (ListObjectsV2 pages and error bodies), retry verdicts and the
 * backoff arithmetic. */
#include <stdlib.h>
#include <string.h>

#include "ksnap/storage.h"
#include "storage/s3.h"
#include "testutil.h"

START_TEST(uri_encoding_keeps_slash_only_in_keys) {
  ksnap_buf_t b;

  ksnap_buf_init(&b);
  ck_assert(!ksnap__s3_uri_encode(&b, "a b/c+d=e&f~g_h-i.j/é", 1));
  ck_assert_str_eq((char *)b.data, "a%20b/c%2Bd%3De%26f~g_h-i.j/%C3%A9");
  ksnap_buf_reset(&b);
  ck_assert(!ksnap__s3_uri_encode(&b, "p/q%r*", 0));
  ck_assert_str_eq((char *)b.data, "p%2Fq%25r%2A");
  ksnap_buf_cleanup(&b);
}
END_TEST

START_TEST(query_is_sorted_and_encoded) {
  const char *pairs[] = {"prefix",    "chk 1/a+b", "list-type", "2",
                         "continuation-token", "1/x=", "uploads", NULL};
  char *q = ksnap__s3_query(pairs, 4);

  ck_assert_str_eq(q, "continuation-token=1%2Fx%3D&list-type=2&"
                      "prefix=chk%201%2Fa%2Bb&uploads=");
  free(q);
  q = ksnap__s3_query(pairs + 6, 1);
  ck_assert_str_eq(q, "uploads=");
  free(q);
  {
    const char *p2[] = {"uploadId", "abc", "partNumber", "10"};
    q = ksnap__s3_query(p2, 2);
    ck_assert_str_eq(q, "partNumber=10&uploadId=abc");
    free(q);
  }
}
END_TEST

START_TEST(urls_path_style_and_virtual_host) {
  ksnap__s3_t s3 = {.base_url = "http://127.0.0.1:9000/bkt", .path_style = 1};
  char *u = ksnap__s3_url(&s3, "a b/c", "x=1");

  ck_assert_str_eq(u, "http://127.0.0.1:9000/bkt/a%20b/c?x=1");
  free(u);
  u = ksnap__s3_url(&s3, NULL, "list-type=2");
  ck_assert_str_eq(u, "http://127.0.0.1:9000/bkt?list-type=2");
  free(u);
  u = ksnap__s3_base_url("https://s3.eu-west-1.amazonaws.com/", "bkt", 0);
  ck_assert_str_eq(u, "https://bkt.s3.eu-west-1.amazonaws.com");
  free(u);
  u = ksnap__s3_base_url("http://minio:9000", "bkt", 1);
  ck_assert_str_eq(u, "http://minio:9000/bkt");
  free(u);
  s3.base_url = "https://bkt.s3.eu-west-1.amazonaws.com";
  s3.path_style = 0;
  u = ksnap__s3_url(&s3, NULL, "list-type=2");
  ck_assert_str_eq(u, "https://bkt.s3.eu-west-1.amazonaws.com/?list-type=2");
  free(u);
}
END_TEST

static int collect(void *opaque, const char *key, uint64_t size) {
  ksnap_buf_appendf(opaque, "%s=%llu;", key, (unsigned long long)size);
  return 0;
}

START_TEST(list_page_parsing) {
  static const char page[] =
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
      "<Name>b</Name><Prefix>p/</Prefix><KeyCount>2</KeyCount>"
      "<IsTruncated>true</IsTruncated>"
      "<Contents><Key>p/a&amp;b &lt;c&gt; &#233;&#x65E5;</Key>"
      "<Size>116</Size></Contents>"
      "<Contents><Key>p/z</Key><LastModified>x</LastModified>"
      "<Size>16</Size></Contents>"
      "<NextContinuationToken>1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM="
      "</NextContinuationToken></ListBucketResult>";
  static const char encoded[] =
      "<ListBucketResult><EncodingType>url</EncodingType>"
      "<IsTruncated>false</IsTruncated>"
      "<Contents><Key>p/a+b%2Bc%26d</Key><Size>20</Size></Contents>"
      "</ListBucketResult>";
  ksnap_buf_t out, token;
  int truncated;

  ksnap_buf_init(&out);
  ksnap_buf_init(&token);
  ck_assert_int_eq(ksnap__s3_parse_list(page, strlen(page), collect, &out,
                                        &truncated, &token), 0);
  ck_assert_str_eq((char *)out.data, "p/a&b <c> é日=116;p/z=16;");
  ck_assert_int_eq(truncated, 1);
  ck_assert_str_eq((char *)token.data,
                   "1ueGcxLPRx1Tr/XYExHnhbYLgveDs2J/wm36Hy4vbOwM=");
  ksnap_buf_reset(&out);
  ck_assert_int_eq(ksnap__s3_parse_list(encoded, strlen(encoded), collect,
                                        &out, &truncated, &token), 0);
  ck_assert_str_eq((char *)out.data, "p/a b+c&d=20;");
  ck_assert_int_eq(truncated, 0);
  ck_assert_int_eq(ksnap__s3_parse_list("<Error/>", 8, collect, &out,
                                        &truncated, &token), -1);
  ksnap_buf_cleanup(&out);
  ksnap_buf_cleanup(&token);
}
END_TEST

START_TEST(error_body_parsing) {
  static const char body[] =
      "<?xml version=\"1.0\"?><Error><Code>SignatureDoesNotMatch</Code>"
      "<Message>The request signature we calculated does not match &amp; "
      "more\nlines</Message><StringToSign>AWS4-HMAC-SHA256\n...</StringToSign>"
      "</Error>";
  static const char nsb[] =
      "<Error><Code>NoSuchBucket</Code><Message>The specified bucket does "
      "not exist</Message></Error>";
  ksnap_error_t err;

  ck_assert_int_eq(ksnap__s3_error_from_body(body, strlen(body), 403,
                                             "PUT s3://b/k", &err),
                   KSNAP_ERR_ACCESS_DENIED);
  ck_assert_str_eq(err.msg, "PUT s3://b/k: SignatureDoesNotMatch: The request "
                            "signature we calculated does not match & more "
                            "lines (HTTP 403)");
  ck_assert_int_eq(ksnap__s3_error_from_body(nsb, strlen(nsb), 404,
                                             "GET s3://b/k", &err),
                   KSNAP_ERR_NO_SUCH_BUCKET);
  ck_assert_int_eq(ksnap__s3_error_from_body(NULL, 0, 404, "HEAD s3://b/k",
                                             &err),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_str_eq(err.msg, "HEAD s3://b/k: HTTP 404 (not found)");
  ck_assert_int_eq(ksnap__s3_error_from_body("", 0, 400, "X", &err),
                   KSNAP_ERR_HTTP);
}
END_TEST

START_TEST(retry_verdicts) {
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OK, 200), KSNAP__S3_OK);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OK, 206), KSNAP__S3_OK);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OK, 500), KSNAP__S3_RETRY);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OK, 503), KSNAP__S3_RETRY);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OK, 429), KSNAP__S3_RETRY);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OK, 403), KSNAP__S3_FAIL);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OK, 404), KSNAP__S3_FAIL);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OK, 400), KSNAP__S3_FAIL);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_OPERATION_TIMEDOUT, 0),
                   KSNAP__S3_RETRY);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_RECV_ERROR, 0), KSNAP__S3_RETRY);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_COULDNT_CONNECT, 0),
                   KSNAP__S3_RETRY);
  ck_assert_int_eq(ksnap__s3_classify(CURLE_URL_MALFORMAT, 0),
                   KSNAP__S3_FAIL);
}
END_TEST

START_TEST(backoff_doubles_with_jitter_and_cap) {
  /* d = min(cap, base * 2^(attempt-1)); delay in [d/2, d] */
  ck_assert_int_eq(ksnap__s3_backoff_ms(1, 100, 5000, 0), 50);
  ck_assert_int_eq(ksnap__s3_backoff_ms(1, 100, 5000, 50), 100);
  ck_assert_int_eq(ksnap__s3_backoff_ms(1, 100, 5000, 51), 50);
  ck_assert_int_eq(ksnap__s3_backoff_ms(2, 100, 5000, 0), 100);
  ck_assert_int_eq(ksnap__s3_backoff_ms(3, 100, 5000, 0), 200);
  ck_assert_int_eq(ksnap__s3_backoff_ms(7, 100, 5000, 0), 2500);
  ck_assert_int_eq(ksnap__s3_backoff_ms(30, 100, 5000, 0), 2500);
  ck_assert_int_eq(ksnap__s3_backoff_ms(30, 100, 5000, 2500), 5000);
  for (uint32_t r = 0; r < 100000; r += 7919) {
    int d = ksnap__s3_backoff_ms(4, 100, 5000, r);
    ck_assert(d >= 400 && d <= 800);
  }
}
END_TEST

START_TEST(options_from_environment) {
  ksnap_storage_opts_t opts;

  setenv("AWS_ACCESS_KEY_ID", "AK", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
  setenv("AWS_REGION", "eu-west-3", 1);
  setenv("AWS_ENDPOINT_URL", "http://generic", 1);
  setenv("AWS_ENDPOINT_URL_S3", "http://s3-specific", 1);
  unsetenv("AWS_SESSION_TOKEN");
  ksnap_storage_opts_init(&opts);
  opts.region = "explicit-wins";
  ksnap_storage_opts_from_env(&opts);
  ck_assert_str_eq(opts.access_key, "AK");
  ck_assert_str_eq(opts.secret_key, "SK");
  ck_assert_str_eq(opts.region, "explicit-wins");
  ck_assert_str_eq(opts.endpoint, "http://s3-specific");
  ck_assert_ptr_null(opts.session_token);
  ck_assert_int_eq(opts.path_style, -1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("s3_codec");
  TCase *tc = tcase_create("codec");

  tcase_add_test(tc, uri_encoding_keeps_slash_only_in_keys);
  tcase_add_test(tc, query_is_sorted_and_encoded);
  tcase_add_test(tc, urls_path_style_and_virtual_host);
  tcase_add_test(tc, list_page_parsing);
  tcase_add_test(tc, error_body_parsing);
  tcase_add_test(tc, retry_verdicts);
  tcase_add_test(tc, backoff_doubles_with_jitter_and_cap);
  tcase_add_test(tc, options_from_environment);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
