/*
 * Transactional sink against the real broker: commit/abort visibility to
 * read_committed with progress records, commit order, pool exhaustion, a
 * restarted instance fencing the first one (whose open transaction is
 * aborted and whose commit fails fatally), the last committed progress
 * record ignoring aborted ones, the transaction-timeout check, and the
 * idempotent creation of the job's topics.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "conntest.h"
#include "kafka_testutil.h"
#include "sink/progress.h"
#include "sink/sink.h"
#include "testutil.h"
#include "kafka/topics.h"

#define T_MS 30000

static const char *bs(void) {
  return ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
}

typedef struct fixture_s {
  char *job, *out;
  ksnap_conf_t *conf;
} fixture_t;

static fixture_t setup(void) {
  const char *kv[] = {"kafka.transaction.timeout.ms", "60000",
                      "execution.checkpointing.interval", "1s",
                      "execution.checkpointing.timeout", "10s",
                      "sink.producer-pool-size", "2", NULL};
  fixture_t f;
  ksnap_topic_spec_t spec;
  ksnap_error_t error;

  f.job = ksnap_test_unique_name("sinkjob");
  f.out = ksnap_test_unique_name("sink-out");
  f.conf = ksnap_test_conn_conf(f.job, kv);
  spec = (ksnap_topic_spec_t){f.out, 2, 0};
  ck_assert_msg(!ksnap_topics_ensure_job(f.conf, &spec, 1, T_MS, &error),
                "%s", error.msg);
  return f;
}

static void teardown(fixture_t *f) {
  ksnap_conf_destroy(f->conf);
  free(f->job);
  free(f->out);
}

static ksnap_sink_t *sink_new(fixture_t *f) {
  ksnap_error_t error;
  ksnap_sink_t *sink = ksnap_sink_new(f->conf, "out", 0, T_MS, &error);

  ck_assert_msg(sink != NULL, "sink: %s", error.msg);
  ksnap_sink_warm_topic(sink, f->out, T_MS);
  return sink;
}

#define OK(call)                                                  \
  do {                                                            \
    ksnap_error_t e_;                                             \
    ksnap_error_t *error = &e_;                                   \
    ck_assert_msg((call) == KSNAP_ERR_OK, "%s: %s", #call, e_.msg); \
  } while (0)

/* One epoch: begin, produce @p values (NULL-terminated), pre-commit. */
static void epoch(ksnap_sink_t *sink, fixture_t *f, int64_t n,
                  const char *const *values) {
  OK(ksnap_sink_begin(sink, n, error));
  for (size_t i = 0; values[i]; i++)
    OK(ksnap_sink_produce(sink, f->out, -1, values[i], strlen(values[i]),
                          values[i], strlen(values[i]), 0, NULL, 0, error));
  OK(ksnap_sink_precommit(sink, n, T_MS, error));
}

static void commit(ksnap_sink_t *sink, int64_t n, const char *progress) {
  OK(ksnap_sink_commit(sink, n, progress, strlen(progress), T_MS, error));
}

/* Sorted, comma-joined values of both output partitions. */
static int cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *visible(fixture_t *f, const char *isolation) {
  char *all[4096], *joined = calloc(1, 65536);
  size_t n = 0;
  ksnap_test_records_t *r[2];

  for (int p = 0; p < 2; p++) {
    r[p] = ksnap_test_consume_all(bs(), f->out, p, isolation);
    for (size_t i = 0; i < r[p]->cnt && n < 4096; i++)
      all[n++] = r[p]->values[i];
  }
  qsort(all, n, sizeof(char *), cmp);
  for (size_t i = 0; i < n; i++)
    sprintf(joined + strlen(joined), "%s%s", i ? "," : "", all[i]);
  ksnap_test_records_free(r[0]);
  ksnap_test_records_free(r[1]);
  return joined;
}

static void assert_visible(fixture_t *f, const char *isolation,
                           const char *want) {
  char *got = visible(f, isolation);

  ck_assert_str_eq(got, want);
  free(got);
}

