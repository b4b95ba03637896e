/**
 * @file coord_sm.h
 * @brief The checkpoint coordinator's decision logic as a pure state
 *        machine: no Kafka, no storage, no threads, no clock of its own.
 *
 * A driver (the `ksnap coordinator` loop) feeds it events with the time
 * they happened (@p now_ms, any millisecond clock that does not go back;
 * it is also the TRIGGER record's timestamp) and then drains the actions
 * it produced with ksnap_coord_sm_next_action(), performing each in order:
 * writing TRIGGER / COMPLETE / ABORT / RESTORE control records, writing a
 * checkpoint's `_metadata`, deleting a retired checkpoint, failing or
 * stopping the job, logging. The results of the two asynchronous actions
 * (metadata write, COMPLETE commit) come back as events. The semantics and
 * the state diagram are at the top of coord_sm.c.
 *
 * A driver loop, in outline (error handling left out):
 *
 *     ksnap_coord_sm_conf_load(conf, &smconf);
 *     ksnap_coord_sm_new(job, &smconf, &sm, &error);
 *     for each record of <job>.ksnap.control, oldest first:
 *       ksnap_coord_sm_replay(sm, &rec);
 *     ksnap_coord_sm_start(sm, now());
 *     for (;;) {
 *       poll the ack topic (and storage/Kafka results) for up to ~100 ms;
 *       feed what arrived: ksnap_coord_sm_ack(sm, now(), &rec.u.ack), ...
 *       ksnap_coord_sm_tick(sm, now());
 *       while (ksnap_coord_sm_next_action(sm, &act)) {
 *         TRIGGER/SEND_ABORT/SEND_RESTORE/SEND_ASSIGN: write the control
 *           record
 *           (fenced transactional producer: one transaction each);
 *         WRITE_METADATA: encode act.meta now, upload chk-N/_metadata
 *           asynchronously, report with ksnap_coord_sm_metadata_written();
 *         SEND_COMPLETE: write and commit COMPLETE(N), report with
 *           ksnap_coord_sm_complete_committed();
 *         RETIRE: delete chk-N's objects; FAIL_JOB / STOP_JOB: stop
 *           (STOP_JOB after the sinks' COMMITTED of the savepoint);
 *         LOG: KSNAP_LOG(act.level, "COORD", "%s", act.text);
 *         ksnap_coord_action_cleanup(&act);
 *       }
 *     }
 *
 * Threading: none. A ksnap_coord_sm_t is owned by one thread (the driver
 * loop); no call blocks.
 *
 * Errors: an event that is illegal in the current state (an ACK for an
 * unknown checkpoint, a metadata result for a checkpoint not writing
 * metadata, a REGISTER from a generation newer than the coordinator's)
 * is logged (a LOG action at WARNING or ERR naming what was refused),
 * changes nothing, and returns KSNAP_ERR_STATE; an unknown task is
 * KSNAP_ERR_NOT_FOUND. Stale input (an ACK of an older generation) is
 * logged at INFO and returns KSNAP_ERR_OK: it is expected after a restore.
 */
#ifndef KSNAP_COORD_SM_H
#define KSNAP_COORD_SM_H

#include <stdbool.h>
#include <stdint.h>

#include "stats/coord_stats.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/job.h"
#include "ksnap/records.h"

typedef struct ksnap_coord_sm_s ksnap_coord_sm_t;

/** restart-strategy.type (Flink's aliases map onto these). */
typedef enum ksnap_restart_type_e {
  KSNAP_RESTART_EXPONENTIAL_DELAY, /**< the default */
  KSNAP_RESTART_FIXED_DELAY,
  KSNAP_RESTART_FAILURE_RATE,
  KSNAP_RESTART_NONE,
} ksnap_restart_type_t;

/** The restart strategy's settings (restart-strategy.*; what each means
 *  is at the top of coord_restart.c). */
