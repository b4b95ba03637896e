/**
 * @file run.h
 * @brief Running a job inside the calling process: its checkpoint
 * coordinator, some or all of its tasks, or both, as `ksnap coordinator`,
 * `ksnap worker [--tasks ...]` and `ksnap run` do (they are built on this
 * API).
 *
 * A program that embeds ksnap:
 *  1. builds the job's configuration, from a .properties file
 *     (ksnap_conf_load_file()) or from code (ksnap_conf_set()), or both;
 *  2. registers its operators by function pointer, if they are not in a
 *     shared library (ksnap_operator_register(), operator.h), and names
 *     them in `stage.<name>.operator=NAME` (no library, no ':');
 *  3. starts the run (ksnap_run_start()), which makes every check of
 *     ksnap_job_preflight() first;
 *  4. reads its statistics while it runs (ksnap_run_stats()), stops it
 *     (ksnap_run_stop(), also from a signal handler), waits for its end
 *     (ksnap_run_wait()), reads why it ended (ksnap_run_result()) and
 *     frees it (ksnap_run_destroy()).
 *
 * @code
 *   ksnap_conf_t *conf = ksnap_conf_new();
 *   ksnap_run_t *run;
 *   ksnap_error_t error;
 *   char errstr[512];
 *
 *   ksnap_operator_register("split", &my_split, &error);
 *   ksnap_conf_load_file(conf, "job.properties", NULL, NULL);
 *   ksnap_conf_set(conf, "stage.split.operator", "split", errstr,
 *                  sizeof(errstr));
 *   if (ksnap_run_start(conf, KSNAP_RUN_ALL, NULL, &run, &error))
 *     fail(error.msg);
 *   while (!ksnap_run_wait(run, 1000))
 *     if (done()) ksnap_run_stop(run);
 *   if (ksnap_run_result(run, &error)) fail(error.msg);
 *   ksnap_run_destroy(run);
 *   ksnap_conf_destroy(conf);
 * @endcode
 *
 * A job is one coordinator and every task of its stages, in any number
 * of processes: run the coordinator in one and the tasks in others, or
 * everything in one (KSNAP_RUN_ALL). The processes find each other
 * through the job's Kafka topics only (job.name names them). Two
 * coordinators of one job fence each other; a task started twice is run
 * by the newer instance.
 *
 * Logging: the run does not change the process-wide logger; apply
 * log.level and log.debug with ksnap_log_set_level() and
 * ksnap_log_set_debug() (log.h) if the program wants them.
 *
 * Threading: a run has its own threads (one per task, the coordinator's,
 * and one that sends the tasks' heartbeats and watches the others). The
 * calls below may be made from any thread of the program, never from an
 * operator callback (ksnap_run_wait() and ksnap_run_destroy() would wait
 * for the very thread that calls them). Only ksnap_run_stop() is
 * async-signal-safe.
 */
#ifndef KSNAP_RUN_H
#define KSNAP_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/job.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ksnap_run_s ksnap_run_t;

/** What a run hosts: ksnap_run_start()'s @p parts, OR-ed. */
#define KSNAP_RUN_COORDINATOR 0x1 /**< the checkpoint coordinator */
#define KSNAP_RUN_TASKS 0x2       /**< tasks: all, or those listed */
#define KSNAP_RUN_ALL (KSNAP_RUN_COORDINATOR | KSNAP_RUN_TASKS)
/** With KSNAP_RUN_COORDINATOR: resume a job that FAILED (its control
 *  history ends with JOB_FAILED: the restart strategy gave up, or a task
 *  cannot start with the job's configuration). The coordinator restores
 *  it in a new generation from its latest completed checkpoint, as
 *  `ksnap coordinator --resume-failed` does; without this bit its start
 *  ends with KSNAP_ERR_JOB_FAILED naming the cause, and writes nothing.
 *  Fix the cause first. */
#define KSNAP_RUN_RESUME_FAILED 0x4

