/* Task ownership: at most one instance of each task runs in a generation.
 *
 * An instance is one run of a worker process (the worker_id of its
 * REGISTER records, unique per process start). The coordinator keeps, per
 * task, its owner ("" when vacant) and the instances it replaced; the
 * tasks learn the decisions from the control topic: every RESTORE carries
 * the owner table of its generation, and an ASSIGN record announces each
 * change of owner made without a restore. Kafka's static membership is
 * the model (a newer instance with the same group.instance.id fences the
 * old one for good); Flink's execution attempts are the other.
 *
 *   event                         owner before   decision
 *   claim by X                    X              nothing (already owns it)
 *   claim by X (X replaced)       any            ASSIGN(owner, refused=X)
 *   claim by X                    vacant         owner := X, ASSIGN(X)
 *   claim by X                    Y              owner := X, Y replaced,
 *                                                RESTORE(G+1) naming X
 *   ready REGISTER by X at G      X              ready
 *   ready REGISTER by X at G      vacant         owner := X, ASSIGN, ready
 *   ready REGISTER by X at G      Y              as a claim by X
 *   ready REGISTER (X replaced)   any            refused, logged
 *   heartbeat timeout             Y              vacant (Y may reclaim it
 *                                                until another instance
 *                                                does), RESTORE(G+1)
 *
 * Why it is needed: an instance that was paused (SIGSTOP, a long GC-like
 * stall) while its replacement took over would otherwise restore into the
 * new generation beside the replacement when it resumes. Both would fence
 * each other's transactions, each REGISTER would restore the job again
 * (a restore storm), and both would write the same generation's records
 * (tests/e2e/killrun.py --case zombie). With owners, the resumed instance
 * sees a RESTORE or ASSIGN naming another instance and stops its task for
 * good (task.c: REPLACED); a claim it sends before it saw that is refused.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "ksnap/log.h"

static bool is_replaced(const coord_task_t *t, const char *instance) {
  if (!*instance)
    return false;
  for (size_t i = 0; i < COORD_REPLACED_MAX; i++)
    if (!strncmp(t->replaced[i], instance, COORD_INSTANCE_SIZE - 1))
      return true;
  return false;
}

static void remember_replaced(coord_task_t *t, const char *instance) {
  if (!*instance || is_replaced(t, instance))
    return;
  snprintf(t->replaced[t->replaced_next], COORD_INSTANCE_SIZE, "%s",
           instance);
  t->replaced_next = (t->replaced_next + 1) % COORD_REPLACED_MAX;
}

static bool same(const char *owner, const char *instance) {
  return !strncmp(owner, instance, COORD_INSTANCE_SIZE - 1);
}

/* owner := instance; whoever owned it before (or may reclaim it) is
 * replaced. */
static void set_owner(coord_task_t *t, const char *instance) {
  if (*t->owner && !same(t->owner, instance))
    remember_replaced(t, t->owner);
  if (*t->last_owner && !same(t->last_owner, instance))
    remember_replaced(t, t->last_owner);
  t->last_owner[0] = '\0';
  snprintf(t->owner, sizeof(t->owner), "%s", instance);
}

void ksnap__coord_owner_vacate(coord_task_t *t) {
  if (!*t->owner)
    return;
  snprintf(t->last_owner, sizeof(t->last_owner), "%s", t->owner);
  t->owner[0] = '\0';
}

static void emit_assign(ksnap_coord_sm_t *sm, const coord_task_t *t,
                        const char *refused) {
  ksnap_coord_action_t *act =
      ksnap__coord_emit(sm, KSNAP_COORD_ACT_SEND_ASSIGN);

  if (!act)
    return;
  act->task = (ksnap_task_id_t){(char *)t->stage, t->index};
  if (!(act->instance = strdup(t->owner)) ||
      !(act->refused = strdup(refused ? refused : "")))
    sm->oom = true;
}

