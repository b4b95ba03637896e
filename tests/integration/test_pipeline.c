/*
 * A 3-stage pipeline against the real broker, in-process (one worker
 * running every task): source stage t_split (P=2, source topic of 4
 * partitions) -> keyed t_count (P=3) -> keyed t_max (P=2) -> sink topic.
 * The test plays the coordinator (tests/common/pipetest.h): it writes
 * TRIGGER / COMPLETE records and reads the ACKs.
 *
 * Checked: every task ACKs; the snapshots form a consistent cut: the
 * count state of every t_count task and the max state of every t_max task
 * equal a model of exactly the source records before the source tasks'
 * offsets (a record counted on both sides of a barrier, or lost, would
 * make a count differ); after COMPLETE every sink task reports COMMITTED
 * and the read_committed sink output holds each (word, k) exactly once.
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
#include "ksnap/state.h"
#include "ksnap/storage.h"
#include "pipeops.h"
#include "pipetest.h"
#include "testutil.h"
#include "worker.h"

#define T_MS 60000
#define NSRC_PARTS 4
#define NLINES 400

static const char *bs(void) {
  return ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
}

typedef struct fixture_s {
  char *job, *src, *out, *dir, url[600];
  ksnap_conf_t *conf;
  ksnap_storage_t *st;
} fixture_t;

/* @p url: checkpoint storage (NULL: a temporary directory). */
static void setup_url(fixture_t *f, const char *url) {
  char in[300], outs[300];
  ksnap_error_t error;

  f->st = NULL;
  f->job = ksnap_test_unique_name("pipe");
  f->src = ksnap_test_unique_name("pipe-src");
  f->out = ksnap_test_unique_name("pipe-out");
  f->dir = ksnap_test_tmpdir("pipeline");
  if (url)
    snprintf(f->url, sizeof(f->url), "%s", url);
  else
    snprintf(f->url, sizeof(f->url), "file://%s", f->dir);
  snprintf(in, sizeof(in), "source:%s", f->src);
  snprintf(outs, sizeof(outs), "sink:%s", f->out);
  {
    const char *kv[] = {"state.checkpoints.dir", f->url,
                        "kafka.transaction.timeout.ms", "60000",
                        "execution.checkpointing.interval", "1s",
                        "execution.checkpointing.timeout", "30s",
                        "stage.src.operator", "t_split",
                        "stage.src.parallelism", "2",
                        "stage.src.input", in,
                        "stage.mid.operator", "t_count",
                        "stage.mid.parallelism", "3",
                        "stage.mid.input", "stage:src",
                        "stage.fin.operator", "t_max",
                        "stage.fin.parallelism", "2",
                        "stage.fin.input", "stage:mid",
                        "stage.fin.output", outs,
                        NULL};
    f->conf = ksnap_test_conn_conf(f->job, kv);
  }
  if (url) {
    ksnap_test_conn_set(f->conf, "s3.endpoint",
                        ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT"));
    ksnap_test_conn_set(f->conf, "s3.region",
                        ksnap_test_require_env("KSNAP_TEST_S3_REGION"));
    ksnap_test_conn_set(f->conf, "s3.access-key",
                        ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY"));
    ksnap_test_conn_set(f->conf, "s3.secret-key",
                        ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY"));
    ksnap_test_conn_set(f->conf, "s3.max-retries", "1");
  }
  ck_assert_int_eq(ksnap_conf_finalize(f->conf, NULL, NULL), KSNAP_ERR_OK);
  ksnap_test_create_topic(bs(), f->src, NSRC_PARTS);
  ksnap_test_create_topic(bs(), f->out, 2);
  if (!url)
    ck_assert_msg(!ksnap_storage_open(f->url, NULL, &f->st, &error), "%s",
                  error.msg);
}

static void setup(fixture_t *f) { setup_url(f, NULL); }

static void teardown(fixture_t *f) {
  ksnap_storage_destroy(f->st);
  ksnap_conf_destroy(f->conf);
  ksnap_test_rmtree(f->dir);
  free(f->dir);
  free(f->job);
  free(f->src);
  free(f->out);
}

/* Lines [from, to) go to partition i mod NSRC_PARTS. */
static void produce_lines(fixture_t *f, size_t from, size_t to) {
  for (int p = 0; p < NSRC_PARTS; p++) {
    char **vals = calloc(to - from + 1, sizeof(*vals)), buf[64];
    size_t n = 0;
    for (size_t i = from; i < to; i++)
      if (i % NSRC_PARTS == (size_t)p) {
        pt_line(i, buf, sizeof(buf));
        vals[n++] = strdup(buf);
      }
    pt_produce(bs(), f->src, p, (const char *const *)vals, n);
    for (size_t i = 0; i < n; i++)
      free(vals[i]);
    free(vals);
  }
}

/* The model: word counts of the lines before the source offsets. */
static void model_n(const ksnap_ack_record_t *const *acks, size_t n,
                    size_t nlines, long long *counts) {
  int64_t off[NSRC_PARTS] = {0};

  for (size_t i = 0; i < n; i++) {
    const ksnap_task_snapshot_t *ts = &acks[i]->u.ack.snapshot;
    if (strcmp(ts->task.stage, "src"))
      continue;
    for (size_t k = 0; k < ts->offset_cnt; k++)
      if (ts->offsets[k].offset > 0)
        off[ts->offsets[k].partition] = ts->offsets[k].offset;
  }
  memset(counts, 0, PT_NWORDS * sizeof(*counts));
  for (size_t i = 0; i < nlines; i++)
    if ((int64_t)(i / NSRC_PARTS) < off[i % NSRC_PARTS])
      pt_line_count(i, counts);
}

static void model(const ksnap_ack_record_t *const *acks, size_t n,
                  long long *counts) {
  model_n(acks, n, NLINES, counts);
}

typedef struct state_check_s {
  const char *state;
  long long counts[PT_NWORDS];
  int seen[PT_NWORDS];
} state_check_t;

static int on_entry(void *opaque, const ksnap_state_entry_t *e) {
  state_check_t *sc = opaque;
  char buf[32];
  int w;

  if (strcmp(e->state, sc->state))
    return 0;
  ck_assert_int_lt(e->klen, sizeof(buf));
  ck_assert_int_lt(e->vlen, sizeof(buf));
  memcpy(buf, e->key, e->klen);
  buf[e->klen] = '\0';
  ck_assert_int_eq(buf[0], 'w');
  w = atoi(buf + 1);
  ck_assert_int_eq(sc->seen[w], 0); /* each key in one task only */
  sc->seen[w] = 1;
  memcpy(buf, e->value, e->vlen);
  buf[e->vlen] = '\0';
  sc->counts[w] = atoll(buf);
  return 0;
}

/* Decodes the state files of @p stage's ACKs and compares to @p expect. */
static void check_state(fixture_t *f, const ksnap_ack_record_t *const *acks,
                        size_t n, const char *stage, const char *state,
                        const long long *expect) {
  state_check_t sc = {state, {0}, {0}};
  ksnap_error_t error;

  for (size_t i = 0; i < n; i++) {
    const ksnap_task_snapshot_t *ts = &acks[i]->u.ack.snapshot;
    ksnap_buf_t buf;
    if (strcmp(ts->task.stage, stage))
      continue;
    ck_assert_int_eq(ts->handle_cnt, 1);
    ksnap_buf_init(&buf);
    ck_assert_msg(!ksnap_storage_get(f->st, ts->handles[0].path, &buf,
                                     &error), "%s", error.msg);
    ck_assert_int_eq(ts->handles[0].size, (int64_t)buf.len);
    ck_assert_msg(!ksnap_state_file_decode(buf.data, buf.len, NULL, on_entry,
                                           &sc, &error), "%s", error.msg);
    ksnap_buf_cleanup(&buf);
  }
  for (int w = 0; w < PT_NWORDS; w++)
    ck_assert_msg(sc.counts[w] == expect[w],
                  "%s state %s of w%d: %lld, model %lld", stage, state, w,
                  sc.counts[w], expect[w]);
}

static int64_t fin_out(ksnap_worker_t *w) {
  int64_t n = 0;

  for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++) {
    ksnap_task_t *t = ksnap_worker_task(w, i);
    if (!strncmp(ksnap_task_id(t), "fin[", 4))
      n += ksnap_task_records_out(t);
  }
  return n;
}

static void wait_running(ksnap_worker_t *w) {
  for (int tries = 0; tries < 600; tries++) {
    size_t up = 0;
    for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++)
      up += ksnap_task_running(ksnap_worker_task(w, i)) != 0;
    if (up == ksnap_worker_task_cnt(w))
      return;
    ksnap_worker_tick(w);
    usleep(100 * 1000);
  }
  ck_abort_msg("tasks did not start");
}

START_TEST(test_cut_and_commit) {
  fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  long long m[PT_NWORDS], total = 0;
  size_t n;
  int64_t words = 0;

  setup(&f);
  produce_lines(&f, 0, NLINES / 2);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  wait_running(w);
  acks = pt_acks_new(bs(), f.job);
  produce_lines(&f, NLINES / 2, NLINES);

  /* Checkpoint 1 somewhere in the middle of the input. */
  pt_trigger(bs(), f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 1", n);
  model(recs, n, m);
  check_state(&f, recs, n, "mid", "count", m);
  check_state(&f, recs, n, "fin", "max", m);

  /* Checkpoint 2 after all input: the whole input is in the cut. */
  for (size_t i = 0; i < NLINES; i++)
    words += 3;
  for (int tries = 0; fin_out(w) < words && tries < 600; tries++)
    usleep(100 * 1000);
  ck_assert_int_eq(fin_out(w), words);
  pt_trigger(bs(), f.job, 2, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 2, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 2", n);
  model(recs, n, m);
  for (int k = 0; k < PT_NWORDS; k++)
    total += m[k];
  ck_assert_int_eq(total, words);
  check_state(&f, recs, n, "mid", "count", m);
  check_state(&f, recs, n, "fin", "max", m);

  /* COMPLETE(2) commits both pending sink transactions in order. */
  pt_complete(bs(), f.job, 2, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, 2, PT_G0, 2, T_MS, NULL);
  ck_assert_msg(n == 2, "%zu of 2 sink tasks committed", n);
  {
    int seen[PT_NWORDS][NLINES * 3 / PT_NWORDS + 8];
    size_t cnt = 0;
    memset(seen, 0, sizeof(seen));
    for (int p = 0; p < 2; p++) {
      ksnap_test_records_t *r =
          ksnap_test_consume_all(bs(), f.out, p, "read_committed");
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
  teardown(&f);
}
END_TEST

typedef struct paced_s {
  fixture_t *f;
  size_t from, to;
} paced_t;

/* Produces lines [from, to) at about 10k lines/s from one producer. */
static void *paced_main(void *arg) {
  paced_t *pc = arg;
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs(), NULL);
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

/* src[0] holds each barrier back for 1 s: at every mid task the channels
 * of src[1] deliver their barrier first, are blocked and buffered until
 * src[0]'s arrives. The cut must still be consistent (state == model),
 * and the ACKs report the alignment time and the bytes buffered. */
START_TEST(test_slow_channel) {
  enum { LINES = 20000 };
  fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  long long m[PT_NWORDS];
  int64_t buffered = 0;
  size_t n;

  pt_slow_task = 0;
  setup(&f);
  produce_lines(&f, 0, LINES / 2);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  wait_running(w);
  acks = pt_acks_new(bs(), f.job);
  {
    /* input keeps flowing while src[0] holds its barrier back */
    paced_t pc = {&f, LINES / 2, LINES};
    pthread_t th;
    ck_assert_int_eq(pthread_create(&th, NULL, paced_main, &pc), 0);
    usleep(200 * 1000);
    pt_trigger(bs(), f.job, 1, PT_G0);
    pthread_join(th, NULL);
  }
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks acknowledged checkpoint 1", n);
  model_n(recs, n, LINES, m);
  check_state(&f, recs, n, "mid", "count", m);
  check_state(&f, recs, n, "fin", "max", m);
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
  teardown(&f);
}
END_TEST

/* Checkpoint storage in a bucket that does not exist: every task
 * declines with the storage error as its reason. */
START_TEST(test_decline_bad_bucket) {
  fixture_t f;
  ksnap_worker_t *w;
  ksnap_error_t error;
  pt_acks_t *acks;
  const ksnap_ack_record_t **recs;
  char url[256];
  size_t n;

  snprintf(url, sizeof(url), "s3://no-such-bucket-%d/ckpt", (int)getpid());
  setup_url(&f, url);
  produce_lines(&f, 0, NLINES);
  ck_assert_msg(!ksnap_worker_new(f.conf, NULL, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  wait_running(w);
  acks = pt_acks_new(bs(), f.job);
  pt_trigger(bs(), f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_DECLINE, 1, PT_G0, 7, T_MS, &recs);
  ck_assert_msg(n == 7, "%zu of 7 tasks declined checkpoint 1", n);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(strstr(recs[i]->u.decline.reason, "no-such-bucket"),
                  "reason: %s", recs[i]->u.decline.reason);
  ck_assert_int_eq(pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 1, 0, NULL), 0);
  pt_acks_destroy(acks);
  ksnap_worker_destroy(w);
  teardown(&f);
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
  tcase_add_test(tc, test_slow_channel);
  tcase_add_test(tc, test_decline_bad_bucket);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
