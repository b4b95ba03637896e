/*
 * A 3-stage pipeline against the real broker, in-process (one worker
 * running every task): tests/common/pipefix.h. The test plays the
 * coordinator (tests/common/pipetest.h): it writes TRIGGER / COMPLETE /
 * ABORT records and reads the ACKs.
 *
 * Checked: every task ACKs; the snapshots form a consistent cut: the
 * count state of every t_count task and the max state of every t_max task
 * equal a model of exactly the source records before the source tasks'
 * offsets (a record counted on both sides of a barrier, or lost, would
 * make a count differ); after COMPLETE every sink task reports COMMITTED
 * and the read_committed sink output holds each (word, k) exactly once;
 * an ABORTed checkpoint's sink transaction stays pending and commits with
 * the next completed one; source offsets reach the job's consumer group.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "conntest.h"
#include "kafka_testutil.h"
#include "ksnap/log.h"
#include "pipefix.h"
#include "pipeops.h"
#include "pipetest.h"
#include "testutil.h"

START_TEST(test_cut_and_commit) {
  pf_fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  long long m[PT_NWORDS], total = 0;
  size_t n;
  int64_t words = 0;

  pf_setup(&f);
  pf_produce_lines(&f, 0, NLINES / 2);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  pf_wait_running(w);
  acks = pt_acks_new(pf_bs(), f.job);
  pf_produce_lines(&f, NLINES / 2, NLINES);

  /* Checkpoint 1 somewhere in the middle of the input. */
  pt_trigger(pf_bs(), f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 1", n);
  pf_model(recs, n, m);
  pf_check_state(&f, recs, n, "mid", "count", m);
  pf_check_state(&f, recs, n, "fin", "max", m);

  /* Checkpoint 2 after all input: the whole input is in the cut. */
  for (size_t i = 0; i < NLINES; i++)
    words += 3;
  for (int tries = 0; pf_fin_out(w) < words && tries < 600; tries++)
    usleep(100 * 1000);
  ck_assert_int_eq(pf_fin_out(w), words);
  pt_trigger(pf_bs(), f.job, 2, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 2, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 2", n);
  pf_model(recs, n, m);
  for (int k = 0; k < PT_NWORDS; k++)
    total += m[k];
  ck_assert_int_eq(total, words);
  pf_check_state(&f, recs, n, "mid", "count", m);
  pf_check_state(&f, recs, n, "fin", "max", m);

  /* COMPLETE(2) commits both pending sink transactions in order. */
  pt_complete(pf_bs(), f.job, 2, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, 2, PT_G0, 2, T_MS, NULL);
  ck_assert_msg(n == 2, "%zu of 2 sink tasks committed", n);
  {
    int seen[PT_NWORDS][NLINES * 3 / PT_NWORDS + 8];
    size_t cnt = 0;
    memset(seen, 0, sizeof(seen));
    for (int p = 0; p < 2; p++) {
      ksnap_test_records_t *r =
          ksnap_test_consume_all(pf_bs(), f.out, p, "read_committed");
      for (size_t i = 0; i < r->cnt; i++) {
        int word;
        long long k;
        ck_assert_int_eq(sscanf(r->values[i], "w%d:%lld", &word, &k), 2);
        ck_assert(k >= 1 && k <= m[word]);
        ck_assert_msg(!seen[word][k], "duplicate output %s", r->values[i]);
        seen[word][k] = 1;
      }
      cnt += r->cnt;
      ksnap_test_records_free(r);
    }
    ck_assert_int_eq((long long)cnt, total);
  }
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
}
END_TEST

/* Offsets committed to the job's consumer group for the source topic. */
static void group_offsets(pf_fixture_t *f, int64_t *off) {
  const char *kv[] = {"group.id", f->job, NULL};
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_CONSUMER, pf_bs(), kv);
  rd_kafka_topic_partition_list_t *list =
      rd_kafka_topic_partition_list_new(NSRC_PARTS);

  for (int p = 0; p < NSRC_PARTS; p++)
    rd_kafka_topic_partition_list_add(list, f->src, p);
  ck_assert_int_eq(rd_kafka_committed(rk, list, 10000), 0);
  for (int p = 0; p < NSRC_PARTS; p++)
    off[p] = list->elems[p].offset;
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_destroy(rk);
}

/* ABORT(1) keeps the sinks' transaction of epoch 1 pending; COMPLETE(2)
 * commits epochs 1 and 2 in order: the read_committed output is exactly
 * the pf_model of cut 2. The source tasks commit cut 2's offsets to the
 * job's consumer group; every task sends heartbeats. */
START_TEST(test_abort_then_complete) {
  pf_fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  long long m[PT_NWORDS], total = 0;
  int64_t cut[NSRC_PARTS] = {0}, group[NSRC_PARTS];
  ksnap_control_record_t abort_rec = {.type = KSNAP_CONTROL_ABORT};
  size_t n, nout;
  char **out;

  pf_setup(&f);
  pf_produce_lines(&f, 0, NLINES);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  pf_wait_running(w);
  acks = pt_acks_new(pf_bs(), f.job);
  pt_trigger(pf_bs(), f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 1", n);
  abort_rec.u.abort = (ksnap_abort_t){1, 1, "test abort"};
  pt_send_control(pf_bs(), f.job, &abort_rec);
  for (int tries = 0; pf_fin_out(w) < NLINES * 3 && tries < 600; tries++) {
    ksnap_worker_tick(w);
    usleep(100 * 1000);
  }
  pt_trigger(pf_bs(), f.job, 2, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 2, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 2", n);
  pf_model(recs, n, m);
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < recs[i]->u.ack.snapshot.offset_cnt; k++)
      cut[recs[i]->u.ack.snapshot.offsets[k].partition] =
          recs[i]->u.ack.snapshot.offsets[k].offset;
  pt_complete(pf_bs(), f.job, 2, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, 2, PT_G0, 2, T_MS, NULL);
  ck_assert_msg(n == 2, "%zu of 2 sink tasks committed", n);
  usleep(1100 * 1000); /* heartbeat.interval 1s: one is due now */
  ksnap_worker_tick(w);
  n = pt_acks_wait(acks, KSNAP_ACKT_HEARTBEAT, 0, PT_G0, 7, T_MS, NULL);
  ck_assert_msg(n == 7, "%zu of 7 tasks sent heartbeats", n);

  for (int k = 0; k < PT_NWORDS; k++)
    total += m[k];
  ck_assert_int_eq(total, NLINES * 3);
  out = pt_consume_committed(pf_bs(), f.out, 2, &nout);
  ck_assert_int_eq((long long)nout, total);
  for (size_t i = 0; i < nout; i++)
    free(out[i]);
  free(out);
  for (int tries = 0; tries < 50; tries++) {
    group_offsets(&f, group);
    if (!memcmp(group, cut, sizeof(cut)))
      break;
    usleep(100 * 1000);
  }
  for (int p = 0; p < NSRC_PARTS; p++)
    ck_assert_int_eq(group[p], cut[p]);
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("pipeline");
  TCase *tc = tcase_create("pipeline");

  pt_register_operators();
  if (getenv("KSNAP_TEST_DEBUG")) {
    ksnap_log_set_level(KSNAP_LOG_DEBUG);
    ksnap_log_set_debug(KSNAP_DBG_BARRIER | KSNAP_DBG_SNAPSHOT);
  }
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_cut_and_commit);
  tcase_add_test(tc, test_abort_then_complete);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
