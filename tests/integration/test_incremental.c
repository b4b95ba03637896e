/*
 * Incremental checkpoints in the running job, on the real broker: a word
 * count over 600 distinct words (libksnap_test_poison.so's split and
 * count, no poison in the input) run by `ksnap coordinator` and `ksnap
 * worker` processes, state.backend.incremental=true, checkpoints every
 * 200 ms into a local directory, one retained.
 *  1. max-chain-length 3: chains are used (a retained checkpoint's task
 *     names files of older checkpoints), never longer than 3 files;
 *     retention deleted the retired checkpoints' directories but every
 *     file a retained checkpoint names is there (size and CRC32C).
 *  1b. max-delta-percent 1: every delta is larger, so each chain ends
 *     after one delta (2 files).
 *  2. max-chain-length 1000 (no compaction): the job started again
 *     restores from a chain of several files and its output stays exact
 *     (each word's committed counts are 1..n in offset order).
 *  3. A chain's full file gone: a coordinator started again refuses the
 *     job, naming the file.
 *  4. The same file with one byte changed inside (its trailer intact, so
 *     the coordinator's start check passes): the tasks' restore meets the
 *     corruption, which no restore can fix: the job FAILS at once (no
 *     second RESTORE), the coordinator exits 1 naming the file.
 */
#include <dirent.h>
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clitest.h"
#include "driver/coord_store.h"
#include "kafka_testutil.h"
#include "ksnap/records.h"
#include "ksnap/storage.h"
#include "testutil.h"

#define OPS_DIR KSNAP_BINARY_DIR "/tests/operators"
#define NWORDS 600
#define WAIT_S 60

typedef struct fixture_s {
  char *dir, *job, *src, *sink;
  char path[512], ckpt[600];
  long model[NWORDS]; /* occurrences produced so far */
  int lines;          /* lines produced so far */
  size_t longest;     /* the longest chain seen while it ran */
} fixture_t;

static void write_job(fixture_t *f, int max_chain, int max_delta_percent) {
  char props[4096];

  snprintf(props, sizeof(props),
           "kafka.transaction.timeout.ms=60000\n"
           "execution.checkpointing.interval=200ms\n"
           "execution.checkpointing.timeout=20s\n"
           "heartbeat.interval=200ms\n"
           "heartbeat.timeout=2s\n"
           "restart-strategy.type=fixed-delay\n"
           "restart-strategy.fixed-delay.attempts=3\n"
           "restart-strategy.fixed-delay.delay=200ms\n"
           "state.checkpoints.num-retained=1\n"
           "state.backend.incremental=true\n"
           "state.backend.incremental.max-chain-length=%d\n"
           "state.backend.incremental.max-delta-percent=%d\n"
           "stage.split.operator=libksnap_test_poison.so:split\n"
           "stage.split.parallelism=2\n"
           "stage.split.input=source:%s\n"
           "stage.count.operator=libksnap_test_poison.so:count\n"
           "stage.count.parallelism=2\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:%s\n",
           max_chain, max_delta_percent, f->src, f->sink);
  ksnap_test_job_file(f->path, f->job, f->ckpt, props);
}

