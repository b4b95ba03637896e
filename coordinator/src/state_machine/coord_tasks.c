/* The coordinator's view of the tasks (registration, heartbeats) and
 * recovery of the coordinator from the control topic's history (sink
 * commits and retention: coord_retain.c). Diagram and invariants:
 * coord_sm.c.
 *
 * Liveness: a task is watched once it was seen (REGISTER or HEARTBEAT of
 * any generation up to G: a task process keeps heartbeating while it
 * loads a restore), or from start on when the coordinator recovered from
 * a non-empty history. A watched task silent for heartbeat.timeout makes
 * the coordinator restore the job, and is unwatched until it is heard
 * from again (so a task that stays dead makes the job WAIT, logging which
 * tasks are missing, instead of restoring in a loop).
 * Readiness: REGISTER with generation G by the task's owner; which
 * instance owns a task, and what a REGISTER of another instance or a
 * claim does, is coord_owner.c's. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "ksnap/log.h"

ksnap_err_t ksnap__coord_tasks_init(ksnap_coord_sm_t *sm) {
  size_t n = 0, k = 0;

  for (size_t s = 0; s < ksnap_job_stage_cnt(sm->job); s++)
    n += (size_t)ksnap_job_stage_parallelism(ksnap_job_stage(sm->job, s));
  if (!(sm->tasks = calloc(n ? n : 1, sizeof(*sm->tasks))))
    return KSNAP_ERR_NOMEM;
  for (size_t s = 0; s < ksnap_job_stage_cnt(sm->job); s++) {
    const ksnap_job_stage_t *stage = ksnap_job_stage(sm->job, s);
    for (int32_t i = 0; i < ksnap_job_stage_parallelism(stage); i++) {
      coord_task_t *t = &sm->tasks[k++];
      ksnap_job_task_id(stage, i, t->name, sizeof(t->name));
      t->stage = ksnap_job_stage_name(stage);
      t->index = i;
      t->is_sink = ksnap_job_stage_is_sink(stage);
      t->committed = KSNAP_CHECKPOINT_NONE;
    }
  }
  sm->task_cnt = n;
  return KSNAP_ERR_OK;
}

coord_task_t *ksnap__coord_task_find(const ksnap_coord_sm_t *sm,
                                     const ksnap_task_id_t *task) {
  if (!task->stage)
    return NULL;
  for (size_t i = 0; i < sm->task_cnt; i++)
    if (sm->tasks[i].index == task->index &&
        !strcmp(sm->tasks[i].stage, task->stage))
      return &sm->tasks[i];
  return NULL;
}

size_t ksnap__coord_task_index(const ksnap_coord_sm_t *sm,
                               const coord_task_t *task) {
  return (size_t)(task - sm->tasks);
}

coord_task_t *ksnap__coord_known_task(ksnap_coord_sm_t *sm, const char *what,
                                const ksnap_task_id_t *task) {
  coord_task_t *t = ksnap__coord_task_find(sm, task);

  if (!t)
    ksnap__coord_log(sm, KSNAP_LOG_WARNING, "%s from unknown task %s[%d] "
                     "ignored",
                     what, task->stage ? task->stage : "(null)",
                     (int)task->index);
  return t;
}

/* ------------------------------------------------- readiness, liveness */

void ksnap__coord_check_ready(ksnap_coord_sm_t *sm, int64_t now_ms) {
  size_t ready = 0;
  char list[256];
  size_t len = 0;

  if (sm->state != KSNAP_COORD_WAITING)
    return;
  list[0] = '\0';
  for (size_t i = 0; i < sm->task_cnt; i++) {
    if (sm->tasks[i].ready)
      ready++;
    else if (len < sizeof(list) - 1)
      len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
                              len ? ", " : "", sm->tasks[i].name);
  }
  if (ready == sm->task_cnt) {
    ksnap__coord_set_state(sm, KSNAP_COORD_RUNNING);
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "All %zu tasks registered in generation %" PRId64
                     ": checkpointing starts",
                     sm->task_cnt, sm->generation);
    sm->next_periodic_ms = now_ms + sm->conf.interval_ms;
    sm->deferral_logged = sm->pause_logged = false;
    return;
  }
  if (now_ms - sm->waiting_log_ms >= sm->conf.heartbeat_timeout_ms) {
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "Waiting for %zu of %zu tasks to register in generation "
                     "%" PRId64 ": %s",
                     sm->task_cnt - ready, sm->task_cnt, sm->generation, list);
    sm->waiting_log_ms = now_ms;
  }
}

