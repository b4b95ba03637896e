/* Errors, logging and the byte buffer: the base every module uses. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/ksnap.h"
#include "testutil.h"

START_TEST(error_strings_come_from_one_list) {
  ck_assert_str_eq(ksnap_err2str(KSNAP_ERR_OK), "Success");
  ck_assert_str_eq(ksnap_err2str(KSNAP_ERR_CONF_UNKNOWN),
                   "Unknown configuration property");
  ck_assert_str_eq(ksnap_err2name(KSNAP_ERR_CHECKSUM), "CHECKSUM");
  ck_assert_str_eq(ksnap_err2str((ksnap_err_t)9999), "Unknown error");
}
END_TEST

START_TEST(error_set_prefix_and_flags) {
  ksnap_error_t err;
  ksnap_err_t code;

  ksnap_error_clear(&err);
  ck_assert_int_eq(err.code, KSNAP_ERR_OK);
  code = ksnap_error_set_retriable(&err, KSNAP_ERR_TIMEOUT, "after %d ms", 5);
  ck_assert_int_eq(code, KSNAP_ERR_TIMEOUT);
  ck_assert_int_eq(err.retriable, 1);
  ksnap_error_prefix(&err, "GET %s", "chk-1/_metadata");
  ck_assert_str_eq(err.msg, "GET chk-1/_metadata: after 5 ms");
  ck_assert_int_eq(err.retriable, 1);
  ksnap_error_set(&err, KSNAP_ERR_IO, "x");
  ck_assert_int_eq(err.retriable, 0);
  ck_assert_int_eq(ksnap_error_set(NULL, KSNAP_ERR_IO, "ignored"),
                   KSNAP_ERR_IO);
}
END_TEST

static char last_line[256];
static int last_level;
static void capture(void *opaque, int level, const char *fac,
                    const char *msg) {
  (void)opaque;
  last_level = level;
  snprintf(last_line, sizeof(last_line), "%s|%s", fac, msg);
}

START_TEST(log_level_and_debug_mask) {
  uint32_t mask = 0;
  char errstr[128];
  int formatted = 0;

  ksnap_log_set_callback(capture, NULL);
  ksnap_log_set_level(KSNAP_LOG_INFO);
  last_line[0] = '\0';
  KSNAP_LOG(KSNAP_LOG_DEBUG, "T", "%d", ++formatted);
  ck_assert_int_eq(formatted, 0); /* not formatted when disabled */
  ck_assert_str_eq(last_line, "");
  KSNAP_WARN("T", "w%d", 1);
  ck_assert_str_eq(last_line, "T|w1");
  ck_assert_int_eq(last_level, KSNAP_LOG_WARNING);

  ck_assert_int_eq(ksnap_log_parse_debug("storage,barrier", &mask, errstr,
                                         sizeof(errstr)), 0);
  ck_assert_uint_eq(mask, KSNAP_DBG_STORAGE | KSNAP_DBG_BARRIER);
  ck_assert_int_eq(ksnap_log_parse_debug("storage,bogus", &mask, errstr,
                                         sizeof(errstr)), -1);
  ck_assert_str_eq(errstr, "unknown debug context \"bogus\"");

  ksnap_log_set_debug(KSNAP_DBG_STORAGE);
  last_line[0] = '\0';
  KSNAP_DBG(BARRIER, "B", "off");
  ck_assert_str_eq(last_line, "");
  KSNAP_DBG(STORAGE, "S", "on");
  ck_assert_str_eq(last_line, "S|on");
  ksnap_log_set_callback(NULL, NULL);
}
END_TEST

START_TEST(buf_grows_and_detaches) {
  ksnap_buf_t buf;
  size_t len;
  uint8_t *data;

  ksnap_buf_init(&buf);
  for (int i = 0; i < 1000; i++)
    ck_assert_int_eq(ksnap_buf_appendf(&buf, "%03d", i), KSNAP_ERR_OK);
  ck_assert_uint_eq(buf.len, 3000);
  ck_assert_int_eq(memcmp(buf.data + 2997, "999", 3), 0);
  ck_assert_int_eq(buf.data[buf.len], '\0');
  data = ksnap_buf_detach(&buf, &len);
  ck_assert_uint_eq(len, 3000);
  ck_assert_ptr_null(buf.data);
  free(data);
  ksnap_buf_cleanup(&buf);
}
END_TEST

int main(void) {
  Suite *s = suite_create("error");
  TCase *tc = tcase_create("base");

  tcase_add_test(tc, error_strings_come_from_one_list);
  tcase_add_test(tc, error_set_prefix_and_flags);
  tcase_add_test(tc, log_level_and_debug_mask);
  tcase_add_test(tc, buf_grows_and_detaches);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
