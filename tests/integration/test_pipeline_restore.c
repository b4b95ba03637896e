/*
 * Restore at a new generation after kill -9, with real processes: the
 * word-count job (libwordcount.so, loaded by `ksnap worker` with dlopen)
 * split (P=2) -> count (P=2, keyed) -> sink, checkpoints in the real S3
 * server. Worker A runs split:0,split:1, worker B count:0,count:1. The
 * test plays the coordinator (pipetest.h).
 *
 *  1. input part 1; checkpoint 1 completes and its sink transactions
 *     commit; input part 2; checkpoint 2 is triggered (never completed);
 *  2. kill -9 B; B is started again and RESTORE(G=2, 1) written, in either
 *     order (started first, B finds its tasks' generation-1 REGISTER and
 *     waits for the RESTORE; started after, it restores at start from its
 *     catch-up on the control topic); A restores in place;
 *  3. input part 3; checkpoints 3, 4, ... (generation 2) complete until
 *     the source offsets cover the whole input.
 * Then the read_committed sink output must equal the failure-free run:
 * every (word, k) for k = 1..count(word), each exactly once (the killed
 * generation's uncommitted output is aborted by fencing, its exchange
 * records after barrier 1 are skipped by the acceptance rule).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clitest.h"
#include "kafka_testutil.h"
#include "ksnap/storage.h"
#include "pipeops.h"
#include "pipetest.h"
#include "testutil.h"

#define T_MS 60000
#define NSRC_PARTS 4
#define NLINES 600

static const char *env(const char *name) {
  return ksnap_test_require_env(name);
}

typedef struct fixture_s {
  char *job, *src, *out, *dir, url[600], file[600];
  ksnap_storage_t *st;
} fixture_t;

/* @p extra: more job properties (one per line), e.g. the mode. */
static void setup(fixture_t *f, const char *extra) {
  ksnap_storage_opts_t opts;
  ksnap_error_t error;
  char props[4096];

  f->job = ksnap_test_unique_name("wcr");
  f->src = ksnap_test_unique_name("wcr-src");
  f->out = ksnap_test_unique_name("wcr-out");
  f->dir = ksnap_test_tmpdir("pipeline-restore");
  snprintf(f->url, sizeof(f->url), "s3://%s/%s",
           env("KSNAP_TEST_S3_BUCKET"), f->job);
  snprintf(f->file, sizeof(f->file), "%s/job.properties", f->dir);
  ksnap_test_wordcount_props(props, sizeof(props), f->src, f->out, 0, extra);
  ksnap_test_job_file(f->file, f->job, f->url, props);
  ksnap_test_create_topic(env("KSNAP_TEST_BOOTSTRAP"), f->src, NSRC_PARTS);
  ksnap_test_create_topic(env("KSNAP_TEST_BOOTSTRAP"), f->out, 2);
  ksnap_storage_opts_init(&opts);
  opts.endpoint = env("KSNAP_TEST_S3_ENDPOINT");
  opts.region = env("KSNAP_TEST_S3_REGION");
  opts.access_key = env("KSNAP_TEST_S3_ACCESS_KEY");
  opts.secret_key = env("KSNAP_TEST_S3_SECRET_KEY");
  opts.path_style = 1;
  ck_assert_msg(!ksnap_storage_open(f->url, &opts, &f->st, &error), "%s",
                error.msg);
}

static void teardown(fixture_t *f) {
  ksnap_storage_destroy(f->st);
  if (getenv("KSNAP_TEST_KEEP")) /* keep the workers' logs */
    fprintf(stderr, "kept %s\n", f->dir);
  else
    ksnap_test_rmtree(f->dir);
  free(f->dir);
  free(f->job);
  free(f->src);
  free(f->out);
}

static pid_t spawn_worker(fixture_t *f, const char *tasks, const char *log) {
  char path[700];
  pid_t pid;

  snprintf(path, sizeof(path), "%s/%s", f->dir, log);
  pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    setenv("KSNAP_OPERATOR_PATH", KSNAP_BINARY_DIR "/examples/wordcount", 1);
    execl(KSNAP_BINARY_DIR "/bin/ksnap", "ksnap", "worker", "--tasks", tasks,
          f->file, (char *)NULL);
    _exit(127);
  }
  return pid;
}

