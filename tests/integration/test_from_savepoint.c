/*
 * Starting a job from a savepoint, on the real broker and the real S3
 * server (checkpoints in S3, savepoints in a file:// directory): the word
 * count (split reads the source, count keyed writes the sink) run by
 * `ksnap coordinator` and `ksnap worker`.
 *
 * rescale: a third of the input at split P=2, count P=2; `ksnap
 * savepoint`; the savepoint's directory copied elsewhere (cp -r); the
 * same job (it has history) started from the copy at split P=3, count
 * P=4 with the second third, its coordinator killed -9 once after a
 * checkpoint of its own completed and started again with the same
 * --from-savepoint (it must not go back to the savepoint), and a worker
 * killed -9 once; a second savepoint; then P=1, P=1 from it with the last
 * third. The read_committed sink holds, per word, exactly the counts
 * 1..n of one failure-free run: no duplicate, no loss.
 *
 * refusals, each naming the stage and the state, each ending the job
 * FAILED (exit 1, JOB_FAILED on the control topic): a savepoint whose
 * stage the job graph no longer has (and with --allow-non-restored-state
 * the job runs); a state whose kind changed (count's value state
 * registered as a map state by a new operator version); another
 * pipeline.max-parallelism.
 *
 * The savepoints are taken with plain `ksnap savepoint` once the input is
 * counted, then the processes are stopped; a stop-with-savepoint that
 * ends the workers can replace take_savepoint() + stop_all().
 */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clitest.h"
#include "kafka_testutil.h"
#include "ksnap/conf.h"
#include "ksnap/records.h"
#include "ksnap/storage.h"
#include "sink/two_phase.h"
#include "testnames.h"
#include "testutil.h"

#define OPS_DIR KSNAP_BINARY_DIR "/tests/operators"
#define OPS "KSNAP_OPERATOR_PATH=" OPS_DIR
#define LINES 2000 /* per phase, a multiple of 4 */
#define WAIT_S 90

typedef struct fixture_s {
  char *dir, *job, *src, *sink;
  char path[512], ckpt[600], spdir[700];
} fixture_t;

/* The job file: the word count at @p split_p, @p count_p, count's
 * operator @p count_op; @p extra more lines. */
static void write_job(fixture_t *f, int split_p, int count_p,
                      const char *count_op, const char *extra) {
  char props[4096];

  snprintf(props, sizeof(props),
           "kafka.transaction.timeout.ms=60000\n"
           "execution.checkpointing.interval=300ms\n"
           "execution.checkpointing.timeout=30s\n"
           "heartbeat.timeout=6s\n"
           "restart-strategy.type=fixed-delay\n"
           "restart-strategy.fixed-delay.delay=200ms\n"
           "restart-strategy.fixed-delay.attempts=50\n"
           "state.savepoints.dir=%s\n"
           "stage.split.operator=libksnap_test_poison.so:split\n"
           "stage.split.parallelism=%d\n"
           "stage.split.input=source:%s\n"
           "stage.split.partitions=4\n"
           "stage.%s.operator=libksnap_test_poison.so:%s\n"
           "stage.%s.parallelism=%d\n"
           "stage.%s.input=stage:split\n"
           "stage.%s.output=sink:%s\n%s",
           f->spdir, split_p, f->src, "count", count_op, "count", count_p,
           "count", "count", f->sink, extra ? extra : "");
  ksnap_test_job_file(f->path, f->job, f->ckpt, props);
}

/* The same with the count stage named @p stage (another job graph). */
static void write_renamed_job(fixture_t *f, const char *stage) {
  char props[4096];

  snprintf(props, sizeof(props),
           "kafka.transaction.timeout.ms=60000\n"
           "execution.checkpointing.interval=300ms\n"
           "execution.checkpointing.timeout=30s\n"
           "restart-strategy.type=fixed-delay\n"
           "restart-strategy.fixed-delay.delay=200ms\n"
           "restart-strategy.fixed-delay.attempts=50\n"
           "state.savepoints.dir=%s\n"
           "stage.split.operator=libksnap_test_poison.so:split\n"
           "stage.split.parallelism=2\n"
           "stage.split.input=source:%s\n"
           "stage.split.partitions=4\n"
           "stage.%s.operator=libksnap_test_poison.so:count\n"
           "stage.%s.parallelism=2\n"
           "stage.%s.input=stage:split\n"
           "stage.%s.output=sink:%s\n",
           f->spdir, f->src, stage, stage, stage, stage, f->sink);
  ksnap_test_job_file(f->path, f->job, f->ckpt, props);
}

