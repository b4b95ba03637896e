/*
 * Restart strategies and the FAILED job on the real broker, with the word
 * count of libksnap_test_poison.so (split fails on a line with POISON):
 *  - coordinator and worker processes, restart-strategy fixed-delay with
 *    3 attempts: exactly 3 RESTORE records, then JOB_FAILED; both exit 1
 *    naming the record; a coordinator started again refuses to resume
 *    the job and writes nothing, a worker does not start;
 *    --resume-failed restores it in a new generation;
 *  - `ksnap run` exits 1 naming the poison record;
 *  - exponential-delay: the delays between restores grow as configured,
 *    read from the coordinator's log (decided and waited);
 *  - a failed task heartbeats while its restore waits longer than
 *    heartbeat.timeout;
 *  - the sink's transaction timeout rule broken in the tasks' conf only,
 *    the coordinator run with the public API (ksnap_run_start(),
 *    KSNAP_RUN_COORDINATOR) and the tasks with the worker's internal API,
 *    which skips the job's preflight: not retriable, the job FAILS at
 *    once: no RESTORE at all;
 *  - an exchange topic made earlier with fewer partitions than the job
 *    file asks for now, and the tasks' S3 credentials refused while the
 *    coordinator's are accepted: not retriable either, no RESTORE.
 */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "clitest.h"
#include "kafka_testutil.h"
#include "ksnap/ksnap.h"
#include "task/worker.h"
#include "testutil.h"

#define OPS_DIR KSNAP_BINARY_DIR "/tests/operators"
#define OPS "KSNAP_OPERATOR_PATH=" OPS_DIR
#define WAIT_S 90

/* Runs `ksnap ARGS` and checks its exit code, showing the end of its
 * stderr when the code differs (a crash names itself there). */
#define RUN_EXPECT(args, out, err, want)                                     \
  do {                                                                       \
    int rc_ = ksnap_test_cli(OPS, (args), (out), (err));                    \
    size_t n_ = *(err) ? strlen(*(err)) : 0;                                 \
    ck_assert_msg(rc_ == (want), "ksnap %s exited %d, not %d; stderr ends: %s", \
                  (args), rc_, (want),                                       \
                  *(err) ? *(err) + (n_ > 1500 ? n_ - 1500 : 0) : "");       \
  } while (0)

typedef struct fixture_s {
  char *dir, *job, *src, *sink;
  char path[512];
} fixture_t;

/* A job of two stages: split (P=2) reads src, count (P=2) writes sink,
 * checkpoints every 500 ms to @p store (a bucket of the test's S3 server;
 * NULL: a directory), heartbeats every 200 ms (timeout 2 s), then @p extra (the
 * restart strategy). */
static void fixture_in(fixture_t *f, const char *tag, const char *store,
                       const char *extra) {
  char props[4096], ckpt[600], args[2048], *out, *err;

  f->dir = ksnap_test_tmpdir(tag);
  f->job = ksnap_test_unique_name(tag);
  f->src = ksnap_test_unique_name("restart-lines");
  f->sink = ksnap_test_unique_name("restart-counts");
  snprintf(f->path, sizeof(f->path), "%s/job.properties", f->dir);
  if (store)
    snprintf(ckpt, sizeof(ckpt), "s3://%s/restart/%s", store, f->job);
  else
    snprintf(ckpt, sizeof(ckpt), "file://%s/checkpoints", f->dir);
  snprintf(props, sizeof(props),
           "kafka.transaction.timeout.ms=60000\n"
           "execution.checkpointing.interval=500ms\n"
           "execution.checkpointing.timeout=20s\n"
           "heartbeat.interval=200ms\n"
           "heartbeat.timeout=2s\n"
           "stage.split.operator=libksnap_test_poison.so:split\n"
           "stage.split.parallelism=2\n"
           "stage.split.input=source:%s\n"
           "stage.count.operator=libksnap_test_poison.so:count\n"
           "stage.count.parallelism=2\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:%s\n%s",
           f->src, f->sink, extra);
  ksnap_test_job_file(f->path, f->job, ckpt, props);
  snprintf(args, sizeof(args), "topics create %s %s:2 %s:2", f->path, f->src,
           f->sink);
  ck_assert_msg(ksnap_test_cli("", args, &out, &err) == 0, "%s", err);
  free(out);
  free(err);
}

