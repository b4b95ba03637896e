/*
 * The checkpoint coordinator's decision logic (pure: no I/O, no clock):
 * the hub, which owns the job-level state (coord_int.h).
 *
 * Job-level states (ksnap_coord_state_t):
 *
 *                         every task REGISTERed at G
 *   start --> WAITING ------------------------------------> RUNNING
 *              ^  ^  \__ restore (G+1; tasks still missing)   |  |  |
 *              |  |                                           |  |  |
 *              |  +----- restore, no COMPLETE in flight ------+  |  |
 *              |                                                 |  |
 *              +-- COMPLETE settled --- RESTORE_PENDING <--------+  |
 *                  (then restore)       restore while a COMPLETE    |
 *                                       record is in flight         |
 *                                                                   |
 *   RUNNING --savepoint --stop--> STOPPING --it completed--> FINISHED
 *      ^                             |      (restore: as from RUNNING)
 *      +------ the savepoint failed -+
 *   RUNNING, draining (savepoint --stop --drain: every TRIGGER says
 *     drain): as a bounded job below, but its final checkpoint is a
 *     savepoint (a failed one is taken again) and the driver writes
 *     JOB_STOPPED with it instead of JOB_FINISHED
 *   (FINISHED still takes COMMITTED: the driver writes JOB_STOPPED once
 *   every sink task committed the savepoint)
 *
 *   RUNNING --final checkpoint N completed, every sink task committed N,
 *             JOB_FINISHED written (the driver)--> FINISHED
 *   (a bounded job, coord_finish.c: every task's input ended; after N no
 *   checkpoint is triggered; a restore before JOB_FINISHED takes another
 *   final checkpoint in G+1)
 *
 *   A failure (a task failed, fell silent or was replaced; more failed
 *   checkpoints in a row than tolerated) asks the restart strategy
 *   (coord_restart.c):
 *
 *   WAITING, RUNNING, STOPPING --failure, delay d > 0--> RESTARTING
 *   RESTARTING --d elapsed (tick)--> restore: WAITING (G+1), or
 *                                    RESTORE_PENDING (a COMPLETE in flight)
 *   (delay 0: the restore at once, as above)
 *   WAITING, RUNNING, STOPPING, RESTARTING, RESTORE_PENDING --the strategy
 *     gives up, a failure that is not retriable, or the replayed history
 *     ends FAILED at start--> FAILED
 *   A failure in RESTARTING or RESTORE_PENDING joins that restore (not
 *   counted by the strategy). FINISHED and FAILED are terminal.
 *
 *   transition                        function (what makes it)
 *   start -> WAITING                  ksnap_coord_sm_start (coord_setup.c)
 *   WAITING -> RUNNING                ksnap__coord_check_ready (tick, and a
 *                                     REGISTER or HEARTBEAT making a task
 *                                     ready: coord_events.c)
 *   RUNNING -> STOPPING               ksnap_coord_sm_request_savepoint
 *                                     (coord_requests.c)
 *   WAITING, RUNNING, STOPPING        ksnap__coord_failure -> restarting()
 *     -> RESTARTING                   (the strategy's delay)
 *   RUNNING, STOPPING, WAITING,       ksnap__coord_restore (the delay
 *     RESTARTING -> WAITING           elapsed: tick; a failure with delay
 *                                     0; the operator's request; both
 *                                     in coord_requests.c; the
 *                                     driver's start after a coordinator
 *                                     restart)
 *   RUNNING, STOPPING, RESTARTING     ksnap__coord_restore, while a
 *     -> RESTORE_PENDING              COMPLETE is in flight (invariant 9)
 *   RESTORE_PENDING -> WAITING        ksnap_coord_sm_complete_committed
 *                                     (the COMPLETE settled), which calls
 *                                     ksnap__coord_restore
 *   STOPPING -> RUNNING               ksnap__coord_aborted (the savepoint
 *                                     was aborted), ksnap__coord_restore
 *   STOPPING -> FINISHED              completed()
 *   RUNNING -> FINISHED               ksnap_coord_sm_job_finished (the
 *                                     driver wrote JOB_FINISHED, or for a
 *                                     drain JOB_STOPPED)
 *   any but FINISHED -> FAILED        fail(), from ksnap__coord_failure
 *                                     (the strategy gave up, or not
 *                                     retriable), and ksnap_coord_sm_start
 *                                     (a replayed JOB_FAILED)
 *
 *   job_allowed[] (ksnap__coord_set_state) refuses anything else loudly
 *   (an ERR log):
 *     from \ to      WAITING RUNNING STOPPING RESTORE_P RESTARTING FIN FAILED
 *     WAITING           x       x                        x              x
 *     RUNNING           x               x        x       x          x   x
 *     STOPPING          x       x                x       x          x   x
 *     RESTORE_PENDING   x                                               x
 *     RESTARTING        x                        x                      x
 *     FINISHED, FAILED  -       -       -        -       -          -   -
 *
 * Per-checkpoint states: the diagram at the top of coord_ckpt.c.
 *
 * Call order (one way: a file calls only files below it):
 *   coord_events.c, coord_requests.c events: records, clock, requests
 *   coord_setup.c                    life cycle (hub)
 *   coord_sm.c                       job level (hub)
 *   coord_tasks.c (+ coord_owner.c), coord_ckpt.c, coord_retain.c,
 *   coord_trigger.c, coord_failures.c, coord_unresolved.c,
 *   coord_finish.c
 *                                    parts: private state each, none calls
 *                                    another; they return verdicts
 *                                    (coord_tasks_verdict_t, coord_abort_t,
 *                                    coord_completion_t) the hub acts on
 *   coord_actions.c                  action queue, logs, out-of-memory
 *
 * Invariants (tests/unit/test_coord_random.c checks them after every
 * action of random runs; test_coord_sm.c has one case per behaviour):
 *  1. Checkpoint ids strictly increase and are never reused: a new id is
 *     the highest ever seen (configured durable counter, replayed TRIGGER
 *     records, ids this instance used) plus one. [next_id() in
 *     coord_requests.c]
 *  2. The generation G never decreases; each restore raises it by one.
 *  3. Every pending checkpoint belongs to generation G: a restore aborts
 *     all pending checkpoints before it sends RESTORE(G).
 *  4. At most max-concurrent-checkpoints periodic or manual checkpoints are
 *     pending; savepoints are not limited (as Flink's forced triggers).
 *     [coord_trigger.c]
 *  5. A TRIGGER goes out only in RUNNING, i.e. after every task of the job
 *     graph registered with the current generation.
 *  6. A checkpoint reaches ACKED only when every task of the job graph has
 *     ACKed it with generation G; older generations' ACKs are ignored.
 *     [coord_ckpt.c]
 *  7. At most one checkpoint is WRITING_METADATA or COMPLETING at a time,
 *     in id order among the fully acked ones; SEND_COMPLETE(N) goes out
 *     only after WRITE_METADATA(N) was reported written, and only for a
 *     checkpoint of generation G. [coord_ckpt.c]
 *  8. A checkpoint is completed exactly when its COMPLETE record is
 *     reported committed (that commit is the decision); completing N
 *     aborts every pending checkpoint older than N that is not a savepoint
 *     (Flink's subsumption; not counted as a failure). [coord_ckpt.c]
 *  9. No RESTORE goes out while a COMPLETE record is in flight
 *     (RESTORE_PENDING waits for its result), so RESTORE(G, N) always
 *     names the latest checkpoint whose COMPLETE is committed, savepoints
 *     included (the sinks have committed up to it).
 * 10. RETIRE(N) never names a savepoint, one of the newest num-retained
 *     completed checkpoints, or a checkpoint a sink repair may still start
 *     from: N must be below the newest completed checkpoint at or below
 *     the oldest sink's last COMMITTED id. [coord_retain.c]
 * 11. Declined, expired and unwritable checkpoints (not savepoints) newer
 *     than the last completed one count as consecutive failures; a
 *     completion resets the count; a count above
 *     tolerable-failed-checkpoints is one failure of the job (the restart
 *     strategy decides, as Flink's failover does) and starts the count
 *     again. [coord_failures.c]
 * 12. Every RESTORE carries the owner of every task; a task's owner
 *     changes only by a RESTORE or an ASSIGN, and an instance that was
 *     replaced never owns the task again, unless the coordinator gives
 *     it to that instance as a member (a member's task runs only while a
 *     RESTORE or ASSIGN names it). [coord_owner.c, coord_balance.c]
 * 13. One restore per failure: the restart strategy is asked once per
 *     failure that is not part of a restore under way (RESTARTING,
 *     RESTORE_PENDING: it joins that one); no TRIGGER goes out and no
 *     checkpoint is pending in RESTARTING but a COMPLETE in flight; FAILED
 *     emits FAIL_JOB exactly once. [coord_restart.c]
 *
 * Decisions at the job level (Flink's CheckpointCoordinator and its
 * scheduler's failover are the reference; the other decisions are in the
 * files named above):
 *  - What is a failure of the job (the restart strategy decides): a task's
 *    FAILURE report or DECLINE with task_failed, a watched task silent for
 *    heartbeat.timeout that had registered in G (one that had not wrote
 *    nothing in G: its owner is only vacated), an instance replacing a
 *    live owner, more failed checkpoints in a row than tolerated. Not
 *    failures: the operator's restore request, the global failover of a
 *    restarted coordinator; they restore at once.
 *  - A FAILURE report that is not retriable (the task cannot start with
 *    this configuration) fails the job at once, whatever the strategy:
 *    every restore would fail the same way.
 *  - Savepoints are forced triggers: not limited by max-concurrent or
 *    min-pause, always ALIGNED, never retired, never subsumed; their
 *    failures do not count. A failed stop-with-savepoint leaves the job
 *    RUNNING; a restore cancels it.
 *  - A restore restores from the latest completed checkpoint, savepoints
 *    included: the sinks have committed up to it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "ksnap/log.h"

/* ------------------------------------------------- job-level transitions */