/**
 * Checks the job and starts the parts @p parts of it in this process.
 *
 * First every check of ksnap_job_preflight(), which finalizes @p conf:
 * each problem is logged (level ERR, one line naming FILE:LINE and the
 * key), and @p error holds the first one's line, followed by " (and N
 * more problems, logged)" when there are more. Operator libraries are
 * looked up first in the directory of the first file loaded into @p conf
 * (ksnap_conf_origin()), as `ksnap worker FILE` does.
 *
 * Then the tasks named in @p tasks ("STAGE:INDEX,..."; NULL or "": every
 * task of the job) are created, with KSNAP_RUN_TASKS, and the run's
 * threads start: the coordinator's, with KSNAP_RUN_COORDINATOR, and the
 * one that starts the tasks (creating the job's internal and exchange
 * topics, reading its control topic) and sends their heartbeats. What
 * goes wrong from then on (Kafka, the topics, checkpoint storage) ends
 * the run and is its result (ksnap_run_result()); a task that fails
 * after its start only fails itself, and the coordinator restores the
 * job as its restart strategy says (restart-strategy.*), as with
 * `ksnap worker` processes.
 *
 * @p conf is borrowed: it must stay valid, and must not be changed,
 * until ksnap_run_destroy().
 * @returns KSNAP_ERR_OK with *runp set (free it with
 * ksnap_run_destroy()); otherwise *runp is NULL and:
 *  - KSNAP_ERR_INVALID_ARG: @p parts has no known bit or unknown ones,
 *    KSNAP_RUN_RESUME_FAILED without KSNAP_RUN_COORDINATOR, @p tasks
 *    without KSNAP_RUN_TASKS, or a bad task list ("task
 *    \"x:9\": no such stage or bad index", "the stage has N tasks");
 *  - the preflight's codes: KSNAP_ERR_CONF_MISSING, KSNAP_ERR_CONF_VALUE,
 *    KSNAP_ERR_NOT_FOUND (an operator library or symbol, or a built-in
 *    operator that is not registered), KSNAP_ERR_UNSUPPORTED (operator
 *    ABI version), KSNAP_ERR_INVALID_ARG (an operator without a process
 *    callback);
 *  - with KSNAP_RUN_TASKS, creating the tasks: KSNAP_ERR_CONF_VALUE or
 *    KSNAP_ERR_KAFKA (a Kafka client refused the job's kafka.* settings);
 *  - KSNAP_ERR_NOMEM, or KSNAP_ERR_IO when a thread cannot be created.
 */
ksnap_err_t ksnap_run_start(ksnap_conf_t *conf, int parts, const char *tasks,
                            ksnap_run_t **runp, ksnap_error_t *error);

/**
 * Asks the run to stop: the coordinator ends its loop (an unfinished
 * checkpoint stays unfinished, as after a crash, and the next start
 * resumes from the control topic), then every task stops. Returns at
 * once; ksnap_run_wait() waits for the end. A second call does nothing.
 * @remark Async-signal-safe: it only stores to a `volatile sig_atomic_t`
 * flag, which the run's threads read every 100 ms at most. Callable from
 * any thread and from a signal handler.
 */
void ksnap_run_stop(ksnap_run_t *run);

/**
 * Waits until the run has ended, for at most @p timeout_ms milliseconds
 * (-1: without limit; 0: only looks). A run ends after ksnap_run_stop(),
 * when the coordinator's loop ends (a `ksnap savepoint --stop`
 * completed, a bounded job finished (JOB_FINISHED), the job failed, a newer coordinator took over, or its start
 * failed), when the tasks' start failed, or when every task of the run
 * was taken over by a newer instance. When it has ended, every thread of
 * the run has stopped and its statistics no longer change.
 * @returns 1 if the run has ended, 0 if it still runs.
 */
int ksnap_run_wait(ksnap_run_t *run, int timeout_ms);

