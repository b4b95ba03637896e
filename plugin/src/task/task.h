/*
 * A task: one parallel instance of a stage, run by one processing thread
 * (the mailbox; plugin/PROTOCOL.md section 3.2). Records, barriers, timers and control
 * messages are all handled on that thread, so a snapshot always falls
 * between two records. The state machine is at the top of task.c.
 *
 * Threading: new/start/stop/destroy from the worker's thread;
 * ksnap_task_post() from the control client's thread; the getters from
 * any thread.
 */
#ifndef KSNAP_TASK_H
#define KSNAP_TASK_H

#include <stddef.h>
#include <stdint.h>

#include "control/control_client.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/job.h"
#include "base/snap_pool.h"

typedef struct ksnap_task_s ksnap_task_t;

/**
 * Creates task @p index of @p stage and resolves its operator
 * (@p job_dir: the job file's directory, for operator libraries).
 * @p conf, @p job, @p cc and @p pool are borrowed and must outlive it.
 * @returns OK; NOT_FOUND / UNSUPPORTED / INVALID_ARG (operator); NOMEM.
 */
ksnap_err_t ksnap_task_new(const ksnap_conf_t *conf, const ksnap_job_t *job,
                           const ksnap_job_stage_t *stage, int32_t index,
                           const char *job_dir, ksnap_control_client_t *cc,
                           ksnap__snap_pool_t *pool, ksnap_task_t **taskp,
                           ksnap_error_t *error);

/**
 * Starts the processing thread in generation @p gen, restored from
 * completed checkpoint @p base_id (KSNAP_CHECKPOINT_NONE or 0: a fresh
 * start from the beginning of the source topics), as instance
 * @p instance (the worker process's id, borrowed: it must outlive the
 * task). The thread opens its inputs and outputs, restores, opens the
 * operator and sends REGISTER. With @p claim it opens nothing: it claims
 * the task (another instance owns it, or ran in @p gen) and waits for the
 * coordinator's ASSIGN or RESTORE naming this instance (see task.c).
 */
/** The URL of the `_metadata` the next restore loads (a RESTORE's
 * metadata URL; NULL or the job's own chk-N: from the job's checkpoints).
 * Set before ksnap_task_start(); copied. */
void ksnap_task_set_base_url(ksnap_task_t *task, const char *url);

ksnap_err_t ksnap_task_start(ksnap_task_t *task, int64_t gen, int64_t base_id,
                             const char *instance, int claim,
                             ksnap_error_t *error);

/** Before start: the task belongs to a member (a worker started with
 *  --join): it never claims and is never REPLACED; it stands by (WAITING,
 *  nothing open) until a RESTORE or ASSIGN names this instance, and goes
 *  back to standing by when one names another (see task.c). */
void ksnap_task_set_member(ksnap_task_t *task);

/** Hands one encoded control record to the task (copied). */
void ksnap_task_post(ksnap_task_t *task, const void *rec, size_t len);

/** Stops and joins the processing thread (waits for its snapshots). */
void ksnap_task_stop(ksnap_task_t *task);

/** Stops if needed and frees. NULL is a no-op. */
void ksnap_task_destroy(ksnap_task_t *task);

/** 1 if @p id names @p task. */
int ksnap_task_is(const ksnap_task_t *task, const ksnap_task_id_t *id);
/** "stage[i]". */
const char *ksnap_task_id(const ksnap_task_t *task);
/** 1 once the task failed (it stops processing and heartbeating). */
int ksnap_task_failed(const ksnap_task_t *task);
/** 1 once another instance took the task over for good (REPLACED). */
int ksnap_task_replaced(const ksnap_task_t *task);
/** 1 once the task runs (inputs open, operator open). */
int ksnap_task_running(const ksnap_task_t *task);
int64_t ksnap_task_generation(const ksnap_task_t *task);
int64_t ksnap_task_records_in(const ksnap_task_t *task);
int64_t ksnap_task_records_out(const ksnap_task_t *task);
/** Records whose processing failed and that the task tolerated
 * (errors.tolerance=all), and of them those written to the dead-letter
 * topic: counts restored with the state, so they match the task's
 * committed dead-letter records as of its latest restore. */
int64_t ksnap_task_records_failed(const ksnap_task_t *task);
int64_t ksnap_task_records_dead_lettered(const ksnap_task_t *task);
/** Sends this task's HEARTBEAT (any thread); it says whether the task's
 * input ended and its finish ran in this generation. */
void ksnap_task_heartbeat(ksnap_task_t *task);
/** @returns 1 when the task's input ended in this generation and no
 * HEARTBEAT said so yet (the worker sends one at once: the coordinator
 * triggers the final checkpoint when every task ended). Any thread. */
int ksnap_task_ended_untold(ksnap_task_t *task);

#endif /* KSNAP_TASK_H */