static void assert_progress(fixture_t *f, const char *task,
                            const char *want) {
  ksnap_buf_t buf;
  ksnap_error_t error;
  int found = -1;

  ksnap_buf_init(&buf);
  ck_assert_msg(!ksnap_progress_read_last(f->conf, task, T_MS, &buf, &found,
                                          &error),
                "%s", error.msg);
  if (!want) {
    ck_assert_int_eq(found, 0);
  } else {
    ck_assert_int_eq(found, 1);
    ck_assert_str_eq((const char *)buf.data, want);
  }
  ksnap_buf_cleanup(&buf);
}

START_TEST(commit_visible_abort_invisible) {
  fixture_t f = setup();
  ksnap_sink_t *sink = sink_new(&f);
  const char *e1[] = {"e1-a", "e1-b", NULL}, *e2[] = {"e2-a", NULL},
             *e3[] = {"e3-a", NULL};
  ksnap_error_t error;

  ck_assert_str_eq(ksnap_sink_task_id(sink), "out[0]");
  ck_assert_msg(strstr(ksnap_sink_txn_id(sink, 3), ".out.0.1") != NULL, "%s",
                ksnap_sink_txn_id(sink, 3));
  assert_progress(&f, "out[0]", NULL);
  epoch(sink, &f, 1, e1);
  epoch(sink, &f, 2, e2); /* epoch 1 stays pending meanwhile */
  ck_assert_int_eq(ksnap_sink_oldest_pending(sink), 1);
  /* commits go in order */
  ck_assert_int_eq(ksnap_sink_commit(sink, 2, "P2", 2, T_MS, &error),
                   KSNAP_ERR_STATE);
  ck_assert_msg(strstr(error.msg, "older epoch 1 is still pending"), "%s",
                error.msg);
  assert_visible(&f, "read_committed", "");
  commit(sink, 1, "P1");
  assert_visible(&f, "read_committed", "e1-a,e1-b");
  commit(sink, 2, "P2");
  epoch(sink, &f, 3, e3);
  OK(ksnap_sink_abort(sink, 3, T_MS, error));
  ck_assert_int_eq(ksnap_sink_oldest_pending(sink), -1);
  assert_visible(&f, "read_committed", "e1-a,e1-b,e2-a");
  assert_visible(&f, "read_uncommitted", "e1-a,e1-b,e2-a,e3-a");
  assert_progress(&f, "out[0]", "P2");
  /* not pre-committed, not pending */
  OK(ksnap_sink_begin(sink, 4, error));
  ck_assert_int_eq(ksnap_sink_commit(sink, 4, "P4", 2, T_MS, &error),
                   KSNAP_ERR_STATE);
  ck_assert_msg(strstr(error.msg, "not pre-committed"), "%s", error.msg);
  ck_assert_int_eq(ksnap_sink_commit(sink, 3, "P3", 2, T_MS, &error),
                   KSNAP_ERR_STATE);
  ck_assert_int_eq(ksnap_sink_begin(sink, 4, &error), KSNAP_ERR_INVALID_ARG);
  ksnap_sink_destroy(sink);
  teardown(&f);
}
END_TEST

static ksnap_err_t progress_of(void *opaque, int64_t epoch, ksnap_buf_t *out,
                               ksnap_error_t *error) {
  (void)opaque;
  (void)error;
  return ksnap_buf_appendf(out, "P%d", (int)epoch);
}

