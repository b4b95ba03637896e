/* The ack topic's records and the metadata result as events of the
 * coordinator state machine (hub; see the call order at the top of
 * coord_sm.c). Each event finds its task, lets the part that owns the
 * record decide (coord_tasks.c, coord_ckpt.c) and acts on the verdict
 * through the job-level functions of coord_sm.c.
 *
 * Return codes: a part's result is final when it asks for nothing; once
 * the hub acted on a verdict, KSNAP_ERR_NOMEM replaces it if an
 * allocation failed meanwhile. */
#include <inttypes.h>
#include <stdio.h>

#include "coord_int.h"
#include "ksnap/log.h"

static ksnap_err_t tasks_verdict(ksnap_coord_sm_t *sm, int64_t now_ms,
                                 const coord_tasks_verdict_t *v,
                                 ksnap_err_t err) {
  if (!v->restore && !v->ready)
    return err;
  if (v->restore)
    ksnap__coord_failure(sm, now_ms, v->why, true);
  if (v->ready)
    ksnap__coord_check_ready(sm, now_ms);
  return ksnap__coord_leave(sm, err);
}

ksnap_err_t ksnap_coord_sm_register(ksnap_coord_sm_t *sm, int64_t now_ms,
                                    const ksnap_register_t *reg) {
  ksnap_err_t err = ksnap__coord_enter(sm, "REGISTER");
  coord_tasks_verdict_t v;
  coord_task_t *t;

  if (err)
    return err;
  if (!(t = ksnap__coord_tasks_known(sm->tasks, "REGISTER", &reg->task)))
    return KSNAP_ERR_NOT_FOUND;
  err = ksnap__coord_tasks_register(sm->tasks, now_ms, t, reg, sm->generation,
                                    &v);
  return tasks_verdict(sm, now_ms, &v, err);
}

ksnap_err_t ksnap_coord_sm_heartbeat(ksnap_coord_sm_t *sm, int64_t now_ms,
                                     const ksnap_heartbeat_t *hb) {
  ksnap_err_t err = ksnap__coord_enter(sm, "HEARTBEAT");
  coord_tasks_verdict_t v;
  coord_task_t *t;

  if (err)
    return err;
  if (!(t = ksnap__coord_tasks_known(sm->tasks, "HEARTBEAT", &hb->task)))
    return KSNAP_ERR_NOT_FOUND;
  err = ksnap__coord_tasks_heartbeat(sm->tasks, now_ms, t, hb, sm->generation,
                                     &v);
  if (!err && hb->input_ended) /* the final trigger: coord_requests.c */
    ksnap__coord_finish_ended(sm->finish,
                              ksnap__coord_task_index(sm->tasks, t),
                              hb->generation, KSNAP_CHECKPOINT_NONE);
  return tasks_verdict(sm, now_ms, &v, err);
}

ksnap_err_t ksnap_coord_sm_committed(ksnap_coord_sm_t *sm, int64_t now_ms,
                                     const ksnap_committed_t *committed) {
  /* FINISHED too: a job stopped with a savepoint hears its sinks commit
   * it, and the driver records the stop once they did */
  ksnap_err_t err = sm->state == KSNAP_COORD_FINISHED
                        ? KSNAP_ERR_OK
                        : ksnap__coord_enter(sm, "COMMITTED");
  bool advanced;
  coord_task_t *t;

  (void)now_ms;
  if (err)
    return err;
  if (!(t = ksnap__coord_tasks_known(sm->tasks, "COMMITTED",
                                     &committed->task)))
    return KSNAP_ERR_NOT_FOUND;
  err = ksnap__coord_tasks_committed(sm->tasks, t, committed->checkpoint_id,
                                     sm->max_id, &advanced);
  if (!advanced)
    return err;
  ksnap__coord_retire(sm);
  return ksnap__coord_leave(sm, err);
}

ksnap_err_t ksnap_coord_sm_ack(ksnap_coord_sm_t *sm, int64_t now_ms,
                               ksnap_ack_t *ack) {
  ksnap_err_t err = ksnap__coord_enter(sm, "ACK");
  coord_task_t *t;
  bool full;

  if (err)
    return err;
  if (!(t = ksnap__coord_tasks_known(sm->tasks, "ACK", &ack->snapshot.task)))
    return KSNAP_ERR_NOT_FOUND;
  err = ksnap__coord_ckpts_ack(sm->ckpts, now_ms,
                               ksnap__coord_task_index(sm->tasks, t),
                               ksnap__coord_task_name(t), ack, sm->generation,
                               sm->max_id, &full);
  if (!err && ack->input_ended) /* a final checkpoint: coord_sm.c */
    ksnap__coord_finish_ended(sm->finish,
                              ksnap__coord_task_index(sm->tasks, t),
                              ack->generation, ack->checkpoint_id);
  if (!full)
    return err;
  ksnap__coord_finalize_next(sm);
  return ksnap__coord_leave(sm, err);
}

