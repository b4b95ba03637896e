/*
 * Savepoints on the real broker and the real S3 server: the word count
 * (split P=2 reads the source, count P=2 keyed writes the sink) run by
 * `ksnap coordinator` and `ksnap worker`, checkpoints in S3 every 200 ms,
 * configured unaligned (aligned-checkpoint-timeout 0) and incremental, so
 * that a plain checkpoint is unaligned and builds on older files. Under
 * load, `ksnap savepoint JOB` prints the URL of a directory of its own in
 * state.savepoints.dir (a file:// one: the copy crosses backends), or by
 * default beside the checkpoints in S3 (S3 to S3), named
 * savepoint-<job>-<id>-<random>, and that directory is whole and
 * self-contained: its `_metadata` is a savepoint's, names one file per
 * task by a path relative to the directory (no chain of older files),
 * each present with the size and CRC32C recorded; and the savepoint is
 * aligned: every channel of every exchange-reading task passed its
 * writer's barrier. `ksnap checkpoints list` shows it as a savepoint,
 * with its URL; `ksnap inspect --state URL` reads it.
 */
#include <librdkafka/rdkafka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clitest.h"
#include "driver/coord_store.h"
#include "kafka_testutil.h"
#include "ksnap/records.h"
#include "ksnap/storage.h"
#include "testnames.h"
#include "testutil.h"

#define OPS_DIR KSNAP_BINARY_DIR "/tests/operators"
#define OPS "KSNAP_OPERATOR_PATH=" OPS_DIR

typedef struct fixture_s {
  char *dir, *job, *src, *sink;
  char path[512];
  char spdir[700]; /* the savepoints' parent directory */
} fixture_t;

/* With @p file_savepoints, state.savepoints.dir is file://DIR/savepoints;
 * else unset (beside the checkpoints). */
