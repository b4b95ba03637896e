/*
 * The checkpoint coordinator's decision logic (pure: no I/O, no clock).
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
 *
 *   RUNNING, STOPPING, RESTORE_PENDING --tolerable failures exceeded-->
 *   FAILED. FINISHED and FAILED are terminal.
 *
 *   Transition table (job_allowed[]; anything else is refused loudly):
 *     from \ to        WAITING RUNNING STOPPING RESTORE_P FINISHED FAILED
 *     WAITING             x       x
 *     RUNNING             x               x        x               x
 *     STOPPING            x       x                x        x      x
 *     RESTORE_PENDING     x                                        x
 *     FINISHED, FAILED    -       -       -        -        -      -
 *
 * Per-checkpoint states (ksnap_ckpt_state_t, coord_ckpt.c):
 *
 *   TRIGGERED --all tasks ACKed at G--> ACKED --its turn--> WRITING_METADATA
 *       |                                 |                      |
 *       | decline, expiry, subsumed,      | expiry, subsumed,    | ok
 *       | restore, job failed             | restore, job failed  v
 *       v                                 v                  COMPLETING
 *    ABORTED <----------------------------+--- write failed /    |
 *                                              restore           | COMPLETE
 *    ABORTED <---------- COMPLETE not committed ---------------- + committed
 *                                                                v
 *                                                            COMPLETED
 *
 *     TRIGGERED -> ACKED | ABORTED          WRITING_METADATA -> COMPLETING
 *     ACKED -> WRITING_METADATA | ABORTED                     | ABORTED
 *     COMPLETING -> COMPLETED | ABORTED     COMPLETED, ABORTED: final
 *
 * Events map to functions: tick -> ksnap_coord_sm_tick (periodic trigger,
 * expiry, heartbeats), REGISTER/HEARTBEAT and the replay of the control
 * topic -> coord_tasks.c, COMMITTED and retention -> coord_retain.c,
 * ACK/DECLINE/metadata result/COMPLETE result -> coord_ckpt.c, manual
 * trigger, savepoint, restore, task failure -> here. Settings, creation
 * and introspection: coord_setup.c.
 *
 * Invariants (tests/unit/test_coord_random.c checks them after every
 * action of random runs; test_coord_sm.c has one case per behaviour):
 *  1. Checkpoint ids strictly increase and are never reused: a new id is
 *     the highest ever seen (configured durable counter, replayed TRIGGER
 *     records, ids this instance used) plus one.
 *  2. The generation G never decreases; each restore raises it by one.
 *  3. Every pending checkpoint belongs to generation G: a restore aborts
 *     all pending checkpoints before it sends RESTORE(G).
 *  4. At most max-concurrent-checkpoints periodic or manual checkpoints are
 *     pending; savepoints are not limited (as Flink's forced triggers).
 *  5. A TRIGGER goes out only in RUNNING (savepoints: RUNNING), i.e. after
 *     every task of the job graph registered with the current generation.
 *  6. A checkpoint reaches ACKED only when every task of the job graph has
 *     ACKed it with generation G; older generations' ACKs are ignored.
 *  7. At most one checkpoint is WRITING_METADATA or COMPLETING at a time,
 *     in id order among the fully acked ones; SEND_COMPLETE(N) goes out
 *     only after WRITE_METADATA(N) was reported written, and only for a
 *     checkpoint of generation G.
 *  8. A checkpoint is completed exactly when its COMPLETE record is
 *     reported committed (the decision, DESIGN.md 4.5); completing N aborts
 *     every pending checkpoint older than N that is not a savepoint
 *     (Flink's subsumption; not counted as a failure).
 *  9. No RESTORE goes out while a COMPLETE record is in flight
 *     (RESTORE_PENDING waits for its result), so RESTORE(G, N) always
 *     names the latest checkpoint whose COMPLETE is committed, savepoints
 *     included (the sinks have committed up to it).
 * 10. RETIRE(N) never names a savepoint, one of the newest num-retained
 *     completed checkpoints, or a checkpoint a sink repair may still start
 *     from: N must be below the newest completed checkpoint at or below
 *     the oldest sink's last COMMITTED id (DESIGN.md 5).
 * 11. Declined, expired and unwritable checkpoints (not savepoints) newer
 *     than the last completed one count as consecutive failures (as
 *     Flink's CheckpointFailureManager); a completion resets the count;
 *     a count above tolerable-failed-checkpoints emits FAIL_JOB once.
 * 12. Every RESTORE carries the owner of every task (coord_owner.c); a
 *     task's owner changes only by a RESTORE or an ASSIGN, and an instance
 *     that was replaced never owns the task again.
 *
 * Decisions (Flink's CheckpointCoordinator, CheckpointRequestDecider and
 * CheckpointFailureManager are the reference; differences are named):
 *  - The first periodic trigger is one interval after RUNNING is entered
 *    (Flink draws a random initial delay; a fixed one is testable).
 *  - max-concurrent-checkpoints defers a due periodic or manual trigger
 *    ("Deferring checkpoint trigger: ..."), which fires at the first tick
 *    after a pending checkpoint ends. min-pause applies to periodic
 *    triggers only and is measured from the last completion (savepoints
 *    included; failures do not reset it, as in Flink): a periodic trigger
 *    inside it is skipped and rescheduled at last completion + min-pause
 *    ("Skipping checkpoint trigger: ..."). Each is logged once per trigger.
 *  - Savepoints are forced triggers: not limited by max-concurrent or
 *    min-pause, always ALIGNED, never retired, never subsumed; their
 *    failures do not count (Flink's job-level rule). A failed
 *    stop-with-savepoint leaves the job RUNNING.
 *  - Any completion, a savepoint's included, subsumes older pending
 *    checkpoints. Flink >= 1.15 skips that for non-stop savepoints because
 *    it does not notify tasks of them; in ksnap a savepoint's COMPLETE
 *    commits the sinks' transactions like any other, so it subsumes.
 *  - Expiry (timeout after the trigger) applies while ACKs are collected
 *    (TRIGGERED, ACKED); once the metadata write started, the driver's
 *    storage and Kafka timeouts decide through the result events.
 *  - Counted failures: decline, expiry, metadata write failed, COMPLETE
 *    not committed. Not counted: subsumed, aborted by a restore or by a
 *    coordinator restart, savepoints.
 *  - A restore restores from the latest completed checkpoint, savepoints
 *    included: the sinks have committed up to it.
 *  - A restarted coordinator (non-empty history) aborts the checkpoints
 *    the previous one left unresolved in generation G, presumes the tasks
 *    running (a HEARTBEAT at G counts as registration) and watches their
 *    heartbeats from its start. The consecutive-failure count starts at 0
 *    (it is not durable; nor is Flink's across a JobManager failover).
 */