/* Triggers, collects 4 ACKs, writes _metadata, completes, waits for the
 * sinks' COMMITTED. @returns the number of source lines in the cut. */
static int64_t checkpoint(fixture_t *f, pt_acks_t *acks, int64_t id,
                          int64_t gen) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  const ksnap_ack_record_t **recs;
  int64_t lines = 0;
  size_t n;

  pt_trigger(bs, f->job, id, gen);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, id, gen, 4, T_MS, &recs);
  ck_assert_msg(n == 4, "%zu of 4 tasks acknowledged checkpoint %lld", n,
                (long long)id);
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < recs[i]->u.ack.snapshot.offset_cnt; k++)
      if (recs[i]->u.ack.snapshot.offsets[k].offset > 0)
        lines += recs[i]->u.ack.snapshot.offsets[k].offset;
  pt_write_metadata(f->st, f->job, id, gen, recs, n);
  pt_complete(bs, f->job, id, gen);
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, id, gen, 2, T_MS, NULL);
  ck_assert_msg(n == 2, "%zu of 2 sink tasks committed %lld", n,
                (long long)id);
  return lines;
}

/* @p restart_first: start the new B before the RESTORE record exists (it
 * finds its tasks' REGISTER of generation 1 and waits for the RESTORE);
 * otherwise after it (it restores at start). */
static void kill9_restore(const char *extra, int restart_first) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  fixture_t f;
  pt_acks_t *acks;
  pid_t a, b;
  int status;
  int64_t id = 1, lines = 0;
  long long model[PT_NWORDS] = {0};
  char **out;
  size_t nout, n;

  setup(&f, extra);
  pt_produce_lines(env("KSNAP_TEST_BOOTSTRAP"), f.src, NSRC_PARTS,
                   0, NLINES / 3);
  a = spawn_worker(&f, "split:0,split:1", "worker-a.log");
  b = spawn_worker(&f, "count:0,count:1", "worker-b.log");
  acks = pt_acks_new(bs, f.job);
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, PT_G0, 4, T_MS, NULL);
  ck_assert_msg(n == 4, "%zu of 4 tasks registered", n);

  checkpoint(&f, acks, id++, PT_G0);
  pt_produce_lines(env("KSNAP_TEST_BOOTSTRAP"), f.src, NSRC_PARTS,
                   NLINES / 3, 2 * NLINES / 3);
  usleep(300 * 1000);
  pt_trigger(bs, f.job, id++, PT_G0); /* never completed */
  usleep(300 * 1000);

  kill(b, SIGKILL);
  waitpid(b, &status, 0);
  if (restart_first) {
    b = spawn_worker(&f, "count:0,count:1", "worker-b2.log");
    usleep(1500 * 1000); /* B2 has caught up and waits */
    pt_restore(bs, f.job, 2, 1);
  } else {
    pt_restore(bs, f.job, 2, 1);
    b = spawn_worker(&f, "count:0,count:1", "worker-b2.log");
  }
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, 2, 4, T_MS, NULL);
  ck_assert_msg(n == 4, "%zu of 4 tasks registered in generation 2", n);

  pt_produce_lines(env("KSNAP_TEST_BOOTSTRAP"), f.src, NSRC_PARTS,
                   2 * NLINES / 3, NLINES);
  for (int round = 0; lines < NLINES && round < 60; round++) {
    lines = checkpoint(&f, acks, id++, 2);
    if (lines < NLINES)
      usleep(200 * 1000);
  }
  ck_assert_int_eq(lines, NLINES);

  for (size_t i = 0; i < NLINES; i++)
    pt_line_count(i, model);
  out = pt_consume_committed(bs, f.out, 2, &nout);
  {
    static char seen[PT_NWORDS][NLINES];
    size_t total = 0;
    memset(seen, 0, sizeof(seen));
    for (int w = 0; w < PT_NWORDS; w++)
      total += (size_t)model[w];
    for (size_t i = 0; i < nout; i++) {
      int w;
      long long k;
      ck_assert_int_eq(sscanf(out[i], "w%d:%lld", &w, &k), 2);
      ck_assert_msg(k >= 1 && k <= model[w], "output %s beyond the model %lld",
                    out[i], model[w]);
      ck_assert_msg(!seen[w][k], "duplicate output %s", out[i]);
      seen[w][k] = 1;
      free(out[i]);
    }
    free(out);
    ck_assert_int_eq(nout, total);
  }
  pt_stop_worker(a);
  pt_stop_worker(b);
  pt_acks_destroy(acks);
  teardown(&f);
}

