/* `ksnap worker`: help, usage errors, and job-file errors before any
 * connection (no servers needed). */
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "testutil.h"

#define EXAMPLES KSNAP_SOURCE_DIR "/examples/wordcount/"

START_TEST(help) {
  char *out, *err;

  ck_assert_int_eq(ksnap_test_cli("", "worker --help", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "Usage: ksnap worker"));
  free(out);
  free(err);
}
END_TEST

START_TEST(usage_errors) {
  char *out, *err;

  ck_assert_int_eq(ksnap_test_cli("", "worker", &out, &err), 2);
  free(out);
  free(err);
  ck_assert_int_eq(ksnap_test_cli("", "worker --bogus x.properties", &out,
                                  &err), 2);
  free(out);
  free(err);
}
END_TEST

START_TEST(embedded_needs_run) {
  char *out, *err;

  ck_assert_int_eq(ksnap_test_cli("", "worker " EXAMPLES "embedded.properties",
                                  &out, &err), 1);
  ck_assert_ptr_nonnull(strstr(err, "kafka.bootstrap.servers=embedded runs "
                                    "only inside one process"));
  free(out);
  free(err);
}
END_TEST

START_TEST(missing_file) {
  char *out, *err;

  ck_assert_int_eq(ksnap_test_cli("", "worker /nonexistent/job.properties",
                                  &out, &err), 1);
  ck_assert_str_ne(err, "");
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_worker");
  TCase *tc = tcase_create("cli_worker");

  tcase_add_test(tc, help);
  tcase_add_test(tc, usage_errors);
  tcase_add_test(tc, embedded_needs_run);
  tcase_add_test(tc, missing_file);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
