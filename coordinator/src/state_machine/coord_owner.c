/* Task ownership: at most one instance of each task runs in a generation
 * (invariant 12 at the top of coord_sm.c).
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
 *   claim by X                    vacant         owner := X, ASSIGN(X); with
 *                                                a restore pending, no
 *                                                ASSIGN: its RESTORE(G+1)
 *                                                names X
 *   claim by X                    Y              owner := X, Y replaced,
 *                                                RESTORE(G+1) naming X
 *   ready REGISTER by X at G      X              ready
 *   ready REGISTER by X at G      vacant         owner := X, ASSIGN, ready
 *   ready REGISTER by X at G      Y              as a claim by X
 *   ready REGISTER (X replaced)   any            refused, logged
 *   heartbeat timeout             Y              vacant (Y may reclaim it
 *                                                until another instance
 *                                                does), RESTORE(G+1)
 *   JOB_STOPPED or JOB_FAILED     any            vacant (replayed by the
 *     in the history                             next coordinator)
 *
 * The RESTOREs are the hub's (coord_sm.c): this file asks for them in the
 * verdict (coord_tasks.h) and emits only ASSIGNs and logs.
 *
 * Why no ASSIGN while a restore is pending (RESTARTING, RESTORE_PENDING):
 * the task is vacant because its owner, which had registered in G, fell
 * silent; an ASSIGN in G would make the claimant open G from G's base
 * again beside what the dead owner wrote in G: it would replay G's input,
 * take G's old checkpoints again and overwrite their objects. The pending
 * RESTORE makes it start in G+1 instead.
 *
 * Why a stopped or failed job's tasks are vacant: every worker exits on
 * JOB_STOPPED and JOB_FAILED, so the job's next start (from a savepoint,
 * or --resume-failed) has no owner alive. With the exited instances still
 * named, the new workers' claims would replace them and restore the job a
 * second time right after the start's own RESTORE; vacant, the claims
 * take the tasks in the start's generation. An exited instance is
 * remembered as the last owner, so it is refused if it ever claims again.
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

#include "coord_tasks_int.h"
#include "ksnap/log.h"

static bool same(const char *owner, const char *instance) {
  return !strncmp(owner, instance, COORD_INSTANCE_SIZE - 1);
}

static bool is_replaced(const coord_owner_t *o, const char *instance) {
  if (!*instance)
    return false;
  for (size_t i = 0; i < COORD_REPLACED_MAX; i++)
    if (same(o->replaced[i], instance))
      return true;
  return false;
}

/* Copies an instance id, cut to COORD_INSTANCE_SIZE - 1 bytes. (Not
 * snprintf: at -O3 GCC takes o->owner and o->replaced for overlapping
 * restrict arguments.) */
static void copy_instance(char *dst, const char *src) {
  size_t n = strnlen(src, COORD_INSTANCE_SIZE - 1);

  memcpy(dst, src, n);
  dst[n] = '\0';
}

static void remember_replaced(coord_owner_t *o, const char *instance) {
  if (!*instance || is_replaced(o, instance))
    return;
  copy_instance(o->replaced[o->replaced_next], instance);
  o->replaced_next = (o->replaced_next + 1) % COORD_REPLACED_MAX;
}

/* owner := instance; whoever owned it before (or may reclaim it) is
 * replaced. */
static void set_owner(coord_owner_t *o, const char *instance) {
  if (*o->owner && !same(o->owner, instance))
    remember_replaced(o, o->owner);
  if (*o->last_owner && !same(o->last_owner, instance))
    remember_replaced(o, o->last_owner);
  o->last_owner[0] = '\0';
  snprintf(o->owner, sizeof(o->owner), "%s", instance);
}

void ksnap__coord_owner_vacate(coord_task_t *t) {
  coord_owner_t *o = &t->own;

  if (!*o->owner)
    return;
  snprintf(o->last_owner, sizeof(o->last_owner), "%s", o->owner);
  o->owner[0] = '\0';
}

const char *ksnap__coord_owner_of(const coord_task_t *t) {
  return t->own.owner;
}

void ksnap__coord_owner_replayed(coord_task_t *t, const char *instance) {
  if (*instance)
    set_owner(&t->own, instance);
  else
    ksnap__coord_owner_vacate(t);
}

