/* fault.h: KSNAP_FAULT crash points (list, "@id" entries, switches) in a
 * build with KSNAP_FAULT_INJECTION=ON; without it, that KSNAP_FAULT has no
 * effect at all (the hooks are compiled out). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fault.h"
#include "testutil.h"

/* Runs @p point with @p id in a child. @returns its exit status, or 0
 * when it returned (no crash). */
static int run_child(const char *point, int64_t id) {
  int status;
  pid_t pid = fork();

  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (id >= 0)
      ksnap__fault_id(point, id);
    else
      ksnap__fault(point);
    _exit(0);
  }
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status));
  return WEXITSTATUS(status);
}

START_TEST(fault_off_without_env) {
  unsetenv("KSNAP_FAULT");
  ck_assert_int_eq(run_child("sink.before-commit", -1), 0);
  ck_assert_int_eq(run_child("sink.before-commit", 2), 0);
  ck_assert_int_eq(ksnap__fault_on("sink.skip-repair"), 0);
}
END_TEST

START_TEST(fault_list_and_ids) {
  setenv("KSNAP_FAULT", "a.b,sink.before-commit@2,sink.skip-repair", 1);
  ck_assert_int_eq(run_child("a.b", -1), 137);
  ck_assert_int_eq(run_child("a", -1), 0);       /* no prefix match */
  ck_assert_int_eq(run_child("sink.before-commit", 1), 0);
  ck_assert_int_eq(run_child("sink.before-commit", 2), 137);
  ck_assert_int_eq(run_child("sink.before-commit", -1), 0);
  ck_assert_int_eq(run_child("a.b", 7), 137); /* plain entry: any id */
  ck_assert_int_eq(ksnap__fault_on("sink.skip-repair"), 1);
  ck_assert_int_eq(ksnap__fault_on("sink.skip"), 0);
  unsetenv("KSNAP_FAULT");
}
END_TEST

/* Without KSNAP_FAULT_INJECTION: KSNAP_FAULT lists points, and still no
 * hook crashes or answers 1 (tests/release/ checks the release library). */
START_TEST(fault_compiled_out) {
  setenv("KSNAP_FAULT", "a.b,a.b@2,sink.skip-repair", 1);
  ck_assert_int_eq(run_child("a.b", -1), 0);
  ck_assert_int_eq(run_child("a.b", 2), 0);
  ck_assert_int_eq(ksnap__fault_on("sink.skip-repair"), 0);
  unsetenv("KSNAP_FAULT");
}
END_TEST

int main(void) {
  Suite *s = suite_create("fault");
  TCase *tc = tcase_create("fault");

  if (KSNAP_FAULT_INJECTION) {
    tcase_add_test(tc, fault_off_without_env);
    tcase_add_test(tc, fault_list_and_ids);
  } else {
    tcase_add_test(tc, fault_compiled_out);
  }
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