static void fixture(fixture_t *f, const char *tag, int file_savepoints) {
  char props[4096], ckpt[600], spconf[800] = "", args[2048], *out, *err;

  f->dir = ksnap_test_tmpdir(tag);
  f->job = ksnap_test_unique_name(tag);
  f->src = ksnap_test_unique_name("sp-lines");
  f->sink = ksnap_test_unique_name("sp-counts");
  snprintf(f->path, sizeof(f->path), "%s/job.properties", f->dir);
  snprintf(ckpt, sizeof(ckpt), "s3://%s/%s-ckpt",
           ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"), f->job);
  if (file_savepoints) {
    snprintf(f->spdir, sizeof(f->spdir), "file://%s/savepoints", f->dir);
    snprintf(spconf, sizeof(spconf), "state.savepoints.dir=%s\n", f->spdir);
  } else {
    snprintf(f->spdir, sizeof(f->spdir), "%s/%s", ckpt, f->job);
  }
  snprintf(props, sizeof(props),
           "kafka.transaction.timeout.ms=60000\n"
           "execution.checkpointing.interval=200ms\n"
           "execution.checkpointing.timeout=20s\n"
           "execution.checkpointing.unaligned.enabled=true\n"
           "execution.checkpointing.aligned-checkpoint-timeout=0\n"
           "state.backend.incremental=true\n%s"
           "stage.split.operator=libksnap_test_poison.so:split\n"
           "stage.split.parallelism=2\n"
           "stage.split.input=source:%s\n"
           "stage.count.operator=libksnap_test_poison.so:count\n"
           "stage.count.parallelism=2\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:%s\n",
           spconf, f->src, f->sink);
  ksnap_test_job_file(f->path, f->job, ckpt, props);
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

/* @p lines lines of words on the source topic. */
static void produce_lines(const fixture_t *f, int lines) {
  ksnap_test_produce_word_lines(f->src, lines);
}

/* `ksnap A1 A2` in the background, its stderr into DIR/NAME.err. */
static pid_t spawn(const fixture_t *f, const char *name, const char *a1,
                   const char *a2) {
  char errf[600];
  pid_t pid;

  snprintf(errf, sizeof(errf), "%s/%s.err", f->dir, name);
  ck_assert_int_ge(pid = fork(), 0);
  if (pid == 0) {
    FILE *e = freopen(errf, "w", stderr);
    (void)e;
    if (!freopen("/dev/null", "w", stdout))
      _exit(126);
    setenv("KSNAP_OPERATOR_PATH", OPS_DIR, 1);
    execl(KSNAP_TEST_BIN, "ksnap", a1, a2, (char *)NULL);
    _exit(127);
  }
  return pid;
}

static int stop(pid_t pid) {
  int status;

  kill(pid, SIGTERM);
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* `ksnap savepoint` (waiting): @returns the URL it printed (malloc'd). */
static char *take_savepoint(const fixture_t *f) {
  char args[1024], want[1200], *out, *err, *url, *end;

  snprintf(args, sizeof(args), "savepoint %s --timeout 60", f->path);
  ck_assert_msg(ksnap_test_cli(OPS, args, &out, &err) == 0, "%s%s", out, err);
  snprintf(want, sizeof(want), "%s/savepoint-%s-", f->spdir, f->job);
  ck_assert_msg((url = strstr(out, want)) != NULL, "no %s in:\n%s%s", want,
                out, err);
  end = url + strcspn(url, "\n");
  url = strndup(url, (size_t)(end - url));
  free(out);
  free(err);
  return url;
}

/* Every task of the savepoint's `_metadata` names one file by a relative
 * path, present and intact; every channel passed its barrier. */
static void check_directory(const char *url) {
  ksnap_checkpoint_meta_t meta;
  ksnap_storage_opts_t o;
  ksnap_storage_t *st;
  ksnap_error_t error;
  ksnap_buf_t b;
  int channels = 0;

  ksnap_storage_opts_init(&o);
  o.endpoint = ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT");
  o.region = ksnap_test_require_env("KSNAP_TEST_S3_REGION");
  o.access_key = ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY");
  o.secret_key = ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY");
  o.path_style = 1;
  ck_assert_msg(ksnap_storage_open(url, &o, &st, &error) == KSNAP_ERR_OK,
                "%s", error.msg);
  ksnap_buf_init(&b);
  ck_assert_msg(ksnap_storage_get(st, "_metadata", &b, &error) == 0, "%s",
                error.msg);
  ck_assert_int_eq(ksnap_codec_meta_decode(b.data, b.len, &meta, &error), 0);
  ck_assert(meta.is_savepoint);
  ck_assert_uint_eq(meta.task_cnt, 4);
  for (size_t t = 0; t < meta.task_cnt; t++) {
    const ksnap_task_snapshot_t *ts = &meta.tasks[t];
    char name[300];
    snprintf(name, sizeof(name), "%s-%d", ts->task.stage,
             (int)ts->task.index);
    ck_assert_uint_eq(ts->handle_cnt, 1);
    ck_assert_str_eq(ts->handles[0].path, name);
    for (size_t c = 0; c < ts->channel_cnt; c++, channels++)
      ck_assert_msg(ts->channels[c].passed, "%s: channel %s[%d] of %s[%d] "
                    "not passed: an unaligned savepoint", name,
                    ts->channels[c].topic, (int)ts->channels[c].partition,
                    ts->channels[c].writer.stage,
                    (int)ts->channels[c].writer.index);
  }
  ck_assert_int_eq(channels, 2 * 2); /* count[i] reads partition i of 2 writers */
  ck_assert_msg(ksnap__coord_meta_verify(st, &meta, &error) == 0, "%s",
                error.msg);
  ksnap_checkpoint_meta_cleanup(&meta);
  ksnap_buf_cleanup(&b);
  ksnap_storage_destroy(st);
}

static void savepoint_is_aligned_whole_and_self_contained(int file_savepoints) {
  char args[1024], *url, *out, *err;
  pid_t coord, worker;
  fixture_t f;

  fixture(&f, "savepoint", file_savepoints);
  produce_lines(&f, 2000);
  coord = spawn(&f, "coordinator", "coordinator", f.path);
  worker = spawn(&f, "worker", "worker", f.path);
  sleep(3); /* running, checkpoints (incremental) completed */
  produce_lines(&f, 100000); /* in flight while the savepoint aligns */
  url = take_savepoint(&f);
  check_directory(url);
  if (file_savepoints) { /* ksnap inspect reads the directory alone */
    snprintf(args, sizeof(args), "inspect --state %s", url);
    ck_assert_msg(ksnap_test_cli(OPS, args, &out, &err) == 0, "%s", err);
    ck_assert_msg(strstr(out, "\"is_savepoint\": true") &&
                      strstr(out, "/count-1\",\"task\":\"count[1]\"") &&
                      !strstr(out, "\"incremental\":true"),
                  "%.2000s", out);
    free(out);
    free(err);
  }
  snprintf(args, sizeof(args), "checkpoints list %s", f.path);
  ck_assert_int_eq(ksnap_test_cli(OPS, args, &out, &err), 0);
  ck_assert_msg(strstr(out, " savepoint ") && strstr(out, url), "%s", out);
  free(out);
  free(err);
  ck_assert_int_eq(stop(worker), 0);
  ck_assert_int_eq(stop(coord), 0);
  free(url);
  fixture_free(&f);
}

START_TEST(savepoint_in_a_file_directory) {
  savepoint_is_aligned_whole_and_self_contained(1);
}
END_TEST

START_TEST(savepoint_beside_the_checkpoints_in_s3) {
  savepoint_is_aligned_whole_and_self_contained(0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("savepoint");
  TCase *tc = tcase_create("savepoint");

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, savepoint_in_a_file_directory);
  tcase_add_test(tc, savepoint_beside_the_checkpoints_in_s3);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
