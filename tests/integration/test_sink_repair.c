/*
 * Epoch replay (plugin/src/task/replay.c): a sink task that died after
 * COMPLETE(N) and before its commit replays, on restore, the epochs whose
 * commit was lost and commits them as transaction N. Real processes on the
 * real broker and S3 server: the word-count job split (P=2) -> count (P=2,
 * keyed, sink).
 * Worker A runs split:0,split:1, worker B count:0,count:1 (the sink
 * tasks). The test plays the coordinator (pipetest.h).
 *
 *  1. input part 1; checkpoint 1 completes and both sinks commit it;
 *  2. input part 2; checkpoint 2: all tasks ACK (the sinks pre-committed
 *     epoch 2), _metadata is written, COMPLETE(2) is sent (the decision);
 *     worker B runs with KSNAP_FAULT=sink.before-commit@2 and _exit(137)s
 *     on COMPLETE(2) before committing (like kill -9 at that instant);
 *  3. RESTORE(G=2, 2); B is started again: each sink fences its slot ids
 *     (aborting the pre-committed transaction 2), reads C=1 from the
 *     progress topic, replays the exchange input between chk-1's and
 *     chk-2's cuts on chk-1's state, commits it with progress record 2,
 *     then loads chk-2;
 *  4. input part 3; checkpoints 3, 4, ... (generation 2) until the source
 *     offsets cover the whole input.
 * Then every word's read_committed values must be exactly 1..n (the
 * failure-free model). With KSNAP_FAULT=sink.skip-repair on the restarted
 * worker (replay off) the same run must LOSE epoch 2's output: the test
 * test_repair_off checks that the check above then fails, so the check can
 * fail. test_repair_retention: the exchange records the replay needs are
 * deleted (DeleteRecords) before the restart: the sinks fail loudly with
 * KSNAP_ERR_RETENTION's message and never register.
 * test_repair_source: a sink stage reading the source topic itself.
 * test_repair_aborted: C is an aborted checkpoint (no _metadata): the
 * replay starts from the sink's own snapshot at C (its ACK).
 * test_repair_chain: checkpoints 2 and 3 are both decided before the
 * crash; RESTORE(2, 3) replays two segments (1 -> 2, 2 -> 3).
 * test_repair_with_timers: the sink's operator writes keyed timers while
 * it processes, and the replay runs from an empty state (no C).
 * (The tests keep the name "repair": the replay repairs a lost commit.)
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

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
  int64_t last; /* last completed checkpoint (parent of the next) */
  size_t committed_before; /* sinks that committed 2 before the crash */
  int single;  /* one stage: split reads the source and is the sink */
  size_t ntasks; /* tasks that ACK */
} fixture_t;

/* @p extra: more job properties (one per line), e.g. the mode. */
static void setup(fixture_t *f, const char *extra) {
  ksnap_storage_opts_t opts;
  ksnap_error_t error;
  char props[4096];

  f->ntasks = f->single ? 2 : 4; /* f->single: set by the caller */
  f->last = KSNAP_CHECKPOINT_NONE;
  f->job = ksnap_test_unique_name("rep");
  f->src = ksnap_test_unique_name("rep-src");
  f->out = ksnap_test_unique_name("rep-out");
  f->dir = ksnap_test_tmpdir("sink-repair");
  snprintf(f->url, sizeof(f->url), "s3://%s/%s",
           env("KSNAP_TEST_S3_BUCKET"), f->job);
  snprintf(f->file, sizeof(f->file), "%s/job.properties", f->dir);
  ksnap_test_wordcount_props(props, sizeof(props), f->src, f->out, f->single,
                             extra);
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

/* @p fault: KSNAP_FAULT for the worker (fault.h), NULL: none. */
static pid_t spawn_worker(fixture_t *f, const char *tasks, const char *log,
                          const char *fault) {
  char path[700];
  pid_t pid;

  snprintf(path, sizeof(path), "%s/%s", f->dir, log);
  pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    if (fault)
      setenv("KSNAP_FAULT", fault, 1);
    else
      unsetenv("KSNAP_FAULT");
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
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, id, gen, f->ntasks, T_MS, &recs);
  ck_assert_msg(n == f->ntasks, "%zu of %zu tasks acknowledged checkpoint "
                "%lld", n, f->ntasks, (long long)id);
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < recs[i]->u.ack.snapshot.offset_cnt; k++)
      if (recs[i]->u.ack.snapshot.offsets[k].offset > 0)
        lines += recs[i]->u.ack.snapshot.offsets[k].offset;
  pt_write_metadata_parent(f->st, f->job, id, gen, f->last, recs, n);
  f->last = id;
  pt_complete(bs, f->job, id, gen);
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, id, gen, 2, T_MS, NULL);
  ck_assert_msg(n == 2, "%zu of 2 sink tasks committed %lld", n,
                (long long)id);
  return lines;
}