#define ST(x) (1u << KSNAP_COORD_##x)
static const unsigned job_allowed[] = {
    [KSNAP_COORD_WAITING] =
        ST(WAITING) | ST(RUNNING) | ST(RESTARTING) | ST(FAILED),
    [KSNAP_COORD_RUNNING] = ST(WAITING) | ST(STOPPING) | ST(RESTORE_PENDING) |
                            ST(RESTARTING) | ST(FINISHED) | ST(FAILED),
    [KSNAP_COORD_STOPPING] = ST(WAITING) | ST(RUNNING) | ST(RESTORE_PENDING) |
                             ST(RESTARTING) | ST(FINISHED) | ST(FAILED),
    [KSNAP_COORD_RESTORE_PENDING] = ST(WAITING) | ST(FAILED),
    [KSNAP_COORD_FINISHED] = 0,
    [KSNAP_COORD_FAILED] = 0,
    [KSNAP_COORD_RESTARTING] = ST(WAITING) | ST(RESTORE_PENDING) | ST(FAILED),
};
#undef ST

ksnap_err_t ksnap__coord_set_state(ksnap_coord_sm_t *sm,
                                   ksnap_coord_state_t to) {
  if (!(job_allowed[sm->state] & (1u << to))) {
    ksnap__coord_log(sm->acts, KSNAP_LOG_ERR,
                     "Illegal coordinator transition %s -> %s refused",
                     ksnap_coord_state_name(sm->state),
                     ksnap_coord_state_name(to));
    return KSNAP_ERR_STATE;
  }
  sm->state = to;
  return KSNAP_ERR_OK;
}

