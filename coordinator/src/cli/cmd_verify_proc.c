/*
 * `ksnap verify`: the child processes of a run and the kill plan (see
 * cmd_verify.h). Each process is this executable again, as `ksnap
 * coordinator FILE` or `ksnap worker --tasks LIST FILE`, with its output
 * appended to one log file per process across restarts. A child dies
 * with verify (PR_SET_PDEATHSIG), so an interrupted check leaves nothing
 * running.
 *
 * A process that exits by itself is restarted after a short delay in the
 * crash run (a fault hook's exit counts as a crash) and is an error in
 * the reference run, which must be failure-free. In a test build with
 * the fault hooks, the crash run's processes alone see the fault switches
 * of verify's environment.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "cmd_verify.h"

#define SELF_EXIT_RESTART_MS 500
#define MAX_STARTS 25
#define STOP_GRACE_MS 10000
/* A process is killed no sooner than this after it (re)started. */
#define MIN_UP_MS 500

extern char **environ;

int64_t verify_run_ms(const verify_run_t *run) {
  return (ksnap__now_us() - run->t0_us) / 1000;
}

void verify_event(const verify_run_t *run, const char *fmt, ...) {
  va_list ap;

  fprintf(stderr, "ksnap verify: [%-9s %6.2f s] ", run->label,
          (double)verify_run_ms(run) / 1000);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

double verify_random(uint64_t *rng) { /* splitmix64 */
  uint64_t z = (*rng += 0x9e3779b97f4a7c15ULL);

  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0; /* 2^53 */
}

/* Adds a process running `ksnap CMD [--tasks TASKS] FILE`. */
static int add_proc(verify_run_t *run, const verify_opts_t *o,
                    const char *name, const char *cmd, const char *tasks) {
  verify_proc_t *v = realloc(run->procs, (run->nprocs + 1) * sizeof(*v)), *p;
  size_t a = 0;

  if (!v)
    return -1;
  run->procs = v;
  p = memset(&v[run->nprocs++], 0, sizeof(*p));
  snprintf(p->name, sizeof(p->name), "%s", name);
  snprintf(p->log, sizeof(p->log), "%s/%s.log", run->dir, name);
  p->restart_ms = 0; /* the first poll starts it */
  p->argv[a++] = strdup(o->self);
  p->argv[a++] = strdup(cmd);
  if (tasks) {
    p->argv[a++] = strdup("--tasks");
    p->argv[a++] = strdup(tasks);
  }
  p->argv[a++] = strdup(run->file);
  for (size_t i = 0; i < a; i++)
    if (!p->argv[i])
      return -1;
  return 0;
}

/* A worker for stage @p s's task @p t, or all its tasks (@p t < 0). */
static int add_stage_worker(verify_run_t *run, const verify_opts_t *o,
                            const ksnap_job_stage_t *s, int t) {
  const char *stage = ksnap_job_stage_name(s);
  int32_t p = ksnap_job_stage_parallelism(s);
  char name[96], tasks[4096];
  size_t n = 0;

  for (int32_t i = t < 0 ? 0 : t; i < (t < 0 ? p : t + 1); i++)
    n += (size_t)snprintf(tasks + n, n < sizeof(tasks) ? sizeof(tasks) - n : 0,
                          "%s%s:%d", n ? "," : "", stage, (int)i);
  if (n >= sizeof(tasks))
    return -1;
  if (t < 0)
    snprintf(name, sizeof(name), "worker-%s", stage);
  else
    snprintf(name, sizeof(name), "worker-%s-%d", stage, t);
  return add_proc(run, o, name, "worker", tasks);
}

int verify_procs_plan(verify_run_t *run, const verify_opts_t *o) {
  const ksnap_job_t *job = run->graph;

  if (add_proc(run, o, "coordinator", "coordinator", NULL))
    return -1;
  if (o->layout == VERIFY_LAYOUT_ONE)
    return add_proc(run, o, "worker", "worker", NULL);
  for (size_t s = 0; s < ksnap_job_stage_cnt(job); s++) {
    const ksnap_job_stage_t *st = ksnap_job_stage(job, s);
    int32_t p = ksnap_job_stage_parallelism(st);
    for (int t = o->layout == VERIFY_LAYOUT_STAGE ? -1 : 0;
         t < (o->layout == VERIFY_LAYOUT_STAGE ? 0 : (int)p); t++)
      if (add_stage_worker(run, o, st, t))
        return -1;
  }
  return 0;
}

static int has_name(const char *entry, const char *name) {
  size_t n = strlen(name);

  return !strncmp(entry, name, n) && entry[n] == '=';
}

/* 1 if the reference run's processes must not see @p entry: the fault
 * switches of a test build (a release build has none to drop). */
static int fault_switch(const char *entry) {
#if KSNAP_FAULT_INJECTION
  return has_name(entry, "KSNAP_FAULT");
#else
  (void)entry;
  return 0;
#endif
}

int verify_procs_env(verify_run_t *run, const char *job_dir) {
  const char *old = getenv("KSNAP_OPERATOR_PATH");
  size_t n = 0, k = 0, len;

  while (environ[n])
    n++;
  if (!(run->envp = calloc(n + 2, sizeof(*run->envp))))
    return -1;
  for (size_t i = 0; i < n; i++)
    if (!has_name(environ[i], "KSNAP_OPERATOR_PATH") &&
        (run->faults || !fault_switch(environ[i])) &&
        !(run->envp[k++] = strdup(environ[i])))
      return -1;
  len = strlen(job_dir) + (old ? strlen(old) : 0) + 32;
  if (!(run->envp[k] = malloc(len)))
    return -1;
  snprintf(run->envp[k], len, "KSNAP_OPERATOR_PATH=%s%s%s", job_dir,
           old && *old ? ":" : "", old && *old ? old : "");
  return 0;
}

/* Sorts the plan by time (insertion sort: a handful of kills). */
static void sort_plan(verify_kill_t *plan, size_t n) {
  for (size_t i = 1; i < n; i++)
    for (size_t j = i; j > 0 && plan[j - 1].at_ms > plan[j].at_ms; j--) {
      verify_kill_t k = plan[j];
      plan[j] = plan[j - 1];
      plan[j - 1] = k;
    }
}

/* Picks the victim of @p k among the @p ne eligible processes that are up
 * by then (@p up_at: when each is up again); a kill with none up waits
 * for the first one back. */
static void pick_victim(verify_kill_t *k, const size_t *eligible, size_t ne,
                        int64_t *up_at, uint64_t *rng) {
  size_t up[1024], nu = 0, first = 0;

  for (size_t i = 0; i < ne; i++) {
    if (up_at[i] <= k->at_ms)
      up[nu++] = i;
    if (up_at[i] < up_at[first])
      first = i;
  }
  if (!nu) {
    k->at_ms = up_at[first];
    up[nu++] = first;
  }
  first = up[(size_t)(verify_random(rng) * (double)nu)];
  k->proc = eligible[first];
  up_at[first] = k->at_ms + k->restart_after_ms + MIN_UP_MS;
}

int verify_kill_plan(verify_run_t *run, const verify_opts_t *o,
                     uint64_t *rng) {
  size_t eligible[1024], ne = 0;
  int64_t up_at[1024] = {0};

  for (size_t i = 0; i < run->nprocs && ne < 1024; i++)
    if (i == 0 ? o->kill_coordinator : o->kill_workers)
      eligible[ne++] = i;
  if (!run->faults || !ne || o->kills <= 0)
    return 0;
  if (!(run->plan = calloc((size_t)o->kills, sizeof(*run->plan))))
    return -1;
  run->nplan = (size_t)o->kills;
  for (size_t i = 0; i < run->nplan; i++) {
    verify_kill_t *k = &run->plan[i];
    k->at_ms = MIN_UP_MS + (int64_t)(verify_random(rng) *
                                     (double)(o->duration_ms - MIN_UP_MS));
    k->restart_after_ms =
        100 + (int64_t)(verify_random(rng) *
                        (double)(o->restart_max_ms > 100
                                     ? o->restart_max_ms - 100 : 0));
  }
  sort_plan(run->plan, run->nplan);
  for (size_t i = 0; i < run->nplan; i++)
    pick_victim(&run->plan[i], eligible, ne, up_at, rng);
  sort_plan(run->plan, run->nplan); /* a kill that waited moved later */
  return 0;
}

int verify_proc_start(verify_run_t *run, size_t i) {
  verify_proc_t *p = &run->procs[i];
  int fd = open(p->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  pid_t pid;

  if (fd < 0) {
    fprintf(stderr, "ksnap verify: %s: %s\n", p->log, strerror(errno));
    return -1;
  }
  dprintf(fd, "==== ksnap verify: start %d at %.3f s\n", p->starts + 1,
          (double)verify_run_ms(run) / 1000);
  if ((pid = fork()) < 0) {
    fprintf(stderr, "ksnap verify: fork: %s\n", strerror(errno));
    close(fd);
    return -1;
  }
  if (pid == 0) { /* only async-signal-safe calls until execve() */
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (null >= 0)
      dup2(null, STDIN_FILENO);
    dup2(fd, STDOUT_FILENO);
    dup2(fd, STDERR_FILENO);
    execve(p->argv[0], p->argv, run->envp);
    _exit(127);
  }
  close(fd);
  p->pid = pid;
  p->restart_ms = -1;
  p->starts++;
  verify_event(run, "start %s (pid %d)", p->name, (int)pid);
  return 0;
}

/* "exit status N" or "killed by signal S" of a waitpid() status. */
static void describe(int status, char *buf, size_t size) {
  if (WIFEXITED(status))
    snprintf(buf, size, "exit status %d", WEXITSTATUS(status));
  else
    snprintf(buf, size, "killed by signal %d", WTERMSIG(status));
}

int verify_proc_kill(verify_run_t *run, size_t i) {
  verify_proc_t *p = &run->procs[i];

  if (!p->pid)
    return 0;
  kill(p->pid, SIGKILL);
  waitpid(p->pid, NULL, 0);
  verify_event(run, "kill -9 %s (pid %d)", p->name, (int)p->pid);
  p->pid = 0;
  return 1;
}

/* A process that exited by itself: restarted in the crash run. */
static int exited(verify_run_t *run, verify_proc_t *p, int status) {
  char how[64];

  describe(status, how, sizeof(how));
  verify_event(run, "%s (pid %d) exited by itself: %s", p->name, (int)p->pid,
               how);
  p->pid = 0;
  if (!run->faults) {
    fprintf(stderr, "ksnap verify: the reference run must run without a "
                    "failure, but %s exited (%s); its log: %s\n", p->name,
            how, p->log);
    return -1;
  }
  if (p->starts >= MAX_STARTS) {
    fprintf(stderr, "ksnap verify: %s exited %d times; its log: %s\n",
            p->name, p->starts, p->log);
    return -1;
  }
  p->restart_ms = verify_run_ms(run) + SELF_EXIT_RESTART_MS;
  return 0;
}

int verify_procs_poll(verify_run_t *run) {
  for (size_t i = 0; i < run->nprocs; i++) {
    verify_proc_t *p = &run->procs[i];
    int status;
    if (p->pid && waitpid(p->pid, &status, WNOHANG) == p->pid &&
        exited(run, p, status))
      return -1;
    if (!p->pid && p->restart_ms >= 0 &&
        verify_run_ms(run) >= p->restart_ms && verify_proc_start(run, i))
      return -1;
  }
  return 0;
}

int verify_procs_all_up(const verify_run_t *run) {
  for (size_t i = 0; i < run->nprocs; i++)
    if (!run->procs[i].pid)
      return 0;
  return 1;
}

void verify_procs_stop(verify_run_t *run) {
  const struct timespec tick = {0, 50 * 1000 * 1000};
  int64_t deadline = verify_run_ms(run) + STOP_GRACE_MS;
  int left = 0;

  for (size_t i = 0; i < run->nprocs; i++) {
    run->procs[i].restart_ms = -1;
    if (run->procs[i].pid)
      kill(run->procs[i].pid, SIGTERM);
  }
  do {
    left = 0;
    for (size_t i = 0; i < run->nprocs; i++) {
      verify_proc_t *p = &run->procs[i];
      if (p->pid && waitpid(p->pid, NULL, WNOHANG) == p->pid)
        p->pid = 0;
      left += p->pid != 0;
    }
    if (left)
      nanosleep(&tick, NULL);
  } while (left && verify_run_ms(run) < deadline);
  for (size_t i = 0; i < run->nprocs; i++)
    verify_proc_kill(run, i);
}
