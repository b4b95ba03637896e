/*
 * `ksnap run` as a new user runs it, with the embedded broker (no servers):
 * the wordcount example over a generated input prints the same counts as a
 * model of the input; SIGINT/SIGTERM stop it cleanly (exit 0); usage
 * errors exit 2; a failing job file exits 1.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clitest.h"
#include "testutil.h"

#define EXAMPLE KSNAP_SOURCE_DIR "/examples/wordcount/embedded.properties"
#define OPS "KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/examples/wordcount"

static const char *const words[] = {"alpha", "beta",  "gamma", "delta",
                                    "eps",   "zeta",  "eta",   "theta",
                                    "iota",  "kappa", "lambda", "mu"};
#define NWORDS (sizeof(words) / sizeof(words[0]))

/* Writes @p lines lines of random words to @p path; counts them. */
static void make_input(const char *path, int lines, long counts[NWORDS]) {
  FILE *f = fopen(path, "w");
  unsigned seed = 42;

  ck_assert_ptr_nonnull(f);
  memset(counts, 0, NWORDS * sizeof(long));
  for (int l = 0; l < lines; l++) {
    int n = rand_r(&seed) % 6; /* 0..5 words, some lines empty */
    for (int w = 0; w < n; w++) {
      size_t i = (size_t)rand_r(&seed) % NWORDS;
      counts[i]++;
      fprintf(f, "%s%s", w ? (rand_r(&seed) % 2 ? " " : "  ") : "", words[i]);
    }
    fputc('\n', f);
  }
  fclose(f);
}

/* 3000 lines: produced at once; 40000: more than the 10000 lines ksnap
 * run lets the producer run ahead on the embedded broker (paced). */
static const int input_lines[] = {3000, 40000};

START_TEST(input_counts_equal_model) {
  char *dir = ksnap_test_tmpdir("cli-run");
  char input[512], env[1024], args[1024], *out = NULL, *err = NULL;
  long counts[NWORDS];
  int rc;

  snprintf(input, sizeof(input), "%s/input.txt", dir);
  make_input(input, input_lines[_i], counts);
  snprintf(env, sizeof(env), "%s TMPDIR=%s", OPS, dir);
  snprintf(args, sizeof(args), "run --input %s %s", input, EXAMPLE);
  rc = ksnap_test_cli(env, args, &out, &err);
  ck_assert_msg(rc == 0, "exit %d; stderr:\n%s", rc, err);
  ck_assert_ptr_nonnull(strstr(err, "does NOT enforce read_committed"));
  snprintf(args, sizeof(args), "produced %d lines", input_lines[_i]);
  ck_assert_ptr_nonnull(strstr(err, args));
  /* exactly one line per word, each with the model's count */
  size_t lines = 0;
  for (char *p = out; *p; lines++) {
    char topic[64], word[64];
    long n;
    ck_assert_int_eq(sscanf(p, "%63s %63s %ld", topic, word, &n), 3);
    ck_assert_str_eq(topic, "counts");
    size_t i = 0;
    while (i < NWORDS && strcmp(words[i], word))
      i++;
    ck_assert_msg(i < NWORDS, "unexpected word \"%s\"", word);
    ck_assert_msg(n == counts[i], "%s: %ld, model %ld", word, n, counts[i]);
    p = strchr(p, '\n');
    ck_assert_ptr_nonnull(p);
    p++;
  }
  size_t expected = 0;
  for (size_t i = 0; i < NWORDS; i++)
    expected += counts[i] > 0;
  ck_assert_uint_eq(lines, expected);
  free(out);
  free(err);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

/* Starts `ksnap run EXAMPLE` (stderr to @p errpath), waits until a
 * checkpoint completed, sends @p sig; @returns the exit status. */
static int run_and_signal(const char *dir, int sig) {
  char errpath[512], tmpenv[600], ops[] = OPS;
  int64_t deadline = (int64_t)time(NULL) + 60;
  pid_t pid;
  int status, seen = 0;

  snprintf(errpath, sizeof(errpath), "%s/stderr.txt", dir);
  snprintf(tmpenv, sizeof(tmpenv), "TMPDIR=%s", dir);
  pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive a failed test */
    if (!freopen(errpath, "w", stderr) ||
        !freopen("/dev/null", "w", stdout))
      _exit(126);
    putenv(ops);
    putenv(tmpenv);
    execl(KSNAP_TEST_BIN, "ksnap", "run", EXAMPLE, (char *)NULL);
    _exit(127);
  }
  while (!seen && time(NULL) < deadline) {
    FILE *f = fopen(errpath, "r");
    char line[4096];
    while (f && fgets(line, sizeof(line), f))
      if (strstr(line, "Completed checkpoint"))
        seen = 1;
    if (f)
      fclose(f);
    if (!seen)
      usleep(100 * 1000);
  }
  ck_assert_msg(seen, "no checkpoint completed within 60 s");
  kill(pid, sig);
  for (int i = 0; i < 300; i++) { /* 30 s to stop */
    if (waitpid(pid, &status, WNOHANG) == pid)
      return status;
    usleep(100 * 1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  ck_abort_msg("ksnap run did not stop within 30 s of signal %d", sig);
  return -1;
}

START_TEST(signal_stops_cleanly) {
  int sigs[] = {SIGINT, SIGTERM};
  char *dir = ksnap_test_tmpdir("cli-run-sig");
  int status = run_and_signal(dir, sigs[_i]);

  ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "status 0x%x after signal %d", status, sigs[_i]);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

START_TEST(usage_and_failures) {
  char *out = NULL, *err = NULL;

  ck_assert_int_eq(ksnap_test_cli("", "run --help", &out, &err), 0);
  ck_assert_ptr_nonnull(strstr(out, "Usage: ksnap run"));
  free(out);
  free(err);
  ck_assert_int_eq(ksnap_test_cli("", "run", &out, &err), 2);
  free(out);
  free(err);
  ck_assert_int_eq(
      ksnap_test_cli("", "run --duration never " EXAMPLE, &out, &err), 2);
  free(out);
  free(err);
  ck_assert_int_eq(ksnap_test_cli("", "run /nonexistent.properties", &out,
                                  &err), 1);
  free(out);
  free(err);
  /* the operator library cannot be found without KSNAP_OPERATOR_PATH */
  ck_assert_int_eq(ksnap_test_cli("TMPDIR=/tmp", "run --duration 5s " EXAMPLE,
                                  &out, &err), 1);
  ck_assert_ptr_nonnull(strstr(err, "libwordcount.so"));
  free(out);
  free(err);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_run_embedded");
  TCase *tc = tcase_create("cli_run_embedded");

  tcase_set_timeout(tc, 110);
  tcase_add_test(tc, usage_and_failures);
  tcase_add_loop_test(tc, input_counts_equal_model, 0, 2);
  tcase_add_loop_test(tc, signal_stops_cleanly, 0, 2);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
