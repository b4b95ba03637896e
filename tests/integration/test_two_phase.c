/*
 * The sink's two-phase commit (connectors/src/sink/two_phase.h) against
 * the real broker: partition order across a task's consecutive epochs.
 * The epochs are transactions on different producers of the slot pool,
 * and the next one begins at the barrier while the ended one is
 * pre-committed on another thread (the snapshot pool); still, every
 * record of epoch N must precede every record of epoch N+1 in a
 * partition, so that a read_committed reader sees one key's records in
 * the order the task produced them (the ordering invariant of
 * two_phase.h). A flush at a barrier that times out leaves the
 * transaction open across that barrier, in one piece and in order.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conntest.h"
#include "kafka_testutil.h"
#include "sink/two_phase.h"
#include "testutil.h"
#include "kafka/topics.h"

#define T_MS 30000
#define EPOCHS 4
/* Per epoch: two full batches (batch.num.messages 10000) and a partial
 * one, which waits for linger.ms (200 ms here) in its producer's queue
 * unless flushed: the next epoch's full batches, on the other producer,
 * go out at once. */
#define RECORDS 25000

#define OK(call)                                                  \
  do {                                                            \
    ksnap_error_t e_;                                             \
    ksnap_error_t *error = &e_;                                   \
    ck_assert_msg((call) == KSNAP_ERR_OK, "%s: %s", #call, e_.msg); \
  } while (0)

typedef struct precommit_s {
  ksnap_2pc_t *tpc;
  int64_t epoch;
  pthread_t th;
} precommit_t;

/* The snapshot pool's part: the state's upload (100 ms here), then the
 * pre-commit of an epoch whose snapshot at the cut is durable. */
static void *precommit_main(void *arg) {
  precommit_t *p = arg;

  usleep(100 * 1000);
  ksnap_2pc_precommit(p->tpc, p->epoch, 0);
  return NULL;
}

START_TEST(consecutive_epochs_keep_partition_order) {
  const char *kv[] = {"kafka.transaction.timeout.ms", "60000",
                      "execution.checkpointing.interval", "1s",
                      "execution.checkpointing.timeout", "10s",
                      "sink.producer-pool-size", "2",
                      "kafka.linger.ms", "200", NULL};
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char *job = ksnap_test_unique_name("tpcjob");
  char *out = ksnap_test_unique_name("tpc-out");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, kv);
  ksnap_topic_spec_t spec = {out, 1, 0};
  precommit_t pre[EPOCHS + 1];
  ksnap_test_records_t *r;
  ksnap_error_t error;
  ksnap_2pc_t *tpc;
  char v[16];
  long seq = 0;

  ck_assert_msg(!ksnap_topics_ensure_job(conf, &spec, 1, T_MS, &error), "%s",
                error.msg);
  ck_assert_msg((tpc = ksnap_2pc_new(conf, "out", 0, T_MS, &error)) != NULL,
                "%s", error.msg);
  ksnap_2pc_warm_topic(tpc, out, T_MS);
  OK(ksnap_2pc_begin(tpc, 1, error));
  for (int n = 1; n <= EPOCHS; n++) {
    for (int i = 0; i < RECORDS; i++) {
      int len = snprintf(v, sizeof(v), "%08ld", ++seq);
      OK(ksnap_2pc_produce(tpc, out, 0, "k", 1, v, (size_t)len, 0, NULL, 0,
                           error));
    }
    /* the slot the next epoch needs holds epoch n-1: COMPLETE(n-1) */
    if (n > 1)
      OK(ksnap_2pc_commit_upto(tpc, n - 1, 1, error));
    /* barrier n: epoch n ends, n+1 begins at once; n is pre-committed
     * on another thread while n+1's records are produced */
    pre[n].tpc = tpc;
    OK(ksnap_2pc_end(tpc, n, T_MS, &pre[n].epoch, error));
    ck_assert_int_eq(pre[n].epoch, n);
    ck_assert_int_eq(pthread_create(&pre[n].th, NULL, precommit_main,
                                    &pre[n]), 0);
    if (n > 1)
      pthread_join(pre[n - 1].th, NULL);
  }
  pthread_join(pre[EPOCHS].th, NULL);
  OK(ksnap_2pc_commit_upto(tpc, EPOCHS, 1, error));
  ksnap_2pc_destroy(tpc); /* the open epoch EPOCHS+1 is empty */

  r = ksnap_test_consume_all(bs, out, 0, "read_committed");
  ck_assert_uint_eq(r->cnt, (size_t)seq);
  for (size_t i = 0; i < r->cnt; i++)
    ck_assert_msg(atol(r->values[i]) == (long)i + 1,
                  "record #%zu (offset %lld) is %.8s: epochs %ld and %ld "
                  "interleave in the partition",
                  i + 1, (long long)r->offsets[i], r->values[i],
                  (long)i / RECORDS + 1, (atol(r->values[i]) - 1) / RECORDS + 1);
  ksnap_test_records_free(r);
  ksnap_conf_destroy(conf);
  free(job);
  free(out);
}
END_TEST