static void fixture(fixture_t *f, const char *tag, const char *extra) {
  fixture_in(f, tag, NULL, extra);
}

static void fixture_free(fixture_t *f) {
  ksnap_test_rmtree(f->dir);
  free(f->dir);
  free(f->job);
  free(f->src);
  free(f->sink);
}

static const char *const input[] = {"one two three", "four five",
                                    "six POISON seven", "eight nine ten"};
#define NINPUT (sizeof(input) / sizeof(input[0]))

static void produce_input(const fixture_t *f) {
  rd_kafka_t *p = ksnap_test_kafka_new(
      RD_KAFKA_PRODUCER, ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"), NULL);

  for (size_t i = 0; i < NINPUT; i++)
    ck_assert_int_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(f->src),
                                       RD_KAFKA_V_VALUE((void *)input[i],
                                                        strlen(input[i])),
                                       RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_int_eq(rd_kafka_flush(p, KSNAP_TEST_KAFKA_TIMEOUT_MS), 0);
  rd_kafka_destroy(p);
}

static void write_input(const fixture_t *f, char *path, size_t size) {
  FILE *fp;

  snprintf(path, size, "%s/input.txt", f->dir);
  ck_assert_ptr_nonnull(fp = fopen(path, "w"));
  for (size_t i = 0; i < NINPUT; i++)
    fprintf(fp, "%s\n", input[i]);
  fclose(fp);
}

/* ------------------------------------------------ the control topic */

typedef struct ctl_s {
  int restores;
  int64_t last_restore_gen;
  int failed; /* JOB_FAILED records */
  int64_t failed_gen;
  int restores_after_failed;
} ctl_t;

/* The committed control records of the job, counted. */
static void read_control(const fixture_t *f, ctl_t *c) {
  const char *const kv[] = {"isolation.level", "read_committed", "group.id",
                            "ksnap-test-restart", NULL};
  rd_kafka_t *rk = ksnap_test_kafka_new(
      RD_KAFKA_CONSUMER, ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"), kv);
  rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
  char topic[600];
  int64_t lo, hi;

  memset(c, 0, sizeof(*c));
  snprintf(topic, sizeof(topic), "%s.ksnap.control", f->job);
  ck_assert_int_eq(rd_kafka_query_watermark_offsets(
                       rk, topic, 0, &lo, &hi, KSNAP_TEST_KAFKA_TIMEOUT_MS),
                   RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_add(parts, topic, 0)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(rk, parts), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(parts);
  for (int64_t deadline = ksnap__wallclock_ms() + 30000;
       ksnap__wallclock_ms() < deadline;) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
    ksnap_control_record_t rec;
    ksnap_error_t error;
    if (!m)
      continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      rd_kafka_message_destroy(m);
      break;
    }
    ck_assert_int_eq(m->err, 0);
    ck_assert_int_eq(ksnap_codec_control_decode(m->payload, m->len, &rec,
                                                &error), KSNAP_ERR_OK);
    if (rec.type == KSNAP_CONTROL_RESTORE) {
      c->restores++;
      c->last_restore_gen = rec.u.restore.generation;
      c->restores_after_failed += c->failed > 0;
    } else if (rec.type == KSNAP_CONTROL_JOB_FAILED) {
      c->failed++;
      c->failed_gen = rec.u.job_failed.generation;
    }
    ksnap_control_record_cleanup(&rec);
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
}

/* -------------------------------------------- processes of the binary */

/* `ksnap A1 A2 [A3]` in the background, its stderr into DIR/NAME.err. */
static pid_t spawn(const fixture_t *f, const char *name, const char *a1,
                   const char *a2, const char *a3) {
  char *argv[] = {"ksnap", (char *)a1, (char *)a2, (char *)a3, NULL};
  char errf[600];

  snprintf(errf, sizeof(errf), "%s/%s.err", f->dir, name);
  return ksnap_test_spawnv(OPS_DIR, errf, argv);
}

static char *read_file(const fixture_t *f, const char *name) {
  char path[600];

  snprintf(path, sizeof(path), "%s/%s", f->dir, name);
  return ksnap_test_slurp(path);
}

#define ASSERT_HAS(text, needle)                                           \
  ck_assert_msg(strstr((text), (needle)) != NULL,                          \
                "\"%s\" not in:\n%s", (needle), (text))

#define FIXED3                                                             \
  "restart-strategy.type=fixed-delay\n"                                    \
  "restart-strategy.fixed-delay.attempts=3\n"                              \
  "restart-strategy.fixed-delay.delay=200ms\n"

START_TEST(poison_fails_the_job_after_three_restores) {
  char want[1024], args[1024], *cerr, *werr, *out, *err;
  pid_t coord, worker;
  fixture_t f;
  ctl_t c;

  fixture(&f, "restart-fixed", FIXED3);
  produce_input(&f);
  coord = spawn(&f, "coordinator", "coordinator", f.path, NULL);
  worker = spawn(&f, "worker", "worker", f.path, NULL);
  ck_assert_int_eq(ksnap_test_wait_exit(coord, WAIT_S, 1), 1);
  /* the worker stops as well */
  ck_assert_int_eq(ksnap_test_wait_exit(worker, WAIT_S, 1), 1);
  cerr = read_file(&f, "coordinator.err");
  werr = read_file(&f, "worker.err");
  snprintf(want, sizeof(want),
           "ksnap coordinator: job %s failed: the restart strategy "
           "fixed-delay made its 3 restores "
           "(restart-strategy.fixed-delay.attempts=3); the last failure: "
           "task split[", f.job);
  ASSERT_HAS(cerr, want);
  ASSERT_HAS(cerr, "split: poison line at offset ");
  snprintf(want, sizeof(want), "ksnap worker: job %s failed in generation "
           "3: the restart strategy fixed-delay made its 3 restores", f.job);
  ASSERT_HAS(werr, want);
  ASSERT_HAS(werr, "this worker stops its tasks");
  read_control(&f, &c);
  ck_assert_int_eq(c.restores, 3);
  ck_assert_int_eq(c.failed, 1);
  ck_assert_int_eq(c.failed_gen, 3);

  /* started again: the job stays FAILED, nothing is written */
  snprintf(args, sizeof(args), "coordinator %s", f.path);
  RUN_EXPECT(args, &out, &err, 1);
  snprintf(want, sizeof(want), "ksnap coordinator: job %s failed in "
           "generation 3 and is not resumed: the restart strategy "
           "fixed-delay", f.job);
  ASSERT_HAS(err, want);
  ASSERT_HAS(err, "(ksnap coordinator --resume-failed restores it ");
  free(out);
  free(err);
  snprintf(args, sizeof(args), "worker %s", f.path);
  RUN_EXPECT(args, &out, &err, 1);
  ASSERT_HAS(err, "this worker does not start its tasks (`ksnap "
                  "coordinator --resume-failed` resumes the job)");
  free(out);
  free(err);
  read_control(&f, &c);
  ck_assert_int_eq(c.restores, 3);
  ck_assert_int_eq(c.failed, 1);

  /* deliberately resumed: a restore in a new generation */
  coord = spawn(&f, "resumed", "coordinator", "--resume-failed", f.path);
  for (int i = 0; i < 300 && c.restores_after_failed == 0; i++) {
    usleep(100 * 1000);
    read_control(&f, &c);
  }
  ck_assert_int_eq(c.restores_after_failed, 1);
  ck_assert_int_eq(c.last_restore_gen, 4);
  kill(coord, SIGTERM);
  ck_assert_int_eq(ksnap_test_wait_exit(coord, 30, 1), 0);
  free(cerr);
  free(werr);
  fixture_free(&f);
}
END_TEST

START_TEST(ksnap_run_exits_naming_the_poison_record) {
  char args[2048], in[600], *out, *err;
  fixture_t f;
  ctl_t c;

  fixture(&f, "restart-run", FIXED3);
  write_input(&f, in, sizeof(in));
  snprintf(args, sizeof(args), "run --input %s %s", in, f.path);
  RUN_EXPECT(args, &out, &err, 1);
  ASSERT_HAS(err, "ksnap run: the job failed: job ");
  ASSERT_HAS(err, "the restart strategy fixed-delay made its 3 restores");
  ASSERT_HAS(err, ": operator split failed on ");
  ASSERT_HAS(err, "split: poison line at offset ");
  read_control(&f, &c);
  ck_assert_int_eq(c.restores, 3);
  ck_assert_int_eq(c.failed, 1);
  free(out);
  free(err);
  fixture_free(&f);
}
END_TEST

/* The split stage's exchange topic made beforehand with 1 partition, as a
 * job of count P=1 (and the default partitions) would have left it; the
 * job file now runs count at P=2: no restore can write partition 1, so the
 * job fails at once (not retriable), naming the topic and the key. */
START_TEST(too_few_exchange_partitions_fail_at_once) {
  char args[2048], in[600], want[1024], *out, *err;
  fixture_t f;
  ctl_t c;

  fixture(&f, "restart-parts", FIXED3);
  snprintf(args, sizeof(args), "topics create %s %s.split:1", f.path, f.job);
  RUN_EXPECT(args, &out, &err, 0);
  free(out);
  free(err);
  write_input(&f, in, sizeof(in));
  snprintf(args, sizeof(args), "run --input %s %s", in, f.path);
  RUN_EXPECT(args, &out, &err, 1);
  snprintf(want, sizeof(want), ": exchange topic %s.split has 1 partition on "
           "the broker, fewer than the 2 that stage.split.partitions asks "
           "for", f.job);
  ASSERT_HAS(err, want);
  ASSERT_HAS(err, "run stage split's readers at 1 tasks or fewer");
  ASSERT_HAS(err, "(not retriable: every restore would fail the same way)");
  read_control(&f, &c);
  ck_assert_int_eq(c.restores, 0);
  ck_assert_int_eq(c.failed, 1);
  free(out);
  free(err);
  fixture_free(&f);
}
END_TEST

/* HH:MM:SS.mmm of a log line's timestamp, in ms of the day. */
static int64_t line_ms(const char *line) {
  int h, m, s, ms;

  ck_assert_int_eq(sscanf(line + 11, "%d:%d:%d.%d", &h, &m, &s, &ms), 4);
  return ((h * 60 + m) * 60 + s) * 1000LL + ms;
}

/* The delays the coordinator decided (its log) and waited (from each
 * decision to the restore's log line) grow by backoff-multiplier. */
START_TEST(exponential_backoff_delays_grow) {
  static const int64_t want[] = {200, 400, 800, 1600};
  char args[2048], in[600], *out, *err, *p;
  int64_t decided[8], waited[8], at = 0;
  int n = 0, restored = 0;
  fixture_t f;
  ctl_t c;

  fixture(&f, "restart-exp",
          "restart-strategy.type=exponential-delay\n"
          "restart-strategy.exponential-delay.initial-backoff=200ms\n"
          "restart-strategy.exponential-delay.backoff-multiplier=2\n"
          "restart-strategy.exponential-delay.jitter-factor=0\n"
          "restart-strategy.exponential-delay.max-backoff=10s\n"
          "restart-strategy.exponential-delay."
          "attempts-before-reset-backoff=4\n"
          "log.level=info\n");
  write_input(&f, in, sizeof(in));
  snprintf(args, sizeof(args), "run --input %s %s", in, f.path);
  RUN_EXPECT(args, &out, &err, 1);
  for (p = err; (p = strstr(p, "\n")) && *++p;) {
    if (strstr(p, "Job failure: restoring in ") &&
        strstr(p, "Job failure: restoring in ") < strchr(p, '\n') && n < 8) {
      decided[n++] = strtoll(strstr(p, "restoring in ") + 13, NULL, 10);
      at = line_ms(p);
    } else if (strstr(p, "Restoring the job in generation ") &&
               strstr(p, "Restoring the job in generation ") <
                   strchr(p, '\n') && restored < 8) {
      waited[restored++] = line_ms(p) - at;
    }
  }
  ck_assert_int_eq(n, 4);
  ck_assert_int_eq(restored, 4);
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(decided[i], want[i]);
    ck_assert_msg(waited[i] >= want[i] && waited[i] < want[i] + 1000,
                  "restore %d waited %lld ms, decided %lld", i,
                  (long long)waited[i], (long long)want[i]);
  }
  ASSERT_HAS(err, "the restart strategy exponential-delay made 4 restores "
                  "without a reset");
  read_control(&f, &c);
  ck_assert_int_eq(c.restores, 4);
  free(out);
  free(err);
  fixture_free(&f);
}
END_TEST

/* A failed task that reported its failure heartbeats on while the restore
 * waits longer than heartbeat.timeout: it is not taken for dead (no
 * vacant owner, no ASSIGN round trip before its restore). */
START_TEST(a_failed_task_heartbeats_while_its_restore_waits) {
  char args[2048], in[600], *out, *err;
  fixture_t f;
  ctl_t c;

  fixture(&f, "restart-hb",
          "restart-strategy.type=fixed-delay\n"
          "restart-strategy.fixed-delay.attempts=1\n"
          "restart-strategy.fixed-delay.delay=3500ms\n" /* > 2 s */
          "log.level=info\n");
  write_input(&f, in, sizeof(in));
  snprintf(args, sizeof(args), "run --input %s %s", in, f.path);
  RUN_EXPECT(args, &out, &err, 1);
  ASSERT_HAS(err, "Job failure: restoring in 3500 ms");
  ASSERT_HAS(err, "the restart strategy fixed-delay made its 1 restores");
  ck_assert_msg(!strstr(err, "sent no heartbeat"), "the failed task was "
                "taken for dead: %.300s", strstr(err, "sent no heartbeat"));
  read_control(&f, &c);
  ck_assert_int_eq(c.restores, 1);
  free(out);
  free(err);
  fixture_free(&f);
}
END_TEST

/* Runs the job of @p f with the coordinator on the job file through the
 * public API (ksnap_run_start(), KSNAP_RUN_COORDINATOR) and the tasks
 * through the worker's internal API, which skips the job's preflight,
 * with @p key set to @p value in the tasks' configuration only; checks
 * that the job FAILED at once, not retriably, with no RESTORE. The
 * coordinator's message goes into @p msg. */
static void run_failing_tasks(const fixture_t *f, const char *key,
                              const char *value, char *msg, size_t size) {
  ksnap_conf_t *conf = ksnap_conf_new(), *wconf = ksnap_conf_new();
  ksnap_run_t *run = NULL;
  ksnap_worker_t *w = NULL;
  ksnap_error_t error;
  char errstr[256];
  int64_t start = ksnap__wallclock_ms();
  ctl_t c;

  setenv("KSNAP_OPERATOR_PATH", OPS_DIR, 1); /* for the preflight */
  ck_assert_int_eq(ksnap_conf_load_file(conf, f->path, NULL, NULL),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_conf_load_file(wconf, f->path, NULL, NULL),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_conf_set(wconf, key, value, errstr, sizeof(errstr)),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap_conf_finalize(wconf, NULL, NULL), KSNAP_ERR_OK);
  ksnap_error_clear(&error);
  ck_assert_msg(!ksnap_run_start(conf, KSNAP_RUN_COORDINATOR, NULL, &run,
                                 &error), "%s", error.msg);
  ck_assert_msg(!ksnap_worker_new(wconf, OPS_DIR, NULL, &w, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_worker_start(w, &error), "%s", error.msg);
  while (!ksnap_run_wait(run, 100) && ksnap__wallclock_ms() - start < 60000)
    ksnap_worker_tick(w);
  ksnap_worker_destroy(w);
  ck_assert(ksnap_run_wait(run, 0));
  ck_assert_int_eq(ksnap_run_result(run, &error), KSNAP_ERR_JOB_FAILED);
  ASSERT_HAS(error.msg, "(not retriable: every restore would fail the same "
                        "way)");
  snprintf(msg, size, "%s", error.msg);
  ksnap_run_destroy(run);
  read_control(f, &c);
  ck_assert_int_eq(c.restores, 0);
  ck_assert_int_eq(c.failed, 1);
  ck_assert_int_eq(c.failed_gen, 0);
  ksnap_conf_destroy(wconf);
  ksnap_conf_destroy(conf);
}

/* The rule `ksnap config check` enforces, met at the sink task's start
 * by tasks run through the worker's internal API (no preflight): not
 * retriable, so the job FAILS at once whatever the restart strategy (here
 * the default exponential-delay, which would restore it forever). The
 * coordinator runs with the public API on a valid configuration. */
START_TEST(broken_transaction_timeout_fails_at_once) {
  char msg[2048];
  fixture_t f;

  fixture(&f, "restart-txn", "");
  run_failing_tasks(&f, "kafka.transaction.timeout.ms", "10000", msg,
                    sizeof(msg));
  ASSERT_HAS(msg, "kafka.transaction.timeout.ms (10000) must exceed");
  fixture_free(&f);
}
END_TEST

/* The tasks' S3 secret wrong while the coordinator's is right (two job
 * files): the coordinator's storage probe passes, and a task starting
 * fresh (no checkpoint to read) would find out only at its first
 * snapshot, declining every checkpoint. It fails as it opens, not
 * retriably: the job FAILS at once, no RESTORE. */
START_TEST(refused_storage_credentials_of_the_tasks_fail_at_once) {
  char msg[2048];
  fixture_t f;

  fixture_in(&f, "restart-s3", ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"),
             FIXED3);
  run_failing_tasks(&f, "s3.secret-key", "not-the-secret", msg, sizeof(msg));
  ASSERT_HAS(msg, "checkpoint storage: ");
  ck_assert_msg(!strstr(msg, "not-the-secret"), "%s", msg);
  fixture_free(&f);
}
END_TEST

/* A bucket that does not exist ends the coordinator's start (its probe
 * lists the job's directory: an S3 HEAD would only say "not found"). */
START_TEST(a_missing_bucket_ends_the_coordinators_start) {
  char args[1024], bucket[64], *out, *err;
  fixture_t f;

  snprintf(bucket, sizeof(bucket), "ksnap-missing-%d", (int)getpid());
  fixture_in(&f, "restart-bucket", bucket, FIXED3);
  snprintf(args, sizeof(args), "coordinator %s", f.path);
  RUN_EXPECT(args, &out, &err, 1);
  ASSERT_HAS(err, "checkpoint storage: ");
  ASSERT_HAS(err, "NoSuchBucket");
  free(out);
  free(err);
  fixture_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("restart");
  TCase *tc = tcase_create("restart");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, poison_fails_the_job_after_three_restores);
  tcase_add_test(tc, ksnap_run_exits_naming_the_poison_record);
  tcase_add_test(tc, exponential_backoff_delays_grow);
  tcase_add_test(tc, a_failed_task_heartbeats_while_its_restore_waits);
  tcase_add_test(tc, broken_transaction_timeout_fails_at_once);
  tcase_add_test(tc, too_few_exchange_partitions_fail_at_once);
  tcase_add_test(tc, refused_storage_credentials_of_the_tasks_fail_at_once);
  tcase_add_test(tc, a_missing_bucket_ends_the_coordinators_start);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