typedef struct ksnap_restart_conf_s {
  ksnap_restart_type_t type;
  /* exponential-delay */
  int64_t initial_backoff_ms;  /**< >= 1 */
  int64_t max_backoff_ms;      /**< >= initial_backoff_ms */
  double backoff_multiplier;   /**< >= 1 */
  double jitter_factor;        /**< 0..1 */
  int64_t reset_threshold_ms;  /**< >= 1 */
  int64_t attempts_before_reset; /**< >= 1 (INT32_MAX: no limit) */
  /* fixed-delay */
  int64_t fixed_attempts; /**< >= 0 */
  int64_t fixed_delay_ms; /**< >= 0 */
  /* failure-rate */
  int64_t rate_max_failures; /**< >= 1 */
  int64_t rate_interval_ms;  /**< >= 1 */
  int64_t rate_delay_ms;     /**< >= 0 */
  /** Seeds the jitter's generator: the same seed draws the same delays
   *  (tests); the driver seeds it from the clock. */
  uint64_t jitter_seed;
} ksnap_restart_conf_t;

/** A strategy that restores at once, every time (fixed-delay with no
 *  delay and no limit): what the coordinator did before restart
 *  strategies; the state machine's unit tests use it. */
#define KSNAP_RESTART_AT_ONCE                                              \
  ((ksnap_restart_conf_t){.type = KSNAP_RESTART_FIXED_DELAY,               \
                          .fixed_attempts = INT32_MAX, .fixed_delay_ms = 0})

/** Settings, normally from ksnap_coord_sm_conf_load(). */
typedef struct ksnap_coord_sm_conf_s {
  int64_t interval_ms;          /**< execution.checkpointing.interval */
  int64_t timeout_ms;           /**< execution.checkpointing.timeout */
  int64_t min_pause_ms;         /**< ...min-pause (0: none) */
  int max_concurrent;           /**< ...max-concurrent-checkpoints (>= 1) */
  int tolerable_failed;         /**< ...tolerable-failed-checkpoints */
  int num_retained;             /**< state.checkpoints.num-retained (>= 1) */
  int64_t heartbeat_timeout_ms; /**< heartbeat.timeout */
  ksnap_ckpt_mode_t mode;       /**< mode of periodic checkpoints */
  /** Highest checkpoint id ever used (the durable counter), or
   *  KSNAP_CHECKPOINT_NONE: the first id is this + 1 (1 for NONE). */
  int64_t max_id_seen;
  ksnap_restart_conf_t restart; /**< restart-strategy.* */
} ksnap_coord_sm_conf_t;

/** Job-level states (diagram in coord_sm.c). */
typedef enum ksnap_coord_state_e {
  KSNAP_COORD_WAITING,         /**< waiting for every task to register at G */
  KSNAP_COORD_RUNNING,         /**< triggering checkpoints */
  KSNAP_COORD_STOPPING,        /**< a stop-with-savepoint is pending */
  KSNAP_COORD_RESTORE_PENDING, /**< restore waits for a COMPLETE in flight */
  KSNAP_COORD_FINISHED,        /**< stopped with a savepoint, or a bounded
                                    job finished (terminal) */
  KSNAP_COORD_FAILED,          /**< FAIL_JOB was emitted (terminal) */
  KSNAP_COORD_RESTARTING,      /**< a restore waits for the strategy's delay */
} ksnap_coord_state_t;

/** Per-checkpoint states (diagram in coord_ckpt.c). */
typedef enum ksnap_ckpt_state_e {
  KSNAP_CKPT_TRIGGERED,        /**< TRIGGER sent, collecting ACKs */
  KSNAP_CKPT_ACKED,            /**< all ACKs in; waits for its turn */
  KSNAP_CKPT_WRITING_METADATA, /**< WRITE_METADATA out, result awaited */
  KSNAP_CKPT_COMPLETING,       /**< SEND_COMPLETE out, commit awaited */
  KSNAP_CKPT_COMPLETED,        /**< COMPLETE committed: the decision */
  KSNAP_CKPT_ABORTED,          /**< ABORT sent (final) */
} ksnap_ckpt_state_t;