static void produce_part(fixture_t *f, int part) {
  pt_produce_lines(env("KSNAP_TEST_BOOTSTRAP"), f->src, NSRC_PARTS,
                   (size_t)part * NLINES / 3, (size_t)(part + 1) * NLINES / 3);
}

/* Runs steps 1-2; @returns worker A's pid, B has exited with 137.
 * @p last: checkpoints 2..last are all decided (ACKed, _metadata,
 * COMPLETE) before the sink process dies on COMPLETE(2). */
static pid_t crash_after_decisions(fixture_t *f, pt_acks_t **acksp,
                                   int64_t last) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  const ksnap_ack_record_t **recs;
  pt_acks_t *acks;
  pid_t a, b;
  int status;
  size_t n;

  produce_part(f, 0);
  a = spawn_worker(f, "split:0,split:1", "worker-a.log", NULL);
  b = spawn_worker(f, "count:0,count:1", "worker-b.log",
                   "sink.before-commit@2");
  *acksp = acks = pt_acks_new(bs, f->job);
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, PT_G0, 4, T_MS, NULL);
  ck_assert_msg(n == 4, "%zu of 4 tasks registered", n);
  checkpoint(f, acks, 1, PT_G0);
  for (int64_t id = 2; id <= last; id++) {
    /* input part 1, spread over the decided checkpoints */
    size_t lo = NLINES / 3, len = NLINES / 3, k = (size_t)(last - 1);
    pt_produce_lines(env("KSNAP_TEST_BOOTSTRAP"), f->src, NSRC_PARTS,
                     lo + len * (size_t)(id - 2) / k,
                     lo + len * (size_t)(id - 1) / k);
    usleep(500 * 1000);
    pt_trigger(bs, f->job, id, PT_G0);
    n = pt_acks_wait(acks, KSNAP_ACKT_ACK, id, PT_G0, 4, T_MS, &recs);
    ck_assert_msg(n == 4, "%zu of 4 tasks acknowledged checkpoint %lld", n,
                  (long long)id);
    pt_write_metadata_parent(f->st, f->job, id, PT_G0, f->last, recs, n);
    f->last = id;
  }
  for (int64_t id = 2; id <= last; id++)
    pt_complete(bs, f->job, id, PT_G0);
  ck_assert_int_eq(waitpid(b, &status, 0), b);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 137,
                "worker B did not crash at sink.before-commit@2 (status %d)",
                status);
  /* the other sink task of B may have committed 2 before the first one's
   * crash ended the process: the repair then finds C = 2 for it */
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, 2, PT_G0, 2, 500, NULL);
  fprintf(stderr, "%zu of 2 sink tasks committed 2 before the crash\n", n);
  f->committed_before = n;
  return a;
}

static pid_t crash_after_decision(fixture_t *f, pt_acks_t **acksp) {
  return crash_after_decisions(f, acksp, 2);
}

/* Steps 3-4 (RESTORE(2, @p from)), comparison with the model.
 * @returns the number of missing (word, k) outputs; duplicates and values beyond the model fail. */
