/*
 * A worker: runs some or all tasks of a job in one process
 * (plugin/PROTOCOL.md sections 5.5 and 11.2): creates the job's topics, catches up on the control topic to learn
 * the generation and the checkpoint to restore from (the last RESTORE
 * record; none: generation 1, fresh start from the beginning of the
 * source topics), starts one processing thread per task (waiting for a
 * RESTORE of a newer generation instead if the acks topic shows that an
 * earlier instance of one of its tasks registered in the current
 * generation: a restarted worker never re-runs a generation), routes control
 * records to them and sends their heartbeats every heartbeat.interval.
 * With worker.join (and no task list) the worker is a member
 * (PROTOCOL.md section 11.5): it creates every task standing by, sends
 * MEMBER with its slots (worker.slots, 0: its cores) at its start and
 * with every heartbeat, the coordinator decides which tasks run here, and
 * ksnap_worker_run() ends with KSNAP_ERR_FENCED once a MEMBER record says
 * this member was removed.
 *
 * Threading: every call from the owner's thread.
 */
#ifndef KSNAP_WORKER_H
#define KSNAP_WORKER_H

#include <signal.h>
#include <stddef.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "task.h"

typedef struct ksnap_worker_s ksnap_worker_t;

/**
 * Builds the job graph of @p conf (borrowed, must outlive the worker) and
 * the tasks named by @p tasks ("stage:0,stage:1"; NULL or "": every task
 * of the job). @p job_dir: where operator libraries are looked up first.
 * @returns OK; CONF_* (job graph), INVALID_ARG (bad task list), operator
 * errors (NOT_FOUND...), NOMEM.
 */
ksnap_err_t ksnap_worker_new(const ksnap_conf_t *conf, const char *job_dir,
                             const char *tasks, ksnap_worker_t **workerp,
                             ksnap_error_t *error);

/** Creates the topics, catches up, starts every task. */
ksnap_err_t ksnap_worker_start(ksnap_worker_t *worker, ksnap_error_t *error);

/** Sends due heartbeats; call at least every heartbeat.interval. */
void ksnap_worker_tick(ksnap_worker_t *worker);

/** start(), then tick() every 100 ms until *@p stop becomes non-zero,
 *  every task was replaced (KSNAP_ERR_FENCED), the job FAILED
 *  (KSNAP_ERR_JOB_FAILED naming the cause), or it was stopped with a
 *  savepoint (JOB_STOPPED read: KSNAP_ERR_OK, logged with the savepoint's
 *  URL). A worker started against a job whose control topic says it
 *  FAILED (no RESTORE since) starts no task: ksnap_worker_start() returns
 *  KSNAP_ERR_JOB_FAILED; one whose control topic says it FINISHED starts
 *  no task either: ksnap_worker_start() returns KSNAP_ERR_OK and
 *  ksnap_worker_run() returns at once with KSNAP_ERR_OK. One whose control
 *  topic says it was stopped with a savepoint starts no task yet:
 *  ksnap_worker_start() returns KSNAP_ERR_OK, and ksnap_worker_run()
 *  reads the control topic on until a RESTORE starts the job again (a
 *  coordinator started with --from-savepoint), then starts the tasks in
 *  that generation (or returns on *@p stop, or on a JOB_FAILED). */
ksnap_err_t ksnap_worker_run(ksnap_worker_t *worker,
                             volatile sig_atomic_t *stop,
                             ksnap_error_t *error);

/** Before start: a coordinator in this process starts the job from a
 *  savepoint (`ksnap run --from-savepoint`), so a JOB_STOPPED found while
 *  catching up does not keep this worker from starting its tasks (the
 *  coordinator's RESTORE follows, or it ends the run); one read later
 *  stops it as usual. */
void ksnap_worker_resume_stopped(ksnap_worker_t *worker);

/** Stops every task and the control client, frees. NULL is a no-op. */
void ksnap_worker_destroy(ksnap_worker_t *worker);

size_t ksnap_worker_task_cnt(const ksnap_worker_t *worker);
/** 1 once every task was taken over by a newer instance (REPLACED):
 *  ksnap_worker_run() then returns KSNAP_ERR_FENCED. */
int ksnap_worker_replaced(const ksnap_worker_t *worker);
ksnap_task_t *ksnap_worker_task(ksnap_worker_t *worker, size_t i);
/** @returns the savepoint's URL once a JOB_STOPPED record was read (and
 *  no RESTORE after it, while catching up), else NULL (any thread; the
 *  string lives as long as the worker). */
const char *ksnap_worker_job_stopped(const ksnap_worker_t *worker);
/** @returns the cause once a JOB_FAILED record was read, else NULL (any
 *  thread; the string lives as long as the worker). */
const char *ksnap_worker_job_failed(const ksnap_worker_t *worker);

#endif /* KSNAP_WORKER_H */