bool ksnap__coord_is_terminal(const ksnap_coord_sm_t *sm) {
  return sm->state == KSNAP_COORD_FINISHED || sm->state == KSNAP_COORD_FAILED;
}

void ksnap__coord_set_generation(ksnap_coord_sm_t *sm, int64_t generation) {
  sm->generation = generation;
  ksnap__coord_acts_stamp(sm->acts, generation);
}

static void fail(ksnap_coord_sm_t *sm, int64_t now_ms, const char *reason) {
  ksnap_coord_action_t *act;

  if (ksnap__coord_set_state(sm, KSNAP_COORD_FAILED))
    return;
  free(sm->failure_cause);
  sm->failure_cause = ksnap__coord_strdup(sm->acts, reason);
  ksnap__coord_log(sm->acts, KSNAP_LOG_ERR, "Job failed: %s", reason);
  /* Pending checkpoints die with the job; a COMPLETE in flight is left
   * alone (it may be committed: the decision is not ours any more). */
  ksnap__coord_ckpts_abort_all(sm->ckpts, now_ms, "job failed", true);
  if ((act = ksnap__coord_emit(sm->acts, KSNAP_COORD_ACT_FAIL_JOB)))
    act->text = ksnap__coord_strdup(sm->acts, reason);
}

void ksnap__coord_aborted(ksnap_coord_sm_t *sm, int64_t now_ms,
                          const coord_abort_t *v) {
  char why[512];

  if (!v->aborted)
    return;
  if (v->counted &&
      ksnap__coord_failures_count(sm->failures, v->id, v->is_savepoint,
                                  v->reason, why, sizeof(why)))
    ksnap__coord_failure(sm, now_ms, why, true);
  if (v->stop && sm->state == KSNAP_COORD_STOPPING) {
    ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                     "Stop-with-savepoint failed; the job keeps running");
    ksnap__coord_set_state(sm, KSNAP_COORD_RUNNING);
  }
  if (v->is_savepoint && sm->draining) { /* the final one, maybe */
    ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                     "Savepoint %" PRId64 " failed while draining: the "
                     "final savepoint is taken again", v->id);
    ksnap__coord_finish_retrigger(sm->finish);
  }
}

