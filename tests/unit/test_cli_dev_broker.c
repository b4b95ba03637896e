/*
 * `ksnap dev-broker` as a user runs it: the built binary in a child
 * process, its bootstrap line, its topics, its exit on SIGTERM/SIGINT.
 * No server needed (the mock cluster lives in the child).
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "testutil.h"

#define KSNAP_BIN KSNAP_BINARY_DIR "/bin/ksnap"

typedef struct child_s {
  pid_t pid;
  FILE *out; /* the child's stdout */
} child_t;

static child_t spawn(char *const argv[]) {
  int fds[2];
  child_t child;

  ck_assert_int_eq(pipe(fds), 0);
  child.pid = fork();
  ck_assert_int_ge(child.pid, 0);
  if (child.pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv(KSNAP_BIN, argv);
    _exit(127);
  }
  close(fds[1]);
  child.out = fdopen(fds[0], "r");
  ck_assert_ptr_nonnull(child.out);
  return child;
}

/* Waits for the child; returns its exit code (-1 if it did not exit). */
static int reap(child_t *child) {
  int status;

  fclose(child->out);
  ck_assert_int_eq(waitpid(child->pid, &status, 0), child->pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static char *read_line(FILE *f) {
  char buf[1024];

  ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
  buf[strcspn(buf, "\n")] = '\0';
  return strdup(buf);
}

/* Partition count of @p topic at @p bootstrap (-1 if unknown). */
static int partitions_of(const char *bootstrap, const char *topic) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_t *rk;
  rd_kafka_topic_t *rkt;
  const struct rd_kafka_metadata *md;
  int cnt = -1;

  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr,
                    sizeof(errstr));
  rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  ck_assert_ptr_nonnull(rk);
  rkt = rd_kafka_topic_new(rk, topic, NULL);
  if (!rd_kafka_metadata(rk, 0, rkt, &md, 10000)) {
    if (md->topic_cnt == 1 && !md->topics[0].err)
      cnt = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return cnt;
}

static void serves_topics_and_stops_on(int sig) {
  char *dir = ksnap_test_tmpdir("dev-broker");
  char path[512], from_file[512] = "";
  char *argv[] = {"ksnap", "dev-broker", "--brokers", "2", "--topic",
                  "orders:3", "--topic", "audit:1", "--bootstrap-file",
                  path, NULL};
  child_t child;
  char *bootstrap;
  FILE *f;

  snprintf(path, sizeof(path), "%s/bootstrap", dir);
  child = spawn(argv);
  bootstrap = read_line(child.out);
  ck_assert_msg(strncmp(bootstrap, "127.0.0.1:", 10) == 0, "bootstrap %s",
                bootstrap);
  f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_ptr_nonnull(fgets(from_file, sizeof(from_file), f));
  fclose(f);
  from_file[strcspn(from_file, "\n")] = '\0';
  ck_assert_str_eq(from_file, bootstrap);

  ck_assert_int_eq(partitions_of(bootstrap, "orders"), 3);
  ck_assert_int_eq(partitions_of(bootstrap, "audit"), 1);

  kill(child.pid, sig);
  ck_assert_int_eq(reap(&child), 0);
  free(bootstrap);
  ksnap_test_rmtree(dir);
  free(dir);
}

START_TEST(serves_topics_and_stops_on_sigterm) {
  serves_topics_and_stops_on(SIGTERM);
}
END_TEST

START_TEST(stops_on_sigint) { serves_topics_and_stops_on(SIGINT); }
END_TEST

START_TEST(help_warns_about_read_committed) {
  char *argv[] = {"ksnap", "dev-broker", "--help", NULL};
  child_t child = spawn(argv);
  char text[8192];
  size_t len = fread(text, 1, sizeof(text) - 1, child.out);

  text[len] = '\0';
  ck_assert_int_eq(reap(&child), 0);
  ck_assert_ptr_nonnull(strstr(text, "does NOT enforce\nread_committed"));
  ck_assert_ptr_nonnull(strstr(text, "fence"));
  ck_assert_ptr_nonnull(strstr(text, "--topic NAME:PARTITIONS"));
}
END_TEST

START_TEST(bad_arguments_are_usage_errors) {
  char *bad_topic[] = {"ksnap", "dev-broker", "--topic", "orders", NULL};
  char *bad_count[] = {"ksnap", "dev-broker", "--topic", "orders:0", NULL};
  char *bad_brokers[] = {"ksnap", "dev-broker", "--brokers", "x", NULL};
  char *unknown[] = {"ksnap", "dev-broker", "--port", "9092", NULL};
  char *missing[] = {"ksnap", "dev-broker", "--topic", NULL};
  char **cases[] = {bad_topic, bad_count, bad_brokers, unknown, missing};

  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    child_t child = spawn(cases[i]);

    ck_assert_int_eq(reap(&child), 2);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_dev_broker");
  TCase *tc = tcase_create("dev_broker");

  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, serves_topics_and_stops_on_sigterm);
  tcase_add_test(tc, stops_on_sigint);
  tcase_add_test(tc, help_warns_about_read_committed);
  tcase_add_test(tc, bad_arguments_are_usage_errors);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