START_TEST(commit_upto_commits_pending_in_order) {
  fixture_t f = setup();
  const char *kv[] = {"sink.producer-pool-size", "3", NULL};
  ksnap_sink_t *sink;
  const char *e1[] = {"e1", NULL}, *e2[] = {"e2", NULL}, *e3[] = {"e3", NULL};
  ksnap_error_t error;
  int64_t last;

  ksnap_test_conn_set(f.conf, kv[0], kv[1]);
  sink = sink_new(&f);
  epoch(sink, &f, 1, e1); /* checkpoint 1 aborted: stays pending */
  epoch(sink, &f, 2, e2);
  epoch(sink, &f, 3, e3);
  ck_assert_msg(!ksnap_sink_commit_upto(sink, 2, progress_of, NULL, T_MS,
                                        &last, &error),
                "%s", error.msg);
  ck_assert_int_eq(last, 2);
  ck_assert_int_eq(ksnap_sink_oldest_pending(sink), 3);
  assert_progress(&f, "out[0]", "P2");
  /* nothing pending up to 2 any more */
  ck_assert(!ksnap_sink_commit_upto(sink, 2, progress_of, NULL, T_MS, &last,
                                    &error));
  ck_assert_int_eq(last, -1);
  /* an epoch not pre-committed stops the commits */
  OK(ksnap_sink_begin(sink, 4, error));
  ck_assert_int_eq(ksnap_sink_commit_upto(sink, 4, progress_of, NULL, T_MS,
                                          &last, &error),
                   KSNAP_ERR_STATE);
  ck_assert_int_eq(last, 3);
  ck_assert_msg(strstr(error.msg, "epoch 4 refused: not pre-committed"),
                "%s", error.msg);
  assert_progress(&f, "out[0]", "P3");
  ksnap_sink_destroy(sink);
  teardown(&f);
}
END_TEST

START_TEST(pool_exhaustion) {
  fixture_t f = setup();
  ksnap_sink_t *sink = sink_new(&f);
  const char *none[] = {NULL};
  ksnap_error_t error;

  epoch(sink, &f, 1, none);
  epoch(sink, &f, 2, none);
  ck_assert_int_eq(ksnap_sink_begin(sink, 3, &error), KSNAP_ERR_STATE);
  ck_assert_msg(strstr(error.msg, "producer pool exhausted: epoch 3 needs "
                                  "slot 1") &&
                    strstr(error.msg, "pending epoch 1") &&
                    strstr(error.msg, "sink.producer-pool-size=2"),
                "%s", error.msg);
  commit(sink, 1, "P1");
  epoch(sink, &f, 3, none);
  commit(sink, 2, "P2");
  commit(sink, 3, "P3");
  assert_progress(&f, "out[0]", "P3");
  ksnap_sink_destroy(sink);
  teardown(&f);
}
END_TEST

START_TEST(restart_fences_first_instance) {
  fixture_t f = setup();
  ksnap_sink_t *a = sink_new(&f), *b;
  const char *a1[] = {"a1", NULL}, *a2[] = {"a2", NULL}, *b2[] = {"b2", NULL};
  ksnap_error_t error;

  epoch(a, &f, 1, a1);
  commit(a, 1, "A1");
  epoch(a, &f, 2, a2); /* pre-committed, then the "restart" */
  b = sink_new(&f);    /* fences every slot id, aborts a's epoch 2 */
  ck_assert_int_eq(ksnap_sink_commit(a, 2, "A2", 2, T_MS, &error),
                   KSNAP_ERR_FENCED);
  ck_assert_int_eq(error.fatal, 1);
  ck_assert_int_eq(ksnap_sink_begin(a, 3, &error), KSNAP_ERR_FENCED);
  ck_assert_int_eq(error.fatal, 1);
  assert_visible(&f, "read_committed", "a1");
  assert_progress(&f, "out[0]", "A1");
  epoch(b, &f, 2, b2);
  commit(b, 2, "B2");
  assert_visible(&f, "read_committed", "a1,b2");
  assert_visible(&f, "read_uncommitted", "a1,a2,b2");
  assert_progress(&f, "out[0]", "B2");
  ksnap_sink_destroy(a);
  ksnap_sink_destroy(b);
  teardown(&f);
}
END_TEST

/* A raw transaction writing @p value under key @p key to the progress
 * topic, committed or aborted. */