void ksnap__coord_check_heartbeats(ksnap_coord_sm_t *sm, int64_t now_ms) {
  coord_task_t *first = NULL;
  char why[256];

  for (size_t i = 0; i < sm->task_cnt; i++) {
    coord_task_t *t = &sm->tasks[i];
    if (!t->watched ||
        now_ms - t->last_seen_ms < sm->conf.heartbeat_timeout_ms)
      continue;
    t->watched = false;
    ksnap__coord_owner_vacate(t); /* presumed dead: see coord_owner.c */
    if (!first)
      first = t;
  }
  if (!first)
    return;
  snprintf(why, sizeof(why),
           "task %s sent no heartbeat for %" PRId64
           " ms (heartbeat.timeout=%" PRId64 " ms)",
           first->name, now_ms - first->last_seen_ms,
           sm->conf.heartbeat_timeout_ms);
  ksnap__coord_restore(sm, now_ms, why);
}

ksnap_err_t ksnap_coord_sm_register(ksnap_coord_sm_t *sm, int64_t now_ms,
                                    const ksnap_register_t *reg) {
  ksnap_err_t err = ksnap__coord_enter(sm, "REGISTER");
  const char *instance = reg->worker_id ? reg->worker_id : "";
  coord_task_t *t;

  if (err)
    return err;
  if (!(t = ksnap__coord_known_task(sm, "REGISTER", &reg->task)))
    return KSNAP_ERR_NOT_FOUND;
  if (reg->generation > sm->generation) {
    ksnap__coord_log(sm, KSNAP_LOG_ERR,
                     "REGISTER of task %s refused: generation %" PRId64
                     " is newer than the coordinator's %" PRId64,
                     t->name, reg->generation, sm->generation);
    return KSNAP_ERR_STATE;
  }
  if (reg->claim) {
    err = ksnap__coord_owner_claim(sm, now_ms, t, reg);
    return sm->oom ? KSNAP_ERR_NOMEM : err;
  }
  if (ksnap__coord_owner_refuses(sm, t, "REGISTER", instance))
    return KSNAP_ERR_OK;
  t->last_seen_ms = now_ms;
  t->watched = true;
  if (reg->generation < sm->generation) {
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "REGISTER of task %s from old generation %" PRId64
                     " ignored (current %" PRId64 ")",
                     t->name, reg->generation, sm->generation);
    return KSNAP_ERR_OK;
  }
  if (!ksnap__coord_owner_ready(sm, now_ms, t, instance))
    return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
  if (t->ready)
    return KSNAP_ERR_OK; /* the same registration again */
  t->ready = true;
  ksnap__coord_log(sm, KSNAP_LOG_INFO,
                   "Task %s registered in generation %" PRId64
                   " (instance %s, pid %d)",
                   t->name, sm->generation, instance, (int)reg->pid);
  ksnap__coord_check_ready(sm, now_ms);
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_sm_heartbeat(ksnap_coord_sm_t *sm, int64_t now_ms,
                                     const ksnap_heartbeat_t *hb) {
  ksnap_err_t err = ksnap__coord_enter(sm, "HEARTBEAT");
  coord_task_t *t;

  if (err)
    return err;
  if (!(t = ksnap__coord_known_task(sm, "HEARTBEAT", &hb->task)))
    return KSNAP_ERR_NOT_FOUND;
  if (hb->generation > sm->generation) {
    ksnap__coord_log(sm, KSNAP_LOG_ERR,
                     "HEARTBEAT of task %s refused: generation %" PRId64
                     " is newer than the coordinator's %" PRId64,
                     t->name, hb->generation, sm->generation);
    return KSNAP_ERR_STATE;
  }
  t->last_seen_ms = now_ms;
  t->watched = true;
  if (hb->generation == sm->generation && !t->ready && sm->hb_registers) {
    t->ready = true; /* registered with the previous coordinator */
    ksnap__coord_check_ready(sm, now_ms);
  }
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

/* ------------------------------------------------------------ recovery */

static coord_done_t *unresolved_take(ksnap_coord_sm_t *sm, int64_t id,
                                     coord_done_t *out) {
  for (size_t i = 0; i < sm->unresolved_cnt; i++) {
    if (sm->unresolved[i].id != id)
      continue;
    *out = sm->unresolved[i];
    sm->unresolved[i] = sm->unresolved[--sm->unresolved_cnt];
    return out;
  }
  return NULL;
}

ksnap_err_t ksnap_coord_sm_replay(ksnap_coord_sm_t *sm,
                                  const ksnap_control_record_t *rec) {
  coord_done_t d = {0};
  int64_t id = KSNAP_CHECKPOINT_NONE, gen = 0;

  if (sm->started)
    return KSNAP_ERR_STATE;
  switch (rec->type) {
  case KSNAP_CONTROL_TRIGGER:
    id = rec->u.trigger.checkpoint_id;
    gen = rec->u.trigger.generation;
    if (sm->unresolved_cnt == sm->unresolved_cap) {
      size_t cap = sm->unresolved_cap ? sm->unresolved_cap * 2 : 16;
      coord_done_t *u = realloc(sm->unresolved, cap * sizeof(*u));
      if (!u)
        return KSNAP_ERR_NOMEM;
      sm->unresolved = u;
      sm->unresolved_cap = cap;
    }
    sm->unresolved[sm->unresolved_cnt++] =
        (coord_done_t){.id = id,
                       .generation = gen,
                       .is_savepoint = rec->u.trigger.options.is_savepoint};
    break;
  case KSNAP_CONTROL_COMPLETE:
    id = rec->u.complete.checkpoint_id;
    gen = rec->u.complete.generation;
    if (!unresolved_take(sm, id, &d))
      d.is_savepoint = false; /* its TRIGGER is gone: assume a checkpoint */
    if (ksnap__coord_done_add(sm, id, gen, d.is_savepoint, NULL, 0))
      return KSNAP_ERR_NOMEM;
    if (sm->latest_completed == KSNAP_CHECKPOINT_NONE ||
        id > sm->latest_completed)
      sm->latest_completed = id;
    break;
  case KSNAP_CONTROL_ABORT:
    id = rec->u.abort.checkpoint_id;
    gen = rec->u.abort.generation;
    unresolved_take(sm, id, &d);
    break;
  case KSNAP_CONTROL_RESTORE:
    gen = rec->u.restore.generation;
    sm->unresolved_cnt = 0; /* tasks abort everything on RESTORE */
    ksnap__coord_owner_replay(sm, rec);
    break;
  case KSNAP_CONTROL_ASSIGN:
    gen = rec->u.assign.generation;
    ksnap__coord_owner_replay(sm, rec);
    break;
  default:
    return KSNAP_ERR_INVALID_ARG;
  }
  if (id != KSNAP_CHECKPOINT_NONE &&
      (sm->max_id == KSNAP_CHECKPOINT_NONE || id > sm->max_id))
    sm->max_id = id;
  if (gen > sm->generation)
    sm->generation = gen;
  sm->recovered = true;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_sm_start(ksnap_coord_sm_t *sm, int64_t now_ms) {
  if (sm->started || sm->oom)
    return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_STATE;
  sm->started = true;
  sm->waiting_log_ms = now_ms;
  for (size_t i = 0; i < sm->unresolved_cnt; i++) {
    coord_done_t *u = &sm->unresolved[i];
    ksnap_coord_action_t *act;
    if (u->generation != sm->generation)
      continue;
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Aborting checkpoint %" PRId64
                     " left pending by the previous coordinator",
                     u->id);
    if ((act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_SEND_ABORT))) {
      act->checkpoint_id = u->id;
      act->generation = u->generation;
      if (!(act->text = strdup("coordinator restarted")))
        sm->oom = true;
    }
  }
  sm->unresolved_cnt = 0;
  sm->last_success_id = sm->latest_completed; /* the failure count is 0 */
  if (sm->recovered) {
    sm->hb_registers = true;
    for (size_t i = 0; i < sm->task_cnt; i++) {
      sm->tasks[i].watched = true;
      sm->tasks[i].last_seen_ms = now_ms;
    }
  }
  if (sm->latest_completed == KSNAP_CHECKPOINT_NONE)
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "Coordinator started in generation %" PRId64
                     " with no completed checkpoint; next id %" PRId64,
                     sm->generation,
                     sm->max_id == KSNAP_CHECKPOINT_NONE ? 1 : sm->max_id + 1);
  else
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "Coordinator started in generation %" PRId64
                     ", latest completed checkpoint %" PRId64
                     "; next id %" PRId64,
                     sm->generation, sm->latest_completed, sm->max_id + 1);
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}
