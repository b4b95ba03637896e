/* The hub of the coordinator state machine: the job-level state and the
 * parts it is made of, shared by the five hub files only:
 *   coord_sm.c        job-level states and transitions (restore, failure,
 *                     stop, FAILED), the COMPLETE result;
 *   coord_requests.c  tick, triggering, the operator's requests;
 *   coord_events.c    the ack topic's records (FAILURE too) and the
 *                     metadata result;
 *   coord_setup.c     settings, creation, replay, start, introspection;
 *   coord_balance.c   members: which member runs which task (joins,
 *                     losses, rebalances, missing capacity).
 * The other files are parts with their own private state, called by the
 * hub and calling only coord_actions.c (see the call order at the top of
 * coord_sm.c). Not installed. */
#ifndef KSNAP_COORD_INT_H
#define KSNAP_COORD_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_actions.h"
#include "coord_ckpt.h"
#include "coord_assign.h"
#include "coord_failures.h"
#include "coord_finish.h"
#include "coord_members.h"
#include "coord_origin.h"
#include "coord_restart.h"
#include "coord_retain.h"
#include "coord_sm.h"
#include "coord_tasks.h"
#include "coord_trigger.h"
#include "coord_unresolved.h"
#include "stats/coord_stats.h"

struct ksnap_coord_sm_s {
  const ksnap_job_t *job;
  ksnap_coord_sm_conf_t conf;
  ksnap_coord_state_t state; /**< changed by ksnap__coord_set_state() */
  bool started;
  bool recovered;       /**< the replayed history was not empty */
  int64_t generation;   /**< changed by ksnap__coord_set_generation() */
  int64_t max_id;       /**< highest id ever used, or NONE */
  char *restore_reason; /**< RESTARTING, RESTORE_PENDING: why */
  int64_t restart_at_ms; /**< RESTARTING: when the restore goes out */
  char *failure_cause;  /**< FAILED: why (FAIL_JOB's text) */
  /** The replayed history ends with JOB_FAILED (no RESTORE after it): its
   *  cause; start() leaves the job FAILED unless resume_failed. */
  char *replayed_failure;
  bool resume_failed; /**< ksnap_coord_sm_resume_failed() was called */
  /** The job drains (ksnap_coord_sm_request_drain(), or the latest
   *  completed checkpoint at start was triggered with drain): every
   *  TRIGGER says drain, and the final checkpoint is the stop's
   *  savepoint. Never cleared. */
  bool draining;
  int64_t *drain_ids; /**< replay: the TRIGGERs with drain, ascending */
  size_t drain_cnt;

  coord_acts_t *acts;             /**< coord_actions.c */
  coord_tasks_t *tasks;           /**< coord_tasks.c, coord_owner.c */
  coord_ckpts_t *ckpts;           /**< coord_ckpt.c: pending checkpoints */
  coord_retain_t *retain;         /**< coord_retain.c: completed ones */
  coord_sched_t *sched;           /**< coord_trigger.c */
  coord_failures_t *failures;     /**< coord_failures.c */
  coord_restart_t *restart;       /**< coord_restart.c */
  coord_unresolved_t *unresolved; /**< coord_unresolved.c: replay only */
  coord_origin_t *origin;         /**< coord_origin.c: restore point */
  coord_members_t *members;       /**< coord_members.c */
  coord_finish_t *finish;         /**< coord_finish.c: bounded end */
  bool rebalance;       /**< a member joined: rebalance at a checkpoint */
  bool capacity_logged;    /**< a "not enough slots" line went out */
  int64_t capacity_log_ms; /**< when the last one did */
  ksnap_coord_stats_t *stats;     /**< stats/: written by coord_ckpt.c */
};

/* coord_sm.c, for coord_requests.c, coord_events.c and coord_setup.c */

/** The job-level transition to @p to, if the table at the top of
 *  coord_sm.c allows it; KSNAP_ERR_STATE (logged, nothing changes) if
 *  not. The only writer of sm->state after start. */
ksnap_err_t ksnap__coord_set_state(ksnap_coord_sm_t *sm,
                                   ksnap_coord_state_t to);
/** @returns true in FINISHED and FAILED. */
bool ksnap__coord_is_terminal(const ksnap_coord_sm_t *sm);
/** Entry check of an event taken in every state, terminal ones too:
 *  KSNAP_ERR_NOMEM after an allocation failure; KSNAP_ERR_STATE (logged)
 *  before start. */
ksnap_err_t ksnap__coord_enter_any(ksnap_coord_sm_t *sm);

/** Entry check of an event named @p what: KSNAP_ERR_NOMEM after an
 *  allocation failure; KSNAP_ERR_STATE (logged) before start or in a
 *  terminal state. */
ksnap_err_t ksnap__coord_enter(ksnap_coord_sm_t *sm, const char *what);
/** An event's result @p err, or KSNAP_ERR_NOMEM (sticky). */
ksnap_err_t ksnap__coord_leave(const ksnap_coord_sm_t *sm, ksnap_err_t err);
void ksnap__coord_set_generation(ksnap_coord_sm_t *sm, int64_t generation);
/** Restores the job from the latest completed checkpoint in G+1 (deferred
 *  while a COMPLETE is in flight). */
ksnap_err_t ksnap__coord_restore(ksnap_coord_sm_t *sm, int64_t now_ms,
                                 const char *reason);
/** A failure of the job's execution (a task failed, fell silent or was
 *  replaced; too many checkpoints failed): a restore after the restart
 *  strategy's delay, or FAILED when it gives up or @p retriable is false.
 *  A failure while a restore is under way joins it. */
void ksnap__coord_failure(ksnap_coord_sm_t *sm, int64_t now_ms,
                          const char *reason, bool retriable);
/** What the abort @p v of a checkpoint means for the job: the failure
 *  count (a failure of the job), a failed stop-with-savepoint (RUNNING
 *  again). */
void ksnap__coord_aborted(ksnap_coord_sm_t *sm, int64_t now_ms,
                          const coord_abort_t *v);
/** WAITING -> RUNNING once every task is ready. */
void ksnap__coord_check_ready(ksnap_coord_sm_t *sm, int64_t now_ms);
/** Starts writing the metadata of the oldest fully acked checkpoint if
 *  none is being finalized and the job is not over. */
void ksnap__coord_finalize_next(ksnap_coord_sm_t *sm);
/** Retires what retention lets go, given the sinks' commits. */
void ksnap__coord_retire(ksnap_coord_sm_t *sm);

/* coord_balance.c, for coord_sm.c, coord_requests.c, coord_setup.c */

/** Before a RESTORE's owner table: members lost with a silent task are
 *  removed, then every task goes to a member, balanced (moves allowed).
 *  Nothing without members. */
void ksnap__coord_balance_restore(ksnap_coord_sm_t *sm, int64_t now_ms);
/** Tick: silent members are removed (a failure if one ran a task in G);
 *  vacant tasks go to members by ASSIGN once no member joined for a
 *  second and no restore is pending; missing capacity is logged. */
void ksnap__coord_balance_tick(ksnap_coord_sm_t *sm, int64_t now_ms);
/** A checkpoint completed: @returns true if the hub should restore now
 *  to give a member that joined its share (a rebalance). */
bool ksnap__coord_balance_due(ksnap_coord_sm_t *sm);

#endif /* KSNAP_COORD_INT_H */