static void fixture(fixture_t *f, const char *tag) {
  char args[2048], *out, *err;

  f->dir = ksnap_test_tmpdir(tag);
  f->job = ksnap_test_unique_name(tag);
  f->src = ksnap_test_unique_name("fsp-lines");
  f->sink = ksnap_test_unique_name("fsp-counts");
  snprintf(f->path, sizeof(f->path), "%s/job.properties", f->dir);
  snprintf(f->ckpt, sizeof(f->ckpt), "s3://%s/%s-ckpt",
           ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"), f->job);
  snprintf(f->spdir, sizeof(f->spdir), "file://%s/savepoints", f->dir);
  write_job(f, 2, 2, "count", NULL);
  snprintf(args, sizeof(args), "topics create %s %s:4 %s:2", f->path, f->src,
           f->sink);
  ck_assert_msg(ksnap_test_cli("", args, &out, &err) == 0, "%s", err);
  free(out);
  free(err);
}

static void fixture_free(fixture_t *f) {
  ksnap_test_rmtree(f->dir);
  free(f->dir);
  free(f->job);
  free(f->src);
  free(f->sink);
}

static void produce_lines(const fixture_t *f, int lines) {
  ksnap_test_produce_word_lines(f->src, lines);
}

/* `ksnap ARGV...` in the background, stderr into DIR/NAME.err. */
static pid_t spawn(const fixture_t *f, const char *name, char *const argv[]) {
  char errf[600];

  snprintf(errf, sizeof(errf), "%s/%s.err", f->dir, name);
  return ksnap_test_spawnv(OPS_DIR, errf, argv);
}

static pid_t coordinator(fixture_t *f, const char *from, int allow) {
  char *argv[] = {"ksnap", "coordinator", f->path, NULL, NULL, NULL, NULL};
  int n = 2;

  if (from) {
    argv[n++] = "--from-savepoint";
    argv[n++] = (char *)from;
  }
  if (allow)
    argv[n++] = "--allow-non-restored-state";
  argv[n] = f->path;
  return spawn(f, "coordinator", argv);
}

static pid_t worker(fixture_t *f) {
  char *argv[] = {"ksnap", "worker", f->path, NULL};
  return spawn(f, "worker", argv);
}

static char *slurp(const fixture_t *f, const char *name) {
  char path[600];

  snprintf(path, sizeof(path), "%s/%s.err", f->dir, name);
  return ksnap_test_slurp(path);
}

/* The committed counts of the sink, each 1 more than the one before (with
 * @p check). @returns the count of "one". */
static long committed_one(const fixture_t *f, int check) {
  return ksnap_test_word_count(f->sink, 2, "one", check);
}

/* Until the committed count of "one" is @p want (LINES/2 per phase). */
static void wait_counted(const fixture_t *f, long want) {
  ksnap_test_wait_word_count(f->sink, 2, "one", want, WAIT_S);
}

/* `ksnap savepoint`: @returns the URL it printed (malloc'd), once every
 * sink task of @p count_p committed it. */
static char *take_savepoint(const fixture_t *f, int count_p) {
  char args[1024], want[1200], *out, *err, *url, *end, *idp;
  long long id;
  ksnap_conf_t *conf = ksnap_conf_new();

  snprintf(args, sizeof(args), "savepoint %s --timeout 60", f->path);
  ck_assert_msg(ksnap_test_cli(OPS, args, &out, &err) == 0, "%s%s", out, err);
  snprintf(want, sizeof(want), "%s/savepoint-%s-", f->spdir, f->job);
  ck_assert_msg((url = strstr(out, want)) != NULL, "no %s in:\n%s%s", want,
                out, err);
  end = url + strcspn(url, "\n");
  url = strndup(url, (size_t)(end - url));
  idp = url + strlen(want);
  id = strtoll(idp, NULL, 10);
  ck_assert_int_gt(id, 0);
  free(out);
  free(err);
  ck_assert_int_eq(ksnap_conf_load_file(conf, f->path, NULL, NULL), 0);
  ck_assert_int_eq(ksnap_conf_finalize(conf, NULL, NULL), 0);
  for (int t = 0; t < count_p; t++) {
    char task[64];
    int64_t c = 0;
    ksnap_error_t error;
    snprintf(task, sizeof(task), "count[%d]", t);
    for (int i = 0; i < WAIT_S * 4 && c < id; i++) {
      ck_assert_msg(ksnap_2pc_last_committed_of(conf, task, 30000, &c,
                                                &error) == 0, "%s",
                    error.msg);
      if (c < id)
        usleep(250 * 1000);
    }
    ck_assert_msg(c >= id, "%s committed %lld, not savepoint %lld", task,
                  (long long)c, id);
  }
  ksnap_conf_destroy(conf);
  return url;
}

static void copy_dir(const char *from_url, const char *to_dir) {
  char cmd[2048];

  snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && cp -r '%s' '%s'/",
           to_dir, from_url + strlen("file://"), to_dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* "DIR/<last segment of URL>" as a file:// URL (malloc'd). */
static char *copied_url(const char *url, const char *dir) {
  const char *seg = strrchr(url, '/');
  char *s;

  ck_assert_int_gt(asprintf(&s, "file://%s%s", dir, seg), 0);
  return s;
}

/* The coordinator's log's length now. */
static size_t log_len(const fixture_t *f) {
  char *log = slurp(f, "coordinator");
  size_t n = strlen(log);

  free(log);
  return n;
}

/* A checkpoint completed after the first @p from bytes of the
 * coordinator's log (a checkpoint of a coordinator started since). */
static void wait_checkpoint_since(const fixture_t *f, size_t from) {
  for (int i = 0; i < WAIT_S * 4; i++) {
    char *log = slurp(f, "coordinator");
    int done = strlen(log) > from && strstr(log + from, "Completed checkpoint ");
    free(log);
    if (done)
      return;
    usleep(250 * 1000);
  }
  ck_abort_msg("no checkpoint completed");
}

START_TEST(rescale_round_trip_with_kills) {
  char copies[800], *sp1, *sp1c, *sp2;
  size_t from;
  pid_t c, w;
  fixture_t f;

  fixture(&f, "fromsp");
  /* phase 1: split 2, count 2 */
  produce_lines(&f, LINES);
  c = coordinator(&f, NULL, 0);
  w = worker(&f);
  wait_counted(&f, LINES / 2);
  sp1 = take_savepoint(&f, 2);
  ck_assert_int_eq(ksnap_test_stop(w), 0);
  ck_assert_int_eq(ksnap_test_stop(c), 0);
  /* phase 2: from a copy of it, split 3, count 4 */
  snprintf(copies, sizeof(copies), "%s/copied", f.dir);
  copy_dir(sp1, copies);
  sp1c = copied_url(sp1, copies);
  write_job(&f, 3, 4, "count", NULL);
  from = log_len(&f);
  c = coordinator(&f, sp1c, 0);
  w = worker(&f);
  produce_lines(&f, LINES / 2);
  wait_checkpoint_since(&f, from);
  kill(c, SIGKILL); /* restarted with the same flag: must not go back */
  waitpid(c, NULL, 0);
  c = coordinator(&f, sp1c, 0);
  produce_lines(&f, LINES / 4);
  kill(w, SIGKILL);
  waitpid(w, NULL, 0);
  w = worker(&f);
  produce_lines(&f, LINES / 4);
  wait_counted(&f, LINES);
  sp2 = take_savepoint(&f, 4);
  ck_assert_int_eq(ksnap_test_stop(w), 0);
  ck_assert_int_eq(ksnap_test_stop(c), 0);
  ck_assert_int_eq(committed_one(&f, 1), LINES);
  {
    char *log = slurp(&f, "coordinator");
    ck_assert_msg(strstr(log, "already started from"), "%s", ksnap_test_tail(log));
    free(log);
  }
  /* phase 3: split 1, count 1 */
  write_job(&f, 1, 1, "count", NULL);
  c = coordinator(&f, sp2, 0);
  w = worker(&f);
  produce_lines(&f, LINES);
  wait_counted(&f, LINES * 3 / 2);
  ck_assert_int_eq(ksnap_test_stop(w), 0);
  ck_assert_int_eq(ksnap_test_stop(c), 0);
  ck_assert_int_eq(committed_one(&f, 1), LINES * 3 / 2);
  free(sp1);
  free(sp1c);
  free(sp2);
  fixture_free(&f);
}
END_TEST

/* A worker started once the coordinator wrote its RESTORE: before, it
 * would read a previous refusal's JOB_FAILED as the job's last word. */
static pid_t worker_after_restore(fixture_t *f) {
  for (int i = 0; i < WAIT_S * 10; i++) {
    char *log = slurp(f, "coordinator");
    int restored = strstr(log, "Restoring the job in generation") != NULL;
    free(log);
    if (restored)
      break;
    usleep(100 * 1000);
  }
  sleep(1);
  return worker(f);
}

/* The coordinator (and the worker) of a refused start end FAILED, the
 * coordinator's stderr naming @p what and @p what2. */
static void refused(fixture_t *f, const char *from, const char *what,
                    const char *what2, int restores) {
  char errf[600];
  pid_t c, w;
  int rc;
  char *log;

  snprintf(errf, sizeof(errf), "%s/coordinator.err", f->dir);
  unlink(errf);
  c = coordinator(f, from, 0);
  w = restores ? worker_after_restore(f) : worker(f);
  rc = ksnap_test_wait_exit(c, 60, 0);
  log = slurp(f, "coordinator");

  ck_assert_msg(rc == 1, "coordinator exit %d:\n%s", rc, ksnap_test_tail(log));
  ck_assert_msg(strstr(log, what) && strstr(log, what2),
                "no \"%s\" and \"%s\" in:\n%s", what, what2, ksnap_test_tail(log));
  free(log);
  /* the worker reads JOB_FAILED */
  ck_assert_int_eq(ksnap_test_wait_exit(w, 30, 0), 1);
}

START_TEST(refusals_name_stage_and_state) {
  char copies[800], *sp, *cp1, *cp2, *cp3;
  pid_t c, w;
  fixture_t f;

  fixture(&f, "fromsp-refuse");
  produce_lines(&f, 400);
  c = coordinator(&f, NULL, 0);
  w = worker(&f);
  wait_counted(&f, 200);
  sp = take_savepoint(&f, 2);
  ck_assert_int_eq(ksnap_test_stop(w), 0);
  ck_assert_int_eq(ksnap_test_stop(c), 0);
  snprintf(copies, sizeof(copies), "%s/c1", f.dir);
  copy_dir(sp, copies);
  cp1 = copied_url(sp, copies);
  snprintf(copies, sizeof(copies), "%s/c2", f.dir);
  copy_dir(sp, copies);
  cp2 = copied_url(sp, copies);
  snprintf(copies, sizeof(copies), "%s/c3", f.dir);
  copy_dir(sp, copies);
  cp3 = copied_url(sp, copies);

  /* another job graph: stage count renamed total */
  write_renamed_job(&f, "total");
  refused(&f, sp, "stage count and its state", "not in the job graph", 0);

  /* a state whose kind changed: count's "count" value state, now map */
  write_job(&f, 2, 2, "count_map", NULL);
  refused(&f, cp1, "stage count", "state \"count\" was restored as value "
                                  "state but is registered as map state", 1);

  /* another pipeline.max-parallelism */
  write_job(&f, 2, 2, "count", "pipeline.max-parallelism=64\n");
  refused(&f, cp2, "pipeline.max-parallelism is 64",
          "fixed for the job's life", 1);
  {
    char *log = slurp(&f, "worker");
    ck_assert_msg(strstr(log, "stage count: state \"count\""), "%s",
                  ksnap_test_tail(log));
    free(log);
  }

  /* with --allow-non-restored-state the renamed graph runs: total
   * starts empty (counts from 1 again), split keeps its offsets */
  write_renamed_job(&f, "total");
  snprintf(copies, sizeof(copies), "%s/coordinator.err", f.dir);
  unlink(copies);
  c = coordinator(&f, cp3, 1);
  w = worker_after_restore(&f);
  produce_lines(&f, 4);
  for (int i = 0; i < WAIT_S * 4; i++) {
    char *log = slurp(&f, "coordinator");
    int running = strstr(log, "is dropped") &&
                  strstr(log, "Completed checkpoint ");
    free(log);
    if (running)
      break;
    usleep(250 * 1000);
  }
  ck_assert_int_eq(ksnap_test_stop(w), 0);
  ck_assert_int_eq(ksnap_test_stop(c), 0);
  free(sp);
  free(cp1);
  free(cp2);
  free(cp3);
  fixture_free(&f);
}
END_TEST

/* The last "Completed checkpoint N" of the coordinator's log, 0: none. */
static long long last_completed(const fixture_t *f) {
  char *log = slurp(f, "coordinator"), *p = log;
  long long last = 0;

  while ((p = strstr(p, "Completed checkpoint ")) != NULL)
    last = strtoll(p + 21, &p, 10);
  free(log);
  return last;
}

/* 1 if checkpoint @p id has a channel of a count task whose writer's
 * barrier had not passed (records in flight). */
static int has_records_in_flight(const fixture_t *f, long long id) {
  ksnap_checkpoint_meta_t meta;
  ksnap_storage_opts_t o;
  ksnap_storage_t *st;
  ksnap_error_t error;
  ksnap_buf_t b;
  char key[600];
  int in_flight = 0;

  ksnap_storage_opts_init(&o);
  o.endpoint = ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT");
  o.region = ksnap_test_require_env("KSNAP_TEST_S3_REGION");
  o.access_key = ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY");
  o.secret_key = ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY");
  o.path_style = 1;
  ck_assert_msg(ksnap_storage_open(f->ckpt, &o, &st, &error) == 0, "%s",
                error.msg);
  snprintf(key, sizeof(key), "%s/chk-%lld/_metadata", f->job, id);
  ksnap_buf_init(&b);
  ck_assert_msg(ksnap_storage_get(st, key, &b, &error) == 0, "%s",
                error.msg);
  ck_assert_int_eq(ksnap_codec_meta_decode(b.data, b.len, &meta, &error), 0);
  for (size_t t = 0; t < meta.task_cnt; t++)
    for (size_t c = 0; c < meta.tasks[t].channel_cnt; c++)
      in_flight |= !strcmp(meta.tasks[t].task.stage, "count") &&
                   !meta.tasks[t].channels[c].passed;
  ksnap_checkpoint_meta_cleanup(&meta);
  ksnap_buf_cleanup(&b);
  ksnap_storage_destroy(st);
  return in_flight;
}

/* A plain unaligned checkpoint with records in flight cannot restore at
 * another parallelism: refused, naming the stage and the channel. */
START_TEST(unaligned_checkpoint_rescale_is_refused) {
  static const char *unaligned =
      "execution.checkpointing.unaligned.enabled=true\n"
      "execution.checkpointing.aligned-checkpoint-timeout=0\n";
  int found = 0;
  fixture_t f;

  fixture(&f, "fromsp-unaligned");
  write_job(&f, 2, 2, "count", unaligned);
  for (int attempt = 0; attempt < 4 && !found; attempt++) {
    pid_t c = coordinator(&f, NULL, 0), w = worker(&f);
    long long before = last_completed(&f), id;
    produce_lines(&f, 100000); /* in flight while checkpoints run */
    for (int i = 0; i < WAIT_S * 4 && last_completed(&f) < before + 3; i++)
      usleep(250 * 1000);
    kill(w, SIGKILL);
    kill(c, SIGKILL);
    waitpid(w, NULL, 0);
    waitpid(c, NULL, 0);
    id = last_completed(&f);
    ck_assert_int_gt(id, before);
    found = has_records_in_flight(&f, id);
  }
  ck_assert_msg(found, "no unaligned checkpoint with records in flight");
  write_job(&f, 2, 3, "count", unaligned);
  refused(&f, NULL, "holds records in flight", "restore at the checkpoint's "
                                               "parallelism", 1);
  fixture_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("from_savepoint");
  TCase *tc = tcase_create("rescale"), *tr = tcase_create("refusals");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, rescale_round_trip_with_kills);
  suite_add_tcase(s, tc);
  tcase_set_timeout(tr, 300);
  tcase_add_test(tr, refusals_name_stage_and_state);
  tcase_add_test(tr, unaligned_checkpoint_rescale_is_refused);
  suite_add_tcase(s, tr);
  return ksnap_test_run(s);
}
