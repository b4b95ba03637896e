/*
 * The pipeline of tests/common/pipefix.h under harder conditions:
 * alignment with one slow channel (records buffered, the cut still equals
 * the model), decline on a failing state upload (missing bucket), and
 * keyed processing-time timers restored from a snapshot.
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
#include "base/util.h"

typedef struct paced_s {
  pf_fixture_t *f;
  size_t from, to;
} paced_t;

/* Produces lines [from, to) at about 10k lines/s from one producer. */
static void *paced_main(void *arg) {
  paced_t *pc = arg;
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, pf_bs(), NULL);
  char buf[64];

  for (size_t i = pc->from; i < pc->to; i++) {
    pt_line(i, buf, sizeof(buf));
    if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(pc->f->src),
                          RD_KAFKA_V_PARTITION((int32_t)(i % NSRC_PARTS)),
                          RD_KAFKA_V_VALUE(buf, strlen(buf)),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_END))
      abort();
    if (i % 200 == 0) {
      rd_kafka_poll(rk, 0);
      usleep(20 * 1000);
    }
  }
  rd_kafka_flush(rk, 30000);
  rd_kafka_destroy(rk);
  return NULL;
}

/* src[0] holds each barrier back for 2.5 s: at every mid task the channels
 * of src[1] deliver their barrier first, are blocked and buffered until
 * src[0]'s arrives. The cut must still be consistent (state == pf_model),
 * and the ACKs report the alignment time and the bytes buffered. */
START_TEST(test_slow_channel) {
  enum { LINES = 20000 };
  pf_fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  long long m[PT_NWORDS];
  int64_t buffered = 0;
  size_t n;

  pt_slow_task = 0;
  pt_slow_ms = 2500; /* room for src[1]'s records on a loaded machine */
  pf_setup(&f);
  pf_produce_lines(&f, 0, LINES / 2);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  pf_wait_running(w);
  acks = pt_acks_new(pf_bs(), f.job);
  {
    /* input keeps flowing while src[0] holds its barrier back: it starts
     * once a source acknowledged, i.e. injected its barrier (on a loaded
     * machine the TRIGGER may reach the sources only after input that was
     * produced with it was consumed: nothing would be buffered) */
    paced_t pc = {&f, LINES / 2, LINES};
    pthread_t th;
    pt_trigger(pf_bs(), f.job, 1, PT_G0);
    ck_assert_uint_ge(pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 1, T_MS,
                                   NULL), 1);
    ck_assert_int_eq(pthread_create(&th, NULL, paced_main, &pc), 0);
    pthread_join(th, NULL);
  }
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 1", n);
  pf_model_n(recs, n, LINES, m);
  pf_check_state(&f, recs, n, "mid", "count", m);
  pf_check_state(&f, recs, n, "fin", "max", m);
  for (size_t i = 0; i < n; i++) {
    const ksnap_task_snapshot_t *ts = &recs[i]->u.ack.snapshot;
    if (strcmp(ts->task.stage, "mid"))
      continue;
    fprintf(stderr, "mid[%d]: alignment %lld ms, %lld bytes buffered\n",
            (int)ts->task.index, (long long)ts->timings.alignment_us / 1000,
            (long long)ts->timings.bytes_buffered);
    ck_assert_int_ge(ts->timings.alignment_us, 500 * 1000);
    buffered += ts->timings.bytes_buffered;
  }
  ck_assert_int_gt(buffered, 0);
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
  pt_slow_ms = 1000;
}
END_TEST

/* The same slow channel with unaligned checkpoints: the mid tasks
 * snapshot at the first barrier (no alignment wait, nothing buffered),
 * the channels of src[0] are recorded as not passed (passed_c = 0: the
 * restore replays them from off_c), and the state holds at most the
 * cut's records (the rest is replayed). */