typedef enum ksnap_coord_act_type_e {
  KSNAP_COORD_ACT_TRIGGER,        /**< write TRIGGER(id, options, G) */
  KSNAP_COORD_ACT_WRITE_METADATA, /**< write chk-<id>/_metadata = meta */
  KSNAP_COORD_ACT_SEND_COMPLETE,  /**< write COMPLETE(id, G), commit it */
  KSNAP_COORD_ACT_SEND_ABORT,     /**< write ABORT(id, G, text) */
  KSNAP_COORD_ACT_SEND_RESTORE,   /**< write RESTORE(G, id or NONE, owners) */
  KSNAP_COORD_ACT_SEND_ASSIGN,    /**< write ASSIGN(G, task, owner, refused) */
  KSNAP_COORD_ACT_RETIRE,         /**< delete checkpoint id's objects */
  KSNAP_COORD_ACT_FAIL_JOB,       /**< the job failed: text says why; write
                                     JOB_FAILED(G, text), then stop */
  KSNAP_COORD_ACT_STOP_JOB,       /**< stop-with-savepoint id completed:
                                     once every sink committed it (the sm
                                     takes COMMITTED in FINISHED), write
                                     JOB_STOPPED(G, id, URL), then stop */
  KSNAP_COORD_ACT_LOG,            /**< log text at level */
  KSNAP_COORD_ACT_SEND_MEMBER,    /**< write MEMBER(G, instance, host in
                                     refused, slots, present, text) */
} ksnap_coord_act_type_t;

/** One action for the driver. Owns text; meta is borrowed. */
typedef struct ksnap_coord_action_s {
  ksnap_coord_act_type_t type;
  int64_t checkpoint_id; /**< or KSNAP_CHECKPOINT_NONE (RESTORE) */
  int64_t generation;
  int64_t timestamp_ms;         /**< TRIGGER */
  ksnap_ckpt_options_t options; /**< TRIGGER */
  /** WRITE_METADATA: owned by the state machine and valid only until
   *  the next call into it (a restore may abort the checkpoint): encode
   *  it (ksnap_codec_meta_encode) before feeding the next event, then
   *  upload the bytes asynchronously. */
  const ksnap_checkpoint_meta_t *meta;
  int level;  /**< LOG: KSNAP_LOG_* */
  char *text; /**< LOG line, ABORT / FAIL_JOB reason; SEND_RESTORE: the
               *   restore point's URL when it is not the job's own
               *   latest checkpoint (NULL: <job>/chk-N) (malloc'd) */
  /** SEND_RESTORE: every task's owner (owned: strings and array) */
  ksnap_task_owner_t *owners;
  size_t owner_cnt;
  /** SEND_ASSIGN: the task (stage borrowed from the job), its owner now
   *  ("" vacant) and the instance whose claim was refused ("" none) */
  ksnap_task_id_t task;
  char *instance;
  char *refused;
  /** SEND_MEMBER: the member (instance), its host (refused), slots, and
   *  whether it joined (present) or was removed (text: why) */
  int32_t slots;
  bool present;
} ksnap_coord_action_t;

/**
 * Reads the settings from a finalized @p conf into @p smconf
 * (max_id_seen = KSNAP_CHECKPOINT_NONE, restart.jitter_seed = 0: the
 * caller seeds it).
 * @returns KSNAP_ERR_OK or KSNAP_ERR_NOT_FOUND (a key without value).
 */
ksnap_err_t ksnap_coord_sm_conf_load(const ksnap_conf_t *conf,
                                     ksnap_coord_sm_conf_t *smconf);

/**
 * Creates a coordinator for @p job (borrowed: must outlive the sm) in
 * generation 0 with no checkpoint. Replay the control topic's history
 * with ksnap_coord_sm_replay(), then call ksnap_coord_sm_start().
 * @returns KSNAP_ERR_OK with *smp set, KSNAP_ERR_INVALID_ARG (a setting
 * out of range, named in @p error) or KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_coord_sm_new(const ksnap_job_t *job,
                               const ksnap_coord_sm_conf_t *smconf,
                               ksnap_coord_sm_t **smp, ksnap_error_t *error);

/** Frees @p sm and every undrained action. NULL is a no-op. */
void ksnap_coord_sm_destroy(ksnap_coord_sm_t *sm);

