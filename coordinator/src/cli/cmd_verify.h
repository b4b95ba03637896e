/*
 * `ksnap verify` (cmd_verify*.c): runs a user's job twice on a real
 * cluster, once without faults (the reference run) and once with kill -9s
 * of its processes at seeded random moments (the crash run), each under
 * its own job and topic names, and compares the read_committed content
 * of every output topic of the two runs.
 *
 * Files, in call order:
 *   cmd_verify.c       options, the two runs, the verdict
 *   cmd_verify_job.c   a run's names and job file, its topics and their
 *                      deletion; the job's output topics (one function)
 *   cmd_verify_run.c   one run: paced input, kills, restarts, the wait
 *                      until its output settled
 *   cmd_verify_proc.c  the child processes (`ksnap coordinator`, `ksnap
 *                      worker --tasks ...`) and the kill plan
 *   cmd_verify_out.c   reading the output topics, comparing, reporting
 *
 * Threading: one thread; child processes are polled (waitpid WNOHANG).
 */
#ifndef KSNAP_CMD_VERIFY_H
#define KSNAP_CMD_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ksnap/conf.h"
#include "ksnap/job.h"

/* Exit status of a check that could not decide (a run did not finish). */
#define VERIFY_EXIT_INCONCLUSIVE 3

/* How the tasks are spread over worker processes. */
typedef enum verify_layout_e {
  VERIFY_LAYOUT_ONE,   /* one worker for every task */
  VERIFY_LAYOUT_STAGE, /* one worker per stage */
  VERIFY_LAYOUT_TASK,  /* one worker per task */
} verify_layout_t;

typedef struct verify_opts_s {
  const char *file, *input, *dir;
  uint64_t seed;
  int kills, kill_coordinator, kill_workers, keep;
  int partitions; /* 0: each topic's stage parallelism */
  int64_t duration_ms, restart_max_ms, timeout_ms;
  verify_layout_t layout;
  const char **sets; /* "KEY=VALUE" of --set */
  size_t nsets;
  char self[4096]; /* this executable, re-executed for the children */
} verify_opts_t;

/* One record of an output topic (key and value NUL-terminated copies;
 * the flags tell a missing key or value from an empty one). */
typedef struct verify_rec_s {
  char *key, *value;
  size_t key_len, value_len;
  int has_key, has_value;
  size_t seq; /* position in the topic's read order (output files) */
} verify_rec_t;

/* An output topic of one run: its name in the user's job and in the run,
 * and its read_committed content. */
typedef struct verify_topic_s {
  char *base, *name;
  verify_rec_t *recs;
  size_t n, cap;
} verify_topic_t;

/* One child process. */
typedef struct verify_proc_s {
  char name[96];
  char *argv[8];       /* owned: self, command, [--tasks LIST], job file */
  char log[4200];      /* its log file, appended across restarts */
  pid_t pid;           /* 0: not running */
  int64_t restart_ms;  /* when to start it again (run clock); -1: never */
  int starts;
} verify_proc_t;

/* One planned kill -9: when (run clock), whom, and the restart delay. */
typedef struct verify_kill_s {
  int64_t at_ms, restart_after_ms;
  size_t proc;
} verify_kill_t;

/* One run. */
typedef struct verify_run_s {
  const char *label; /* "reference" or "crash" */
  int faults;        /* the crash run: kills, KSNAP_FAULT passed on */
  char tag[64];      /* the suffix of its names */
  char dir[4096];    /* its files: job.properties, one log per process */
  char file[4200];   /* its job file */
  char *job;         /* its job name */
  char *source;      /* its source topic */
  ksnap_conf_t *conf;
  ksnap_job_t *graph;
  verify_topic_t *outputs;
  size_t noutputs;
  verify_proc_t *procs;
  size_t nprocs;
  verify_kill_t *plan;
  size_t nplan;
  char **envp; /* the children's environment */
  int64_t t0_us;
  int topics_created;
} verify_run_t;

/* ---- cmd_verify_job.c */

/**
 * The job's output topics: every sink topic, in the job graph's order.
 * The one place that says which topics a verify run compares.
 * @returns how many (at most @p max written to @p names).
 */
size_t verify_output_topics(const ksnap_job_t *job, const char **names,
                            size_t max);