static void raw_progress(fixture_t *f, const char *key, const char *value,
                         int commit_it) {
  char *id = ksnap_test_unique_name("raw-txn");
  char topic[512];
  const char *kv[] = {"transactional.id", id, NULL};
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs(), kv);
  rd_kafka_error_t *e;

  snprintf(topic, sizeof(topic), "%s.ksnap.progress", f->job);
  ck_assert_ptr_null(e = rd_kafka_init_transactions(rk, T_MS));
  ck_assert_ptr_null(e = rd_kafka_begin_transaction(rk));
  ck_assert(!rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                               RD_KAFKA_V_KEY(key, strlen(key)),
                               RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                               RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                               RD_KAFKA_V_END));
  ck_assert(!rd_kafka_flush(rk, T_MS));
  e = commit_it ? rd_kafka_commit_transaction(rk, T_MS)
                : rd_kafka_abort_transaction(rk, T_MS);
  ck_assert_ptr_null(e);
  rd_kafka_destroy(rk);
  free(id);
}

START_TEST(last_progress_skips_aborted) {
  fixture_t f = setup();
  ksnap_sink_t *sink = sink_new(&f);
  const char *none[] = {NULL};

  epoch(sink, &f, 1, none);
  commit(sink, 1, "P1");
  raw_progress(&f, "out[0]", "P2-aborted", 0);
  raw_progress(&f, "out[1]", "other-task", 1);
  assert_progress(&f, "out[0]", "P1");
  assert_progress(&f, "out[1]", "other-task");
  assert_progress(&f, "out[7]", NULL);
  ksnap_sink_destroy(sink);
  teardown(&f);
}
END_TEST

START_TEST(txn_timeout_check) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_error_t error;

  ksnap_test_conn_set(conf, "job.name", "j");
  ck_assert_int_eq(ksnap_sink_check_txn_timeout(conf, &error),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(
      error.msg,
      "kafka.transaction.timeout.ms (60000, librdkafka's default) must "
      "exceed execution.checkpointing.interval (10000 ms) * "
      "sink.producer-pool-size (4) + execution.checkpointing.timeout "
      "(600000 ms) = 640000 ms, or a pending sink transaction can time out "
      "before its checkpoint completes; raise kafka.transaction.timeout.ms "
      "(up to the broker's transaction.max.timeout.ms, default 900000) or "
      "lower the others");
  ck_assert_ptr_null(ksnap_sink_new(conf, "out", 0, 1000, &error));
  ck_assert_int_eq(error.code, KSNAP_ERR_CONF_VALUE);
  ksnap_test_conn_set(conf, "kafka.transaction.timeout.ms", "640001");
  ck_assert_int_eq(ksnap_sink_check_txn_timeout(conf, &error), KSNAP_ERR_OK);
  ksnap_conf_destroy(conf);
}
END_TEST

START_TEST(unreachable_broker_fails_start) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_error_t error;

  ksnap_test_conn_set(conf, "job.name", "j");
  ksnap_test_conn_set(conf, "kafka.bootstrap.servers", "127.0.0.1:1");
  ksnap_test_conn_set(conf, "kafka.transaction.timeout.ms", "900000");
  ck_assert_ptr_null(ksnap_sink_new(conf, "out", 0, 2000, &error));
  ck_assert_msg(error.code == KSNAP_ERR_TIMEOUT ||
                    error.code == KSNAP_ERR_CONNECT,
                "%s", error.msg);
  ck_assert_int_eq(error.retriable, 1);
  ck_assert_msg(strstr(error.msg, "j.out.0.0: init_transactions"), "%s",
                error.msg);
  ksnap_conf_destroy(conf);
}
END_TEST

START_TEST(ensure_topics_is_idempotent) {
  fixture_t f = setup(); /* created them once */
  ksnap_topic_spec_t spec = {f.out, 2, 0};
  ksnap_error_t error;
  char name[512];
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs(), NULL);
  const struct rd_kafka_metadata *md;
  rd_kafka_topic_t *rkt;

  ck_assert_msg(!ksnap_topics_ensure_job(f.conf, &spec, 1, T_MS, &error),
                "%s", error.msg);
  snprintf(name, sizeof(name), "%s.ksnap.progress", f.job);
  rkt = rd_kafka_topic_new(rk, name, NULL);
  ck_assert(!rd_kafka_metadata(rk, 0, rkt, &md, T_MS));
  ck_assert_int_eq(md->topics[0].partition_cnt,
                   KSNAP_TOPICS_PROGRESS_PARTITIONS);
  rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  /* a topic the broker refuses is reported by name */
  spec.name = "bad/topic";
  ck_assert_int_eq(ksnap_topics_ensure(f.conf, &spec, 1, T_MS, &error),
                   KSNAP_ERR_KAFKA);
  ck_assert_msg(strstr(error.msg, "cannot create topic bad/topic: "), "%s",
                error.msg);
  teardown(&f);
}
END_TEST

