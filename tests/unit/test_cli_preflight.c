/*
 * The job's preflight from the command line (the built binary, no
 * servers): `ksnap config check`, `ksnap job describe`, `ksnap
 * coordinator`, `ksnap worker` and `ksnap run` refuse the job files of
 * tests/data/conf/ with the same lines, exit 1, before anything connects.
 * The files point kafka.bootstrap.servers at a port nothing listens on,
 * so a command that started anyway would not exit with these lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "testutil.h"

#define DATA KSNAP_SOURCE_DIR "/tests/data/conf"
#define OPDIR KSNAP_BINARY_DIR "/tests/operators"
#define ENV                                                                \
  "-u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY KSNAP_OPERATOR_PATH=" OPDIR
#define LIB "libksnap_test_identity.so"

/* The configuration of the restore loop: the transaction timeout rule. */
#define TXN_TIMEOUT                                                        \
  DATA "/txn_timeout.properties:10: kafka.transaction.timeout.ms (10000) " \
       "must exceed execution.checkpointing.interval (10000 ms) * "        \
       "sink.producer-pool-size (4) + execution.checkpointing.timeout "    \
       "(600000 ms) = 640000 ms, or a pending sink transaction can time "  \
       "out before its checkpoint completes; raise "                       \
       "kafka.transaction.timeout.ms (up to the broker's "                 \
       "transaction.max.timeout.ms, default 900000) or lower the others\n"

static const char *const commands[] = {"config check", "job describe",
                                       "coordinator", "worker", "run"};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static char *out, *err;

static void teardown(void) {
  free(out);
  free(err);
  out = err = NULL;
}

/* `ksnap COMMAND DATA/FILE` exits 1 printing exactly @p expect. */
static void refused(const char *command, const char *file,
                    const char *expect) {
  char args[1024];

  snprintf(args, sizeof(args), "%s %s/%s", command, DATA, file);
  ck_assert_msg(ksnap_test_cli(ENV, args, &out, &err) == 1,
                "ksnap %s: not refused; stderr:\n%s", args, err);
  ck_assert_str_eq(out, "");
  ck_assert_str_eq(err, expect);
  teardown();
}

START_TEST(txn_timeout_refused_by_every_command) {
  refused(commands[_i], "txn_timeout.properties", TXN_TIMEOUT);
}
END_TEST

START_TEST(operators_refused_by_every_command) {
  refused(commands[_i], "operators.properties",
          DATA "/operators.properties:9: stage.a.operator: cannot load "
          "\"libnope.so\": libnope.so: cannot open shared object file: No "
          "such file or directory (searched " DATA ", KSNAP_OPERATOR_PATH="
          OPDIR ", then the system's library path)\n"
          DATA "/operators.properties:12: stage.b.operator: " LIB " has no "
          "operator \"nope\" (no symbol ksnap_operator_nope or nope)\n"
          DATA "/operators.properties:15: stage.c.operator: " LIB ":badabi "
          "has operator ABI version 99, this ksnap needs 1 to 2\n");
}
END_TEST

START_TEST(every_problem_at_once) {
  refused(commands[_i], "preflight.properties",
          DATA "/preflight.properties: missing required property "
          "\"kafka.bootstrap.servers\"\n"
          DATA "/preflight.properties:5: state.checkpoints.dir: "
          "s3://ksnap-test/checkpoints needs credentials: set s3.access-key "
          "and s3.secret-key (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
          "in the environment)\n"
          DATA "/preflight.properties:6: kafka.transaction.timeout.ms "
          "(60000, librdkafka's default) must exceed "
          "execution.checkpointing.interval (60000 ms) * "
          "sink.producer-pool-size (4) + execution.checkpointing.timeout "
          "(300000 ms) = 540000 ms, or a pending sink transaction can time "
          "out before its checkpoint completes; raise "
          "kafka.transaction.timeout.ms (up to the broker's "
          "transaction.max.timeout.ms, default 900000) or lower the others\n"
          DATA "/preflight.properties:9: rest.address: \"localhost\" is not "
          "an IPv4 address (the coordinator listens there because rest.port "
          "is set)\n"
          DATA "/preflight.properties:10: stage.a.operator: " LIB " has no "
          "operator \"nope\" (no symbol ksnap_operator_nope or nope)\n");
}
END_TEST

/* The operator found along KSNAP_OPERATOR_PATH without it is not found:
 * config check looks where the worker looks, no more. */
START_TEST(library_search_follows_the_worker) {
  char args[1024];

  snprintf(args, sizeof(args), "config check %s/txn_timeout.properties",
           DATA);
  ck_assert_int_eq(ksnap_test_cli("-u KSNAP_OPERATOR_PATH", args, &out, &err),
                   1);
  ck_assert_ptr_nonnull(strstr(
      err, DATA "/txn_timeout.properties:12: stage.count.operator: cannot "
      "load \"" LIB "\": " LIB ": cannot open shared object file: No such "
      "file or directory (searched " DATA ", KSNAP_OPERATOR_PATH (unset), "
      "then the system's library path)\n"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_preflight");
  TCase *tc = tcase_create("cli_preflight");

  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_loop_test(tc, txn_timeout_refused_by_every_command, 0, NCOMMANDS);
  tcase_add_loop_test(tc, operators_refused_by_every_command, 0, NCOMMANDS);
  tcase_add_loop_test(tc, every_problem_at_once, 0, NCOMMANDS);
  tcase_add_test(tc, library_search_follows_the_worker);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
