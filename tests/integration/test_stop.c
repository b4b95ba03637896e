/*
 * `ksnap savepoint JOB --stop` ends the whole job, on the real broker and
 * the real S3 server: the word count (split P=2 reads the source, count
 * P=2 keyed writes the sink) run by `ksnap coordinator` and two
 * `ksnap worker` processes of one task per stage each.
 *
 * round_trip: input is counted, more is produced and the stop is asked
 * for at once (the savepoint carries output not committed yet). The
 * coordinator and both workers exit 0 by themselves, each worker naming
 * the savepoint; every sink task committed the savepoint before they
 * went, and the command printed "Job stopped with savepoint". A worker
 * started again waits for the job to start again, naming the savepoint;
 * a coordinator started again without --from-savepoint exits 0 at once
 * saying so (naming --from-savepoint URL). Then the job starts from the
 * savepoint (the waiting worker and one started with the coordinator
 * take their tasks) with more input and is stopped again, and once more by `ksnap run
 * --from-savepoint` (coordinator and tasks in one process): the
 * read_committed sink holds, per word, exactly the counts 1..n of one
 * failure-free run.
 *
 * crashes: the coordinator dies (fault hook, as kill -9) right after the
 * stop's TRIGGER; its successor keeps the job running (the savepoint is
 * aborted, the command fails), and the job counts on. Then it dies after
 * the stop's savepoint completed and its sinks committed it, before
 * JOB_STOPPED: the workers run on, the successor keeps the job running
 * (restored from the savepoint), and a stop after that ends everything.
 * Both times `ksnap savepoint --stop` fails (the second time after
 * printing the savepoint's URL): the job did not stop.
 * The sink is exact throughout.
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
#include "sink/two_phase.h"
#include "testnames.h"
#include "testutil.h"

#define OPS_DIR KSNAP_BINARY_DIR "/tests/operators"
#define OPS "KSNAP_OPERATOR_PATH=" OPS_DIR
#define LINES 1000 /* a multiple of 4: "one" LINES/2 times */
#define WAIT_S 90

typedef struct fixture_s {
  char *dir, *job, *src, *sink;
  char path[512], ckpt[600], spdir[700];
  pid_t c, w[2];
  int stopped; /* the last stop_savepoint() printed "Job stopped" */
} fixture_t;