static size_t restore_from_and_check(fixture_t *f, pt_acks_t *acks, pid_t a,
                                     const char *fault, int64_t from) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  long long model[PT_NWORDS] = {0};
  static char seen[PT_NWORDS][NLINES];
  int64_t id = from + 1, lines = 0;
  size_t nout, n, total = 0;
  char **out;
  pid_t b;

  pt_restore(bs, f->job, 2, from);
  b = spawn_worker(f, "count:0,count:1", "worker-b2.log", fault);
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, 2, 4, T_MS, NULL);
  ck_assert_msg(n == 4, "%zu of 4 tasks registered in generation 2", n);
  if (!fault) { /* each repaired sink reports COMMITTED(from) */
    n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, from, 2,
                     2 - f->committed_before, T_MS, NULL);
    ck_assert_msg(n == 2 - f->committed_before,
                  "%zu sinks reported COMMITTED(%lld) after the repair", n,
                  (long long)from);
  }
  produce_part(f, 2);
  for (int round = 0; lines < NLINES && round < 60; round++) {
    lines = checkpoint(f, acks, id++, 2);
    if (lines < NLINES)
      usleep(200 * 1000);
  }
  ck_assert_int_eq(lines, NLINES);

  for (size_t i = 0; i < NLINES; i++)
    pt_line_count(i, model);
  out = pt_consume_committed(bs, f->out, 2, &nout);
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
  pt_stop_worker(a);
  pt_stop_worker(b);
  fprintf(stderr, "sink repair (%s): %zu of %zu model outputs committed\n",
          fault ? fault : "repair on", nout, total);
  ck_assert_int_le(nout, total);
  return total - nout;
}

static size_t restore_and_check(fixture_t *f, pt_acks_t *acks, pid_t a,
                                const char *fault) {
  return restore_from_and_check(f, acks, a, fault, 2);
}

