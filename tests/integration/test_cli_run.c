/*
 * `ksnap run` against the real broker: the wordcount operators over a
 * generated input, with the source and sink topics made by `ksnap topics
 * create` (the README's steps). What `ksnap run` prints (read_committed,
 * last value per key) equals a model of the input, and the sink holds,
 * for read_committed readers, exactly one record per input word: no
 * duplicate, no missing update. With checkpoints every 100 ms under full
 * load (a sink task produces each epoch while the one before waits for
 * its snapshot and its commit), each word's counts still
 * come 1, 2, 3, ... in offset order in its partition for read_committed
 * readers; and so they do when flushes at barriers time out (fault
 * hook), which only decline those checkpoints.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "kafka_testutil.h"
#include "testnames.h"
#include "testutil.h"

#define NWORDS 10

static const char *const words[NWORDS] = {"one", "two",   "three", "four",
                                          "five", "six",  "seven", "eight",
                                          "nine", "ten"};

static long make_input(const char *path, int lines, long counts[NWORDS]) {
  FILE *f = fopen(path, "w");
  unsigned seed = 7;
  long total = 0;

  ck_assert_ptr_nonnull(f);
  memset(counts, 0, NWORDS * sizeof(long));
  for (int l = 0; l < lines; l++) {
    int n = 1 + rand_r(&seed) % 4;
    for (int w = 0; w < n; w++) {
      int i = rand_r(&seed) % NWORDS;
      counts[i]++;
      total++;
      fprintf(f, "%s%s", w ? " " : "", words[i]);
    }
    fputc('\n', f);
  }
  fclose(f);
  return total;
}

static int word_index(const char *word) {
  int i = 0;

  while (i < NWORDS && strcmp(words[i], word))
    i++;
  ck_assert_msg(i < NWORDS, "unexpected word %s", word);
  return i;
}

START_TEST(wordcount_on_real_broker) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char *dir = ksnap_test_tmpdir("cli-run-kafka");
  char *job = ksnap_test_unique_name("wcrun");
  char *src = ksnap_test_unique_name("wcrun-lines");
  char *sink = ksnap_test_unique_name("wcrun-counts");
  char path[512], input[512], ckpt[600], props[4096], args[2048], *out, *err;
  long counts[NWORDS], total;
  size_t records = 0, lines = 0;

  snprintf(input, sizeof(input), "%s/input.txt", dir);
  total = make_input(input, 2000, counts);
  snprintf(path, sizeof(path), "%s/job.properties", dir);
  snprintf(ckpt, sizeof(ckpt), "file://%s/checkpoints", dir);
  ksnap_test_wordcount_props(props, sizeof(props), src, sink, 0, NULL);
  ksnap_test_job_file(path, job, ckpt, props);

  snprintf(args, sizeof(args), "topics create %s %s:2 %s:2", path, src, sink);
  ck_assert_msg(ksnap_test_cli("", args, &out, &err) == 0, "%s", err);
  free(out);
  free(err);

  snprintf(args, sizeof(args), "run --input %s %s", input, path);
  ck_assert_msg(ksnap_test_cli(KSNAP_TEST_WORDCOUNT_OPS, args, &out, &err) == 0,
                "stderr:\n%s", err);
  ck_assert_ptr_null(strstr(err, "does NOT enforce")); /* not embedded */
  for (char *p = out; *p; lines++) {
    char topic[256], word[64];
    long n;
    int i;
    ck_assert_int_eq(sscanf(p, "%255s %63s %ld", topic, word, &n), 3);
    ck_assert_str_eq(topic, sink);
    i = word_index(word);
    ck_assert_msg(n == counts[i], "%s: %ld, model %ld", word, n, counts[i]);
    ck_assert_ptr_nonnull(p = strchr(p, '\n'));
    p++;
  }
  ck_assert_uint_eq(lines, NWORDS);
  free(out);
  free(err);

  for (int part = 0; part < 2; part++) {
    ksnap_test_records_t *r =
        ksnap_test_consume_all(bs, sink, part, "read_committed");
    records += r->cnt;
    ksnap_test_records_free(r);
  }
  ck_assert_msg(records == (size_t)total,
                "%zu committed updates for %ld input words", records, total);

  ksnap_test_rmtree(dir);
  free(dir);
  free(job);
  free(src);
  free(sink);
}
END_TEST

/* Each word's counts in its partition, read_committed, in offset order:
 * exactly 1..counts[word]. */