START_TEST(test_slow_channel_unaligned) {
  pf_fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  long long m[PT_NWORDS], st[PT_NWORDS];
  size_t n, not_passed = 0;

  pt_slow_task = 0;
  pf_setup(&f);
  ksnap_test_conn_set(f.conf, "execution.checkpointing.unaligned.enabled",
                      "true");
  pf_produce_lines(&f, 0, 2000);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  pf_wait_running(w);
  acks = pt_acks_new(pf_bs(), f.job);
  pt_trigger(pf_bs(), f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 1", n);
  pf_model_n(recs, n, 2000, m);
  pf_state_counts(&f, recs, n, "mid", "count", st);
  for (int k = 0; k < PT_NWORDS; k++)
    ck_assert_msg(st[k] <= m[k], "w%d: state %lld > cut %lld", k, st[k],
                  m[k]);
  for (size_t i = 0; i < n; i++) {
    const ksnap_task_snapshot_t *ts = &recs[i]->u.ack.snapshot;
    if (strcmp(ts->task.stage, "mid"))
      continue;
    ck_assert_int_lt(ts->timings.alignment_us, 500 * 1000);
    for (size_t c = 0; c < ts->channel_cnt; c++)
      if (!ts->channels[c].passed) {
        ck_assert_int_eq(ts->channels[c].writer.index, 0);
        not_passed++;
      }
  }
  ck_assert_int_eq(not_passed, 3); /* src[0]'s channel on each partition */
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
}
END_TEST

/* Checkpoint storage in a bucket that does not exist: every task
 * declines, with the storage error as its reason, or with the
 * cancellation marker of an upstream task that declined first (section
 * 4.5 of PROTOCOL.md: it then never snapshots); a sink task whose own
 * upload failed fails (an epoch without a durable snapshot can never be
 * committed), the others go on. */
START_TEST(test_decline_bad_bucket) {
  pf_fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  char url[256];
  int must_fail[2] = {0, 0}, nfail = 0;
  size_t n;

  snprintf(url, sizeof(url), "s3://no-such-bucket-%d/ckpt", (int)getpid());
  pf_setup_url(&f, url);
  pf_produce_lines(&f, 0, NLINES);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  pf_wait_running(w);
  acks = pt_acks_new(pf_bs(), f.job);
  pt_trigger(pf_bs(), f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_DECLINE, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks declined checkpoint 1", n);
  for (size_t i = 0; i < n; i++) {
    const ksnap_decline_t *d = &recs[i]->u.decline;
    int own = strstr(d->reason, "no-such-bucket") != NULL;
    ck_assert_msg(own || (strcmp(d->task.stage, "src") &&
                          strstr(d->reason, "cancellation marker")),
                  "%s[%d]: %s", d->task.stage, (int)d->task.index, d->reason);
    if (own && !strcmp(d->task.stage, "fin"))
      nfail += must_fail[d->task.index] = 1;
  }
  ck_assert_int_eq(pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 1, 0, NULL), 0);
  /* a sink task whose upload failed fails (its epoch can never commit),
   * the others go on */
  for (int tries = 0; tries < 50; tries++) {
    int failed = 0;
    for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++)
      failed += ksnap_task_failed(ksnap_worker_task(w, i));
    if (failed == nfail)
      break;
    usleep(100 * 1000);
  }
  for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++) {
    ksnap_task_t *t = ksnap_worker_task(w, i);
    const char *id = ksnap_task_id(t);
    int want = !strncmp(id, "fin[", 4) && must_fail[id[4] - '0'];
    ck_assert_msg(ksnap_task_failed(t) == want, "%s failed: %d", id,
                  ksnap_task_failed(t));
  }
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
}
END_TEST

/* A task that declines tells its downstream tasks at once: with the
 * checkpoint storage in a missing bucket, src[1] declines checkpoint 1
 * right after its barrier went out (its upload fails) and sends the
 * cancellation marker on the channels it blocked at every mid task;
 * src[0] holds its barrier back for 4 s. The mid tasks end their
 * alignment on src[1]'s marker, decline saying so and forward the marker
 * to fin, all before src[0]'s barrier exists and with no ABORT written
 * (this test plays the coordinator and writes none). Without the marker
 * they would wait for src[0]'s barrier, then fail their own upload. */