/* A flush at a barrier that times out ends nothing: the transaction
 * stays open, takes the next epoch's records too, and ends (in one piece,
 * in order) at the next barrier, whose progress record it carries. */
START_TEST(flush_timeout_keeps_the_transaction_open) {
  const char *kv[] = {"kafka.transaction.timeout.ms", "60000",
                      "execution.checkpointing.interval", "1s",
                      "execution.checkpointing.timeout", "10s",
                      "sink.producer-pool-size", "2",
                      "kafka.linger.ms", "1000", NULL};
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char *job = ksnap_test_unique_name("tpcjob");
  char *out = ksnap_test_unique_name("tpc-out");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, kv);
  ksnap_topic_spec_t spec = {out, 1, 0};
  ksnap_test_records_t *r;
  ksnap_error_t error;
  ksnap_2pc_t *tpc;
  int64_t epoch, cp;
  char v[16];
  long seq = 0;

  ck_assert_msg(!ksnap_topics_ensure_job(conf, &spec, 1, T_MS, &error), "%s",
                error.msg);
  ck_assert_msg((tpc = ksnap_2pc_new(conf, "out", 0, T_MS, &error)) != NULL,
                "%s", error.msg);
  ksnap_2pc_warm_topic(tpc, out, T_MS);
  OK(ksnap_2pc_begin(tpc, 1, error));
  for (int n = 1; n <= 2; n++)
    for (int i = 0; i < 1000; i++) {
      int len = snprintf(v, sizeof(v), "%08ld", ++seq);
      OK(ksnap_2pc_produce(tpc, out, 0, "k", 1, v, (size_t)len, 0, NULL, 0,
                           error));
      /* barrier 1 in the middle: its records wait for linger.ms */
      if (n == 1 && i == 999) {
        ck_assert_int_eq(ksnap_2pc_end(tpc, 1, 0, &epoch, &error),
                         KSNAP_ERR_TIMEOUT);
        ck_assert_msg(strstr(error.msg, "continues to the next barrier"),
                      "%s", error.msg);
        ck_assert_int_eq(epoch, -1);
      }
    }
  OK(ksnap_2pc_end(tpc, 2, T_MS, &epoch, error));
  ck_assert_int_eq(epoch, 1); /* one transaction for both */
  ksnap_2pc_precommit(tpc, 1, 0);
  OK(ksnap_2pc_commit_upto(tpc, 2, 1, error));
  OK(ksnap_2pc_end(tpc, 3, T_MS, &epoch, error));
  ck_assert_int_eq(epoch, 2); /* the next epoch, on the next slot */
  OK(ksnap_2pc_last_committed(tpc, T_MS, &cp, error));
  ck_assert_int_eq(cp, 2);
  ksnap_2pc_destroy(tpc);

  r = ksnap_test_consume_all(bs, out, 0, "read_committed");
  ck_assert_uint_eq(r->cnt, (size_t)seq);
  for (size_t i = 0; i < r->cnt; i++)
    ck_assert_int_eq(atol(r->values[i]), (long)i + 1);
  ksnap_test_records_free(r);
  ksnap_conf_destroy(conf);
  free(job);
  free(out);
}
END_TEST

int main(void) {
  Suite *s = suite_create("two_phase");
  TCase *tc = tcase_create("two_phase");

  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, consecutive_epochs_keep_partition_order);
  tcase_add_test(tc, flush_timeout_keeps_the_transaction_open);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