#include "coord_sm.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "ksnap/log.h"

/* ------------------------------------------------------------- actions */

ksnap_coord_action_t *ksnap__coord_emit(ksnap_coord_sm_t *sm,
                                        ksnap_coord_act_type_t type) {
  ksnap_coord_action_t *act;

  if (sm->act_cnt == sm->act_cap) {
    size_t cap = sm->act_cap ? sm->act_cap * 2 : 16;
    ksnap_coord_action_t *acts = realloc(sm->acts, cap * sizeof(*acts));
    if (!acts) {
      sm->oom = true;
      return NULL;
    }
    sm->acts = acts;
    sm->act_cap = cap;
  }
  act = &sm->acts[sm->act_cnt++];
  memset(act, 0, sizeof(*act));
  act->type = type;
  act->checkpoint_id = KSNAP_CHECKPOINT_NONE;
  act->generation = sm->generation;
  return act;
}

void ksnap__coord_log(ksnap_coord_sm_t *sm, int level, const char *fmt, ...) {
  ksnap_coord_action_t *act;
  va_list ap;
  char *text;

  va_start(ap, fmt);
  if (vasprintf(&text, fmt, ap) < 0)
    text = NULL;
  va_end(ap);
  if (!text) {
    sm->oom = true;
    return;
  }
  act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_LOG);
  if (!act) {
    free(text);
    return;
  }
  act->level = level;
  act->text = text;
}

bool ksnap_coord_sm_next_action(ksnap_coord_sm_t *sm,
                                ksnap_coord_action_t *act) {
  if (sm->act_head == sm->act_cnt)
    return false;
  *act = sm->acts[sm->act_head++];
  if (sm->act_head == sm->act_cnt)
    sm->act_head = sm->act_cnt = 0;
  return true;
}

