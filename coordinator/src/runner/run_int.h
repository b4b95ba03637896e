/*
 * Internals of a run (ksnap/run.h), shared by run.c (start, the watch
 * thread, stop, wait, destroy) and run_stats.c (the statistics).
 *
 * Threads and ownership:
 *  - the caller's thread creates the run, checks the job and creates the
 *    worker (the tasks) in ksnap_run_start(); from then on the worker
 *    belongs to the watch thread, which runs it (start, heartbeats) until
 *    the stop flag or its own end, ends the run, and frees the worker;
 *  - the coordinator's thread runs the coordinator's loop and publishes
 *    its statistics' summary through ksnap__run_observe();
 *  - any thread reads the statistics (ksnap_run_stats()): the lock
 *    guards every field below it, the worker pointer included, so that
 *    no task is read while the watch thread frees it.
 */
#ifndef KSNAP_RUN_INT_H
#define KSNAP_RUN_INT_H

#include <pthread.h>
#include <signal.h>

#include "ksnap/run.h"
#include "stats/coord_stats.h"
#include "task/worker.h"

struct ksnap_run_s {
  ksnap_conf_t *conf; /* borrowed */
  int parts;
  ksnap_job_t *job;
  pthread_t coord_thread, watch_thread;
  int coord_started, watch_started;
  volatile sig_atomic_t stop; /* ksnap_run_stop(); read by every thread */
  pthread_mutex_t lock;
  pthread_cond_t ended_cv; /* broadcast when ended becomes 1 */
  ksnap_worker_t *worker;  /* NULL without tasks and after the end */
  ksnap_run_stats_t final; /* the task figures at the end */
  int coord_done;
  ksnap_err_t coord_result;
  ksnap_error_t coord_error;
  ksnap_stats_summary_t summary; /* the coordinator's latest */
  int ended;
  ksnap_err_t result;
  ksnap_error_t error;
};

/* run_stats.c: the coordinator's observer, on its thread. */
void ksnap__run_observe(void *opaque, const ksnap_stats_summary_t *summary);

/* Sets the task figures of @p st from the worker's tasks; lock held. */
void ksnap__run_task_stats(ksnap_run_t *run, ksnap_run_stats_t *st);

#endif /* KSNAP_RUN_INT_H */
