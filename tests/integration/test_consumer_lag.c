/*
 * A ksnap job's consumer lag, as Kafka's own consumer-groups tool shows
 * it. After each completed checkpoint a source task commits the
 * checkpoint's positions to the job's consumer group (group.id =
 * job.name), only so that standard tools see progress; ksnap restores
 * positions from its snapshots, never from the group.
 *
 * The test fills a 2-partition source topic, runs the wordcount job over
 * it with `ksnap run` (coordinator and tasks in one process) on the real
 * broker, and runs kafka-consumer-groups --describe (ConsumerGroupCommand,
 * from the broker's jars: it is in kafka-tools on 3.9 and 4.x alike):
 *  - while the job runs, every source partition shows up with its
 *    committed offset at the log end and lag 0;
 *  - after the job stopped, lines written to the source show up as lag,
 *    from the offsets the job committed.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clitest.h"
#include "kafka_testutil.h"
#include "testutil.h"

#define GROUP_TOOL "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
#define NPARTS 2
#define WAIT_S 60

static const int first_lines[NPARTS] = {30, 20}; /* before the run */
static const int later_lines[NPARTS] = {7, 3};   /* after it stopped */

static void produce_lines(const char *bs, const char *topic, int part,
                          int n) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs, NULL);

  for (int i = 0; i < n; i++) {
    char line[64];
    int len = snprintf(line, sizeof(line), "lag line %d of %d", i, part);
    ck_assert(!rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(part),
        RD_KAFKA_V_VALUE(line, (size_t)len),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END));
  }
  ck_assert(!rd_kafka_flush(rk, KSNAP_TEST_KAFKA_TIMEOUT_MS));
  rd_kafka_destroy(rk);
}

/* One row of the tool's --describe table for a source partition. */
typedef struct row_s {
  long current, end, lag; /* -1: "-" (nothing committed) */
} row_t;

static long number(const char *s) { return strcmp(s, "-") ? atol(s) : -1; }

/* Parses the rows of @p topic out of --describe output: "GROUP TOPIC
 * PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...". @returns how many
 * of its partitions were listed. */
static int parse_rows(const char *out, const char *topic,
                      row_t rows[NPARTS]) {
  int seen = 0;

  for (int p = 0; p < NPARTS; p++)
    rows[p] = (row_t){-1, -1, -1};
  for (const char *line = out; *line;) {
    char group[256], t[256], cur[32], end[32], lag[32];
    int part;
    const char *nl = strchr(line, '\n');

    if (sscanf(line, "%255s %255s %d %31s %31s %31s", group, t, &part, cur,
               end, lag) == 6 &&
        !strcmp(t, topic) && part >= 0 && part < NPARTS) {
      rows[part] = (row_t){number(cur), number(end), number(lag)};
      seen++;
    }
    line = nl ? nl + 1 : line + strlen(line);
  }
  return seen;
}

/* kafka-consumer-groups --describe of @p group into @p *outp; @returns
 * the tool's exit status (not 0 while the group does not exist yet). */
static int describe_group(const char *bs, const char *group, char **outp) {
  char args[1024];

  snprintf(args, sizeof(args), "--bootstrap-server %s --describe --group %s",
           bs, group);
  return ksnap_test_kafka_tool(GROUP_TOOL, args, outp);
}

/* True if every row shows @p committed[p] with the log end at
 * @p committed[p] + @p lag[p]. */
static int rows_are(const row_t rows[NPARTS], const int committed[NPARTS],
                    const int lag[NPARTS]) {
  for (int p = 0; p < NPARTS; p++)
    if (rows[p].current != committed[p] ||
        rows[p].end != committed[p] + lag[p] || rows[p].lag != lag[p])
      return 0;
  return 1;
}

START_TEST(lag_visible_to_consumer_groups_tool) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  const int none[NPARTS] = {0, 0};
  char *dir = ksnap_test_tmpdir("consumer-lag");
  char *job = ksnap_test_unique_name("lag");
  char *src = ksnap_test_unique_name("lag-lines");
  char *sink = ksnap_test_unique_name("lag-counts");
  char path[512], log[512], ckpt[600], props[4096], args[2048], *out, *err;
  row_t rows[NPARTS];
  time_t deadline;
  pid_t pid;
  int status, caught_up = 0;

  snprintf(path, sizeof(path), "%s/job.properties", dir);
  snprintf(log, sizeof(log), "%s/run.log", dir);
  snprintf(ckpt, sizeof(ckpt), "file://%s/checkpoints", dir);
  ksnap_test_wordcount_props(props, sizeof(props), src, sink, 0, NULL);
  ksnap_test_job_file(path, job, ckpt, props);
  snprintf(args, sizeof(args), "topics create %s %s:%d %s:2", path, src,
           NPARTS, sink);
  ck_assert_msg(ksnap_test_cli("", args, &out, &err) == 0, "%s", err);
  free(out);
  free(err);
  out = NULL;
  for (int p = 0; p < NPARTS; p++)
    produce_lines(bs, src, p, first_lines[p]);

  pid = ksnap_test_run_background(path, log, "150s");
  deadline = time(NULL) + WAIT_S;
  while (!caught_up && time(NULL) < deadline &&
         waitpid(pid, &status, WNOHANG) == 0) {
    free(out);
    caught_up = describe_group(bs, job, &out) == 0 &&
                parse_rows(out, src, rows) == NPARTS &&
                rows_are(rows, first_lines, none);
    if (!caught_up)
      sleep(1);
  }
  ck_assert_msg(waitpid(pid, &status, WNOHANG) == 0,
                "ksnap run exited early (log %s)", log);
  printf("while the job runs:\n%s", out);
  ck_assert_msg(caught_up,
                "after %d s the group does not show the source at its end "
                "with lag 0:\n%s",
                WAIT_S, out);
  free(out);

  kill(pid, SIGTERM);
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "ksnap run did not stop cleanly (log %s)", log);

  for (int p = 0; p < NPARTS; p++)
    produce_lines(bs, src, p, later_lines[p]);
  ck_assert_int_eq(describe_group(bs, job, &out), 0);
  printf("after the job stopped and more input came:\n%s", out);
  ck_assert_int_eq(parse_rows(out, src, rows), NPARTS);
  ck_assert_msg(rows_are(rows, first_lines, later_lines),
                "the group does not show the lag of the new lines:\n%s", out);
  free(out);

  ksnap_test_rmtree(dir);
  free(dir);
  free(job);
  free(src);
  free(sink);
}
END_TEST

int main(void) {
  Suite *s = suite_create("consumer_lag");
  TCase *tc = tcase_create("consumer_lag");

  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, lag_visible_to_consumer_groups_tool);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
