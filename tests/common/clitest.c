/* Running the built `ksnap` binary from a Check suite, job files
 * (clitest.h). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clitest.h"
#include "testutil.h"

int ksnap_test_cli(const char *env, const char *args, char **outp,
                   char **errp) {
  char cmd[4096], errfile[] = "/tmp/ksnap-cli-XXXXXX";
  int fd = mkstemp(errfile), status;
  FILE *fp, *ef;

  ck_assert_int_ge(fd, 0);
  snprintf(cmd, sizeof(cmd), "env %s %s %s 2>%s", env, KSNAP_TEST_BIN, args,
           errfile);
  ck_assert_ptr_nonnull(fp = popen(cmd, "r"));
  *outp = ksnap_test_read_all(fp);
  status = pclose(fp);
  ck_assert_ptr_nonnull(ef = fdopen(fd, "r"));
  *errp = ksnap_test_read_all(ef);
  fclose(ef);
  unlink(errfile);
  ck_assert_msg(WIFEXITED(status), "%s: did not exit", cmd);
  return WEXITSTATUS(status);
}

void ksnap_test_job_text(char *out, size_t size, const char *job,
                         const char *ckpt, const char *body) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char storage[1024] = "";
  int n;

  if (ckpt && !strncmp(ckpt, "s3://", 5))
    snprintf(storage, sizeof(storage),
             "s3.endpoint=%s\ns3.region=%s\n"
             "s3.access-key=%s\ns3.secret-key=%s\n",
             ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT"),
             ksnap_test_require_env("KSNAP_TEST_S3_REGION"),
             ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY"),
             ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY"));
  n = snprintf(out, size, "job.name=%s\nkafka.bootstrap.servers=%s\n%s%s%s%s%s",
               job, bs, ckpt ? "state.checkpoints.dir=" : "",
               ckpt ? ckpt : "", ckpt ? "\n" : "", storage, body ? body : "");
  ck_assert_msg(n >= 0 && (size_t)n < size, "job %s: %d bytes, %zu room",
                job, n, size);
}

void ksnap_test_job_file(const char *path, const char *job, const char *ckpt,
                         const char *body) {
  char text[8192];
  FILE *fp;

  ksnap_test_job_text(text, sizeof(text), job, ckpt, body);
  ck_assert_msg((fp = fopen(path, "w")) != NULL, "cannot write %s", path);
  fputs(text, fp);
  ck_assert_int_eq(fclose(fp), 0);
}

void ksnap_test_wordcount_props(char *out, size_t size, const char *src,
                                const char *sink, int single,
                                const char *extra) {
  int n = snprintf(out, size,
                   "kafka.transaction.timeout.ms=60000\n"
                   "execution.checkpointing.interval=1s\n"
                   "execution.checkpointing.timeout=30s\n"
                   "stage.split.operator=libwordcount.so:split\n"
                   "stage.split.parallelism=2\n"
                   "stage.split.input=source:%s\n"
                   "%s%s\n%s",
                   src,
                   single ? "stage.split.output=sink:"
                          : "stage.count.operator=libwordcount.so:count\n"
                            "stage.count.parallelism=2\n"
                            "stage.count.input=stage:split\n"
                            "stage.count.output=sink:",
                   sink, extra ? extra : "");
  ck_assert_msg(n >= 0 && (size_t)n < size, "wordcount job: %d bytes, %zu "
                "room", n, size);
}

pid_t ksnap_test_run_background(const char *job, const char *log,
                                const char *duration) {
  pid_t pid = fork();

  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    FILE *out = freopen(log, "w", stdout);
    if (!out || dup2(fileno(stdout), 2) < 0)
      _exit(127);
    putenv((char *)KSNAP_TEST_WORDCOUNT_OPS);
    execl(KSNAP_TEST_BIN, KSNAP_TEST_BIN, "run", "--duration", duration, job,
          (char *)NULL);
    _exit(127);
  }
  return pid;
}

pid_t ksnap_test_spawnv(const char *ops_dir, const char *errfile,
                        char *const argv[]) {
  pid_t pid = fork();

  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    if (!freopen(errfile, "a", stderr) ||
        !freopen("/dev/null", "w", stdout))
      _exit(126);
    setenv("KSNAP_OPERATOR_PATH", ops_dir, 1);
    execv(KSNAP_TEST_BIN, argv);
    _exit(127);
  }
  return pid;
}

pid_t ksnap_test_spawn(const char *ops_dir, const char *errfile,
                       const char *a1, const char *a2) {
  char *argv[] = {"ksnap", (char *)a1, (char *)a2, NULL};

  return ksnap_test_spawnv(ops_dir, errfile, argv);
}

int ksnap_test_wait_exit(pid_t pid, int secs, int must_exit) {
  int status;

  for (int i = 0; i < secs * 10; i++) {
    if (waitpid(pid, &status, WNOHANG) == pid)
      return WIFEXITED(status) ? WEXITSTATUS(status)
                               : 128 + WTERMSIG(status);
    usleep(100 * 1000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  if (must_exit)
    ck_abort_msg("process %d did not exit in %d s", (int)pid, secs);
  return -1;
}

int ksnap_test_stop(pid_t pid) {
  kill(pid, SIGTERM);
  return ksnap_test_wait_exit(pid, 30, 1);
}

char *ksnap_test_slurp(const char *path) {
  FILE *fp = fopen(path, "r");
  char *s;

  if (!fp) /* not written yet */
    return strdup("");
  s = ksnap_test_read_all(fp);
  fclose(fp);
  return s;
}

const char *ksnap_test_tail(const char *s) {
  size_t n = strlen(s);
  return n > 1500 ? s + n - 1500 : s;
}
