/* `ksnap job describe`, run as a user would (the built binary), on the
 * example job files (which `ksnap config check` must accept too, their
 * operators found along KSNAP_OPERATOR_PATH as the README says) and on
 * tests/data/job/. */
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "testutil.h"

#define EXAMPLES KSNAP_SOURCE_DIR "/examples/wordcount/"
#define DATA KSNAP_SOURCE_DIR "/tests/data/"
#define OPS "KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/examples/wordcount"
#define WORDCOUNT_ENV                                                      \
  OPS " KAFKA_BOOTSTRAP=broker1:9092 AWS_ACCESS_KEY_ID=AKIDEXAMPLE "       \
  "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI"

static char *out, *err;

static void teardown(void) {
  free(out);
  free(err);
  out = err = NULL;
}

START_TEST(describe_embedded_example) {
  ck_assert_int_eq(ksnap_test_cli(OPS, "job describe " EXAMPLES
                                  "embedded.properties", &out, &err), 0);
  ck_assert_str_eq(err, "");
  ck_assert_str_eq(
      out,
      "job wordcount-embedded: 2 stages, 4 tasks\n"
      "\n"
      "stage split: parallelism 2, operator libwordcount.so:split, source "
      "stage\n"
      "  in:  source topic lines\n"
      "  out: exchange topic wordcount-embedded.split (2 partitions, written "
      "by split, read by count)\n"
      "  task split[0]: lines partitions p mod 2 = 0\n"
      "  task split[1]: lines partitions p mod 2 = 1\n"
      "\n"
      "stage count: parallelism 2, operator libwordcount.so:count, sink "
      "stage\n"
      "  in:  exchange topic wordcount-embedded.split (2 partitions, written "
      "by split, read by count)\n"
      "  out: sink topic counts\n"
      "  task count[0]: wordcount-embedded.split partitions 0 x writers "
      "split[0..1] = 2 channels\n"
      "  task count[1]: wordcount-embedded.split partitions 1 x writers "
      "split[0..1] = 2 channels\n"
      "\n"
      "graph (every edge, data flowing left to right):\n"
      "  source lines --> split\n"
      "  split --> exchange wordcount-embedded.split (2 partitions) --> "
      "count\n"
      "  count --> sink counts\n"
      "\n"
      "topics ksnap creates:\n"
      "  wordcount-embedded.split: 2 partitions (exchange)\n"
      "  wordcount-embedded.ksnap.control, wordcount-embedded.ksnap.acks, "
      "wordcount-embedded.ksnap.progress (control plane)\n"
      "topics that must exist:\n"
      "  lines (source)\n"
      "  counts (sink)\n");
}
END_TEST

START_TEST(config_check_accepts_examples) {
  ck_assert_int_eq(ksnap_test_cli(OPS, "config check " EXAMPLES
                                  "embedded.properties", &out, &err), 0);
  ck_assert_str_eq(err, "");
  ck_assert_ptr_nonnull(strstr(out, "\nkafka.bootstrap.servers=embedded\n"));
  teardown();
  ck_assert_int_eq(ksnap_test_cli(WORDCOUNT_ENV, "config check " EXAMPLES
                                  "wordcount.properties", &out, &err), 0);
  ck_assert_str_eq(err, "");
  ck_assert_ptr_nonnull(strstr(out, "\ns3.secret-key=********\n"));
  ck_assert_ptr_null(strstr(out, "wJalrXUtnFEMI"));
}
END_TEST

START_TEST(describe_wordcount_example) {
  ck_assert_int_eq(ksnap_test_cli(WORDCOUNT_ENV, "job describe " EXAMPLES
                                  "wordcount.properties", &out, &err), 0);
  ck_assert_str_eq(err, "");
  ck_assert_ptr_nonnull(strstr(out, "job wordcount: 2 stages, 5 tasks\n"));
  ck_assert_ptr_nonnull(strstr(out, "  task count[2]: wordcount.split "
                                    "partitions 2, 5 x writers split[0..1] "
                                    "= 4 channels\n"));
  ck_assert_ptr_nonnull(strstr(out, "  wordcount.split: 6 partitions "
                                    "(exchange)\n"));
}
END_TEST

/* Fan-out to parallelisms 2 and 3 (one exchange topic each), fan-in of
 * two stages, two sinks: the graph names every edge's topic. */
START_TEST(describe_dag) {
  ck_assert_int_eq(ksnap_test_cli(OPS, "job describe " DATA
                                  "job/dag.properties", &out, &err), 0);
  ck_assert_str_eq(err, "");
  ck_assert_ptr_nonnull(strstr(
      out,
      "graph (every edge, data flowing left to right):\n"
      "  source lines --> split\n"
      "  source lines2 --> split2\n"
      "  split --> exchange dag.split (2 partitions) --> counta\n"
      "  counta --> sink counts_a\n"
      "  split --> exchange dag.split.p3 (3 partitions) --> countb\n"
      "  split2 --> exchange dag.split2 (3 partitions) --> countb\n"
      "  countb --> sink counts_b\n"));
  ck_assert_ptr_nonnull(strstr(
      out, "  out: exchange topic dag.split.p3 (3 partitions, written by "
           "split, read by countb)\n"));
  ck_assert_ptr_nonnull(strstr(
      out, "  task countb[2]: dag.split.p3 partitions 2 x writers "
           "split[0..1]; dag.split2 partitions 2 x writers split2[0..0] = "
           "3 channels\n"));
  ck_assert_ptr_nonnull(strstr(out, "topics ksnap creates:\n"
                                    "  dag.split: 2 partitions (exchange)\n"
                                    "  dag.split.p3: 3 partitions "
                                    "(exchange)\n"));
}
END_TEST

