/*
 * The job's preflight (ksnap_job_preflight, ksnap/job.h): each rule and
 * its exact line, the operators loaded as a worker loads them (the real
 * test library, libksnap_test_identity.so), every problem reported at
 * once, and the sink's own check in the same words.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conftest.h"
#include "sink/sink.h"

#define OPDIR KSNAP_BINARY_DIR "/tests/operators"
#define LIB "libksnap_test_identity.so"

/* A valid job but for what a test adds: line 1 job.name, 2 bootstrap,
 * 3 checkpoints dir, 4-6 the stage; the test's lines from 7 on. */
#define VALID                                                              \
  "job.name=j\n"                                                           \
  "kafka.bootstrap.servers=127.0.0.1:1\n"                                  \
  "state.checkpoints.dir=file:///tmp/ksnap-preflight\n"                    \
  "stage.s.operator=" LIB ":identity\n"                                    \
  "stage.s.input=source:in\n"                                              \
  "stage.s.output=sink:out\n"
#define TXN_OK "kafka.transaction.timeout.ms=700000\n"

#define RULE_TAIL                                                          \
  " ms, or a pending sink transaction can time out before its checkpoint " \
  "completes; raise kafka.transaction.timeout.ms (up to the broker's "     \
  "transaction.max.timeout.ms, default 900000) or lower the others"
#define TXN_RULE(txn, interval, timeout, need)                             \
  "kafka.transaction.timeout.ms (" txn ") must exceed "                    \
  "execution.checkpointing.interval (" interval " ms) * "                  \
  "sink.producer-pool-size (4) + execution.checkpointing.timeout ("        \
  timeout " ms) = " need RULE_TAIL

static ksnap_job_t *job;

static void load(const char *text) {
  ck_assert_int_eq(ksnap_conf_load_string(conf, "job", text, collect, NULL),
                   KSNAP_ERR_OK);
}

/* Runs the preflight on @p text; expects @p code and exactly @p lines. */
static void expect(const char *text, const char *job_dir, ksnap_err_t code,
                   const char *lines) {
  load(text);
  ck_assert_int_eq(ksnap_job_preflight(conf, job_dir, &job, collect, NULL),
                   code);
  ck_assert_str_eq(errors, lines);
  if (code)
    ck_assert_ptr_null(job);
  else
    ck_assert_ptr_nonnull(job);
}

static void test_setup(void) {
  setup();
  job = NULL;
  setenv("KSNAP_OPERATOR_PATH", OPDIR, 1);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
}

static void test_teardown(void) {
  ksnap_job_destroy(job);
  teardown();
}

START_TEST(a_valid_job_passes_and_is_built) {
  expect(VALID TXN_OK, NULL, KSNAP_ERR_OK, "");
  ck_assert_str_eq(ksnap_job_name(job), "j");
  ck_assert_int_eq(ksnap_job_stage_cnt(job), 1);
  /* without jobp, nothing to free */
  ck_assert_int_eq(ksnap_job_preflight(conf, NULL, NULL, collect, NULL),
                   KSNAP_ERR_OK);
}
END_TEST

/* The job that restored forever: refused at the line of the timeout, in
 * the words of the sink's own check at start. */
START_TEST(issue_configuration_refused_at_its_line) {
  ksnap_error_t error;
  char line[1024];

  expect(VALID "kafka.transaction.timeout.ms=10000\n", NULL,
         KSNAP_ERR_CONF_VALUE,
         "job:7: " TXN_RULE("10000", "10000", "600000", "640000") "\n");
  ck_assert_int_eq(ksnap_sink_check_txn_timeout(conf, &error),
                   KSNAP_ERR_CONF_VALUE);
  snprintf(line, sizeof(line), "job:7: %s\n", error.msg);
  ck_assert_str_eq(line, errors);
}
END_TEST

START_TEST(txn_rule_names_the_setting_that_breaks_it) {
  /* unset: the first of interval, pool size, timeout read from the file */
  expect(VALID "execution.checkpointing.timeout=1min\n"
               "execution.checkpointing.interval=20s\n",
         NULL, KSNAP_ERR_CONF_VALUE,
         "job:8: " TXN_RULE("60000, librdkafka's default", "20000", "60000",
                            "140000") "\n");
}
END_TEST