/* Every public event starts and ends here: NOMEM is sticky. */
ksnap_err_t ksnap__coord_enter_any(ksnap_coord_sm_t *sm) {
  if (ksnap__coord_is_oom(sm->acts))
    return KSNAP_ERR_NOMEM;
  if (!sm->started) {
    ksnap__coord_log(sm->acts, KSNAP_LOG_ERR,
                     "Event refused: the coordinator is not started");
    return KSNAP_ERR_STATE;
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__coord_enter(ksnap_coord_sm_t *sm, const char *what) {
  ksnap_err_t err = ksnap__coord_enter_any(sm);

  if (err || !ksnap__coord_is_terminal(sm))
    return err;
  ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING, "%s refused: the job is %s",
                   what, ksnap_coord_state_name(sm->state));
  return KSNAP_ERR_STATE;
}

ksnap_err_t ksnap__coord_leave(const ksnap_coord_sm_t *sm, ksnap_err_t err) {
  return ksnap__coord_is_oom(sm->acts) ? KSNAP_ERR_NOMEM : err;
}

/* ---------------------------------- readiness, finalization, retention */

void ksnap__coord_check_ready(ksnap_coord_sm_t *sm, int64_t now_ms) {
  if (sm->state != KSNAP_COORD_WAITING ||
      !ksnap__coord_tasks_ready(sm->tasks, now_ms, sm->generation))
    return;
  ksnap__coord_set_state(sm, KSNAP_COORD_RUNNING);
  ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                   "All %zu tasks registered in generation %" PRId64
                   ": checkpointing starts",
                   ksnap__coord_tasks_cnt(sm->tasks), sm->generation);
  ksnap__coord_sched_start(sm->sched, now_ms);
}

void ksnap__coord_finalize_next(ksnap_coord_sm_t *sm) {
  int64_t id;

  if (ksnap__coord_is_terminal(sm))
    return;
  id = ksnap__coord_ckpts_next_to_finalize(sm->ckpts);
  if (id != KSNAP_CHECKPOINT_NONE) {
    int64_t parent = ksnap__coord_retain_parent(sm->retain, id);
    ksnap__coord_origin_get(sm->origin, &parent); /* restored from it */
    ksnap__coord_ckpts_write_metadata(sm->ckpts, id, parent);
  }
}

void ksnap__coord_retire(ksnap_coord_sm_t *sm) {
  int64_t cmin;
  bool sinks;

  if (ksnap__coord_tasks_commit_floor(sm->tasks, &sinks, &cmin))
    ksnap__coord_retain_retire(sm->retain, sinks, cmin);
}

/* -------------------------------------------------------------- restore */

static void defer_restore(ksnap_coord_sm_t *sm, const char *reason) {
  if (sm->state == KSNAP_COORD_RESTORE_PENDING)
    return;
  free(sm->restore_reason);
  sm->restore_reason = ksnap__coord_strdup(sm->acts, reason);
  ksnap__coord_set_state(sm, KSNAP_COORD_RESTORE_PENDING);
  ksnap__coord_tasks_restore_pending(sm->tasks);
  ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                   "Restore deferred until the COMPLETE record in flight is "
                   "settled: %s",
                   reason);
}