void ksnap_coord_action_cleanup(ksnap_coord_action_t *act) {
  if (!act)
    return;
  free(act->text);
  act->text = NULL;
  for (size_t i = 0; i < act->owner_cnt; i++)
    free(act->owners[i].instance); /* task stages are borrowed */
  free(act->owners);
  act->owners = NULL;
  act->owner_cnt = 0;
  free(act->instance);
  free(act->refused);
  act->instance = act->refused = NULL;
}

/* ------------------------------------------------- job-level transitions */

#define ST(x) (1u << KSNAP_COORD_##x)
static const unsigned job_allowed[] = {
    [KSNAP_COORD_WAITING] = ST(WAITING) | ST(RUNNING),
    [KSNAP_COORD_RUNNING] =
        ST(WAITING) | ST(STOPPING) | ST(RESTORE_PENDING) | ST(FAILED),
    [KSNAP_COORD_STOPPING] = ST(WAITING) | ST(RUNNING) | ST(RESTORE_PENDING) |
                             ST(FINISHED) | ST(FAILED),
    [KSNAP_COORD_RESTORE_PENDING] = ST(WAITING) | ST(FAILED),
    [KSNAP_COORD_FINISHED] = 0,
    [KSNAP_COORD_FAILED] = 0,
};
#undef ST