/**
 * Coordinator recovery: applies one record of the control topic's
 * history, oldest first, before ksnap_coord_sm_start(). TRIGGER raises
 * the id counter (and remembers the checkpoint as unresolved), COMPLETE
 * makes it a completed checkpoint, ABORT resolves it, RESTORE sets the
 * generation (and resolves everything triggered before it), JOB_FAILED
 * records that the job failed (until a later RESTORE resumes it).
 * @returns KSNAP_ERR_OK, KSNAP_ERR_STATE (after start) or KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_coord_sm_replay(ksnap_coord_sm_t *sm,
                                  const ksnap_control_record_t *rec);

/**
 * Coordinator recovery, optional: the `_metadata` of a completed checkpoint
 * the history named, so that retention knows which older checkpoints'
 * objects it reuses (incremental snapshots). Until it is fed, a replayed
 * checkpoint keeps every older one from being retired. May be called
 * before or after start.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_NOT_FOUND (not a retained completed
 * checkpoint) or KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_coord_sm_replay_metadata(ksnap_coord_sm_t *sm,
                                           const ksnap_checkpoint_meta_t *meta);

/**
 * Before ksnap_coord_sm_start(): the operator of the job asks to resume
 * it although its history ends FAILED (`ksnap coordinator --resume-failed`);
 * the driver then restores it as after any coordinator restart.
 * @returns KSNAP_ERR_OK, or KSNAP_ERR_STATE after start.
 */
ksnap_err_t ksnap_coord_sm_resume_failed(ksnap_coord_sm_t *sm);

/**
 * Before start: the job restores from checkpoint @p id whose `_metadata`
 * is at @p url (a savepoint, a retained checkpoint: `--from-savepoint`),
 * not from its latest completed one, in every restore until a checkpoint
 * of the job completes; that checkpoint's parent is @p id, and new ids
 * are above @p id and the history's. Also called for a replayed RESTORE
 * whose URL was such a point (the history says where the job came from).
 * The caller requests the restore. @returns KSNAP_ERR_OK, INVALID_ARG,
 * STATE (started), NOMEM.
 */
ksnap_err_t ksnap_coord_sm_restore_from(ksnap_coord_sm_t *sm, int64_t id,
                                        const char *url);
/** After start: the job cannot run as asked (a restore point that does
 *  not fit its graph): FAILED now, FAIL_JOB with @p cause (durable, as
 *  any failure no restore can fix). */
ksnap_err_t ksnap_coord_sm_refuse_start(ksnap_coord_sm_t *sm, int64_t now_ms,
                                        const char *cause);
/** The restore point set by ksnap_coord_sm_restore_from() and not yet
 *  superseded by a completed checkpoint (*@p idp its id), or NULL. */
const char *ksnap_coord_sm_origin(const ksnap_coord_sm_t *sm, int64_t *idp);

/**
 * Starts the coordinator at @p now_ms in state WAITING; in state FAILED
 * (terminal, nothing emitted but a LOG naming the cause) when the replayed
 * history ends with JOB_FAILED and ksnap_coord_sm_resume_failed() was not
 * called: a failed job is resumed only deliberately. A checkpoint the
 * history left unresolved (triggered by a previous coordinator, never
 * completed nor aborted) is aborted ("coordinator restarted"). If the
 * history was not empty the tasks are presumed running: each is watched
 * for heartbeat.timeout from now on, and a HEARTBEAT of the current
 * generation counts as its registration.
 */
ksnap_err_t ksnap_coord_sm_start(ksnap_coord_sm_t *sm, int64_t now_ms);

/** Time passes: periodic triggers, expiry, heartbeat timeouts. */
ksnap_err_t ksnap_coord_sm_tick(ksnap_coord_sm_t *sm, int64_t now_ms);

/** Ack topic records (their fields are only read, except as noted). */
ksnap_err_t ksnap_coord_sm_register(ksnap_coord_sm_t *sm, int64_t now_ms,
                                    const ksnap_register_t *reg);
ksnap_err_t ksnap_coord_sm_heartbeat(ksnap_coord_sm_t *sm, int64_t now_ms,
                                     const ksnap_heartbeat_t *hb);
/** A member's MEMBER record (a worker started with --join): it joins or
 *  heartbeats; the coordinator assigns it tasks (coord_balance.c). */