START_TEST(test_repair) {
  fixture_t f = {0};
  pt_acks_t *acks;
  pid_t a;

  setup(&f, "");
  a = crash_after_decision(&f, &acks);
  ck_assert_int_eq(restore_and_check(&f, acks, a, NULL), 0);
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

/* The same run with the repair switched off loses epoch 2's output:
 * proves test_repair's check can fail. */
START_TEST(test_repair_off) {
  fixture_t f = {0};
  pt_acks_t *acks;
  size_t missing;
  pid_t a;

  setup(&f, "");
  a = crash_after_decision(&f, &acks);
  missing = restore_and_check(&f, acks, a, "sink.skip-repair");
  ck_assert_msg(missing > 0, "repair off but nothing was lost: the crash "
                "did not hit the commit window");
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

/* Unaligned checkpoints: chk-1's channel positions may have passed_c = 0;
 * the replay's segment starts there under the acceptance rule. */
START_TEST(test_repair_unaligned) {
  fixture_t f = {0};
  pt_acks_t *acks;
  pid_t a;

  setup(&f, "execution.checkpointing.unaligned.enabled=true\n");
  a = crash_after_decision(&f, &acks);
  ck_assert_int_eq(restore_and_check(&f, acks, a, NULL), 0);
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

/* Two decided checkpoints (2 and 3) before the crash on COMPLETE(2),
 * RESTORE(2, 3): the repair replays two segments, 1 -> 2 and 2 -> 3,
 * along the parents. */
START_TEST(test_repair_chain) {
  fixture_t f = {0};
  pt_acks_t *acks;
  pid_t a;

  setup(&f, "");
  a = crash_after_decisions(&f, &acks, 3);
  ck_assert_int_eq(restore_from_and_check(&f, acks, a, NULL, 3), 0);
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

/* Deletes every record of @p topic's @p nparts partitions (DeleteRecords
 * up to the high watermark), as retention would. */
static void delete_all_records(const char *bootstrap, const char *topic,
                               int nparts) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bootstrap, NULL);
  rd_kafka_topic_partition_list_t *list =
      rd_kafka_topic_partition_list_new(nparts);
  rd_kafka_DeleteRecords_t *del;
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_event_t *ev;
  const rd_kafka_DeleteRecords_result_t *res;
  const rd_kafka_topic_partition_list_t *offsets;

  for (int p = 0; p < nparts; p++)
    rd_kafka_topic_partition_list_add(list, topic, p)->offset =
        RD_KAFKA_OFFSET_END;
  del = rd_kafka_DeleteRecords_new(list);
  rd_kafka_DeleteRecords(rk, &del, 1, NULL, q);
  ck_assert_ptr_nonnull(ev = rd_kafka_queue_poll(q, T_MS));
  ck_assert_msg(!rd_kafka_event_error(ev), "DeleteRecords: %s",
                rd_kafka_event_error_string(ev));
  ck_assert_ptr_nonnull(res = rd_kafka_event_DeleteRecords_result(ev));
  offsets = rd_kafka_DeleteRecords_result_offsets(res);
  for (int i = 0; i < offsets->cnt; i++)
    ck_assert_msg(!offsets->elems[i].err, "DeleteRecords %s[%d]: %s", topic,
                  (int)offsets->elems[i].partition,
                  rd_kafka_err2str(offsets->elems[i].err));
  rd_kafka_event_destroy(ev);
  rd_kafka_DeleteRecords_destroy(del);
  rd_kafka_topic_partition_list_destroy(list);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
}

/* @returns 1 once @p path contains @p needle (polls up to @p ms). */
static int wait_log(const char *path, const char *needle, int ms) {
  for (int t = 0; t < ms; t += 200) {
    FILE *fp = fopen(path, "r");
    char line[2048];
    int found = 0;
    while (fp && !found && fgets(line, sizeof(line), fp))
      found = strstr(line, needle) != NULL;
    if (fp)
      fclose(fp);
    if (found)
      return 1;
    usleep(200 * 1000);
  }
  return 0;
}

/* The exchange records between chk-1's and chk-2's cuts are deleted
 * before the restore: the repair cannot replay them and must fail loudly
 * (KSNAP_ERR_RETENTION), the sinks never register, nothing is committed
 * for epoch 2. */
START_TEST(test_repair_retention) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  char topic[300], log[700];
  fixture_t f = {0};
  pt_acks_t *acks;
  pid_t a, b;

  setup(&f, "");
  a = crash_after_decision(&f, &acks);
  snprintf(topic, sizeof(topic), "%s.split", f.job);
  delete_all_records(bs, topic, 2);
  pt_restore(bs, f.job, 2, 2);
  b = spawn_worker(&f, "count:0,count:1", "worker-b2.log", NULL);
  snprintf(log, sizeof(log), "%s/worker-b2.log", f.dir);
  ck_assert_msg(wait_log(log, "deleted by retention", T_MS),
                "the repair did not fail with the retention error (%s)", log);
  ck_assert_msg(wait_log(log, "the lost epoch cannot be repaired", 1000),
                "no clear message in %s", log);
  ck_assert_int_eq(pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, 2, 4, 2000,
                                NULL), 2); /* only the split tasks */
  pt_stop_worker(a);
  pt_stop_worker(b);
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

/* A sink stage that reads the source topic itself (split -> sink, P=2):
 * the repair replays source partitions from chk-1's offsets to chk-2's.
 * Output (word, "1") per word occurrence: each word's committed count
 * must equal the model's. */
START_TEST(test_repair_source) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  const ksnap_ack_record_t **recs;
  long long model[PT_NWORDS] = {0}, got[PT_NWORDS] = {0};
  int64_t id = 3, lines = 0;
  fixture_t f = {.single = 1};
  pt_acks_t *acks;
  char **out;
  size_t n, nout;
  pid_t b;
  int status;

  setup(&f, "");
  produce_part(&f, 0);
  b = spawn_worker(&f, "split:0,split:1", "worker-b.log",
                   "sink.before-commit@2");
  acks = pt_acks_new(bs, f.job);
  ck_assert_int_eq(pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, PT_G0, 2, T_MS,
                                NULL), 2);
  checkpoint(&f, acks, 1, PT_G0);
  produce_part(&f, 1);
  usleep(500 * 1000);
  pt_trigger(bs, f.job, 2, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 2, PT_G0, 2, T_MS, &recs);
  ck_assert_int_eq(n, 2);
  pt_write_metadata_parent(f.st, f.job, 2, PT_G0, f.last, recs, n);
  f.last = 2;
  pt_complete(bs, f.job, 2, PT_G0);
  ck_assert_int_eq(waitpid(b, &status, 0), b);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 137,
                "the worker did not crash at sink.before-commit@2");
  pt_restore(bs, f.job, 2, 2);
  b = spawn_worker(&f, "split:0,split:1", "worker-b2.log", NULL);
  ck_assert_int_eq(pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, 2, 2, T_MS,
                                NULL), 2);
  produce_part(&f, 2);
  for (int round = 0; lines < NLINES && round < 60; round++) {
    lines = checkpoint(&f, acks, id++, 2);
    if (lines < NLINES)
      usleep(200 * 1000);
  }
  ck_assert_int_eq(lines, NLINES);
  for (size_t i = 0; i < NLINES; i++)
    pt_line_count(i, model);
  out = pt_consume_committed(bs, f.out, 2, &nout);
  for (size_t i = 0; i < nout; i++) {
    int w;
    ck_assert_int_eq(sscanf(out[i], "w%d:1", &w), 1);
    ck_assert(w >= 0 && w < PT_NWORDS);
    got[w]++;
    free(out[i]);
  }
  free(out);
  for (int w = 0; w < PT_NWORDS; w++)
    ck_assert_msg(got[w] == model[w], "word w%d: %lld committed, model %lld",
                  w, got[w], model[w]);
  pt_stop_worker(b);
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

