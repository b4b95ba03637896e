/*
 * The whole job in one process (`ksnap run`): the
 * checkpoint coordinator (coord_driver.h) on its own thread and every task
 * of the job (worker.h) in this process, for development and small
 * deployments. The caller drives it with ksnap_runner_tick().
 *
 * Threading: every call from the owner's thread; ksnap_runner_stats() may
 * be called from any thread.
 */
#ifndef KSNAP_RUNNER_H
#define KSNAP_RUNNER_H

#include <stdint.h>

#include "stats/coord_stats.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

typedef struct ksnap_runner_s ksnap_runner_t;

/** What the progress line shows. */
typedef struct ksnap_runner_stats_s {
  int64_t records_in;  /**< read from source topics (source stages) */
  int64_t records_out; /**< written to sink topics (sink stages) */
  int failed_tasks;
  ksnap_stats_summary_t ckpt; /**< the coordinator's summary (zero before) */
} ksnap_runner_stats_t;

/**
 * Starts the coordinator thread, then the worker with every task of the
 * job in the finalized @p conf (borrowed; must outlive the runner).
 * @p job_dir: where operator libraries are looked up first.
 * @returns OK with *runnerp; the worker's errors (job graph, operators,
 * topics, Kafka); NOMEM.
 */
ksnap_err_t ksnap_runner_start(const ksnap_conf_t *conf, const char *job_dir,
                               ksnap_runner_t **runnerp,
                               ksnap_error_t *error);

/**
 * Sends due heartbeats; call at least every 100 ms.
 * @returns OK while the coordinator runs; once it ended, its result
 * (OK after a `ksnap savepoint --stop`, JOB_FAILED, FENCED...) with the
 * reason in @p error.
 */
ksnap_err_t ksnap_runner_tick(ksnap_runner_t *runner, ksnap_error_t *error);

/** @returns 1 once the coordinator's loop ended. */
int ksnap_runner_coordinator_done(ksnap_runner_t *runner);

void ksnap_runner_stats(ksnap_runner_t *runner, ksnap_runner_stats_t *out);

/** Stops the coordinator, then every task; frees. NULL is a no-op. */
void ksnap_runner_stop(ksnap_runner_t *runner);

#endif /* KSNAP_RUNNER_H */