ksnap_err_t ksnap__coord_set_state(ksnap_coord_sm_t *sm,
                                   ksnap_coord_state_t to) {
  if (!(job_allowed[sm->state] & (1u << to))) {
    ksnap__coord_log(sm, KSNAP_LOG_ERR,
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

void ksnap__coord_fail(ksnap_coord_sm_t *sm, int64_t now_ms,
                       const char *reason) {
  ksnap_coord_action_t *act;

  if (ksnap__coord_set_state(sm, KSNAP_COORD_FAILED))
    return;
  ksnap__coord_log(sm, KSNAP_LOG_ERR, "Job failed: %s", reason);
  /* Pending checkpoints die with the job; a COMPLETE in flight is left
   * alone (it may be committed: the decision is not ours any more). The
   * checkpoint being aborted by our caller is ABORTED already. */
  for (size_t i = sm->pending_cnt; i-- > 0;) {
    coord_ckpt_t *ck = sm->pending[i];
    if (ck->state != KSNAP_CKPT_COMPLETING && ck->state != KSNAP_CKPT_ABORTED)
      ksnap__coord_ckpt_abort(sm, ck, now_ms, "job failed", false);
  }
  act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_FAIL_JOB);
  if (act && !(act->text = strdup(reason)))
    sm->oom = true;
}

/* Every public event starts and ends here: NOMEM is sticky. */
static ksnap_err_t enter(ksnap_coord_sm_t *sm) {
  if (sm->oom)
    return KSNAP_ERR_NOMEM;
  if (!sm->started) {
    ksnap__coord_log(sm, KSNAP_LOG_ERR,
                     "Event refused: the coordinator is not started");
    return KSNAP_ERR_STATE;
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__coord_enter(ksnap_coord_sm_t *sm, const char *what) {
  ksnap_err_t err = enter(sm);

  if (err || !ksnap__coord_is_terminal(sm))
    return err;
  ksnap__coord_log(sm, KSNAP_LOG_WARNING, "%s refused: the job is %s", what,
                   ksnap_coord_state_name(sm->state));
  return KSNAP_ERR_STATE;
}

static ksnap_err_t leave(ksnap_coord_sm_t *sm, ksnap_err_t err) {
  return sm->oom ? KSNAP_ERR_NOMEM : err;
}

/* ----------------------------------------------------------- triggering */

static int64_t next_id(ksnap_coord_sm_t *sm) {
  sm->max_id = sm->max_id == KSNAP_CHECKPOINT_NONE ? 1 : sm->max_id + 1;
  return sm->max_id;
}

static coord_ckpt_t *trigger(ksnap_coord_sm_t *sm, int64_t now_ms,
                             const ksnap_ckpt_options_t *options, bool stop) {
  int64_t id = next_id(sm);
  coord_ckpt_t *ck = ksnap__coord_ckpt_new(sm, id, now_ms, options);
  ksnap_coord_action_t *act;

  if (!ck)
    return NULL;
  ck->stop = stop;
  ksnap__coord_log(sm, KSNAP_LOG_INFO,
                   "Triggering checkpoint %" PRId64 " (type=%s%s) @ %" PRId64
                   " in generation %" PRId64,
                   id, options->is_savepoint ? "SAVEPOINT" : "CHECKPOINT",
                   stop ? ", stop" : "", now_ms, sm->generation);
  if ((act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_TRIGGER))) {
    act->checkpoint_id = id;
    act->timestamp_ms = now_ms;
    act->options = *options;
  }
  return ck;
}

/* The periodic / manual trigger decision (Flink's CheckpointRequestDecider:
 * max-concurrent defers the request, min-pause drops the periodic one and
 * reschedules it at the last completion + min-pause). */
static void maybe_trigger(ksnap_coord_sm_t *sm, int64_t now_ms) {
  ksnap_ckpt_options_t options = {sm->conf.mode, false};
  bool periodic = now_ms >= sm->next_periodic_ms;

  if (sm->state != KSNAP_COORD_RUNNING ||
      (!periodic && !sm->manual_requested))
    return;
  if ((int)sm->pending_cnt >= sm->conf.max_concurrent) {
    if (!sm->deferral_logged)
      ksnap__coord_log(sm, KSNAP_LOG_INFO,
                       "Deferring checkpoint trigger: %zu checkpoints "
                       "pending (max-concurrent-checkpoints=%d)",
                       sm->pending_cnt, sm->conf.max_concurrent);
    sm->deferral_logged = true;
    return;
  }
  if (!sm->manual_requested && sm->conf.min_pause_ms > 0 &&
      sm->last_completion_ms >= 0 &&
      now_ms < sm->last_completion_ms + sm->conf.min_pause_ms) {
    if (!sm->pause_logged)
      ksnap__coord_log(sm, KSNAP_LOG_INFO,
                       "Skipping checkpoint trigger: min-pause of %" PRId64
                       " ms since the last completion not elapsed (next at "
                       "%" PRId64 ")",
                       sm->conf.min_pause_ms,
                       sm->last_completion_ms + sm->conf.min_pause_ms);
    sm->pause_logged = true;
    sm->next_periodic_ms = sm->last_completion_ms + sm->conf.min_pause_ms;
    return;
  }
  if (!trigger(sm, now_ms, &options, false))
    return;
  sm->manual_requested = false;
  sm->deferral_logged = sm->pause_logged = false;
  sm->next_periodic_ms = now_ms + sm->conf.interval_ms;
}

ksnap_err_t ksnap_coord_sm_tick(ksnap_coord_sm_t *sm, int64_t now_ms) {
  ksnap_err_t err = enter(sm);

  if (err || ksnap__coord_is_terminal(sm))
    return err;
  ksnap__coord_expire(sm, now_ms);
  ksnap__coord_check_heartbeats(sm, now_ms);
  ksnap__coord_check_ready(sm, now_ms);
  maybe_trigger(sm, now_ms);
  return leave(sm, KSNAP_ERR_OK);
}

ksnap_err_t ksnap_coord_sm_request_checkpoint(ksnap_coord_sm_t *sm,
                                              int64_t now_ms) {
  ksnap_err_t err = enter(sm);

  if (err)
    return err;
  if (sm->state != KSNAP_COORD_RUNNING) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Checkpoint request refused: the job is %s",
                     ksnap_coord_state_name(sm->state));
    return leave(sm, KSNAP_ERR_STATE);
  }
  sm->manual_requested = true;
  maybe_trigger(sm, now_ms);
  return leave(sm, KSNAP_ERR_OK);
}

ksnap_err_t ksnap_coord_sm_request_savepoint(ksnap_coord_sm_t *sm,
                                             int64_t now_ms, bool stop,
                                             int64_t *idp) {
  ksnap_ckpt_options_t options = {KSNAP_CKPT_ALIGNED, true};
  ksnap_err_t err = enter(sm);
  coord_ckpt_t *ck;

  if (err)
    return err;
  if (sm->state != KSNAP_COORD_RUNNING) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Savepoint request refused: the job is %s",
                     ksnap_coord_state_name(sm->state));
    return leave(sm, KSNAP_ERR_STATE);
  }
  if (!(ck = trigger(sm, now_ms, &options, stop)))
    return leave(sm, KSNAP_ERR_NOMEM);
  if (idp)
    *idp = ck->id;
  if (stop)
    ksnap__coord_set_state(sm, KSNAP_COORD_STOPPING);
  return leave(sm, KSNAP_ERR_OK);
}

