/*
 * Bounded inputs (source.stop-at=latest) against the real broker, on the
 * 3-stage pipeline of tests/common/pipefix.h (src P=2 -> mid P=3 -> fin
 * P=2 -> sink), in-process; the test plays the coordinator.
 *
 * Checked: the end offsets are taken when the job first starts, so lines
 * written after the start are never read; every task (the ended source,
 * and the readers whose every channel delivered its end of input) takes
 * its part of checkpoints after the end, on their TRIGGER; their state
 * and the committed sink output are exactly the input up to the end; a
 * restore from such a checkpoint keeps the same end (the topic holds
 * twice as many lines by then) and processes nothing again; every ACK
 * after the end says input_ended (the tasks' finish ran); a source
 * topic written in transactions (commit markers at the end) and an empty
 * partition end too.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "conntest.h"
#include "kafka_testutil.h"
#include "ksnap/log.h"
#include "pipefix.h"
#include "pipeops.h"
#include "pipetest.h"
#include "testutil.h"

#define HALF (NLINES / 2)

static ksnap_worker_t *start_worker(pf_fixture_t *f) {
  ksnap_worker_t *w;
  ksnap_error_t error;

  ck_assert_msg(!ksnap_worker_new(f->conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  pf_wait_running(w);
  return w;
}

/* TRIGGER(id), the 7 ACKs; the state of mid and fin and the source cut
 * must be exactly the first HALF lines. */
static void checkpoint_at_end(pf_fixture_t *f, pt_acks_t *acks, int64_t id,
                              int64_t gen, int complete) {
  const ksnap_ack_record_t **recs;
  long long m[PT_NWORDS], total = 0;
  int64_t cut = 0;
  size_t n;

  pt_trigger(pf_bs(), f->job, id, gen);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, id, gen, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint %lld", n,
                (long long)id);
  for (size_t i = 0; i < n; i++) /* every task finished before it */
    ck_assert_msg(recs[i]->u.ack.input_ended, "%s[%d]: ACK(%lld) without "
                  "input_ended", recs[i]->u.ack.snapshot.task.stage,
                  (int)recs[i]->u.ack.snapshot.task.index, (long long)id);
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < recs[i]->u.ack.snapshot.offset_cnt; k++)
      cut += recs[i]->u.ack.snapshot.offsets[k].offset;
  ck_assert_int_eq(cut, HALF); /* never past the end */
  pf_model_n(recs, n, HALF, m);
  for (int k = 0; k < PT_NWORDS; k++)
    total += m[k];
  ck_assert_int_eq(total, HALF * 3);
  pf_check_state(f, recs, n, "mid", "count", m);
  pf_check_state(f, recs, n, "fin", "max", m);
  if (!complete)
    return;
  pt_write_metadata(f->st, f->job, id, gen, recs, n);
  pt_complete(pf_bs(), f->job, id, gen);
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, id, gen, 2, T_MS, NULL);
  ck_assert_msg(n == 2, "%zu of 2 sink tasks committed %lld", n,
                (long long)id);
}

/* The committed output: each (word, k) once, for the first HALF lines. */
static void check_output(pf_fixture_t *f) {
  static char seen[PT_NWORDS][NLINES];
  long long model[PT_NWORDS] = {0}, total = 0;
  size_t nout = 0;

  for (size_t i = 0; i < HALF; i++)
    pt_line_count(i, model);
  memset(seen, 0, sizeof(seen));
  for (int p = 0; p < 2; p++) {
    ksnap_test_records_t *r =
        ksnap_test_consume_all(pf_bs(), f->out, p, "read_committed");
    for (size_t i = 0; i < r->cnt; i++) {
      int w;
      long long k;
      ck_assert_int_eq(sscanf(r->values[i], "w%d:%lld", &w, &k), 2);
      ck_assert_msg(w >= 0 && w < PT_NWORDS && k >= 1 && k <= model[w],
                    "output %s beyond the end of the input", r->values[i]);
      ck_assert_msg(!seen[w][k], "duplicate output %s", r->values[i]);
      seen[w][k] = 1;
    }
    nout += r->cnt;
    ksnap_test_records_free(r);
  }
  for (int w = 0; w < PT_NWORDS; w++)
    total += model[w];
  ck_assert_int_eq((long long)nout, total);
}

