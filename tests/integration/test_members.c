/*
 * Members: `ksnap worker --join` on the real broker and the real S3
 * server. The word count at split P=3 and count P=4 (7 tasks), every
 * member worker.slots=4, run by `ksnap coordinator` and three `ksnap
 * worker --join` processes.
 *
 * lose_and_join: `ksnap job status` shows the three members, each with its
 * host, 4 slots and its tasks, every task owned, none twice, at most one
 * more on one member than on another. kill -9 of one: its tasks go to the
 * two others (status: 2 members, all 7 tasks theirs, the dead one listed
 * as removed), and the counting goes on, exact. A fourth member joins:
 * after the next checkpoint it runs tasks too. The read_committed sink
 * holds, per word, exactly the counts 1..n of one failure-free run.
 *
 * refused: --join with --tasks is a usage error naming both.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clitest.h"
#include "kafka_testutil.h"
#include "testnames.h"
#include "testutil.h"

#define OPS_DIR KSNAP_BINARY_DIR "/examples/wordcount"
#define OPS "KSNAP_OPERATOR_PATH=" OPS_DIR
#define WAIT_S 60
#define NTASKS 7

typedef struct fixture_s {
  char *dir, *job, *src, *sink;
  char path[512], ckpt[600];
  pid_t c, w[4];
} fixture_t;

static void fixture(fixture_t *f, const char *tag) {
  char props[4096], args[2048], *out, *err;

  f->dir = ksnap_test_tmpdir(tag);
  f->job = ksnap_test_unique_name(tag);
  f->src = ksnap_test_unique_name("members-lines");
  f->sink = ksnap_test_unique_name("members-counts");
  snprintf(f->path, sizeof(f->path), "%s/job.properties", f->dir);
  snprintf(f->ckpt, sizeof(f->ckpt), "s3://%s/%s-ckpt",
           ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"), f->job);
  snprintf(props, sizeof(props),
           "kafka.transaction.timeout.ms=60000\n"
           "execution.checkpointing.interval=300ms\n"
           "execution.checkpointing.timeout=30s\n"
           "heartbeat.interval=200ms\n"
           "heartbeat.timeout=2s\n"
           "restart-strategy.type=fixed-delay\n"
           "restart-strategy.fixed-delay.delay=200ms\n"
           "restart-strategy.fixed-delay.attempts=50\n"
           "worker.slots=4\n"
           "stage.split.operator=libwordcount.so:split\n"
           "stage.split.parallelism=3\n"
           "stage.split.input=source:%s\n"
           "stage.count.operator=libwordcount.so:count\n"
           "stage.count.parallelism=4\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:%s\n",
           f->src, f->sink);
  ksnap_test_job_file(f->path, f->job, f->ckpt, props);
  snprintf(args, sizeof(args), "topics create %s %s:3 %s:2", f->path, f->src,
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

static pid_t spawn(const fixture_t *f, const char *name, char *const argv[]) {
  char errf[600];

  snprintf(errf, sizeof(errf), "%s/%s.err", f->dir, name);
  return ksnap_test_spawnv(OPS_DIR, errf, argv);
}

static pid_t member(fixture_t *f, int i) {
  char name[16];
  char *argv[] = {"ksnap", "worker", "--join", f->path, NULL};

  snprintf(name, sizeof(name), "member%d", i);
  return spawn(f, name, argv);
}

/* `ksnap job status`: its output (malloc'd). */
static char *status(const fixture_t *f) {
  char args[1024], *out, *err;

  snprintf(args, sizeof(args), "job status %s", f->path);
  ck_assert_msg(ksnap_test_cli(OPS, args, &out, &err) == 0, "%s", err);
  free(err);
  return out;
}

/* The members status lists and their task counts; @returns how many. */
static int members(const char *st, int *per, int max) {
  const char *p = st;
  int n = 0;

  while ((p = strstr(p, "\n  member ")) && n < max) {
    const char *end = strchr(p + 1, '\n'), *q = end ? end : p + strlen(p);
    while (q > p && *q != '(')
      q--;
    ck_assert_msg(*q == '(', "no task count in: %s", st);
    per[n++] = atoi(q + 1);
    p++;
  }
  return n;
}

/* Waits until status shows @p want members owning every task, balanced;
 * @returns its last output (malloc'd). */
static char *wait_members(const fixture_t *f, int want) {
  char *st = NULL;
  int per[8], n = 0, sum = 0, lo = 0, hi = 0;

  for (int i = 0; i < WAIT_S * 2; i++) {
    free(st);
    st = status(f);
    n = members(st, per, 8);
    sum = lo = hi = n ? per[0] : 0;
    for (int k = 1; k < n; k++) {
      sum += per[k];
      lo = per[k] < lo ? per[k] : lo;
      hi = per[k] > hi ? per[k] : hi;
    }
    if (n == want && sum == NTASKS && hi - lo <= 1 &&
        !strstr(st, "without an owner"))
      return st;
    usleep(500 * 1000);
  }
  ck_abort_msg("ksnap job status never showed %d balanced members owning "
               "all %d tasks; last: %s", want, NTASKS, st);
  return st;
}

START_TEST(lose_and_join) {
  fixture_t f;
  char *st, *argv[] = {"ksnap", "coordinator", NULL, NULL};
  long want = 0;

  fixture(&f, "members");
  argv[2] = f.path;
  f.c = spawn(&f, "coordinator", argv);
  for (int i = 0; i < 3; i++)
    f.w[i] = member(&f, i);
  ksnap_test_produce_word_lines(f.src, 400);
  want += 200;
  ksnap_test_wait_word_count(f.sink, 2, "one", want, WAIT_S);
  st = wait_members(&f, 3);
  ck_assert_msg(strstr(st, " 4 slots  tasks: ") && strstr(st, "  host "),
                "%s", st);
  ck_assert_msg(strstr(st, "3 members with 12 slots"), "%s", st);
  free(st);
  /* kill -9 of a member: its tasks go to the two others */
  kill(f.w[1], SIGKILL);
  ksnap_test_wait_exit(f.w[1], 10, 1);
  ksnap_test_produce_word_lines(f.src, 400);
  want += 200;
  st = wait_members(&f, 2);
  ck_assert_msg(strstr(st, "removed member ") &&
                strstr(st, "no MEMBER heartbeat for"), "%s", st);
  free(st);
  ksnap_test_wait_word_count(f.sink, 2, "one", want, WAIT_S);
  /* a fourth member gets tasks at the next checkpoint */
  f.w[3] = member(&f, 3);
  ksnap_test_produce_word_lines(f.src, 400);
  want += 200;
  st = wait_members(&f, 3);
  free(st);
  ksnap_test_wait_word_count(f.sink, 2, "one", want, WAIT_S);
  ksnap_test_word_count(f.sink, 2, "one", 1); /* exact, in order */
  ksnap_test_stop(f.w[0]);
  ksnap_test_stop(f.w[2]);
  ksnap_test_stop(f.w[3]);
  ksnap_test_stop(f.c);
  fixture_free(&f);
}
END_TEST

START_TEST(join_with_tasks_refused) {
  char *out, *err;

  ck_assert_int_eq(ksnap_test_cli("", "worker --join --tasks split:0 x.pr",
                                  &out, &err), 2);
  ck_assert_msg(strstr(err, "--join and --tasks exclude each other"), "%s",
                err);
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("members");
  TCase *tc = tcase_create("members");

  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, lose_and_join);
  tcase_add_test(tc, join_with_tasks_refused);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