/* C belongs to an ABORTED checkpoint: 2 is acknowledged by every task,
 * then aborted (the sinks keep transaction 2 pending); 3 completes and
 * COMPLETE(3) commits 2 then 3; worker B dies right after committing 2
 * (KSNAP_FAULT=sink.after-commit@2). RESTORE(2, 3): the sink that
 * committed 2 finds C = 2 without _metadata and starts from its own
 * snapshot at 2 (its ACK on the acks topic), replaying 2 -> 3. */
START_TEST(test_repair_aborted) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  const ksnap_ack_record_t **recs;
  ksnap_control_record_t rec = {.type = KSNAP_CONTROL_ABORT};
  fixture_t f = {0};
  pt_acks_t *acks;
  pid_t a, b;
  int status;
  size_t n;

  setup(&f, "");
  produce_part(&f, 0);
  a = spawn_worker(&f, "split:0,split:1", "worker-a.log", NULL);
  b = spawn_worker(&f, "count:0,count:1", "worker-b.log",
                   "sink.after-commit@2");
  acks = pt_acks_new(bs, f.job);
  ck_assert_int_eq(pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, PT_G0, 4, T_MS,
                                NULL), 4);
  checkpoint(&f, acks, 1, PT_G0);
  pt_produce_lines(env("KSNAP_TEST_BOOTSTRAP"), f.src, NSRC_PARTS,
                   NLINES / 3, NLINES / 2);
  usleep(500 * 1000);
  pt_trigger(bs, f.job, 2, PT_G0);
  ck_assert_int_eq(pt_acks_wait(acks, KSNAP_ACKT_ACK, 2, PT_G0, 4, T_MS,
                                NULL), 4);
  rec.u.abort = (ksnap_abort_t){2, PT_G0, "test: aborted after the ACKs"};
  pt_send_control(bs, f.job, &rec);
  pt_produce_lines(env("KSNAP_TEST_BOOTSTRAP"), f.src, NSRC_PARTS,
                   NLINES / 2, 2 * NLINES / 3);
  usleep(500 * 1000);
  pt_trigger(bs, f.job, 3, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 3, PT_G0, 4, T_MS, &recs);
  ck_assert_int_eq(n, 4);
  pt_write_metadata_parent(f.st, f.job, 3, PT_G0, f.last, recs, n);
  f.last = 3;
  pt_complete(bs, f.job, 3, PT_G0);
  ck_assert_int_eq(waitpid(b, &status, 0), b);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 137,
                "worker B did not crash at sink.after-commit@2");
  n = pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, 3, PT_G0, 2, 500, NULL);
  f.committed_before = n;
  ck_assert_int_eq(restore_from_and_check(&f, acks, a, NULL, 3), 0);
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