static void emit_assign(coord_acts_t *acts, const coord_task_t *t,
                        const char *refused) {
  ksnap_coord_action_t *act = ksnap__coord_emit(acts,
                                                KSNAP_COORD_ACT_SEND_ASSIGN);

  if (!act)
    return;
  act->task = (ksnap_task_id_t){(char *)t->stage, t->index};
  if ((act->instance = ksnap__coord_strdup(acts, t->own.owner)))
    act->refused = ksnap__coord_strdup(acts, refused ? refused : "");
}

/* X replaces the live owner Y: the job restores with X named. */
static void replace(coord_task_t *t, const char *instance,
                    coord_tasks_verdict_t *v) {
  char why[2 * COORD_INSTANCE_SIZE + 96];

  snprintf(why, sizeof(why), "task %s: instance %s replaces %s", t->name,
           instance, *t->own.owner ? t->own.owner : t->own.last_owner);
  set_owner(&t->own, instance);
  snprintf(v->why, sizeof(v->why), "%s", why);
  v->restore = true;
}

/* A member the coordinator gives the task to may have owned it before
 * (it lost it in a rebalance or to another member's restore): it is no
 * longer refused. Only the coordinator names a member: a member never
 * claims, it runs a task only while a RESTORE or ASSIGN names it. */
void ksnap__coord_owner_assigned(coord_acts_t *acts, coord_task_t *t,
                                 const char *instance, bool announce) {
  coord_owner_t *o = &t->own;

  for (size_t i = 0; i < COORD_REPLACED_MAX; i++)
    if (*instance && same(o->replaced[i], instance))
      o->replaced[i][0] = '\0';
  if (!*instance) {
    ksnap__coord_owner_vacate(t);
    remember_replaced(o, o->last_owner);
    o->last_owner[0] = '\0';
    return;
  }
  set_owner(o, instance);
  if (announce)
    emit_assign(acts, t, NULL);
}

const char *ksnap__coord_owner_last(const coord_task_t *t) {
  return t->own.last_owner;
}

bool ksnap__coord_owner_refuses(coord_acts_t *acts, const coord_task_t *t,
                                const char *what, const char *instance) {
  if (!is_replaced(&t->own, instance))
    return false;
  ksnap__coord_log(acts, KSNAP_LOG_WARNING,
                   "%s of task %s by instance %s refused: it was replaced "
                   "(owner: %s)",
                   what, t->name, instance,
                   *t->own.owner ? t->own.owner : "none");
  return true;
}

ksnap_err_t ksnap__coord_owner_claim(coord_acts_t *acts, coord_task_t *t,
                                     const ksnap_register_t *reg,
                                     int64_t generation, bool restore_pending,
                                     bool *heard, coord_tasks_verdict_t *v) {
  const char *x = reg->worker_id ? reg->worker_id : "";

  *heard = false;
  if (!*x) {
    ksnap__coord_log(acts, KSNAP_LOG_ERR,
                     "Claim of task %s without an instance id refused",
                     t->name);
    return KSNAP_ERR_INVALID_ARG;
  }
  if (same(t->own.owner, x))
    return KSNAP_ERR_OK; /* the RESTORE or ASSIGN naming it is out */
  if (ksnap__coord_owner_refuses(acts, t, "Claim", x)) {
    emit_assign(acts, t, x);
    return KSNAP_ERR_OK;
  }
  *heard = true;
  if (*t->own.owner) {
    replace(t, x, v);
    return KSNAP_ERR_OK;
  }
  set_owner(&t->own, x);
  if (restore_pending) { /* see the table above */
    ksnap__coord_log(acts, KSNAP_LOG_INFO,
                     "Task %s assigned to instance %s (worker pid %d) for "
                     "the restore under way: the RESTORE names it",
                     t->name, x, (int)reg->pid);
    return KSNAP_ERR_OK;
  }
  ksnap__coord_log(acts, KSNAP_LOG_INFO,
                   "Task %s assigned to instance %s (worker pid %d) in "
                   "generation %" PRId64,
                   t->name, x, (int)reg->pid, generation);
  emit_assign(acts, t, NULL);
  return KSNAP_ERR_OK;
}

bool ksnap__coord_owner_ready(coord_acts_t *acts, coord_task_t *t,
                              const char *instance, coord_tasks_verdict_t *v) {
  if (same(t->own.owner, instance) && *instance)
    return true;
  if (*t->own.owner) {
    replace(t, instance, v);
    return false;
  }
  set_owner(&t->own, instance);
  emit_assign(acts, t, NULL); /* the control topic records every owner */
  return true;
}