ksnap_err_t ksnap_coord_sm_member(ksnap_coord_sm_t *sm, int64_t now_ms,
                                  const ksnap_member_hb_t *hb);
/** The members now, for status output: @returns their count; member
 *  @p i's id, host and slots through the pointers (NULL: not wanted). */
size_t ksnap_coord_sm_members(const ksnap_coord_sm_t *sm, size_t i,
                              const char **id, const char **host,
                              int32_t *slots);
/**
 * An ACK. On KSNAP_ERR_OK the state machine takes ack->snapshot (it is
 * zeroed; the caller still cleans up @p ack); otherwise it is untouched.
 */
ksnap_err_t ksnap_coord_sm_ack(ksnap_coord_sm_t *sm, int64_t now_ms,
                               ksnap_ack_t *ack);
ksnap_err_t ksnap_coord_sm_decline(ksnap_coord_sm_t *sm, int64_t now_ms,
                                   const ksnap_decline_t *decline);
ksnap_err_t ksnap_coord_sm_committed(ksnap_coord_sm_t *sm, int64_t now_ms,
                                     const ksnap_committed_t *committed);

/**
 * A manual checkpoint request (`ksnap checkpoint trigger`): triggered at
 * the next tick at which max-concurrent-checkpoints and min-pause allow.
 * @returns KSNAP_ERR_OK, or KSNAP_ERR_STATE when the job is not RUNNING.
 */
ksnap_err_t ksnap_coord_sm_request_checkpoint(ksnap_coord_sm_t *sm,
                                              int64_t now_ms);

/**
 * A savepoint request: always aligned, triggered at once (not limited by
 * max-concurrent-checkpoints or min-pause, not subsumed, never retired).
 * With @p stop the job stops after it completes (STOP_JOB) and no
 * periodic checkpoint is triggered meanwhile.
 * @param idp set to the savepoint's id (may be NULL).
 * @returns KSNAP_ERR_OK, or KSNAP_ERR_STATE when the job is not RUNNING.
 */
ksnap_err_t ksnap_coord_sm_request_savepoint(ksnap_coord_sm_t *sm,
                                             int64_t now_ms, bool stop,
                                             int64_t *idp);

/**
 * A stop with a savepoint after a drain (`ksnap savepoint --stop
 * --drain`): from now on every TRIGGER says drain (a checkpoint is
 * triggered at once), so each source task fixes the ends of its
 * partitions at its current positions before its snapshot; once every
 * task's input ended (its operator finished), the final checkpoint is a
 * savepoint (taken again if it fails), and the driver writes JOB_STOPPED
 * with it once every sink task committed it (ksnap_coord_sm_final_
 * checkpoint(), ksnap_coord_sm_job_finished()). A restore keeps
 * draining, and a coordinator started on a history whose latest
 * completed checkpoint was triggered with drain drains on.
 * @returns KSNAP_ERR_OK (also when already draining), or KSNAP_ERR_STATE
 * when the job is not RUNNING.
 */
ksnap_err_t ksnap_coord_sm_request_drain(ksnap_coord_sm_t *sm,
                                         int64_t now_ms);
/** @returns true while the job drains (ksnap_coord_sm_request_drain). */
bool ksnap_coord_sm_draining(const ksnap_coord_sm_t *sm);

/** Result of WRITE_METADATA(id): @p errmsg NULL on success. */
ksnap_err_t ksnap_coord_sm_metadata_written(ksnap_coord_sm_t *sm,
                                            int64_t now_ms, int64_t id,
                                            const char *errmsg);

/**
 * Result of SEND_COMPLETE(id): @p errmsg NULL when the COMPLETE record is
 * committed; otherwise the driver knows it is NOT committed (aborted
 * transaction). A fenced coordinator must not report: it stops.
 */
ksnap_err_t ksnap_coord_sm_complete_committed(ksnap_coord_sm_t *sm,
                                              int64_t now_ms, int64_t id,
                                              const char *errmsg);

/** A task reported a fatal error in @p generation: a failure of the job
 *  (the restart strategy decides). Stale reports (older generations) are
 *  ignored. */