START_TEST(test_kill9_restore) { kill9_restore("", 1); }
END_TEST

/* Unaligned checkpoints: snapshots at the first barrier, channel
 * positions with passed_c = 0 for channels whose barrier had not come;
 * the restore replays them under the acceptance rule. Same final output. */
START_TEST(test_kill9_restore_unaligned) {
  kill9_restore("execution.checkpointing.unaligned.enabled=true\n", 0);
}
END_TEST

/* Aligned with a 1 ms alignment timeout: switched to unaligned. */
START_TEST(test_kill9_restore_timeout_switch) {
  kill9_restore("execution.checkpointing.unaligned.enabled=true\n"
                "execution.checkpointing.aligned-checkpoint-timeout=10ms\n",
                0);
}
END_TEST

/* A snapshot object replaced after its checkpoint completed (same key, a
 * valid object, one byte changed): every task that restores from it (both
 * count tasks: each reads the header and operator state of every file of
 * its stage) refuses the file before reading any state from it, since its
 * size and CRC32C are not what the checkpoint recorded, says that no
 * restart can fix it, and does not run in the new generation; the split
 * tasks restore. */
START_TEST(test_replaced_snapshot_refused) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  fixture_t f;
  pt_acks_t *acks;
  pid_t a, b;
  int status;
  size_t n;
  char key[700], path[700], log[8192];
  ksnap_buf_t obj;
  ksnap_error_t error;
  FILE *fp;

  setup(&f, "");
  pt_produce_lines(bs, f.src, NSRC_PARTS, 0, NLINES / 3);
  a = spawn_worker(&f, "split:0,split:1", "worker-a.log");
  b = spawn_worker(&f, "count:0,count:1", "worker-b.log");
  acks = pt_acks_new(bs, f.job);
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, PT_G0, 4, T_MS, NULL);
  ck_assert_msg(n == 4, "%zu of 4 tasks registered", n);
  checkpoint(&f, acks, 1, PT_G0);

  snprintf(key, sizeof(key), "%s/chk-1/count-0", f.job);
  ksnap_buf_init(&obj);
  ck_assert_msg(!ksnap_storage_get(f.st, key, &obj, &error), "%s",
                error.msg);
  obj.data[obj.len / 2] ^= 0x04;
  ck_assert_msg(!ksnap_storage_put(f.st, key, obj.data, obj.len, &error),
                "%s", error.msg);
  ksnap_buf_cleanup(&obj);

  kill(b, SIGKILL);
  waitpid(b, &status, 0);
  pt_restore(bs, f.job, 2, 1);
  b = spawn_worker(&f, "count:0,count:1", "worker-b2.log");
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, 2, 4, 15000, NULL);
  ck_assert_msg(n == 2, "%zu tasks registered in generation 2, want the 2 "
                "split tasks", n);
  snprintf(path, sizeof(path), "%s/worker-b2.log", f.dir);
  fp = fopen(path, "r");
  ck_assert_ptr_nonnull(fp);
  n = fread(log, 1, sizeof(log) - 1, fp);
  log[n] = '\0';
  fclose(fp);
  ck_assert_msg(strstr(log, "count[0] failed (not retriable): s3://") &&
                    strstr(log, "count[1] failed (not retriable): s3://") &&
                    strstr(log, "/chk-1/count-0: ") &&
                    strstr(log, "the checkpoint recorded"),
                "worker log: %s", log);
  pt_stop_worker(a);
  pt_stop_worker(b);
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("pipeline_restore");
  TCase *tc = tcase_create("restore");

  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_kill9_restore);
  tcase_add_test(tc, test_kill9_restore_unaligned);
  tcase_add_test(tc, test_kill9_restore_timeout_switch);
  tcase_add_test(tc, test_replaced_snapshot_refused);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