START_TEST(decline_cancels_downstream_alignment) {
  pf_fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  char url[256];
  int64_t t0, waited;
  size_t n;

  pt_slow_task = 0;
  pt_slow_ms = 4000;
  snprintf(url, sizeof(url), "s3://no-such-bucket-%d/ckpt", (int)getpid());
  pf_setup_url(&f, url);
  pf_produce_lines(&f, 0, NLINES);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  pf_wait_running(w);
  acks = pt_acks_new(pf_bs(), f.job);
  t0 = ksnap__wallclock_ms();
  pt_trigger(pf_bs(), f.job, 1, PT_G0);
  /* src[1], mid[0..2], fin[0..1]: every task but the slow src[0] */
  n = pt_acks_wait(acks, KSNAP_ACKT_DECLINE, 1, PT_G0, 6, pt_slow_ms - 500,
                   &recs);
  waited = ksnap__wallclock_ms() - t0;
  ck_assert_msg(n == 6, "%zu of 6 tasks declined checkpoint 1 within %lld "
                "ms", n, (long long)waited);
  for (size_t i = 0; i < n; i++) {
    const ksnap_decline_t *d = &recs[i]->u.decline;
    fprintf(stderr, "%s[%d] declined: %s\n", d->task.stage,
            (int)d->task.index, d->reason);
    if (!strcmp(d->task.stage, "src")) {
      ck_assert_int_eq(d->task.index, 1); /* its own upload failed */
      ck_assert_ptr_nonnull(strstr(d->reason, "no-such-bucket"));
    } else {
      ck_assert_msg(strstr(d->reason, "cancellation marker from channel"),
                    "%s[%d]: %s", d->task.stage, (int)d->task.index,
                    d->reason);
      ck_assert(!strcmp(d->task.stage, "fin") ||
                strstr(d->reason, "writer src[1]"));
    }
  }
  fprintf(stderr, "the alignments of checkpoint 1 ended by the marker "
          "within %lld ms of its trigger, before src[0]'s barrier (%d ms)\n",
          (long long)waited, pt_slow_ms);
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
  pt_slow_task = -1;
  pt_slow_ms = 1000;
}
END_TEST

/* Keyed timers are part of the snapshot: t_timer registers a timer 2 s
 * after each record; checkpoint 1 completes before any fires, the tasks
 * restore in place (RESTORE(2, 1): in-memory timers dropped), and the
 * restored timers still fire and emit for every word. */
START_TEST(test_timers_restored) {
  pf_fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  char **out;
  size_t n, nout;
  int seen[PT_NWORDS] = {0};

  pf_setup(&f);
  ksnap_test_conn_set(f.conf, "stage.fin.operator", "t_timer");
  pf_produce_lines(&f, 0, 40);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  pf_wait_running(w);
  acks = pt_acks_new(pf_bs(), f.job);
  for (int tries = 0; tries < 100; tries++) {
    int64_t in = 0;
    for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++)
      if (!strncmp(ksnap_task_id(ksnap_worker_task(w, i)), "fin[", 4))
        in += ksnap_task_records_in(ksnap_worker_task(w, i));
    if (in == 40 * 3)
      break;
    usleep(20 * 1000);
  }
  pt_trigger(pf_bs(), f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 1", n);
  pt_write_metadata(f.st, f.job, 1, 1, recs, n);
  pt_restore(pf_bs(), f.job, 2, 1);
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, 2, 7, T_MS, NULL);
  ck_assert_msg(n == 7, "%zu of 7 tasks restored", n);
  usleep((PT_TIMER_MS + 500) * 1000);
  pt_trigger(pf_bs(), f.job, 2, 2);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 2, 2, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 2", n);
  pt_complete(pf_bs(), f.job, 2, 2);
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, 2, 2, 2, T_MS, NULL);
  ck_assert_msg(n == 2, "%zu of 2 sink tasks committed", n);
  out = pt_consume_committed(pf_bs(), f.out, 2, &nout);
  for (size_t i = 0; i < nout; i++) {
    int word;
    ck_assert_int_eq(sscanf(out[i], "w%d:timer:", &word), 1);
    seen[word] = 1;
    free(out[i]);
  }
  free(out);
  for (int k = 0; k < PT_NWORDS; k++)
    ck_assert_msg(seen[k], "no timer fired for w%d", k);
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  pf_teardown(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("pipeline_align");
  TCase *tc = tcase_create("pipeline_align");

  pt_register_operators();
  if (getenv("KSNAP_TEST_DEBUG")) {
    ksnap_log_set_level(KSNAP_LOG_DEBUG);
    ksnap_log_set_debug(KSNAP_DBG_BARRIER | KSNAP_DBG_SNAPSHOT);
  }
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_slow_channel);
  tcase_add_test(tc, test_slow_channel_unaligned);
  tcase_add_test(tc, test_decline_bad_bucket);
  tcase_add_test(tc, decline_cancels_downstream_alignment);
  tcase_add_test(tc, test_timers_restored);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
