/*
 * `ksnap verify` passes on the word-count example (examples/wordcount/
 * wordcount.properties, the file itself) on the real broker and S3
 * server: a crash run with kill -9s of its workers and coordinator at
 * seeded moments commits, for read_committed readers, the same counts as
 * the run without faults.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "verifytest.h"

/* The verdict, the seed, and kills that really happened. */
static void check_pass(int rc, const char *out, const char *err, int seed) {
  char verdict[64];

  snprintf(verdict, sizeof(verdict), "(seed %d)", seed);
  ck_assert_msg(rc == 0, "exit %d\nstdout:\n%s\nstderr:\n%s", rc, out, err);
  ck_assert_msg(strstr(out, "PASS: every output topic has the same "
                            "read_committed content in both runs") &&
                    strstr(out, verdict),
                "stdout:\n%s", out);
  ck_assert_msg(strstr(out, "topic counts: "), "stdout:\n%s", out);
  ck_assert_msg(ksnap_test_count(err, "] kill -9 ") -
                        ksnap_test_count(err, ": not running") >= 1,
                "no process was killed:\n%s", err);
  ck_assert_msg(strstr(err, "deleted the crash run's "), "stderr:\n%s", err);
}

START_TEST(passes_with_workers_per_stage) {
  char *out, *err;
  int rc = ksnap_test_verify(1, "--kills 3", NULL, &out,
                             &err);

  check_pass(rc, out, err, 1);
  free(out);
  free(err);
}
END_TEST

START_TEST(passes_with_a_worker_per_task) {
  char *out, *err;
  int rc = ksnap_test_verify(2, "--kills 2 --workers task",
                             NULL, &out, &err);

  check_pass(rc, out, err, 2);
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_verify");
  TCase *tc = tcase_create("cli_verify");

  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, passes_with_workers_per_stage);
  tcase_add_test(tc, passes_with_a_worker_per_task);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