ksnap_err_t ksnap_coord_sm_decline(ksnap_coord_sm_t *sm, int64_t now_ms,
                                   const ksnap_decline_t *decline) {
  ksnap_err_t err = ksnap__coord_enter(sm, "DECLINE");
  coord_abort_t v;
  coord_task_t *t;
  char why[512];

  if (err)
    return err;
  if (!(t = ksnap__coord_tasks_known(sm->tasks, "DECLINE", &decline->task)))
    return KSNAP_ERR_NOT_FOUND;
  err = ksnap__coord_ckpts_decline(sm->ckpts, now_ms,
                                   ksnap__coord_task_name(t), decline,
                                   sm->generation, &v);
  if (!v.aborted)
    return err;
  ksnap__coord_aborted(sm, now_ms, &v);
  if (decline->task_failed) { /* a failure; the abort was not counted */
    snprintf(why, sizeof(why), "task %s failed: %s",
             ksnap__coord_task_name(t),
             decline->reason ? decline->reason : "");
    ksnap__coord_failure(sm, now_ms, why, true);
  }
  return ksnap__coord_leave(sm, err);
}

ksnap_err_t ksnap_coord_sm_metadata_written(ksnap_coord_sm_t *sm,
                                            int64_t now_ms, int64_t id,
                                            const char *errmsg) {
  ksnap_err_t err = ksnap__coord_enter(sm, "Metadata result");
  coord_abort_t v;

  if (err)
    return err;
  err = ksnap__coord_ckpts_metadata_written(sm->ckpts, now_ms, id, errmsg,
                                            &v);
  if (!v.aborted)
    return err;
  ksnap__coord_aborted(sm, now_ms, &v);
  ksnap__coord_finalize_next(sm);
  return ksnap__coord_leave(sm, err);
}

/* A task's failure report: a failure of the job unless stale. */
static ksnap_err_t task_failure(ksnap_coord_sm_t *sm, int64_t now_ms,
                                const ksnap_task_id_t *task,
                                int64_t generation, const char *reason,
                                bool retriable) {
  ksnap_err_t err = ksnap__coord_enter_any(sm);
  const char *name;
  coord_task_t *t;
  char why[512];

  if (err)
    return err;
  if (!(t = ksnap__coord_tasks_known(sm->tasks, "Failure report", task)))
    return ksnap__coord_leave(sm, KSNAP_ERR_NOT_FOUND);
  name = ksnap__coord_task_name(t);
  if (generation < sm->generation) {
    ksnap__coord_log(sm->acts, KSNAP_LOG_INFO,
                     "Failure report of task %s from generation %" PRId64
                     " ignored (current %" PRId64 ")",
                     name, generation, sm->generation);
    return ksnap__coord_leave(sm, KSNAP_ERR_OK);
  }
  if (generation > sm->generation || ksnap__coord_is_terminal(sm)) {
    ksnap__coord_log(sm->acts, KSNAP_LOG_ERR,
                     "Failure report of task %s in generation %" PRId64
                     " refused (coordinator: generation %" PRId64 ", %s)",
                     name, generation, sm->generation,
                     ksnap_coord_state_name(sm->state));
    return ksnap__coord_leave(sm, KSNAP_ERR_STATE);
  }
  snprintf(why, sizeof(why), "task %s failed: %s", name, reason);
  ksnap__coord_failure(sm, now_ms, why, retriable);
  return ksnap__coord_leave(sm, KSNAP_ERR_OK);
}

ksnap_err_t ksnap_coord_sm_task_failed(ksnap_coord_sm_t *sm, int64_t now_ms,
                                       const ksnap_task_id_t *task,
                                       int64_t generation,
                                       const char *reason) {
  return task_failure(sm, now_ms, task, generation, reason, true);
}

ksnap_err_t ksnap_coord_sm_failure(ksnap_coord_sm_t *sm, int64_t now_ms,
                                   const ksnap_task_failure_t *f) {
  return task_failure(sm, now_ms, &f->task, f->generation,
                      f->reason ? f->reason : "", f->retriable);
}
