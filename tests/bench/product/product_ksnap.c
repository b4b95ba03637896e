/*
 * bench_product's ksnap runs: a `ksnap run` of the word count (split P=2
 * -> count P=2) as a child process, measured by the sink counter, then
 * probed for latency, then stopped with SIGTERM.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "product.h"

/* Checkpoints time out after 30 s, or 120 s at intervals of 5 s to 60 s
 * (workload (c): a full snapshot of 10M keys takes tens of seconds; the
 * off runs' 200 s interval leaves no room for it under the transaction
 * timeout, which must exceed 4 intervals plus the checkpoint timeout). */
static void write_job(const char *path, const char *job, const char *src,
                      const char *sink, const char *mode, const char *ival,
                      const char *extra) {
  int ival_s = atoi(ival);
  FILE *f = fopen(path, "w");
  if (!f)
    die(path, strerror(errno));
  fprintf(f,
          "job.name=%s\n"
          "execution.checkpointing.interval=%s\n"
          "execution.checkpointing.mode=%s\n"
          "execution.checkpointing.timeout=%s\n"
          "kafka.transaction.timeout.ms=900000\n"
          "state.checkpoints.dir=file://%s/%s\n"
          "kafka.bootstrap.servers=%s\n",
          job, ival, mode, ival_s >= 5 && ival_s <= 60 ? "120s" : "30s",
          tmpdir, job, bs);
  if (job_graph)
    job_graph(f, src, sink);
  else
    fprintf(f,
            "stage.split.operator=%s:split\n"
            "stage.split.parallelism=2\n"
            "stage.split.input=source:%s\n"
            "stage.count.operator=%s:count\n"
            "stage.count.parallelism=2\n"
            "stage.count.input=stage:split\n"
            "stage.count.output=sink:%s\n",
            oplib, src, oplib, sink);
  fputs(extra ? extra : "", f);
  fclose(f);
}

static pid_t spawn(char *const argv[], const char *log) {
  pid_t pid = fork();
  if (pid < 0)
    die("fork", strerror(errno));
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

int run_ksnap_x(const char *tag, const char *src, long words,
                const char *mode, const char *ival, const char *extra,
                const phase_t *ph, result_t *r) {
  char job[96], sink[128], job_file[1024], log[1024];
  snprintf(job, sizeof(job), "bp%ld%ld%s", (long)getpid(), ++run_seq, tag);
  snprintf(sink, sizeof(sink), "%s.out", job);
  snprintf(job_file, sizeof(job_file), "%s/%s.properties", tmpdir, job);
  snprintf(log, sizeof(log), "%s/%s.log", tmpdir, job);
  create_topic(sink);
  write_job(job_file, job, src, sink, mode, ival, extra);
  char *argv[] = {ksnap_bin, "run", job_file, NULL};
  int64_t t0 = now_us();
  pid_t pid = spawn(argv, log);
  int rc = count_sink(sink, words, t0, r, pid);
  if (!rc && ph->probe_s > 0)
    rc = probe_latency(src, sink, ph, r);
  if (!rc && ph->idle_s > 0)
    sleep((unsigned)ph->idle_s);
  kill(pid, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
  if (rc)
    fprintf(stderr, "bench_product: see %s\n", log);
  else if (strcmp(ival, "200s"))
    checkpoint_stats(job_file, r);
  return rc;
}

/* ksnap and libwordcount.so next to this program, or $KSNAP_BIN. */
void locate(const char *argv0) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    die("readlink", argv0);
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  *slash = 0;
  const char *env = getenv("KSNAP_BIN");
  if (env)
    snprintf(ksnap_bin, sizeof(ksnap_bin), "%s", env);
  else
    snprintf(ksnap_bin, sizeof(ksnap_bin), "%s/../bin/ksnap", exe);
  snprintf(oplib, sizeof(oplib), "%s/../examples/wordcount/libwordcount.so",
           exe);
  snprintf(clickslib, sizeof(clickslib),
           "%s/../examples/clicks/libclicks.so", exe);
  if (access(clickslib, R_OK))
    clickslib[0] = 0;
  if (access(ksnap_bin, X_OK) || access(oplib, R_OK))
    die("ksnap or libwordcount.so not found next to", exe);
}