ksnap_err_t ksnap_coord_sm_task_failed(ksnap_coord_sm_t *sm, int64_t now_ms,
                                       const ksnap_task_id_t *task,
                                       int64_t generation,
                                       const char *reason);
/** A FAILURE record: as ksnap_coord_sm_task_failed(); one that is not
 *  retriable fails the job at once, whatever the restart strategy. */
ksnap_err_t ksnap_coord_sm_failure(ksnap_coord_sm_t *sm, int64_t now_ms,
                                   const ksnap_task_failure_t *failure);

/** An operator asked for a restore from the latest completed checkpoint. */
ksnap_err_t ksnap_coord_sm_request_restore(ksnap_coord_sm_t *sm,
                                           int64_t now_ms,
                                           const char *reason);

/**
 * Moves the oldest undrained action into @p act (the caller frees it
 * with ksnap_coord_action_cleanup()). @returns true if there was one.
 */
bool ksnap_coord_sm_next_action(ksnap_coord_sm_t *sm,
                                ksnap_coord_action_t *act);
void ksnap_coord_action_cleanup(ksnap_coord_action_t *act);

/** Introspection (for tests, the status endpoint and the CLI). */
ksnap_coord_state_t ksnap_coord_sm_state(const ksnap_coord_sm_t *sm);
int64_t ksnap_coord_sm_generation(const ksnap_coord_sm_t *sm);
/** @returns the latest completed checkpoint (savepoints included) or
 *  KSNAP_CHECKPOINT_NONE. */
int64_t ksnap_coord_sm_latest_completed(const ksnap_coord_sm_t *sm);
/** @returns the highest id ever used (KSNAP_CHECKPOINT_NONE if none). */
int64_t ksnap_coord_sm_max_id(const ksnap_coord_sm_t *sm);
/** @returns the id every sink task has committed (fully committed). */
int64_t ksnap_coord_sm_fully_committed(const ksnap_coord_sm_t *sm);
/** @returns the final checkpoint of a bounded job (PROTOCOL.md 5.9: one
 *  every task acknowledged with input_ended) once it completed in this
 *  generation and the job is RUNNING, else KSNAP_CHECKPOINT_NONE. The
 *  driver writes JOB_FINISHED once every sink task committed it. */
int64_t ksnap_coord_sm_final_checkpoint(const ksnap_coord_sm_t *sm);
/** JOB_FINISHED was written: RUNNING -> FINISHED (terminal). @returns
 *  KSNAP_ERR_STATE (logged) without a final checkpoint. */
ksnap_err_t ksnap_coord_sm_job_finished(ksnap_coord_sm_t *sm);
/** @returns whether every sink task committed @p id or later (true for a
 *  job without sink tasks). */
bool ksnap_coord_sm_all_committed(const ksnap_coord_sm_t *sm, int64_t id);
/** @returns the number of pending (not final) checkpoints. */
int ksnap_coord_sm_pending_cnt(const ksnap_coord_sm_t *sm);
/** @returns the state of checkpoint @p id, or -1 if unknown/forgotten. */
int ksnap_coord_sm_ckpt_state(const ksnap_coord_sm_t *sm, int64_t id);
/** @returns why the job FAILED (FAIL_JOB's text, or the replayed
 *  JOB_FAILED's cause), or NULL while it has not. */
const char *ksnap_coord_sm_failure_cause(const ksnap_coord_sm_t *sm);
/** @returns the cause of a replayed JOB_FAILED that no RESTORE followed,
 *  or NULL. */
const char *ksnap_coord_sm_replayed_failure(const ksnap_coord_sm_t *sm);
/** @returns the consecutive failure count (tolerable-failed rule). */
int ksnap_coord_sm_failure_cnt(const ksnap_coord_sm_t *sm);
/** @returns the statistics the sm keeps (owned by it). */
ksnap_coord_stats_t *ksnap_coord_sm_stats(ksnap_coord_sm_t *sm);

const char *ksnap_coord_state_name(ksnap_coord_state_t state);
const char *ksnap_ckpt_state_name(ksnap_ckpt_state_t state);
const char *ksnap_coord_act_type_name(ksnap_coord_act_type_t type);

#endif /* KSNAP_COORD_SM_H */