static void fixture(fixture_t *f) {
  char args[2048], *out, *err;

  memset(f, 0, sizeof(*f));
  f->dir = ksnap_test_tmpdir("incr");
  f->job = ksnap_test_unique_name("incr");
  f->src = ksnap_test_unique_name("incr-lines");
  f->sink = ksnap_test_unique_name("incr-counts");
  snprintf(f->path, sizeof(f->path), "%s/job.properties", f->dir);
  snprintf(f->ckpt, sizeof(f->ckpt), "file://%s/checkpoints", f->dir);
  write_job(f, 3, 100000);
  snprintf(args, sizeof(args), "topics create %s %s:2 %s:2", f->path, f->src,
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

/* @p n more lines of three words each (deterministic), into the model. */
static void produce(fixture_t *f, int n) {
  rd_kafka_t *p = ksnap_test_kafka_new(
      RD_KAFKA_PRODUCER, ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"), NULL);

  for (int i = 0; i < n; i++, f->lines++) {
    int w[3] = {(f->lines * 7) % NWORDS, (f->lines * 13 + 1) % NWORDS,
                f->lines % 37};
    char line[64];
    int len = snprintf(line, sizeof(line), "w%d w%d w%d", w[0], w[1], w[2]);
    for (int k = 0; k < 3; k++)
      f->model[w[k]]++;
    while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(f->src),
                             RD_KAFKA_V_VALUE(line, (size_t)len),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(p, 10);
  }
  ck_assert_int_eq(rd_kafka_flush(p, KSNAP_TEST_KAFKA_TIMEOUT_MS), 0);
  rd_kafka_destroy(p);
}

/* 1 if the sink's read_committed content is the model's (each word's
 * counts 1..n in offset order); 0 while it is a prefix of it; fails the
 * test on anything else. */
static int output_complete(const fixture_t *f) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  long seen[NWORDS] = {0};
  int complete = 1;

  for (int p = 0; p < 2; p++) {
    ksnap_test_records_t *r =
        ksnap_test_consume_all(bs, f->sink, p, "read_committed");
    for (size_t i = 0; i < r->cnt; i++) {
      int w = r->keys[i] && r->keys[i][0] == 'w' ? atoi(r->keys[i] + 1) : -1;
      ck_assert_msg(w >= 0 && w < NWORDS, "unexpected key %s", r->keys[i]);
      ck_assert_msg(atol(r->values[i]) == ++seen[w], "%s: count %s after "
                    "%ld (offset %lld): a duplicate or a loss", r->keys[i],
                    r->values[i], seen[w] - 1, (long long)r->offsets[i]);
    }
    ksnap_test_records_free(r);
  }
  for (int w = 0; w < NWORDS; w++) {
    ck_assert_msg(seen[w] <= f->model[w], "w%d: %ld counts, model %ld", w,
                  seen[w], f->model[w]);
    complete &= seen[w] == f->model[w];
  }
  return complete;
}

static char *slurp(const fixture_t *f, const char *name);

/* Until the output is complete; fails the test if @p coord exits first
 * (its log named by @p coord_name). */
static void wait_output(const fixture_t *f, pid_t coord,
                        const char *coord_name) {
  time_t end = time(NULL) + WAIT_S;
  int status;

  while (!output_complete(f)) {
    if (waitpid(coord, &status, WNOHANG) == coord) {
      char *log = slurp(f, coord_name);
      ck_abort_msg("the coordinator exited (status %d) before the output "
                   "was complete:\n%.3000s", status,
                   strlen(log) > 3000 ? log + strlen(log) - 3000 : log);
    }
    ck_assert_msg(time(NULL) < end, "the committed output did not complete "
                  "in %d s", WAIT_S);
    usleep(250 * 1000);
  }
}

/* `ksnap A1 JOB` in the background, its stderr into DIR/NAME.err. */
static pid_t spawn(const fixture_t *f, const char *name, const char *a1) {
  char errf[600];

  snprintf(errf, sizeof(errf), "%s/%s.err", f->dir, name);
  return ksnap_test_spawn(OPS_DIR, errf, a1, f->path);
}

static int wait_exit(pid_t pid, int secs) {
  int status;

  for (int i = 0; i < secs * 10; i++) {
    if (waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status)
                               : 128 + WTERMSIG(status);
    usleep(100 * 1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  ck_abort_msg("process %d did not exit in %d s", (int)pid, secs);
  return -1;
}

static int stop(pid_t pid) {
  kill(pid, SIGTERM);
  return wait_exit(pid, 30);
}

static char *slurp(const fixture_t *f, const char *name) {
  char path[600];
  FILE *fp;
  char *s;

  snprintf(path, sizeof(path), "%s/%s.err", f->dir, name);
  ck_assert_ptr_nonnull(fp = fopen(path, "r"));
  s = ksnap_test_read_all(fp);
  fclose(fp);
  return s;
}

/* The checkpoints left in the job's directory. */
typedef struct scan_s {
  int dirs;          /* chk-N directories holding files */
  int completed;     /* ... holding a _metadata */
  int64_t latest;    /* the highest with a _metadata */
  size_t max_files;  /* the longest chain of a task */
  size_t latest_files; /* ... in the latest checkpoint */
  int64_t chain_base; /* the latest's oldest file's checkpoint */
  char base_file[512]; /* that file (key relative to the checkpoints) */
} scan_t;

/* A retired directory of a file:// store may stay behind, empty. */
static int dir_empty(const char *parent, const char *name) {
  char path[1000];
  struct dirent *de;
  DIR *d;
  int n = 0;

  snprintf(path, sizeof(path), "%s/%s", parent, name);
  ck_assert_ptr_nonnull(d = opendir(path));
  while ((de = readdir(d)))
    n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
  closedir(d);
  return n == 0;
}

static void scan_opt(const fixture_t *f, scan_t *s, int verify);

static void scan(const fixture_t *f, scan_t *s) { scan_opt(f, s, 1); }

/* Without checks, while the job runs (retirement deletes as it goes). */
static size_t latest_chain(const fixture_t *f) {
  scan_t s;

  scan_opt(f, &s, 0);
  return s.latest_files;
}

static void scan_opt(const fixture_t *f, scan_t *s, int verify) {
  char jobdir[700], url[700];
  ksnap_storage_opts_t o;
  ksnap_storage_t *st;
  ksnap_error_t error;
  struct dirent *de;
  DIR *d;

  memset(s, 0, sizeof(*s));
  s->chain_base = -1;
  snprintf(jobdir, sizeof(jobdir), "%s/checkpoints/%s", f->dir, f->job);
  ksnap_storage_opts_init(&o);
  ck_assert_int_eq(ksnap_storage_open(f->ckpt, &o, &st, &error), 0);
  ck_assert_ptr_nonnull(d = opendir(jobdir));
  while ((de = readdir(d))) {
    ksnap_checkpoint_meta_t meta;
    ksnap_buf_t b;
    long long id;
    if (sscanf(de->d_name, "chk-%lld", &id) != 1)
      continue;
    s->dirs += !dir_empty(jobdir, de->d_name);
    snprintf(url, sizeof(url), "%s/chk-%lld/_metadata", f->job, id);
    ksnap_buf_init(&b);
    if (ksnap_storage_get(st, url, &b, &error) == KSNAP_ERR_OK &&
        ksnap_codec_meta_decode(b.data, b.len, &meta, &error) == 0) {
      s->completed++;
      /* every file a retained checkpoint names survived retention */
      ck_assert_msg(!verify || ksnap__coord_meta_verify(st, &meta, &error) ==
                                   0, "chk-%lld: %s", id, error.msg);
      for (size_t t = 0; t < meta.task_cnt; t++)
        if (meta.tasks[t].handle_cnt > s->max_files)
          s->max_files = meta.tasks[t].handle_cnt;
      if (id > s->latest) {
        s->latest = id;
        s->chain_base = id;
        s->latest_files = 0;
        for (size_t t = 0; t < meta.task_cnt; t++) {
          const ksnap_task_snapshot_t *ts = &meta.tasks[t];
          long long base;
          if (ts->handle_cnt > s->latest_files)
            s->latest_files = ts->handle_cnt;
          if (ts->handle_cnt > 1 &&
              sscanf(strstr(ts->handles[0].path, "chk-"), "chk-%lld",
                     &base) == 1 && base < s->chain_base) {
            s->chain_base = base;
            snprintf(s->base_file, sizeof(s->base_file), "%s",
                     ts->handles[0].path);
          }
        }
      }
      ksnap_checkpoint_meta_cleanup(&meta);
    }
    ksnap_buf_cleanup(&b);
  }
  closedir(d);
  ksnap_storage_destroy(st);
}

/* Runs coordinator and worker while @p batches of 400 lines go in, 300 ms
 * apart, until the output is complete; stops both. */
static void run_job(fixture_t *f, const char *tag, int batches,
                    size_t stop_at_chain) {
  char name[64];
  pid_t coord, worker;

  snprintf(name, sizeof(name), "coordinator-%s", tag);
  coord = spawn(f, name, "coordinator");
  snprintf(name, sizeof(name), "worker-%s", tag);
  worker = spawn(f, name, "worker");
  for (int i = 0; i < batches; i++) {
    produce(f, 400);
    usleep(300 * 1000);
  }
  snprintf(name, sizeof(name), "coordinator-%s", tag);
  wait_output(f, coord, name);
  usleep(600 * 1000); /* a few checkpoints more: retirement after COMMITTED */
  /* stop when the latest checkpoint's chain has that many files (a
   * checkpoint may complete before the worker stops: one more) */
  f->longest = 0;
  for (int i = 0; stop_at_chain; i++) {
    size_t len = latest_chain(f);
    if (len > f->longest)
      f->longest = len;
    if (i >= 150 && len == stop_at_chain) /* 3 s seen: 15 checkpoints */
      break;
    ck_assert_msg(i < 650, "no chain of %zu files to stop at (the longest "
                  "seen: %zu files)", stop_at_chain, f->longest);
    usleep(20 * 1000);
  }
  ck_assert_int_eq(stop(worker), 0);
  ck_assert_int_eq(stop(coord), 0);
}

START_TEST(incremental_chains_retention_restore_and_broken_pieces) {
  char path[1200], *log;
  scan_t s, s2;
  pid_t coord, worker;
  FILE *fp;
  long size;
  int ch;
  fixture_t f;

  fixture(&f);
  /* 1. compaction every 3 files; retention keeps what chains need */
  run_job(&f, "1", 12, 2);
  scan(&f, &s);
  ck_assert_msg(s.latest >= 8, "only %lld checkpoints", (long long)s.latest);
  ck_assert_msg(s.max_files >= 2, "no retained checkpoint is incremental");
  ck_assert_uint_le(s.max_files, 3);
  ck_assert_msg(f.longest == 3, "the longest chain seen while running: %zu "
                "files (max-chain-length 3)", f.longest);
  ck_assert_msg(s.completed <= 4 && s.dirs <= s.completed + 2,
                "%d directories (%d with _metadata) after %lld checkpoints: "
                "retired checkpoints were not deleted", s.dirs, s.completed,
                (long long)s.latest);
  /* 1b. compaction by size: every delta is over 1% of the full file */
  write_job(&f, 1000, 1);
  run_job(&f, "1b", 4, 2);
  ck_assert_msg(f.longest == 2, "the longest chain seen while running: %zu "
                "files (max-delta-percent 1)", f.longest);
  /* 2. no compaction: the next start restores from a long chain */
  write_job(&f, 1000, 100000);
  run_job(&f, "2", 8, 0);
  scan(&f, &s);
  ck_assert_msg(s.chain_base >= 0 && s.chain_base < s.latest - 2,
                "chk-%lld builds on no chain of 3 files or more (base %lld)",
                (long long)s.latest, (long long)s.chain_base);
  run_job(&f, "3", 2, 0);
  log = slurp(&f, "worker-3");
  snprintf(path, sizeof(path), "restored from checkpoint %lld",
           (long long)s.latest);
  ck_assert_msg(strstr(log, path), "the worker did not restore chk-%lld:\n%.3000s",
                (long long)s.latest, log);
  free(log);
  scan(&f, &s);
  ck_assert_msg(s.chain_base < s.latest, "chk-%lld is not incremental",
                (long long)s.latest);
  /* 3. the chain's full file missing: refused at start, named */
  snprintf(path, sizeof(path), "%s/checkpoints/%s", f.dir, s.base_file);
  {
    char moved[1300];
    snprintf(moved, sizeof(moved), "%s.away", path);
    ck_assert_int_eq(rename(path, moved), 0);
    coord = spawn(&f, "coordinator-4", "coordinator");
    ck_assert_int_eq(wait_exit(coord, 30), 1);
    log = slurp(&f, "coordinator-4");
    ck_assert_msg(strstr(log, s.base_file), "%s not named:\n%.3000s", s.base_file,
                  log);
    free(log);
    ck_assert_int_eq(rename(moved, path), 0);
  }
  /* 4. one byte of it changed, trailer intact: the job fails, once */
  ck_assert_ptr_nonnull(fp = fopen(path, "r+b"));
  fseek(fp, 0, SEEK_END);
  size = ftell(fp);
  fseek(fp, size / 2, SEEK_SET);
  ch = fgetc(fp);
  fseek(fp, size / 2, SEEK_SET);
  fputc(ch ^ 0x5a, fp);
  fclose(fp);
  coord = spawn(&f, "coordinator-5", "coordinator");
  worker = spawn(&f, "worker-5", "worker");
  ck_assert_int_eq(wait_exit(coord, 40), 1);
  ck_assert_int_eq(wait_exit(worker, 30), 1);
  log = slurp(&f, "coordinator-5");
  ck_assert_msg(strstr(log, "not retriable") && strstr(log, s.base_file),
                "the job did not fail naming %s:\n%.3000s", s.base_file, log);
  free(log);
  scan(&f, &s2);
  ck_assert_int_eq(s2.latest, s.latest); /* nothing completed since */
  fixture_free(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("incremental");
  TCase *tc = tcase_create("incremental");

  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, incremental_chains_retention_restore_and_broken_pieces);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