/* -------------------------------------------------------------- restore */

ksnap_err_t ksnap__coord_restore(ksnap_coord_sm_t *sm, int64_t now_ms,
                                 const char *reason) {
  ksnap_coord_action_t *act;
  char why[256];

  if (ksnap__coord_is_terminal(sm))
    return KSNAP_ERR_STATE;
  if (ksnap__coord_completing(sm)) {
    /* Invariant 9: the COMPLETE in flight decides what RESTORE names. */
    if (sm->state != KSNAP_COORD_RESTORE_PENDING) {
      free(sm->restore_reason);
      if (!(sm->restore_reason = strdup(reason)))
        sm->oom = true;
      ksnap__coord_set_state(sm, KSNAP_COORD_RESTORE_PENDING);
      ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                       "Restore deferred until the COMPLETE record in "
                       "flight is settled: %s",
                       reason);
    }
    return KSNAP_ERR_OK;
  }
  if (sm->state == KSNAP_COORD_STOPPING) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Stop-with-savepoint cancelled by the restore");
    ksnap__coord_set_state(sm, KSNAP_COORD_RUNNING);
  }
  sm->generation++;
  if (sm->latest_completed == KSNAP_CHECKPOINT_NONE)
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Restoring the job in generation %" PRId64
                     " from no checkpoint (empty state): %s",
                     sm->generation, reason);
  else
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Restoring the job in generation %" PRId64
                     " from checkpoint %" PRId64 ": %s",
                     sm->generation, sm->latest_completed, reason);
  snprintf(why, sizeof(why), "job restored in generation %" PRId64,
           sm->generation);
  while (sm->pending_cnt > 0) /* invariant 3 */
    ksnap__coord_ckpt_abort(sm, sm->pending[sm->pending_cnt - 1], now_ms, why,
                            false);
  if ((act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_SEND_RESTORE))) {
    act->checkpoint_id = sm->latest_completed;
    ksnap__coord_owner_table(sm, act);
  }
  ksnap_coord_stats_restored(sm->stats, sm->generation, sm->latest_completed,
                             now_ms);
  for (size_t i = 0; i < sm->task_cnt; i++)
    sm->tasks[i].ready = false;
  sm->hb_registers = false;
  sm->manual_requested = false;
  sm->waiting_log_ms = now_ms;
  free(sm->restore_reason);
  sm->restore_reason = NULL;
  return ksnap__coord_set_state(sm, KSNAP_COORD_WAITING);
}

ksnap_err_t ksnap_coord_sm_request_restore(ksnap_coord_sm_t *sm,
                                           int64_t now_ms,
                                           const char *reason) {
  ksnap_err_t err = enter(sm);

  if (err)
    return err;
  if (ksnap__coord_is_terminal(sm)) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Restore request refused: the job is %s",
                     ksnap_coord_state_name(sm->state));
    return leave(sm, KSNAP_ERR_STATE);
  }
  return leave(sm, ksnap__coord_restore(sm, now_ms, reason));
}

ksnap_err_t ksnap_coord_sm_task_failed(ksnap_coord_sm_t *sm, int64_t now_ms,
                                       const ksnap_task_id_t *task,
                                       int64_t generation,
                                       const char *reason) {
  ksnap_err_t err = enter(sm);
  coord_task_t *t;
  char why[512];

  if (err)
    return err;
  if (!(t = ksnap__coord_known_task(sm, "Failure report", task)))
    return leave(sm, KSNAP_ERR_NOT_FOUND);
  if (generation < sm->generation) {
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "Failure report of task %s from generation %" PRId64
                     " ignored (current %" PRId64 ")",
                     t->name, generation, sm->generation);
    return leave(sm, KSNAP_ERR_OK);
  }
  if (generation > sm->generation || ksnap__coord_is_terminal(sm)) {
    ksnap__coord_log(sm, KSNAP_LOG_ERR,
                     "Failure report of task %s in generation %" PRId64
                     " refused (coordinator: generation %" PRId64 ", %s)",
                     t->name, generation, sm->generation,
                     ksnap_coord_state_name(sm->state));
    return leave(sm, KSNAP_ERR_STATE);
  }
  snprintf(why, sizeof(why), "task %s failed: %s", t->name, reason);
  return leave(sm, ksnap__coord_restore(sm, now_ms, why));
}