START_TEST(test_stop_at_latest) {
  pf_fixture_t f;
  ksnap_worker_t *w;
  pt_acks_t *acks;
  char errstr[256];
  size_t n;

  pf_setup(&f);
  ck_assert_msg(!ksnap_conf_set(f.conf, "source.stop-at", "latest", errstr,
                                sizeof(errstr)), "%s", errstr);
  pf_produce_lines(&f, 0, HALF);
  acks = pt_acks_new(pf_bs(), f.job);
  w = start_worker(&f); /* the ends are taken now */
  pf_produce_lines(&f, HALF, NLINES); /* past the end: never read */
  for (int tries = 0; pf_fin_out(w) < HALF * 3 && tries < 600; tries++) {
    ksnap_worker_tick(w);
    usleep(100 * 1000);
  }
  for (int tries = 0; tries < 20; tries++) { /* and nothing more comes */
    ksnap_worker_tick(w);
    usleep(100 * 1000);
  }
  ck_assert_int_eq(pf_fin_out(w), HALF * 3);

  /* Two checkpoints after the end, the first completed and committed. */
  checkpoint_at_end(&f, acks, 1, PT_G0, 1);
  checkpoint_at_end(&f, acks, 2, PT_G0, 0);
  check_output(&f);
  ksnap_worker_destroy(w);

  /* A restore from checkpoint 1 keeps the end: nothing is read again. */
  pt_restore(pf_bs(), f.job, 1, 1);
  w = start_worker(&f);
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, 1, 7, T_MS, NULL);
  ck_assert_msg(n == 7, "%zu of 7 tasks registered in generation 1", n);
  for (int tries = 0; tries < 20; tries++) {
    ksnap_worker_tick(w);
    usleep(100 * 1000);
  }
  ck_assert_int_eq(pf_fin_out(w), 0);
  checkpoint_at_end(&f, acks, 3, 1, 1);
  check_output(&f);
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
}
END_TEST

/* Lines [0, n) with i mod NSRC_PARTS != 3 to partition i mod NSRC_PARTS
 * in one transaction: partitions 0..2 end with a commit marker, 3 is
 * empty. @returns the lines written. */
static size_t produce_in_transaction(pf_fixture_t *f, size_t n) {
  char *tid = ksnap_test_unique_name("bounded-txn"), buf[64];
  const char *kv[] = {"transactional.id", tid, NULL};
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, pf_bs(), kv);
  size_t cnt = 0;

  ck_assert_ptr_null(rd_kafka_init_transactions(rk, 30000));
  ck_assert_ptr_null(rd_kafka_begin_transaction(rk));
  for (size_t i = 0; i < n; i++) {
    if (i % NSRC_PARTS == 3)
      continue;
    pt_line(i, buf, sizeof(buf));
    ck_assert_int_eq(rd_kafka_producev(
                         rk, RD_KAFKA_V_TOPIC(f->src),
                         RD_KAFKA_V_PARTITION((int32_t)(i % NSRC_PARTS)),
                         RD_KAFKA_V_VALUE(buf, strlen(buf)),
                         RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                         RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    cnt++;
  }
  ck_assert_ptr_null(rd_kafka_commit_transaction(rk, 30000));
  rd_kafka_destroy(rk);
  free(tid);
  return cnt;
}

/* End markers (ksnap.ctl end) on partition @p p of stage src's exchange
 * topic. */
static int end_markers(pf_fixture_t *f, int p) {
  char topic[300];
  ksnap_test_records_t *r;
  int n = 0;

  snprintf(topic, sizeof(topic), "%s.src", f->job);
  r = ksnap_test_consume_all(pf_bs(), topic, p, "read_uncommitted");
  for (size_t i = 0; i < r->cnt; i++)
    n += strstr(r->headers[i], "ksnap.ctl=end\n") != NULL;
  ksnap_test_records_free(r);
  return n;
}

/* A source topic written in transactions ends with commit markers, never
 * delivered as records: the partition EOF says the end is reached. An
 * empty partition has ended from the start. Both source tasks send their
 * end of input to every partition of the exchange topic (3: mid's P). */
START_TEST(test_transactional_input) {
  pf_fixture_t f;
  ksnap_worker_t *w;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  char errstr[256];
  size_t lines, n;
  int ends = 0;

  pf_setup(&f);
  ck_assert_msg(!ksnap_conf_set(f.conf, "source.stop-at", "latest", errstr,
                                sizeof(errstr)), "%s", errstr);
  lines = produce_in_transaction(&f, HALF);
  acks = pt_acks_new(pf_bs(), f.job);
  w = start_worker(&f);
  for (int tries = 0; pf_fin_out(w) < (int64_t)lines * 3 && tries < 600;
       tries++) {
    ksnap_worker_tick(w);
    usleep(100 * 1000);
  }
  ck_assert_int_eq(pf_fin_out(w), (int64_t)lines * 3);
  for (time_t t0 = time(NULL); ends < 6 && time(NULL) - t0 < 10;) {
    ksnap_worker_tick(w);
    usleep(300 * 1000);
    ends = end_markers(&f, 0) + end_markers(&f, 1) + end_markers(&f, 2);
  }
  ck_assert_msg(ends == 6, "%d of 6 end markers on the exchange topic", ends);
  pt_trigger(pf_bs(), f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 1", n);
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bounded");
  TCase *tc = tcase_create("bounded");

  pt_register_operators();
  if (getenv("KSNAP_TEST_DEBUG")) {
    ksnap_log_set_level(KSNAP_LOG_DEBUG);
    ksnap_log_set_debug(KSNAP_DBG_BARRIER | KSNAP_DBG_SNAPSHOT);
  }
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_stop_at_latest);
  tcase_add_test(tc, test_transactional_input);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