/* X replaces the live owner Y: the job restores with X named. */
static ksnap_err_t replace(ksnap_coord_sm_t *sm, int64_t now_ms,
                           coord_task_t *t, const char *instance) {
  char why[2 * COORD_INSTANCE_SIZE + 96];

  snprintf(why, sizeof(why), "task %s: instance %s replaces %s", t->name,
           instance, *t->owner ? t->owner : t->last_owner);
  set_owner(t, instance);
  return ksnap__coord_restore(sm, now_ms, why);
}

bool ksnap__coord_owner_refuses(ksnap_coord_sm_t *sm, const coord_task_t *t,
                                const char *what, const char *instance) {
  if (!is_replaced(t, instance))
    return false;
  ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                   "%s of task %s by instance %s refused: it was replaced "
                   "(owner: %s)",
                   what, t->name, instance, *t->owner ? t->owner : "none");
  return true;
}

ksnap_err_t ksnap__coord_owner_claim(ksnap_coord_sm_t *sm, int64_t now_ms,
                                     coord_task_t *t,
                                     const ksnap_register_t *reg) {
  const char *x = reg->worker_id ? reg->worker_id : "";

  if (!*x) {
    ksnap__coord_log(sm, KSNAP_LOG_ERR, "Claim of task %s without an "
                     "instance id refused", t->name);
    return KSNAP_ERR_INVALID_ARG;
  }
  if (same(t->owner, x))
    return KSNAP_ERR_OK; /* the RESTORE or ASSIGN naming it is out */
  if (ksnap__coord_owner_refuses(sm, t, "Claim", x)) {
    emit_assign(sm, t, x);
    return KSNAP_ERR_OK;
  }
  t->last_seen_ms = now_ms;
  t->watched = true;
  if (*t->owner)
    return replace(sm, now_ms, t, x);
  set_owner(t, x);
  ksnap__coord_log(sm, KSNAP_LOG_INFO,
                   "Task %s assigned to instance %s (worker pid %d) in "
                   "generation %" PRId64,
                   t->name, x, (int)reg->pid, sm->generation);
  emit_assign(sm, t, NULL);
  return KSNAP_ERR_OK;
}

bool ksnap__coord_owner_ready(ksnap_coord_sm_t *sm, int64_t now_ms,
                              coord_task_t *t, const char *instance) {
  if (same(t->owner, instance) && *instance)
    return true;
  if (*t->owner) {
    replace(sm, now_ms, t, instance);
    return false;
  }
  set_owner(t, instance);
  emit_assign(sm, t, NULL); /* the control topic records every owner */
  return true;
}

void ksnap__coord_owner_table(ksnap_coord_sm_t *sm,
                              ksnap_coord_action_t *act) {
  if (!(act->owners = calloc(sm->task_cnt ? sm->task_cnt : 1,
                             sizeof(*act->owners)))) {
    sm->oom = true;
    return;
  }
  for (size_t i = 0; i < sm->task_cnt; i++) {
    const coord_task_t *t = &sm->tasks[i];
    act->owners[i].task = (ksnap_task_id_t){(char *)t->stage, t->index};
    if (!(act->owners[i].instance = strdup(t->owner))) {
      sm->oom = true;
      return;
    }
    act->owner_cnt = i + 1;
  }
}

static void replay_owner(ksnap_coord_sm_t *sm, const ksnap_task_id_t *task,
                         const char *instance) {
  coord_task_t *t = ksnap__coord_task_find(sm, task);

  if (!t || !instance)
    return; /* a task of an older job graph */
  if (*instance)
    set_owner(t, instance);
  else
    ksnap__coord_owner_vacate(t);
}

void ksnap__coord_owner_replay(ksnap_coord_sm_t *sm,
                               const ksnap_control_record_t *rec) {
  if (rec->type == KSNAP_CONTROL_ASSIGN) {
    replay_owner(sm, &rec->u.assign.task, rec->u.assign.instance);
    return;
  }
  if (rec->type != KSNAP_CONTROL_RESTORE)
    return;
  for (size_t i = 0; i < rec->u.restore.owner_cnt; i++)
    replay_owner(sm, &rec->u.restore.owners[i].task,
                 rec->u.restore.owners[i].instance);
}
