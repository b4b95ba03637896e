/*
 * `ksnap verify` fails, with a clear report, on a job made
 * non-exactly-once on purpose: a test build whose sinks skip the epoch
 * replay (KSNAP_FAULT=sink.skip-repair), with the sink tasks' worker
 * dying in the commit window of checkpoints 1 and 2 (sink.before-commit@N:
 * after COMPLETE(N), before its commit). Without the replay the restored
 * sinks never commit those epochs, so the crash run lacks their counts.
 * The input is produced from the run's start, so epoch 1 (everything
 * before the first barrier) holds records whatever the machine's load.
 * The switches reach the crash run only; the reference run has no fault.
 */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "verifytest.h"

START_TEST(fails_without_the_epoch_replay) {
  char *out, *err;
  int rc = ksnap_test_verify(1, "--kills 0",
                             "sink.skip-repair,sink.before-commit@1,"
                             "sink.before-commit@2",
                             &out, &err);

  ck_assert_msg(rc == 1, "exit %d\nstdout:\n%s\nstderr:\n%s", rc, out, err);
  ck_assert_msg(strstr(out, "FAIL: the crash run's read_committed output "
                            "differs from the reference run's (seed 1)"),
                "stdout:\n%s", out);
  ck_assert_msg(strstr(out, "missing and 0 extra in the crash run"),
                "stdout:\n%s", out);
  ck_assert_msg(strstr(out, "first differing record: topic counts, key \"") &&
                    strstr(out, ": 1 in the reference run, 0 in the crash "
                                "run"),
                "stdout:\n%s", out);
  ck_assert_msg(strstr(err, "worker-count (pid ") &&
                    strstr(err, "exited by itself: exit status 137"),
                "the sink's worker did not die at the fault hook:\n%s", err);
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_verify_fault");
  TCase *tc = tcase_create("cli_verify_fault");

  ksnap_test_require_faults("cli_verify_fault");
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, fails_without_the_epoch_replay);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