ksnap_err_t ksnap__coord_restore(ksnap_coord_sm_t *sm, int64_t now_ms,
                                 const char *reason) {
  int64_t latest = ksnap__coord_retain_latest(sm->retain);
  const char *origin = ksnap__coord_origin_get(sm->origin, &latest);
  ksnap_coord_action_t *act;
  char why[256];

  if (ksnap__coord_is_terminal(sm))
    return KSNAP_ERR_STATE;
  if (ksnap__coord_ckpts_completing(sm->ckpts)) {
    defer_restore(sm, reason); /* invariant 9 */
    return KSNAP_ERR_OK;
  }
  if (sm->state == KSNAP_COORD_STOPPING) {
    ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                     "Stop-with-savepoint cancelled by the restore");
    ksnap__coord_set_state(sm, KSNAP_COORD_RUNNING);
  }
  ksnap__coord_set_generation(sm, sm->generation + 1);
  if (latest == KSNAP_CHECKPOINT_NONE)
    ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                     "Restoring the job in generation %" PRId64
                     " from no checkpoint (empty state): %s",
                     sm->generation, reason);
  else
    ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                     "Restoring the job in generation %" PRId64
                     " from checkpoint %" PRId64 ": %s",
                     sm->generation, latest, reason);
  snprintf(why, sizeof(why), "job restored in generation %" PRId64,
           sm->generation);
  ksnap__coord_ckpts_abort_all(sm->ckpts, now_ms, why, false); /* inv. 3 */
  ksnap__coord_balance_restore(sm, now_ms); /* members: the owners */
  if ((act = ksnap__coord_emit(sm->acts, KSNAP_COORD_ACT_SEND_RESTORE))) {
    act->checkpoint_id = latest;
    if (origin) /* NULL on no memory: sticky, the next event says so */
      act->text = ksnap__coord_strdup(sm->acts, origin);
    ksnap__coord_tasks_owner_table(sm->tasks, act); /* invariant 12 */
  }
  ksnap_coord_stats_restored(sm->stats, sm->generation, latest, now_ms);
  ksnap__coord_tasks_restored(sm->tasks, now_ms);
  ksnap__coord_sched_restored(sm->sched);
  ksnap__coord_finish_reset(sm->finish, sm->generation);
  free(sm->restore_reason);
  sm->restore_reason = NULL;
  return ksnap__coord_set_state(sm, KSNAP_COORD_WAITING);
}

/* -> RESTARTING: the restore goes out at @p now_ms + @p delay_ms (tick);
 * meanwhile nothing is triggered and nothing but a COMPLETE in flight
 * stays pending (invariant 13): the tasks' states of G are about to be
 * replaced. */
static void restarting(ksnap_coord_sm_t *sm, int64_t now_ms, int64_t delay_ms,
                       const char *reason) {
  if (sm->state == KSNAP_COORD_STOPPING)
    ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                     "Stop-with-savepoint cancelled by the failure");
  if (ksnap__coord_set_state(sm, KSNAP_COORD_RESTARTING))
    return;
  ksnap__coord_tasks_restore_pending(sm->tasks);
  sm->restart_at_ms = now_ms + delay_ms;
  free(sm->restore_reason);
  sm->restore_reason = ksnap__coord_strdup(sm->acts, reason);
  ksnap__coord_ckpts_abort_all(sm->ckpts, now_ms,
                               "the job is restarting after a failure", true);
}

void ksnap__coord_failure(ksnap_coord_sm_t *sm, int64_t now_ms,
                          const char *reason, bool retriable) {
  coord_restart_verdict_t v;
  char why[1024];

  if (ksnap__coord_is_terminal(sm))
    return;
  if (!retriable) {
    snprintf(why, sizeof(why), "%s (not retriable: every restore would "
             "fail the same way)", reason);
    fail(sm, now_ms, why);
    return;
  }
  if (sm->state == KSNAP_COORD_RESTARTING ||
      sm->state == KSNAP_COORD_RESTORE_PENDING) { /* invariant 13 */
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     "Failure joins the restore under way: %s", reason);
    return;
  }
  ksnap__coord_restart_failure(sm->restart, now_ms, &v);
  if (!v.restart) {
    snprintf(why, sizeof(why), "%s; the last failure: %s", v.why, reason);
    fail(sm, now_ms, why);
    return;
  }
  ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                   "Job failure: restoring in %" PRId64 " ms (restart %"
                   PRId64 " of restart-strategy %s): %s",
                   v.delay_ms, v.attempt,
                   ksnap__coord_restart_name(sm->restart), reason);
  if (v.delay_ms > 0)
    restarting(sm, now_ms, v.delay_ms, reason);
  else
    ksnap__coord_restore(sm, now_ms, reason);
}