START_TEST(txn_rule_with_defaults_names_the_file) {
  expect(VALID, NULL, KSNAP_ERR_CONF_VALUE,
         "job: " TXN_RULE("60000, librdkafka's default", "10000", "600000",
                          "640000") "\n");
}
END_TEST

START_TEST(txn_rule_must_exceed) {
  char text[1024];

  snprintf(text, sizeof(text), "%s%s", VALID,
           "execution.checkpointing.interval=1s\n"
           "execution.checkpointing.timeout=30s\n"
           "kafka.transaction.timeout.ms=34000\n");
  expect(text, NULL, KSNAP_ERR_CONF_VALUE,
         "job:9: " TXN_RULE("34000", "1000", "30000", "34000") "\n");
  errors[0] = '\0';
  SET_OK("kafka.transaction.timeout.ms", "34001");
  ck_assert_int_eq(ksnap_job_preflight(conf, NULL, NULL, collect, NULL),
                   KSNAP_ERR_OK);
  ck_assert_str_eq(errors, "");
}
END_TEST

START_TEST(rules_without_a_file_have_no_prefix) {
  ksnap_error_t error;

  SET_OK("job.name", "j");
  SET_OK("kafka.bootstrap.servers", "127.0.0.1:1");
  SET_OK("state.checkpoints.dir", "/tmp/ksnap-preflight");
  SET_OK("stage.s.operator", LIB ":identity");
  SET_OK("stage.s.input", "source:in");
  SET_OK("stage.s.output", "sink:out");
  SET_OK("kafka.transaction.timeout.ms", "600000");
  ck_assert_int_eq(ksnap_job_preflight(conf, NULL, &job, collect, NULL),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(errors,
                   TXN_RULE("600000", "10000", "600000", "640000") "\n");
  ck_assert_int_eq(ksnap_sink_check_txn_timeout(conf, &error),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(error.msg, TXN_RULE("600000", "10000", "600000",
                                       "640000"));
}
END_TEST

START_TEST(bootstrap_and_checkpoint_dir_required) {
  expect("job.name=j\n"
         "stage.s.operator=" LIB ":identity\n"
         "stage.s.input=source:in\n"
         "stage.s.output=sink:out\n" TXN_OK,
         NULL, KSNAP_ERR_CONF_MISSING,
         "job: missing required property \"kafka.bootstrap.servers\"\n"
         "job: missing required property \"state.checkpoints.dir\" (where "
         "the coordinator and the tasks store checkpoints)\n");
}
END_TEST

#define S3_JOB                                                             \
  "job.name=j\n"                                                           \
  "kafka.bootstrap.servers=127.0.0.1:1\n"                                  \
  "state.checkpoints.dir=s3://bucket/prefix\n"                             \
  "stage.s.operator=" LIB ":identity\n"                                    \
  "stage.s.input=source:in\n"                                              \
  "stage.s.output=sink:out\n" TXN_OK

START_TEST(s3_needs_credentials) {
  expect(S3_JOB, NULL, KSNAP_ERR_CONF_MISSING,
         "job:3: state.checkpoints.dir: s3://bucket/prefix needs "
         "credentials: set s3.access-key and s3.secret-key (or "
         "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment)\n");
}
END_TEST

START_TEST(s3_credentials_from_the_file_or_the_environment) {
  expect(S3_JOB "s3.access-key=AK\ns3.secret-key=SK\n", NULL, KSNAP_ERR_OK,
         "");
  ksnap_job_destroy(job);
  job = NULL;
  teardown();
  setup();
  setenv("AWS_ACCESS_KEY_ID", "AK", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
  expect(S3_JOB, NULL, KSNAP_ERR_OK, "");
}
END_TEST

/* One key without the other: finalize's line, not a second one. */
START_TEST(s3_half_a_key_pair_reported_once) {
  expect(S3_JOB "s3.access-key=AK\n", NULL, KSNAP_ERR_CONF_VALUE,
         "job:8: s3.access-key is set but s3.secret-key is not\n");
}
END_TEST

START_TEST(storage_url_well_formed) {
  ck_assert_int_eq(ksnap_conf_load_string(conf, "job",
                                          "state.checkpoints.dir=file://rel\n"
                                          "state.checkpoints.dir=s3://B\n",
                                          collect, NULL),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(errors,
                   "job:1: state.checkpoints.dir: invalid URL \"file://rel\" "
                   "(expected s3://BUCKET/PREFIX, file:///PATH or a path)\n"
                   "job:2: state.checkpoints.dir: invalid URL \"s3://B\" "
                   "(expected s3://BUCKET/PREFIX, file:///PATH or a path)\n");
}
END_TEST

START_TEST(rest_address_ipv4_when_rest_is_on) {
  expect(VALID TXN_OK "rest.address=localhost\n", NULL, KSNAP_ERR_OK, "");
  ksnap_job_destroy(job);
  job = NULL;
  errors[0] = '\0';
  load("rest.port=8081\n");
  ck_assert_int_eq(ksnap_job_preflight(conf, NULL, &job, collect, NULL),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(errors, "job:8: rest.address: \"localhost\" is not an "
                           "IPv4 address (the coordinator listens there "
                           "because rest.port is set)\n");
}
END_TEST

/* An invalid graph is reported as ksnap_job_new() reports it; its
 * operators are not loaded. */
START_TEST(graph_problems_pass_through) {
  expect("job.name=j\n"
         "kafka.bootstrap.servers=127.0.0.1:1\n"
         "state.checkpoints.dir=/tmp/ksnap-preflight\n" TXN_OK
         "stage.a.operator=libnope.so:a\n"
         "stage.a.input=stage:b\n"
         "stage.b.operator=libnope.so:b\n"
         "stage.b.input=stage:a\n"
         "stage.b.output=sink:out\n",
         NULL, KSNAP_ERR_CONF_VALUE, "job:6: stage.a.input: cycle a -> b -> a\n");
}
END_TEST

START_TEST(operator_problems_name_the_file_and_the_rule) {
  char text[2048];

  unsetenv("KSNAP_OPERATOR_PATH");
  snprintf(text, sizeof(text),
           "job.name=j\n"
           "kafka.bootstrap.servers=127.0.0.1:1\n"
           "state.checkpoints.dir=/tmp/ksnap-preflight\n" TXN_OK
           "stage.a.operator=libnope.so:identity\n"
           "stage.a.input=source:in\n"
           "stage.b.operator=" LIB ":nope\n"
           "stage.b.input=stage:a\n"
           "stage.c.operator=" LIB ":badabi\n"
           "stage.c.input=stage:b\n"
           "stage.d.operator=upper\n"
           "stage.d.input=stage:c\n"
           "stage.d.output=sink:out\n");
  expect(text, OPDIR, KSNAP_ERR_NOT_FOUND,
         "job:5: stage.a.operator: cannot load \"libnope.so\": libnope.so: "
         "cannot open shared object file: No such file or directory "
         "(searched " OPDIR ", KSNAP_OPERATOR_PATH (unset), then the "
         "system's library path)\n"
         "job:7: stage.b.operator: " LIB " has no operator \"nope\" (no "
         "symbol ksnap_operator_nope or nope)\n"
         "job:9: stage.c.operator: " LIB ":badabi has operator ABI version "
         "99, this ksnap needs 1 to 2\n"
         "job:11: stage.d.operator: no built-in operator \"upper\" is "
         "registered\n");
}
END_TEST

/* Library paths are the job file's directory's, whatever the current
 * directory, as for the worker (ksnap_operator_resolve()): DIR/ops/LIB
 * exists, DIR/LIB does not. */
START_TEST(library_paths_in_the_job_dir) {
  char *dir = ksnap_test_tmpdir("preflight");
  char sub[1024], link[1100], want[4096];

  unsetenv("KSNAP_OPERATOR_PATH");
  snprintf(sub, sizeof(sub), "%s/ops", dir);
  snprintf(link, sizeof(link), "%s/" LIB, sub);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  ck_assert_int_eq(symlink(OPDIR "/" LIB, link), 0);
  ck_assert_int_eq(chdir("/"), 0);
  /* job dir DIR: ops/LIB found there, the bare LIB is not */
  snprintf(want, sizeof(want),
           "job:7: stage.b.operator: cannot load \"" LIB "\": " LIB
           ": cannot open shared object file: No such file or directory "
           "(searched %s, KSNAP_OPERATOR_PATH (unset), then the system's "
           "library path)\n", dir);
  expect("job.name=j\n"
         "kafka.bootstrap.servers=127.0.0.1:1\n"
         "state.checkpoints.dir=/tmp/ksnap-preflight\n" TXN_OK
         "stage.a.operator=ops/" LIB ":identity\n"
         "stage.a.input=source:in\n"
         "stage.b.operator=" LIB ":identity\n"
         "stage.b.input=stage:a\n"
         "stage.b.output=sink:out\n",
         dir, KSNAP_ERR_NOT_FOUND, want);
  /* job dir DIR/ops: the bare LIB is found there, ops/LIB is not */
  errors[0] = '\0';
  snprintf(want, sizeof(want),
           "job:5: stage.a.operator: cannot load \"%s/ops/" LIB "\": "
           "%s/ops/" LIB ": cannot open shared object file: No such file or "
           "directory\n", sub, sub);
  ck_assert_int_eq(ksnap_job_preflight(conf, sub, &job, collect, NULL),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_str_eq(errors, want);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

/* finalize's rules, the job's rules and the operators in one run; the
 * code is the first problem's. */
START_TEST(every_problem_at_once) {
  expect(VALID "heartbeat.interval=20s\n"
               "kafka.transaction.timeout.ms=1000\n"
               "stage.s.operator=" LIB ":nope\n",
         NULL, KSNAP_ERR_CONF_VALUE,
         "job:7: heartbeat.timeout (10s) must be greater than "
         "heartbeat.interval (20s)\n"
         "job:8: " TXN_RULE("1000", "10000", "600000", "640000") "\n"
         "job:9: stage.s.operator: " LIB " has no operator \"nope\" (no "
         "symbol ksnap_operator_nope or nope)\n");
}
END_TEST

/* Without job.name finalize says so once; the graph is not built. */
START_TEST(no_job_name) {
  expect("kafka.bootstrap.servers=127.0.0.1:1\n"
         "state.checkpoints.dir=/tmp/ksnap-preflight\n" TXN_OK,
         NULL, KSNAP_ERR_CONF_MISSING,
         "job: missing required property \"job.name\"\n");
}
END_TEST

int main(void) {
  Suite *s = suite_create("job_preflight");
  TCase *tr = tcase_create("rules");
  TCase *to = tcase_create("operators");

  tcase_add_checked_fixture(tr, test_setup, test_teardown);
  tcase_add_checked_fixture(to, test_setup, test_teardown);
  tcase_add_test(tr, a_valid_job_passes_and_is_built);
  tcase_add_test(tr, issue_configuration_refused_at_its_line);
  tcase_add_test(tr, txn_rule_names_the_setting_that_breaks_it);
  tcase_add_test(tr, txn_rule_with_defaults_names_the_file);
  tcase_add_test(tr, txn_rule_must_exceed);
  tcase_add_test(tr, rules_without_a_file_have_no_prefix);
  tcase_add_test(tr, bootstrap_and_checkpoint_dir_required);
  tcase_add_test(tr, s3_needs_credentials);
  tcase_add_test(tr, s3_credentials_from_the_file_or_the_environment);
  tcase_add_test(tr, s3_half_a_key_pair_reported_once);
  tcase_add_test(tr, storage_url_well_formed);
  tcase_add_test(tr, rest_address_ipv4_when_rest_is_on);
  tcase_add_test(tr, graph_problems_pass_through);
  tcase_add_test(tr, every_problem_at_once);
  tcase_add_test(tr, no_job_name);
  tcase_add_test(to, operator_problems_name_the_file_and_the_rule);
  tcase_add_test(to, library_paths_in_the_job_dir);
  suite_add_tcase(s, tr);
  suite_add_tcase(s, to);
  return ksnap_test_run(s);
}