static void assert_counts_in_order(const char *bs, const char *sink,
                                   int partitions, const long counts[NWORDS]) {
  long next[NWORDS] = {0};

  for (int part = 0; part < partitions; part++) {
    ksnap_test_records_t *r =
        ksnap_test_consume_all(bs, sink, part, "read_committed");
    for (size_t k = 0; k < r->cnt; k++) {
      int i;
      ck_assert_ptr_nonnull(r->keys[k]);
      i = word_index(r->keys[k]);
      ck_assert_msg(atol(r->values[k]) == ++next[i],
                    "%s[%d]: key %s: its value #%ld (offset %lld) is %s",
                    sink, part, r->keys[k], next[i],
                    (long long)r->offsets[k], r->values[k]);
    }
    ksnap_test_records_free(r);
  }
  for (int i = 0; i < NWORDS; i++)
    ck_assert_msg(next[i] == counts[i], "%s: %ld values, model %ld", words[i],
                  next[i], counts[i]);
}

/* The word count with checkpoints every 100 ms and the whole input at
 * once (full load), `ksnap run` with environment @p env and the job's
 * properties @p extra; each word's counts checked in offset order.
 * @returns its stderr (malloc'd). */
static char *run_in_order(const char *env, const char *extra) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char *dir = ksnap_test_tmpdir("cli-run-order");
  char *job = ksnap_test_unique_name("wcorder");
  char *src = ksnap_test_unique_name("wcorder-lines");
  char *sink = ksnap_test_unique_name("wcorder-counts");
  char path[512], input[512], ckpt[600], props[4096], args[2048], *out, *err;
  long counts[NWORDS];

  snprintf(input, sizeof(input), "%s/input.txt", dir);
  make_input(input, 200000, counts);
  snprintf(path, sizeof(path), "%s/job.properties", dir);
  snprintf(ckpt, sizeof(ckpt), "file://%s/checkpoints", dir);
  snprintf(props, sizeof(props),
           "kafka.transaction.timeout.ms=60000\n"
           "execution.checkpointing.interval=100ms\n"
           "execution.checkpointing.timeout=30s\n"
           "stage.split.operator=libwordcount.so:split\n"
           "stage.split.parallelism=2\n"
           "stage.split.input=source:%s\n"
           "stage.count.operator=libwordcount.so:count\n"
           "stage.count.parallelism=2\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:%s\n%s",
           src, sink, extra);
  ksnap_test_job_file(path, job, ckpt, props);
  snprintf(args, sizeof(args), "topics create %s %s:2 %s:2", path, src, sink);
  ck_assert_msg(ksnap_test_cli("", args, &out, &err) == 0, "%s", err);
  free(out);
  free(err);
  snprintf(args, sizeof(args), "run --input %s %s", input, path);
  ck_assert_msg(ksnap_test_cli(env, args, &out, &err) == 0, "stderr:\n%.4000s",
                err);
  free(out);
  assert_counts_in_order(bs, sink, 2, counts);
  ksnap_test_rmtree(dir);
  free(dir);
  free(job);
  free(src);
  free(sink);
  return err;
}

START_TEST(counts_in_offset_order_with_frequent_checkpoints) {
  free(run_in_order(KSNAP_TEST_WORDCOUNT_OPS, ""));
}
END_TEST

/* Flushes at the barriers that time out (KSNAP_FAULT=sink.slow-flush@N:
 * bounded by 0 ms) decline their checkpoints and nothing more: the sink's
 * transaction runs on to a later barrier, no task fails, the job is not
 * restored, and the output is complete and in order. Declines count as
 * failed checkpoints: tolerated here. Only checkpoints 2 and 3 are
 * slowed: a sink task whose own flush succeeded keeps the epoch it ended
 * at a declined barrier pending until a checkpoint completes, and four
 * failed checkpoints in a row would fill its pool of
 * sink.producer-pool-size=4 producers, which fails the task by design
 * (plugin/PROTOCOL.md section 2.4). */
START_TEST(flush_timeouts_decline_checkpoints_only) {
  char *err = run_in_order(
      KSNAP_TEST_WORDCOUNT_OPS
      " KSNAP_FAULT=sink.slow-flush@2,sink.slow-flush@3",
      "execution.checkpointing.tolerable-failed-checkpoints=1000000\n");
  const char *restored;

  ck_assert_msg(strstr(err, "transaction continues to the next barrier"),
                "no flush timed out:\n%.2000s", err);
  restored = strstr(err, "generation 1");
  if (restored) /* what led to the restore: the lines before it */
    restored = restored - err > 3500 ? restored - 3500 : err;
  ck_assert_msg(!restored, "the job restored:\n%.4000s", restored);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_run_kafka");
  TCase *tc = tcase_create("cli_run_kafka");

  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, wordcount_on_real_broker);
  tcase_add_test(tc, counts_in_offset_order_with_frequent_checkpoints);
  if (KSNAP_FAULT_INJECTION)
    tcase_add_test(tc, flush_timeouts_decline_checkpoints_only);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