/**
 * @returns why the run ended, with the reason in @p error (may be NULL):
 *  - KSNAP_ERR_OK: stopped by ksnap_run_stop(), or by a savepoint with
 *    stop (the coordinator's loop ended cleanly, or the tasks read the
 *    job's JOB_STOPPED record), or a bounded job finished
 *    (source.stop-at=latest: JOB_FINISHED, plugin/PROTOCOL.md 5.9; its
 *    operators registered by function pointer get their finish too), or the job had been stopped with a
 *    savepoint before this run started (the coordinator, unless started
 *    from a savepoint, and the tasks then run nothing and say so in the
 *    log);
 *  - KSNAP_ERR_JOB_FAILED: the job FAILED: its restart strategy
 *    (restart-strategy.*) gave up, or a task cannot start with the job's
 *    configuration; or it had FAILED before this run started (the
 *    coordinator without KSNAP_RUN_RESUME_FAILED, and tasks, refuse to
 *    run it);
 *  - KSNAP_ERR_FENCED: a newer coordinator of the job took over, or every
 *    task of this run was taken over by a newer instance;
 *  - a start-up error of the coordinator or of the tasks:
 *    KSNAP_ERR_KAFKA, KSNAP_ERR_CONNECT, KSNAP_ERR_TIMEOUT (the job's
 *    topics, the control topic, a producer), KSNAP_ERR_CORRUPT,
 *    KSNAP_ERR_CHECKSUM, KSNAP_ERR_NOT_FOUND (the latest checkpoint's
 *    `_metadata` or a state object it names), the storage's codes;
 *  - KSNAP_ERR_STATE ("the run has not ended") while it runs.
 */
ksnap_err_t ksnap_run_result(ksnap_run_t *run, ksnap_error_t *error);

/**
 * A run's statistics. Checkpoint figures come from this process's
 * coordinator: they stay 0 (ids -1) in a run without
 * KSNAP_RUN_COORDINATOR. Task figures cover this run's tasks only.
 * Times are wall-clock milliseconds since the epoch; sizes are bytes.
 * @remark Later versions only append fields: pass sizeof(ksnap_run_stats_t)
 * as compiled into the caller to ksnap_run_stats().
 */
typedef struct ksnap_run_stats_s {
  int32_t tasks;         /**< tasks this run hosts */
  int32_t tasks_running; /**< of them, open and processing */
  int32_t tasks_failed;  /**< of them, failed (waiting for a restore) */
  int64_t records_in;    /**< read from source topics by its tasks */
  int64_t records_out;   /**< written to sink topics by its tasks (aborted
                              transactions included) */
  int64_t checkpoints_triggered;
  int64_t checkpoints_in_progress;
  int64_t checkpoints_completed;
  int64_t checkpoints_failed; /**< aborted: declined, expired, ... */
  int64_t restores;           /**< times the coordinator restored the job */
  int64_t last_completed_id;  /**< -1 before the first */
  int64_t last_completed_ms;  /**< when it completed */
  int64_t last_duration_ms;   /**< from its trigger to its completion */
  int64_t last_state_size;    /**< its state, summed over the tasks */
  int64_t last_alignment_us;  /**< its longest barrier alignment */
  int64_t last_failed_id;     /**< -1 if none failed */
  int64_t last_restored_id;   /**< checkpoint of the latest restore; -1 */
} ksnap_run_stats_t;

/**
 * Copies the run's current statistics into @p stats, at most @p size
 * bytes of them (pass sizeof(*stats)). Any thread, while the run runs and
 * after it ended (the figures at its end), until ksnap_run_destroy().
 */
void ksnap_run_stats(ksnap_run_t *run, ksnap_run_stats_t *stats,
                     size_t size);

/**
 * @returns the job graph the run checked (valid until
 * ksnap_run_destroy()), e.g. to find its source and sink topics.
 */
const ksnap_job_t *ksnap_run_job(const ksnap_run_t *run);

/**
 * Stops the run if it still runs (ksnap_run_stop()), waits for its end
 * and frees it. NULL is a no-op. Call it once, when no other call on
 * @p run is in progress; @p conf may be destroyed after it.
 */
void ksnap_run_destroy(ksnap_run_t *run);

#ifdef __cplusplus
}
#endif
#endif /* KSNAP_RUN_H */
