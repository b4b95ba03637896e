/*
 * Proof that the test broker is real: Kafka transactions against
 * KSNAP_TEST_BOOTSTRAP.
 *
 *  - commit_then_abort: a committed transaction's records are visible to a
 *    read_committed reader, an aborted one's are not; a read_uncommitted
 *    reader sees both (so the assertion could fail).
 *  - second_producer_fences_first: a producer with the same
 *    transactional.id fences the first one with a fatal error, and the
 *    fenced producer's records never become visible to read_committed.
 *
 * librdkafka's mock cluster enforces neither (it accepts every transactional call), so on it this
 * suite SKIPS (exit 77) instead of passing. `test_kafka_txn --mock-cluster`
 * (ctest entry test_kafka_txn_mock) starts a mock cluster in-process and
 * points the suite at it to show that skip in every CI run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include "kafka_testutil.h"
#include "testutil.h"

#define TXN_TIMEOUT_MS 30000

static const char *bootstrap(void) {
  return ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
}

static rd_kafka_t *txn_producer(const char *transactional_id) {
  const char *kv[] = {"transactional.id", transactional_id,
                      "transaction.timeout.ms", "60000", NULL};
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bootstrap(), kv);

  return rk;
}

/* Fails the test with the error's text if @p error is set. */
static void ok(rd_kafka_error_t *error, const char *what) {
  if (error) {
    char msg[512];

    snprintf(msg, sizeof(msg), "%s: %s", what, rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
    ck_abort_msg("%s", msg);
  }
}

static void produce(rd_kafka_t *rk, const char *topic, const char *value) {
  rd_kafka_resp_err_t err = rd_kafka_producev(
      rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(0),
      RD_KAFKA_V_VALUE((void *)value, strlen(value)),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);

  ck_assert_msg(!err, "produce %s: %s", value, rd_kafka_err2str(err));
}

/* Waits until every produced record is acknowledged (written to the log). */
static void flush(rd_kafka_t *rk) {
  rd_kafka_resp_err_t err = rd_kafka_flush(rk, TXN_TIMEOUT_MS);

  ck_assert_msg(!err, "flush: %s", rd_kafka_err2str(err));
}

static void assert_values(const ksnap_test_records_t *records,
                          const char *const *expected, size_t cnt,
                          const char *reader) {
  ck_assert_msg(records->cnt == cnt, "%s reader saw %zu records, expected %zu",
                reader, records->cnt, cnt);
  for (size_t i = 0; i < cnt; i++)
    ck_assert_str_eq(records->values[i], expected[i]);
}

START_TEST(commit_then_abort) {
  char *topic = ksnap_test_unique_name("ksnap-txn");
  char *txn_id = ksnap_test_unique_name("ksnap-txn-id");
  const char *committed[] = {"c0", "c1", "c2"};
  const char *all[] = {"c0", "c1", "c2", "a0", "a1"};
  rd_kafka_t *rk;
  ksnap_test_records_t *records;

  ksnap_test_create_topic(bootstrap(), topic, 1);
  rk = txn_producer(txn_id);
  ok(rd_kafka_init_transactions(rk, TXN_TIMEOUT_MS), "init_transactions");

  ok(rd_kafka_begin_transaction(rk), "begin 1");
  for (int i = 0; i < 3; i++)
    produce(rk, topic, committed[i]);
  ok(rd_kafka_commit_transaction(rk, TXN_TIMEOUT_MS), "commit");

  ok(rd_kafka_begin_transaction(rk), "begin 2");
  produce(rk, topic, "a0");
  produce(rk, topic, "a1");
  flush(rk); /* the aborted records are in the log, not just queued */
  ok(rd_kafka_abort_transaction(rk, TXN_TIMEOUT_MS), "abort");
  rd_kafka_destroy(rk);

  records = ksnap_test_consume_all(bootstrap(), topic, 0, "read_committed");
  assert_values(records, committed, 3, "read_committed");
  ksnap_test_records_free(records);

  records = ksnap_test_consume_all(bootstrap(), topic, 0, "read_uncommitted");
  assert_values(records, all, 5, "read_uncommitted");
  ksnap_test_records_free(records);
  free(txn_id);
  free(topic);
}
END_TEST

static int is_fencing_error(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR__FENCED ||
         err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
         err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

START_TEST(second_producer_fences_first) {
  char *topic = ksnap_test_unique_name("ksnap-fence");
  char *txn_id = ksnap_test_unique_name("ksnap-fence-id");
  const char *after[] = {"p2-0"};
  rd_kafka_t *p1, *p2;
  rd_kafka_error_t *error;
  rd_kafka_resp_err_t fatal;
  char errstr[512];
  ksnap_test_records_t *records;

  ksnap_test_create_topic(bootstrap(), topic, 1);
  p1 = txn_producer(txn_id);
  ok(rd_kafka_init_transactions(p1, TXN_TIMEOUT_MS), "p1 init_transactions");
  ok(rd_kafka_begin_transaction(p1), "p1 begin");
  produce(p1, topic, "p1-0");
  flush(p1); /* p1-0 is written, in p1's open transaction */

  p2 = txn_producer(txn_id);
  ok(rd_kafka_init_transactions(p2, TXN_TIMEOUT_MS), "p2 init_transactions");

  /* p1's epoch is stale now: its next produce or its commit must fail
   * with a fatal fencing error. */
  produce(p1, topic, "p1-1"); /* enqueueing still succeeds */
  error = rd_kafka_commit_transaction(p1, TXN_TIMEOUT_MS);
  ck_assert_msg(error != NULL, "fenced producer committed");
  ck_assert_msg(rd_kafka_error_is_fatal(error),
                "commit error is not fatal: %s", rd_kafka_error_string(error));
  rd_kafka_error_destroy(error);
  fatal = rd_kafka_fatal_error(p1, errstr, sizeof(errstr));
  ck_assert_msg(is_fencing_error(fatal), "fatal error is %s (%s), not fencing",
                rd_kafka_err2name(fatal), errstr);
  fprintf(stderr, "p1 fenced as expected: %s (%s)\n", rd_kafka_err2name(fatal),
          errstr);
  rd_kafka_destroy(p1);

  ok(rd_kafka_begin_transaction(p2), "p2 begin");
  produce(p2, topic, "p2-0");
  ok(rd_kafka_commit_transaction(p2, TXN_TIMEOUT_MS), "p2 commit");
  rd_kafka_destroy(p2);

  records = ksnap_test_consume_all(bootstrap(), topic, 0, "read_committed");
  assert_values(records, after, 1, "read_committed");
  ksnap_test_records_free(records);

  /* p1-0 did reach the log: read_uncommitted sees it before p2's record. */
  records = ksnap_test_consume_all(bootstrap(), topic, 0, "read_uncommitted");
  ck_assert_uint_ge(records->cnt, 2);
  ck_assert_str_eq(records->values[0], "p1-0");
  ck_assert_str_eq(records->values[records->cnt - 1], "p2-0");
  ksnap_test_records_free(records);
  free(txn_id);
  free(topic);
}
END_TEST

/* Starts a mock cluster in this process and points the suite at it. */
static rd_kafka_t *start_mock_cluster(rd_kafka_mock_cluster_t **mcluster) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_t *rk;

  rd_kafka_conf_set(conf, "log_level", "4", errstr, sizeof(errstr));
  rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk || !(*mcluster = rd_kafka_mock_cluster_new(rk, 1))) {
    fprintf(stderr, "cannot start a mock cluster: %s\n", errstr);
    exit(1);
  }
  setenv("KSNAP_TEST_BOOTSTRAP", rd_kafka_mock_cluster_bootstraps(*mcluster),
         1);
  return rk;
}

int main(int argc, char **argv) {
  rd_kafka_mock_cluster_t *mcluster = NULL;
  rd_kafka_t *mock_rk = NULL;
  Suite *s;
  TCase *tc;
  int is_mock;

  if (argc > 1 && !strcmp(argv[1], "--mock-cluster"))
    mock_rk = start_mock_cluster(&mcluster);

  is_mock = ksnap_test_broker_is_mock(bootstrap());
  if (is_mock < 0) {
    fprintf(stderr, "no cluster id from the broker at %s: is it running?\n",
            bootstrap());
    return 1;
  }
  if (mock_rk) {
    rd_kafka_mock_cluster_destroy(mcluster);
    rd_kafka_destroy(mock_rk);
  }
  if (is_mock) {
    printf("SKIP: the broker is librdkafka's mock cluster, which enforces "
           "neither read_committed nor producer fencing; these tests need a "
           "real Apache Kafka broker (tests/servers/kafka.sh).\n");
    return KSNAP_TEST_SKIP;
  }

  s = suite_create("kafka_txn");
  tc = tcase_create("transactions");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, commit_then_abort);
  tcase_add_test(tc, second_producer_fences_first);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
