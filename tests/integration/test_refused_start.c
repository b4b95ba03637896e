/*
 * A job that the preflight refuses touches nothing on the real broker:
 * `ksnap coordinator` and `ksnap worker` exit 1 naming the file, the line
 * and the rule, and afterwards no topic named after the job exists (its
 * control, acks, progress and exchange topics are what a start creates
 * first), nor its source or sink topic (the broker creates no topic by
 * itself), so nothing was written either.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "kafka_testutil.h"
#include "testutil.h"

#define OPS "KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/tests/operators"
#define LIB "libksnap_test_identity.so"

static const char *const commands[] = {"coordinator", "worker"};

/* Topics of the broker named JOB.* or @p src or @p sink. */
static int job_topics(const char *bs, const char *job, const char *src,
                      const char *sink) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs, NULL);
  const struct rd_kafka_metadata *md = NULL;
  size_t n = strlen(job);
  int found = 0;

  ck_assert_int_eq(rd_kafka_metadata(rk, 1, NULL, &md,
                                     KSNAP_TEST_KAFKA_TIMEOUT_MS),
                   RD_KAFKA_RESP_ERR_NO_ERROR);
  for (int i = 0; i < md->topic_cnt; i++) {
    const char *t = md->topics[i].topic;
    found += (!strncmp(t, job, n) && t[n] == '.') || !strcmp(t, src) ||
             !strcmp(t, sink);
  }
  rd_kafka_metadata_destroy(md);
  rd_kafka_destroy(rk);
  return found;
}

/* "FILE:LINE: @p expect" with "DIR" in @p expect replaced by @p dir. */
static void expected(char *out, size_t size, const char *path, int line,
                     const char *expect, const char *dir) {
  const char *d = strstr(expect, "DIR");

  if (d)
    snprintf(out, size, "%s:%d: %.*s%s%s\n", path, line, (int)(d - expect),
             expect, dir, d + 3);
  else
    snprintf(out, size, "%s:%d: %s\n", path, line, expect);
}

/*
 * Writes a two-stage job (split reads SRC, count writes SINK; line 4 is
 * @p line4, then the stages with operators @p op_split and @p op_count)
 * into a new directory DIR, runs `ksnap COMMAND` on it and checks that it
 * exits 1 with exactly "FILE:LINE: @p expect" and left nothing on the
 * broker.
 */
static void refused(const char *command, const char *line4,
                    const char *op_split, const char *op_count, int line,
                    const char *expect) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char *dir = ksnap_test_tmpdir("refused"), *job = ksnap_test_unique_name("refused");
  char *src = ksnap_test_unique_name("lines"), *sink = ksnap_test_unique_name("counts");
  char path[512], body[2048], args[1024], want[2048], *out, *err;

  snprintf(path, sizeof(path), "%s/job.properties", dir);
  snprintf(body, sizeof(body),
           "%s\n"
           "stage.split.operator=%s\n"
           "stage.split.input=source:%s\n"
           "stage.count.operator=%s\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:%s\n",
           line4, op_split, src, op_count, sink);
  ksnap_test_job_file(path, job, dir, body);
  snprintf(args, sizeof(args), "%s %s", command, path);
  ck_assert_int_eq(ksnap_test_cli(OPS, args, &out, &err), 1);
  expected(want, sizeof(want), path, line, expect, dir);
  ck_assert_str_eq(err, want);
  ck_assert_str_eq(out, "");
  ck_assert_int_eq(job_topics(bs, job, src, sink), 0);
  free(out);
  free(err);
  ksnap_test_rmtree(dir);
  free(dir);
  free(job);
  free(src);
  free(sink);
}

START_TEST(txn_timeout_below_the_rule) {
  refused(commands[_i], "kafka.transaction.timeout.ms=10000",
          LIB ":identity", LIB ":identity", 4,
          "kafka.transaction.timeout.ms (10000) must exceed "
          "execution.checkpointing.interval (10000 ms) * "
          "sink.producer-pool-size (4) + execution.checkpointing.timeout "
          "(600000 ms) = 640000 ms, or a pending sink transaction can time "
          "out before its checkpoint completes; raise "
          "kafka.transaction.timeout.ms (up to the broker's "
          "transaction.max.timeout.ms, default 900000) or lower the others");
}
END_TEST

START_TEST(missing_library) {
  refused(commands[_i], "kafka.transaction.timeout.ms=700000",
          LIB ":identity", "libnope.so:identity", 7,
          "stage.count.operator: cannot load \"libnope.so\": libnope.so: "
          "cannot open shared object file: No such file or directory "
          "(searched DIR, KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR
          "/tests/operators, then the system's library path)");
}
END_TEST

START_TEST(missing_symbol) {
  refused(commands[_i], "kafka.transaction.timeout.ms=700000",
          LIB ":nope", LIB ":identity", 5,
          "stage.split.operator: " LIB " has no operator \"nope\" (no symbol "
          "ksnap_operator_nope or nope)");
}
END_TEST

int main(void) {
  Suite *s = suite_create("refused_start");
  TCase *tc = tcase_create("refused_start");

  ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, txn_timeout_below_the_rule, 0, 2);
  tcase_add_loop_test(tc, missing_library, 0, 2);
  tcase_add_loop_test(tc, missing_symbol, 0, 2);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
