/* `ksnap config check|list|doc`, run as a user would: the built binary
 * (KSNAP_BINARY_DIR/bin/ksnap) on tests/data/conf/{good,bad}.properties,
 * with the test operator library on KSNAP_OPERATOR_PATH. The checks a job
 * gets beyond its values are test_cli_preflight's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ksnap/ksnap.h"
#include "testutil.h"

#define KSNAP_BIN KSNAP_BINARY_DIR "/bin/ksnap"
#define DATA KSNAP_SOURCE_DIR "/tests/data/conf/"

/* Runs `ksnap ARGS` (stderr kept apart); returns the exit code. */
static int run(const char *args, char **outp, char **errp) {
  char cmd[2048], errfile[] = "/tmp/ksnap-cli-XXXXXX";
  ksnap_buf_t out;
  char chunk[4096];
  size_t n;
  int fd = mkstemp(errfile), status;
  FILE *fp;

  ck_assert_int_ge(fd, 0);
  snprintf(cmd, sizeof(cmd),
           "env -u KSNAP_TEST_UNSET_PASSWORD KSNAP_OPERATOR_PATH=%s "
           "%s %s 2>%s", KSNAP_BINARY_DIR "/tests/operators", KSNAP_BIN, args,
           errfile);
  ck_assert_ptr_nonnull(fp = popen(cmd, "r"));
  ksnap_buf_init(&out);
  ksnap_buf_append(&out, "", 0);
  while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
    ksnap_buf_append(&out, chunk, n);
  status = pclose(fp);
  *outp = (char *)ksnap_buf_detach(&out, NULL);

  FILE *ef = fdopen(fd, "r");
  ksnap_buf_init(&out);
  ksnap_buf_append(&out, "", 0);
  while ((n = fread(chunk, 1, sizeof(chunk), ef)) > 0)
    ksnap_buf_append(&out, chunk, n);
  fclose(ef);
  unlink(errfile);
  *errp = (char *)ksnap_buf_detach(&out, NULL);
  ck_assert(WIFEXITED(status));
  return WEXITSTATUS(status);
}

START_TEST(check_bad_file_prints_one_error_per_problem) {
  char *out, *err;

  ck_assert_int_eq(run("config check " DATA "bad.properties", &out, &err), 1);
  ck_assert_str_eq(out, "");
  ck_assert_str_eq(
      err,
      DATA "bad.properties:3: No such configuration property: "
      "\"execution.checkpointing.intervall\" (did you mean "
      "\"execution.checkpointing.interval\"?)\n"
      DATA "bad.properties:4: execution.checkpointing.timeout: invalid "
      "duration \"10 parsecs\" (expected a number with unit ms, s, min or h)\n"
      DATA "bad.properties:5: execution.checkpointing.max-concurrent-"
      "checkpoints: value 0 is outside allowed range 1..100\n");
  free(out);
  free(err);
}
END_TEST

START_TEST(check_good_file_prints_effective_configuration_masked) {
  char *out, *err;

  ck_assert_int_eq(run("config check " DATA "good.properties", &out, &err), 0);
  ck_assert_str_eq(err, "");
  ck_assert_ptr_nonnull(strstr(out, "\ns3.secret-key=********\n"));
  ck_assert_ptr_nonnull(strstr(out, "\nkafka.sasl.password=********\n"));
  ck_assert_ptr_null(strstr(out, "not-so-secret"));
  ck_assert_ptr_null(strstr(out, "hunter2"));
  ck_assert_ptr_nonnull(strstr(out, "# " DATA "good.properties:4\n"
                                    "job.name=wordcount\n"));
  ck_assert_ptr_nonnull(strstr(out, "\nheartbeat.interval=1s\n"));
  ck_assert_ptr_nonnull(strstr(out, "\nstage.count.parallelism=4\n"));
  free(out);
  free(err);
}
END_TEST

START_TEST(check_missing_file_and_usage) {
  char *out, *err;

  ck_assert_int_eq(run("config check " DATA "nope.properties", &out, &err), 1);
  ck_assert_str_eq(err, DATA "nope.properties: cannot open: No such file or "
                             "directory\n");
  free(out);
  free(err);
  ck_assert_int_eq(run("config check", &out, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "Usage: ksnap config check FILE"));
  free(out);
  free(err);
  ck_assert_int_eq(run("config bogus", &out, &err), 2);
  free(out);
  free(err);
}
END_TEST

START_TEST(help_list_and_doc) {
  char *out, *err;

  ck_assert_int_eq(run("config --help", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "Usage: ksnap config check FILE"));
  free(out);
  free(err);
  ck_assert_int_eq(run("config list", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "execution.checkpointing.interval"));
  ck_assert_ptr_nonnull(strstr(out, "default: 10s"));
  free(out);
  free(err);
  ck_assert_int_eq(run("config doc", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "# ksnap configuration\n"));
  free(out);
  free(err);
  ck_assert_int_eq(run("--help", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "  config "));
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_config");
  TCase *tc = tcase_create("cli");

  tcase_add_test(tc, check_bad_file_prints_one_error_per_problem);
  tcase_add_test(tc, check_good_file_prints_effective_configuration_masked);
  tcase_add_test(tc, check_missing_file_and_usage);
  tcase_add_test(tc, help_list_and_doc);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