typedef struct async_s {
  ksnap_sink_t *sink;
  int64_t epoch;
  ksnap_err_t com;
} async_t;

/* The COMPLETE handler of a pre-committed epoch: another thread. */
static void *commit_epoch(void *arg) {
  async_t *a = arg;
  ksnap_error_t e;

  a->com = ksnap_sink_commit(a->sink, a->epoch, "PA", 2, T_MS, &e);
  return NULL;
}

START_TEST(next_epoch_begins_after_the_flush_commit_on_another_thread) {
  fixture_t f = setup();
  ksnap_sink_t *sink = sink_new(&f);
  async_t a = {sink, 1, -1};
  ksnap_error_t error;
  pthread_t th;
  char v[32];

  OK(ksnap_sink_begin(sink, 1, error));
  for (int i = 0; i < 500; i++) {
    snprintf(v, sizeof(v), "e1-%03d", i);
    OK(ksnap_sink_produce(sink, f.out, -1, v, strlen(v), v, strlen(v), 0,
                          NULL, 0, error));
  }
  /* partition order: epoch 2 may not begin while epoch 1's records may
   * still be unacknowledged */
  ck_assert_int_eq(ksnap_sink_begin(sink, 2, &error), KSNAP_ERR_STATE);
  ck_assert_msg(strstr(error.msg, "interleave"), "%s", error.msg);
  OK(ksnap_sink_precommit(sink, 1, T_MS, error)); /* barrier 1 */
  OK(ksnap_sink_begin(sink, 2, error));
  ck_assert_int_eq(pthread_create(&th, NULL, commit_epoch, &a), 0);
  for (int i = 0; i < 500; i++) {
    snprintf(v, sizeof(v), "e2-%03d", i);
    OK(ksnap_sink_produce(sink, f.out, -1, v, strlen(v), v, strlen(v), 0,
                          NULL, 0, error));
  }
  pthread_join(th, NULL);
  ck_assert_int_eq(a.com, KSNAP_ERR_OK);
  OK(ksnap_sink_precommit(sink, 2, T_MS, error));
  {
    /* Epoch 2's transaction is still open; every record of epoch 1 was
     * appended before its first one, so the last stable offset is past
     * all of committed epoch 1: it is visible in full, nothing of 2. */
    char *got = visible(&f, "read_committed");
    ck_assert_msg(!strstr(got, "e2-"), "epoch 2 visible: %.80s", got);
    ck_assert_msg(strlen(got) == 500 * 7 - 1, "epoch 1: %.80s...", got);
    free(got);
  }
  commit(sink, 2, "PB");
  {
    char *got = visible(&f, "read_committed");
    ck_assert_msg(strlen(got) == 1000 * 7 - 1, "committed: %.80s...", got);
    free(got);
  }
  assert_progress(&f, "out[0]", "PB");
  ksnap_sink_destroy(sink);
  teardown(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sink");
  TCase *tc = tcase_create("sink");

  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, txn_timeout_check);
  tcase_add_test(tc, ensure_topics_is_idempotent);
  tcase_add_test(tc, unreachable_broker_fails_start);
  tcase_add_test(tc, commit_visible_abort_invisible);
  tcase_add_test(tc, pool_exhaustion);
  tcase_add_test(tc, commit_upto_commits_pending_in_order);
  tcase_add_test(tc, restart_fences_first_instance);
  tcase_add_test(tc, last_progress_skips_aborted);
  tcase_add_test(tc, next_epoch_begins_after_the_flush_commit_on_another_thread);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