/* The sink's operator registers a keyed timer for every record (a write
 * to the reserved timers' state) and the sink dies on COMPLETE(1), before
 * it ever committed: the replay runs from an empty state of its own,
 * where the timers' state must exist too (the run's state id would name
 * the operator's "count" state there, and every record would fail). */
START_TEST(test_repair_with_timers) {
  const char *bs = env("KSNAP_TEST_BOOTSTRAP");
  const ksnap_ack_record_t **recs;
  fixture_t f = {0};
  pt_acks_t *acks;
  pid_t a, b;
  int status;
  size_t n;

  setup(&f, "stage.count.operator=" KSNAP_BINARY_DIR
            "/tests/operators/libksnap_test_timers.so:count\n");
  produce_part(&f, 0);
  produce_part(&f, 1);
  a = spawn_worker(&f, "split:0,split:1", "worker-a.log", NULL);
  b = spawn_worker(&f, "count:0,count:1", "worker-b.log",
                   "sink.before-commit@1");
  acks = pt_acks_new(bs, f.job);
  n = pt_acks_wait(acks, KSNAP_ACKT_REGISTER, 0, PT_G0, 4, T_MS, NULL);
  ck_assert_msg(n == 4, "%zu of 4 tasks registered", n);
  usleep(500 * 1000);
  pt_trigger(bs, f.job, 1, PT_G0);
  n = pt_acks_wait(acks, KSNAP_ACKT_ACK, 1, PT_G0, 4, T_MS, &recs);
  ck_assert_msg(n == 4, "%zu of 4 tasks acknowledged checkpoint 1", n);
  pt_write_metadata_parent(f.st, f.job, 1, PT_G0, f.last, recs, n);
  f.last = 1;
  pt_complete(bs, f.job, 1, PT_G0);
  ck_assert_int_eq(waitpid(b, &status, 0), b);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 137,
                "worker B did not crash at sink.before-commit@1 (status %d)",
                status);
  f.committed_before =
      pt_acks_wait(acks, KSNAP_ACKT_COMMITTED, 1, PT_G0, 2, 500, NULL);
  ck_assert_int_eq(restore_from_and_check(&f, acks, a, NULL, 1), 0);
  pt_acks_destroy(acks);
  teardown(&f);
}
END_TEST

int main(void) {
  Suite *s;
  TCase *tc;

  /* every test crashes a worker at a fault point */
  ksnap_test_require_faults("test_sink_repair");
  s = suite_create("sink_repair");
  /* one case per test: CK_RUN_CASE=off runs one of them */
  suite_add_tcase(s, tc = tcase_create("on"));
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_repair);
  suite_add_tcase(s, tc = tcase_create("off"));
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_repair_off);
  suite_add_tcase(s, tc = tcase_create("unaligned"));
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_repair_unaligned);
  suite_add_tcase(s, tc = tcase_create("chain"));
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_repair_chain);
  suite_add_tcase(s, tc = tcase_create("retention"));
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_repair_retention);
  suite_add_tcase(s, tc = tcase_create("source"));
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_repair_source);
  suite_add_tcase(s, tc = tcase_create("aborted"));
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_repair_aborted);
  suite_add_tcase(s, tc = tcase_create("timers"));
  tcase_set_timeout(tc, 400);
  tcase_add_test(tc, test_repair_with_timers);
  return ksnap_test_run(s);
}