ksnap_err_t ksnap_coord_sm_refuse_start(ksnap_coord_sm_t *sm, int64_t now_ms,
                                        const char *cause) {
  ksnap_err_t err = ksnap__coord_enter(sm, "Refusal");

  if (err)
    return err;
  fail(sm, now_ms, cause);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

/* ------------------------------------------------------ COMPLETE result */

/* The decision is made: record it, subsume older pending checkpoints
 * (invariant 8), stop after a stop-with-savepoint, retire. */
static void completed(ksnap_coord_sm_t *sm, coord_completion_t *c,
                      int64_t now_ms) {
  ksnap_coord_action_t *act;

  if (ksnap__coord_retain_add(sm->retain, c->id, c->generation,
                              c->is_savepoint, c->snaps, c->task_cnt))
    ksnap__coord_oom(sm->acts);
  ksnap__coord_origin_clear(sm->origin); /* the job's own point now */
  ksnap__coord_sched_completed(sm->sched, now_ms);
  ksnap__coord_failures_success(sm->failures, c->id);
  ksnap__coord_ckpts_subsume(sm->ckpts, c, now_ms);
  if (c->stop && sm->state == KSNAP_COORD_STOPPING) {
    ksnap__coord_ckpts_abort_all(sm->ckpts, now_ms,
                                 "job stopped with a savepoint", false);
    ksnap__coord_set_state(sm, KSNAP_COORD_FINISHED);
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     "Job stopped with savepoint %" PRId64, c->id);
    if ((act = ksnap__coord_emit(sm->acts, KSNAP_COORD_ACT_STOP_JOB)))
      act->checkpoint_id = c->id;
  } else if (sm->state == KSNAP_COORD_RUNNING &&
             c->generation == sm->generation &&
             (!sm->draining || c->is_savepoint) && /* a drain's: savepoint */
             ksnap__coord_finish_is_final(sm->finish, c->id)) {
    ksnap__coord_finish_set_final(sm->finish, c->id);
    ksnap__coord_ckpts_abort_all(sm->ckpts, now_ms,
                                 "the final checkpoint completed", false);
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     sm->draining
                         ? "Final savepoint %" PRId64 " completed: the job "
                           "stops once every sink task committed it"
                         : "Final checkpoint %" PRId64 " completed: the job "
                           "finishes once every sink task committed it",
                     c->id);
  }
  ksnap__coord_retire(sm);
}

int64_t ksnap_coord_sm_final_checkpoint(const ksnap_coord_sm_t *sm) {
  return sm->state == KSNAP_COORD_RUNNING
             ? ksnap__coord_finish_final(sm->finish)
             : KSNAP_CHECKPOINT_NONE;
}

ksnap_err_t ksnap_coord_sm_job_finished(ksnap_coord_sm_t *sm) {
  ksnap_err_t err = ksnap__coord_enter(sm, "Finish");
  int64_t id = ksnap_coord_sm_final_checkpoint(sm);

  if (err)
    return err;
  if (id == KSNAP_CHECKPOINT_NONE) {
    ksnap__coord_log(sm->acts, KSNAP_LOG_ERR, "Finish refused: no final "
                     "checkpoint completed in generation %" PRId64,
                     sm->generation);
    return ksnap__coord_leave(sm, KSNAP_ERR_STATE);
  }
  ksnap__coord_set_state(sm, KSNAP_COORD_FINISHED);
  ksnap_coord_stats_finished(sm->stats, id);
  ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                   sm->draining ? "Job stopped with final savepoint %" PRId64
                                  " after the drain"
                                : "Job finished with final checkpoint %" PRId64,
                   id);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

ksnap_err_t ksnap_coord_sm_complete_committed(ksnap_coord_sm_t *sm,
                                              int64_t now_ms, int64_t id,
                                              const char *errmsg) {
  ksnap_err_t err = ksnap__coord_enter(sm, "COMPLETE result");
  coord_completion_t c;
  coord_abort_t v;
  bool done;

  if (err)
    return err;
  err = ksnap__coord_ckpts_complete_result(sm->ckpts, now_ms, id, errmsg, &v,
                                           &c);
  if (err)
    return err;
  if ((done = c.ck != NULL))
    completed(sm, &c, now_ms);
  else
    ksnap__coord_aborted(sm, now_ms, &v);
  if (sm->state == KSNAP_COORD_RESTORE_PENDING) {
    char *reason = sm->restore_reason;
    sm->restore_reason = NULL;
    ksnap__coord_restore(sm, now_ms, reason ? reason : "deferred restore");
    free(reason);
  } else if (done && ksnap__coord_balance_due(sm)) {
    ksnap__coord_restore(sm, now_ms, "rebalance: a member joined");
  } else {
    ksnap__coord_finalize_next(sm);
  }
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}