/**
 * Derives run @p run from the user's job @p conf / @p job: its names
 * (job.name and every source and sink topic suffixed with run->tag), its
 * directory under @p o->dir and job file (the user's file, then this
 * run's names and the --set options), loaded back and checked.
 * @returns 0, or -1 (the reason printed).
 */
int verify_job_prepare(verify_run_t *run, const verify_opts_t *o,
                       const ksnap_conf_t *conf, const ksnap_job_t *job);

/** Creates the run's source and sink topics. @returns 0 or -1 (printed). */
int verify_job_topics_create(verify_run_t *run, const verify_opts_t *o);

/** Deletes every topic of the run and its checkpoints (best effort). */
void verify_job_cleanup(verify_run_t *run);

/** Frees what verify_job_prepare() and the run allocated. */
void verify_run_free(verify_run_t *run);

/* ---- cmd_verify_proc.c */

/** The run's processes (coordinator first) for @p o->layout; -1 NOMEM. */
int verify_procs_plan(verify_run_t *run, const verify_opts_t *o);

/** The children's environment (KSNAP_OPERATOR_PATH led by @p job_dir;
 * KSNAP_FAULT only in the crash run). @returns 0 or -1 (NOMEM). */
int verify_procs_env(verify_run_t *run, const char *job_dir);

/** The seeded kill plan of the crash run (empty for the reference). */
int verify_kill_plan(verify_run_t *run, const verify_opts_t *o,
                     uint64_t *rng);

/** Starts process @p i. @returns 0 or -1 (printed). */
int verify_proc_start(verify_run_t *run, size_t i);

/** kill -9 of process @p i (if running), reaped. @returns 1 if killed. */
int verify_proc_kill(verify_run_t *run, size_t i);

/**
 * Reaps the processes that exited by themselves and (re)starts those
 * whose restart time came. An exit in the reference run is an error.
 * @returns 0, or -1 (the reason printed).
 */
int verify_procs_poll(verify_run_t *run);

/** @returns 1 if every process runs and no restart is pending. */
int verify_procs_all_up(const verify_run_t *run);

/** SIGTERM to every process, SIGKILL after 10 s. */
void verify_procs_stop(verify_run_t *run);

/** @returns the run clock in ms. */
int64_t verify_run_ms(const verify_run_t *run);

/** Prints "ksnap verify: [LABEL  T s] MESSAGE" on stderr. */
void verify_event(const verify_run_t *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** A uniform random number in [0, 1) from the splitmix64 state @p rng. */
double verify_random(uint64_t *rng);

/* ---- cmd_verify_run.c */

/**
 * Runs @p run: starts its processes, produces @p lines paced over
 * --duration while the kill plan runs, waits until every line was read
 * and committed and the output stopped changing, reads the output topics
 * into run->outputs, stops the processes.
 * @returns 0, or -1 when the run could not finish (printed).
 */
int verify_run_execute(verify_run_t *run, const verify_opts_t *o,
                       char **lines, size_t nlines);

/* ---- cmd_verify_out.c */

/** Reads every output topic of @p run (read_committed, to its end) into
 * run->outputs, replacing what they held. @returns 0 or -1 (printed). */
int verify_out_read(verify_run_t *run);

/** @returns a digest of @p run's outputs that does not depend on the
 * order of the records: equal digests of two reads, no change. */
uint64_t verify_out_digest(const verify_run_t *run);

/** @returns 1 if the two runs' outputs hold the same records (as
 * multisets: their order is not compared, cmd_verify_out.c says why). */
int verify_out_equal(const verify_run_t *a, const verify_run_t *b);

/** Prints the first difference between @p ref and @p crash (topic, key,
 * value, count in each run) and the totals. */
void verify_out_report(const verify_run_t *ref, const verify_run_t *crash);

/** Writes each output topic of @p run to RUN_DIR/TOPIC.out, one
 * "KEY VALUE" line per record (quoted, escaped), by key and then in read
 * order. @returns 0 or -1. */
int verify_out_save(const verify_run_t *run);

/** Frees the records of @p run's outputs. */
void verify_out_clear(verify_run_t *run);

#endif /* KSNAP_CMD_VERIFY_H */
