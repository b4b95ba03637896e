/* The coordinator's clock and the operator's requests as events of the
 * state machine (hub; see the call order at the top of coord_sm.c):
 * tick (expiry, silent tasks, the restart delay, readiness, the periodic
 * trigger), a checkpoint, a savepoint (stop-with-savepoint: RUNNING ->
 * STOPPING), a drain (every TRIGGER says drain; once every task's input
 * ended, a savepoint is the final checkpoint: drained()) and a restore on
 * request. New checkpoint ids come from here
 * (invariant 1); a TRIGGER goes out only in RUNNING (invariant 5). The
 * job-level transitions they make are coord_sm.c's. */
#include <inttypes.h>
#include <stdlib.h>

#include "coord_int.h"
#include "ksnap/log.h"

static int64_t next_id(ksnap_coord_sm_t *sm) { /* invariant 1 */
  sm->max_id = sm->max_id == KSNAP_CHECKPOINT_NONE ? 1 : sm->max_id + 1;
  return sm->max_id;
}

/* A draining job whose every task's input ended: its final checkpoint is
 * a savepoint, and the job stops with it once every sink task committed
 * it (as a bounded job finishes: coord_sm.c completed()). */
static void drained(ksnap_coord_sm_t *sm, int64_t now_ms) {
  ksnap_ckpt_options_t options = {KSNAP_CKPT_ALIGNED, true, true};
  int64_t id = next_id(sm);

  ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                   "Every task's input ended (drain): the final savepoint %"
                   PRId64 " is triggered now; the job stops once every sink "
                   "task committed it", id);
  if (!ksnap__coord_ckpts_trigger(sm->ckpts, id, sm->generation, now_ms,
                                  &options, false))
    ksnap__coord_oom(sm->acts);
}

/* A periodic or manual checkpoint if coord_trigger.c says one is due. */
static void maybe_trigger(ksnap_coord_sm_t *sm, int64_t now_ms) {
  ksnap_ckpt_options_t options = {sm->conf.mode, false, sm->draining};

  if (sm->state != KSNAP_COORD_RUNNING || /* invariant 5 */
      ksnap__coord_finish_final(sm->finish) != KSNAP_CHECKPOINT_NONE)
    return; /* the final checkpoint completed: nothing more to take */
  if (ksnap__coord_finish_trigger_due(sm->finish)) {
    if (sm->draining) {
      drained(sm, now_ms);
      return;
    }
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     "Every task's input ended: the final checkpoint is "
                     "triggered now");
    ksnap__coord_sched_request(sm->sched);
  }
  if (!ksnap__coord_sched_due(sm->sched, now_ms,
                              ksnap__coord_ckpts_cnt(sm->ckpts)))
    return;
  if (ksnap__coord_ckpts_trigger(sm->ckpts, next_id(sm), sm->generation,
                                 now_ms, &options, false))
    ksnap__coord_sched_triggered(sm->sched, now_ms);
}

static void expire(ksnap_coord_sm_t *sm, int64_t now_ms) {
  coord_abort_t v;

  while (!ksnap__coord_is_terminal(sm) &&
         ksnap__coord_ckpts_expire_one(sm->ckpts, now_ms, &v))
    ksnap__coord_aborted(sm, now_ms, &v);
}

ksnap_err_t ksnap_coord_sm_tick(ksnap_coord_sm_t *sm, int64_t now_ms) {
  ksnap_err_t err = ksnap__coord_enter_any(sm);
  coord_tasks_verdict_t v;

  if (err || ksnap__coord_is_terminal(sm))
    return err;
  expire(sm, now_ms);
  ksnap__coord_balance_tick(sm, now_ms);
  if (ksnap__coord_tasks_silent(sm->tasks, now_ms, sm->generation, &v))
    ksnap__coord_failure(sm, now_ms, v.why, true);
  if (sm->state == KSNAP_COORD_RESTARTING && now_ms >= sm->restart_at_ms) {
    char *reason = sm->restore_reason;
    sm->restore_reason = NULL;
    ksnap__coord_restore(sm, now_ms, reason ? reason : "restart");
    free(reason);
  }
  ksnap__coord_check_ready(sm, now_ms);
  maybe_trigger(sm, now_ms);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

/* The operator's request named @p what is refused unless RUNNING. */
static bool running(ksnap_coord_sm_t *sm, const char *what) {
  if (sm->state == KSNAP_COORD_RUNNING)
    return true;
  ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                   "%s request refused: the job is %s", what,
                   ksnap_coord_state_name(sm->state));
  return false;
}

ksnap_err_t ksnap_coord_sm_request_checkpoint(ksnap_coord_sm_t *sm,
                                              int64_t now_ms) {
  ksnap_err_t err = ksnap__coord_enter_any(sm);

  if (err)
    return err;
  if (!running(sm, "Checkpoint"))
    return ksnap__coord_leave(sm, KSNAP_ERR_STATE);
  ksnap__coord_sched_request(sm->sched);
  maybe_trigger(sm, now_ms);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

ksnap_err_t ksnap_coord_sm_request_savepoint(ksnap_coord_sm_t *sm,
                                             int64_t now_ms, bool stop,
                                             int64_t *idp) {
  ksnap_ckpt_options_t options = {KSNAP_CKPT_ALIGNED, true, sm->draining};
  ksnap_err_t err = ksnap__coord_enter_any(sm);
  int64_t id;

  if (err)
    return err;
  if (!running(sm, "Savepoint"))
    return ksnap__coord_leave(sm, KSNAP_ERR_STATE);
  id = next_id(sm);
  if (!ksnap__coord_ckpts_trigger(sm->ckpts, id, sm->generation, now_ms,
                                  &options, stop))
    return ksnap__coord_leave(sm, KSNAP_ERR_NOMEM);
  if (idp)
    *idp = id;
  if (stop)
    ksnap__coord_set_state(sm, KSNAP_COORD_STOPPING);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

ksnap_err_t ksnap_coord_sm_request_drain(ksnap_coord_sm_t *sm,
                                         int64_t now_ms) {
  ksnap_err_t err = ksnap__coord_enter_any(sm);

  if (err)
    return err;
  if (!running(sm, "Drain"))
    return ksnap__coord_leave(sm, KSNAP_ERR_STATE);
  if (!sm->draining)
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     "Draining the job: every input ends at the position of "
                     "the next checkpoint, then the job stops with a "
                     "savepoint");
  sm->draining = true;
  ksnap__coord_sched_request(sm->sched);
  maybe_trigger(sm, now_ms);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

bool ksnap_coord_sm_draining(const ksnap_coord_sm_t *sm) {
  return sm->draining;
}

ksnap_err_t ksnap_coord_sm_request_restore(ksnap_coord_sm_t *sm,
                                           int64_t now_ms,
                                           const char *reason) {
  ksnap_err_t err = ksnap__coord_enter_any(sm);

  if (err)
    return err;
  if (ksnap__coord_is_terminal(sm)) {
    ksnap__coord_log(sm->acts, KSNAP_LOG_WARNING,
                     "Restore request refused: the job is %s",
                     ksnap_coord_state_name(sm->state));
    return ksnap__coord_leave(sm, KSNAP_ERR_STATE);
  }
  return ksnap__coord_leave(sm, ksnap__coord_restore(sm, now_ms, reason));
}