START_TEST(describe_reports_graph_problems) {
  ck_assert_int_eq(ksnap_test_cli("", "job describe " DATA
                                  "job/bad.properties", &out, &err), 1);
  ck_assert_str_eq(out, "");
  ck_assert_str_eq(err,
                   DATA "job/bad.properties:8: stage.c.input: invalid entry "
                   "\"lines\" (expected source:TOPIC or stage:NAME)\n"
                   DATA "job/bad.properties:8: stage.c.input: unknown stage "
                   "\"nope\"\n"
                   DATA "job/bad.properties:4: stage.a.input: cycle a -> b "
                   "-> a\n");
}
END_TEST

START_TEST(describe_reports_conf_problems_as_config_check) {
  char *cout, *cerr;

  ck_assert_int_eq(ksnap_test_cli("", "config check " DATA
                                  "conf/bad.properties", &cout, &cerr), 1);
  ck_assert_int_eq(ksnap_test_cli("", "job describe " DATA
                                  "conf/bad.properties", &out, &err), 1);
  ck_assert_str_eq(out, "");
  ck_assert_str_eq(err, cerr);
  free(cout);
  free(cerr);
}
END_TEST

START_TEST(check_operators) {
  ck_assert_int_eq(
      ksnap_test_cli("KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/tests/operators",
                     "job describe --check-operators " DATA
                     "job/operators.properties", &out, &err), 1);
  ck_assert_str_eq(out, "");
  ck_assert_str_eq(err,
                   DATA "job/operators.properties:6: stage.b.operator: "
                   "libksnap_test_identity.so:badabi has operator ABI "
                   "version 99, this ksnap needs 1 to 2\n"
                   DATA "job/operators.properties:9: stage.c.operator: no "
                   "built-in operator \"upper\" is registered\n");
  teardown();
  /* without the path, the library is not found */
  ck_assert_int_eq(ksnap_test_cli("-u KSNAP_OPERATOR_PATH",
                                  "job describe --check-operators " DATA
                                  "job/operators.properties", &out, &err), 1);
  ck_assert_ptr_nonnull(strstr(err, DATA "job/operators.properties:4: "
                                        "stage.a.operator: cannot load "
                                        "\"libksnap_test_identity.so\": "));
  teardown();
  /* the flag is optional: the operators are always checked */
  ck_assert_int_eq(
      ksnap_test_cli("KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/tests/operators",
                     "job describe " DATA "job/operators.properties", &out,
                     &err), 1);
  ck_assert_ptr_nonnull(strstr(err, "stage.b.operator: "));
}
END_TEST

START_TEST(help_and_usage) {
  ck_assert_int_eq(ksnap_test_cli("", "job --help", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "Usage: ksnap job describe "));
  teardown();
  ck_assert_int_eq(ksnap_test_cli("", "job", &out, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "Usage: ksnap job describe "));
  teardown();
  ck_assert_int_eq(ksnap_test_cli("", "job explain x", &out, &err), 2);
  teardown();
  ck_assert_int_eq(ksnap_test_cli("", "job describe --check-operators", &out,
                                  &err), 2);
  teardown();
  ck_assert_int_eq(ksnap_test_cli("", "--help", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "  job "));
}
END_TEST

/* Named outputs: each out: line and each edge names its output. */
START_TEST(describe_router_example) {
  ck_assert_int_eq(
      ksnap_test_cli("KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/examples/router",
                     "job describe " KSNAP_SOURCE_DIR
                     "/examples/router/embedded.properties",
                     &out, &err),
      0);
  ck_assert_str_eq(err, "");
  ck_assert_ptr_nonnull(strstr(
      out, "  out large: exchange topic router-embedded.route.large (1 "
           "partitions, written by route as output large, read by total)\n"
           "  out: sink topic small-payments\n"
           "  out bad: sink topic bad-payments\n"));
  ck_assert_ptr_nonnull(strstr(
      out, "  source payments --> route\n"
           "  route --> sink small-payments\n"
           "  route [bad] --> sink bad-payments\n"
           "  route --> dead-letter payments-dlq\n"
           "  route [large] --> exchange router-embedded.route.large (1 "
           "partitions) --> total\n"
           "  total --> sink large-totals\n"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_job");
  TCase *tc = tcase_create("cli");

  tcase_add_checked_fixture(tc, NULL, teardown);
  tcase_add_test(tc, describe_embedded_example);
  tcase_add_test(tc, config_check_accepts_examples);
  tcase_add_test(tc, describe_wordcount_example);
  tcase_add_test(tc, describe_dag);
  tcase_add_test(tc, describe_router_example);
  tcase_add_test(tc, describe_reports_graph_problems);
  tcase_add_test(tc, describe_reports_conf_problems_as_config_check);
  tcase_add_test(tc, check_operators);
  tcase_add_test(tc, help_and_usage);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