static void fixture(fixture_t *f, const char *tag) {
  char props[4096], args[2048], *out, *err;

  f->dir = ksnap_test_tmpdir(tag);
  f->job = ksnap_test_unique_name(tag);
  f->src = ksnap_test_unique_name("stop-lines");
  f->sink = ksnap_test_unique_name("stop-counts");
  snprintf(f->path, sizeof(f->path), "%s/job.properties", f->dir);
  snprintf(f->ckpt, sizeof(f->ckpt), "s3://%s/%s-ckpt",
           ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"), f->job);
  snprintf(f->spdir, sizeof(f->spdir), "file://%s/savepoints", f->dir);
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
           "stage.split.parallelism=2\n"
           "stage.split.input=source:%s\n"
           "stage.split.partitions=4\n"
           "stage.count.operator=libksnap_test_poison.so:count\n"
           "stage.count.parallelism=2\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:%s\n",
           f->spdir, f->src, f->sink);
  ksnap_test_job_file(f->path, f->job, f->ckpt, props);
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

/* `ksnap ARGV...` in the background, stderr into DIR/NAME.err (emptied
 * first), with KSNAP_FAULT=@p fault (NULL: none). */
static pid_t spawn(const fixture_t *f, const char *name, char *const argv[],
                   const char *fault) {
  char errf[600];
  pid_t pid;

  snprintf(errf, sizeof(errf), "%s/%s.err", f->dir, name);
  unlink(errf);
  if (fault)
    setenv("KSNAP_FAULT", fault, 1);
  pid = ksnap_test_spawnv(OPS_DIR, errf, argv);
  unsetenv("KSNAP_FAULT");
  return pid;
}

static pid_t coordinator(fixture_t *f, const char *from, const char *fault) {
  char *argv[] = {"ksnap", "coordinator", f->path, NULL, NULL, NULL};

  if (from) {
    argv[2] = "--from-savepoint";
    argv[3] = (char *)from;
    argv[4] = f->path;
  }
  return spawn(f, "coordinator", argv, fault);
}

static pid_t worker(fixture_t *f, int i) {
  char tasks[64], name[16];
  char *argv[] = {"ksnap", "worker", "--tasks", tasks, f->path, NULL};

  snprintf(tasks, sizeof(tasks), "split:%d,count:%d", i, i);
  snprintf(name, sizeof(name), "worker%d", i);
  return spawn(f, name, argv, NULL);
}

static void start_workers(fixture_t *f) {
  f->w[0] = worker(f, 0);
  f->w[1] = worker(f, 1);
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

static void wait_counted(const fixture_t *f, long want) {
  ksnap_test_wait_word_count(f->sink, 2, "one", want, WAIT_S);
}

/* `ksnap savepoint JOB --stop`: @returns its exit code, *@p urlp the URL
 * it printed (malloc'd) or NULL, *@p idp its id. */
static int stop_savepoint(fixture_t *f, int timeout_s, char **urlp,
                          long long *idp) {
  char args[1024], want[1200], *out, *err, *url, *end;
  int rc;

  snprintf(args, sizeof(args), "savepoint %s --stop --timeout %d", f->path,
           timeout_s);
  rc = ksnap_test_cli(OPS, args, &out, &err);
  snprintf(want, sizeof(want), "%s/savepoint-%s-", f->spdir, f->job);
  *urlp = NULL;
  *idp = 0;
  f->stopped = strstr(out, "Job stopped with savepoint ") != NULL;
  if ((url = strstr(out, want))) {
    end = url + strcspn(url, "\n");
    *urlp = strndup(url, (size_t)(end - url));
    *idp = strtoll(*urlp + strlen(want), NULL, 10);
  }
  free(out);
  free(err);
  return rc;
}

/* Every sink task committed @p id or later, now (no repair ran). */
static void assert_committed(const fixture_t *f, long long id) {
  ksnap_conf_t *conf = ksnap_conf_new();

  ck_assert_int_eq(ksnap_conf_load_file(conf, f->path, NULL, NULL), 0);
  ck_assert_int_eq(ksnap_conf_finalize(conf, NULL, NULL), 0);
  for (int t = 0; t < 2; t++) {
    char task[64];
    int64_t c = 0;
    ksnap_error_t error;
    snprintf(task, sizeof(task), "count[%d]", t);
    ck_assert_msg(ksnap_2pc_last_committed_of(conf, task, 30000, &c,
                                              &error) == 0, "%s", error.msg);
    ck_assert_msg(c >= id, "%s committed %lld, not the stop's savepoint %lld "
                  "when its worker went", task, (long long)c, id);
  }
  ksnap_conf_destroy(conf);
}

/* A clean stop: the command prints the URL, the coordinator and both
 * workers exit 0 by themselves, the workers naming it. @returns the URL
 * (malloc'd). */
static char *stop_job(fixture_t *f) {
  long long id;
  char *url, *log, want[1400];
  int rc;

  ck_assert_int_eq(stop_savepoint(f, 60, &url, &id), 0);
  ck_assert_ptr_nonnull(url);
  ck_assert_int_eq(f->stopped, 1);
  rc = ksnap_test_wait_exit(f->c, 60, 0);
  log = slurp(f, "coordinator");
  ck_assert_msg(rc == 0, "coordinator exit %d:\n%s", rc, ksnap_test_tail(log));
  free(log);
  snprintf(want, sizeof(want), "stopped with savepoint %s", url);
  for (int i = 0; i < 2; i++) {
    char name[16];
    snprintf(name, sizeof(name), "worker%d", i);
    rc = ksnap_test_wait_exit(f->w[i], 60, 0);
    log = slurp(f, name);
    ck_assert_msg(rc == 0 && strstr(log, want), "%s exit %d, no \"%s\":\n%s",
                  name, rc, want, ksnap_test_tail(log));
    free(log);
  }
  assert_committed(f, id);
  return url;
}

/* Until the log NAME.err holds @p what. */
static void wait_log(const fixture_t *f, const char *name, const char *what) {
  for (int i = 0; i < WAIT_S * 4; i++) {
    char *log = slurp(f, name);
    int found = strstr(log, what) != NULL;
    free(log);
    if (found)
      return;
    usleep(250 * 1000);
  }
  ck_abort_msg("no \"%s\" in %s.err", what, name);
}

/* How often @p what occurs in @p text. */
static int count_in(const char *text, const char *what) {
  int n = 0;

  for (const char *p = text; (p = strstr(p, what)); p += strlen(what))
    n++;
  return n;
}

START_TEST(round_trip) {
  char *url, *url2, *log;
  fixture_t f;
  int rc;

  fixture(&f, "stop");
  ksnap_test_produce_word_lines(f.src, LINES);
  f.c = coordinator(&f, NULL, NULL);
  start_workers(&f);
  wait_counted(&f, LINES / 2);
  ksnap_test_produce_word_lines(f.src, LINES / 2); /* not counted yet */
  url = stop_job(&f);
  committed_one(&f, 1);
  /* a worker started again waits for the job to start again; a
   * coordinator started again without --from-savepoint exits 0 at once */
  f.w[0] = worker(&f, 0);
  wait_log(&f, "worker0", "waits for the job to start again");
  log = slurp(&f, "worker0");
  ck_assert_msg(strstr(log, url), "worker0 does not name %s:\n%s", url,
                ksnap_test_tail(log));
  free(log);
  f.c = coordinator(&f, NULL, NULL);
  rc = ksnap_test_wait_exit(f.c, 30, 0);
  log = slurp(&f, "coordinator");
  ck_assert_msg(rc == 0 && strstr(log, "was stopped with savepoint") &&
                    strstr(log, "--from-savepoint"),
                "coordinator exit %d:\n%s", rc, ksnap_test_tail(log));
  free(log);
  ck_assert_msg(waitpid(f.w[0], &rc, WNOHANG) == 0,
                "worker0 did not wait for the job to start again");
  /* from the savepoint, with more input, stopped again: worker0 (waiting
   * since before) and worker1 (started with the coordinator, so it may
   * read JOB_STOPPED before the RESTORE) start their tasks once the
   * coordinator's RESTORE is out */
  f.c = coordinator(&f, url, NULL);
  f.w[1] = worker(&f, 1);
  wait_log(&f, "worker0", "started again in generation");
  ksnap_test_produce_word_lines(f.src, LINES / 2);
  wait_counted(&f, LINES);
  url2 = stop_job(&f);
  ck_assert_int_eq(committed_one(&f, 1), LINES);
  /* the new workers took the stopped job's vacant tasks: one restore */
  log = slurp(&f, "coordinator");
  ck_assert_msg(count_in(log, "Restoring the job in generation") == 1,
                "not one restore after the start from the savepoint:\n%s",
                ksnap_test_tail(log));
  free(log);
  /* `ksnap run --from-savepoint`: its tasks do not take the stop on the
   * control topic for the last word; a stop ends it with exit 0 */
  {
    char *argv[] = {"ksnap", "run", "--from-savepoint", url2, f.path, NULL};
    long long id;
    char *url3;
    f.c = spawn(&f, "run", argv, NULL);
    ksnap_test_produce_word_lines(f.src, LINES / 2);
    wait_counted(&f, LINES + LINES / 4);
    ck_assert_int_eq(stop_savepoint(&f, 60, &url3, &id), 0);
    ck_assert_int_eq(f.stopped, 1);
    rc = ksnap_test_wait_exit(f.c, 60, 0);
    log = slurp(&f, "run");
    ck_assert_msg(rc == 0, "ksnap run exit %d:\n%s", rc, ksnap_test_tail(log));
    free(log);
    assert_committed(&f, id);
    free(url3);
  }
  ck_assert_int_eq(committed_one(&f, 1), LINES + LINES / 4);
  free(url);
  free(url2);
  fixture_free(&f);
}
END_TEST

/* The coordinator (started with @p fault) dies during a stop; its
 * successor keeps the job running: the input produced now is counted. */
static void crash_during_stop(fixture_t *f, const char *fault, long counted,
                              int printed) {
  long long id;
  char *url, *log;
  int rc;

  f->c = coordinator(f, NULL, fault);
  wait_log(f, "coordinator", "Completed checkpoint "); /* it runs again */
  /* the command fails: nothing stopped (after the savepoint's URL when
   * it completed) */
  rc = stop_savepoint(f, 8, &url, &id);
  ck_assert_msg(rc != 0 && (printed ? url != NULL : url == NULL),
                "savepoint --stop exit %d, URL %s", rc, url ? url : "none");
  rc = ksnap_test_wait_exit(f->c, 60, 0);
  log = slurp(f, "coordinator");
  ck_assert_msg(rc == 137, "coordinator exit %d (want the fault's 137):\n%s",
                rc, ksnap_test_tail(log));
  free(log);
  free(url);
  /* the workers run on */
  ck_assert_int_eq(waitpid(f->w[0], NULL, WNOHANG), 0);
  ck_assert_int_eq(waitpid(f->w[1], NULL, WNOHANG), 0);
  f->c = coordinator(f, NULL, NULL);
  ksnap_test_produce_word_lines(f->src, LINES / 2);
  wait_counted(f, counted + LINES / 4);
  committed_one(f, 1);
}

START_TEST(crashes) {
  char *url;
  fixture_t f;

  fixture(&f, "stop-crash");
  ksnap_test_produce_word_lines(f.src, LINES);
  f.c = coordinator(&f, NULL, NULL);
  start_workers(&f);
  wait_counted(&f, LINES / 2);
  ck_assert_int_eq(ksnap_test_stop(f.c), 0);
  crash_during_stop(&f, "coord.after-stop-trigger", LINES / 2, 0);
  ck_assert_int_eq(ksnap_test_stop(f.c), 0);
  crash_during_stop(&f, "coord.before-job-stopped", LINES * 3 / 4, 1);
  url = stop_job(&f);
  ck_assert_int_eq(committed_one(&f, 1), LINES);
  free(url);
  fixture_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("stop");
  TCase *tc = tcase_create("stop");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, crashes);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
