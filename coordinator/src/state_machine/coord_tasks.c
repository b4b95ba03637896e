/* The coordinator's view of the tasks (coord_tasks.h): the table,
 * registration, heartbeats, sink commits. Which instance owns a task, and
 * what a REGISTER of another instance or a claim does, is coord_owner.c's.
 *
 * Liveness: a task is watched once it was seen (REGISTER or HEARTBEAT of
 * any generation up to G: a task process keeps heartbeating while it
 * loads a restore), or from start on when the coordinator recovered from
 * a non-empty history. A watched task silent for heartbeat.timeout is
 * presumed dead: its owner is vacant, and it is unwatched until it is
 * heard from again (so a task that stays dead makes the job WAIT, logging
 * which tasks are missing, instead of restoring in a loop). If it had
 * registered in G it may have written in G: a failure of the job for the
 * hub. If it had not, it wrote nothing in G (its REGISTER, flushed before
 * its first write, would precede in the acks topic any claim of its
 * replacement, so a late one is still seen first): only vacant, no
 * restore, which also keeps the second task of a dead worker process
 * from restoring the job again after the first one did.
 * Readiness: REGISTER with generation G by the task's owner, or, after a
 * coordinator restart, a HEARTBEAT with generation G (the task registered
 * with the previous coordinator). */
#include "coord_tasks_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"

struct coord_tasks_s {
  coord_acts_t *acts; /**< borrowed */
  int64_t heartbeat_timeout_ms;
  coord_task_t *tasks;
  size_t cnt;
  const char **names;     /**< tasks[i].name */
  bool hb_registers;      /**< a HEARTBEAT at G counts as registration */
  bool restore_pending;   /**< the hub waits to restore (no ASSIGN in G) */
  int64_t waiting_log_ms; /**< last "Waiting for ..." line */
};

coord_tasks_t *ksnap__coord_tasks_new(const ksnap_job_t *job,
                                      coord_acts_t *acts,
                                      int64_t heartbeat_timeout_ms) {
  coord_tasks_t *tasks = calloc(1, sizeof(*tasks));
  size_t n = 0, k = 0;

  if (!tasks)
    return NULL;
  tasks->acts = acts;
  tasks->heartbeat_timeout_ms = heartbeat_timeout_ms;
  for (size_t s = 0; s < ksnap_job_stage_cnt(job); s++)
    n += (size_t)ksnap_job_stage_parallelism(ksnap_job_stage(job, s));
  if (!(tasks->tasks = calloc(n ? n : 1, sizeof(*tasks->tasks))) ||
      !(tasks->names = calloc(n ? n : 1, sizeof(*tasks->names)))) {
    ksnap__coord_tasks_destroy(tasks);
    return NULL;
  }
  for (size_t s = 0; s < ksnap_job_stage_cnt(job); s++) {
    const ksnap_job_stage_t *stage = ksnap_job_stage(job, s);
    for (int32_t i = 0; i < ksnap_job_stage_parallelism(stage); i++) {
      coord_task_t *t = &tasks->tasks[k];
      ksnap_job_task_id(stage, i, t->name, sizeof(t->name));
      t->stage = ksnap_job_stage_name(stage);
      t->index = i;
      /* a stage with a dead-letter topic commits transactions too */
      t->is_sink = ksnap_job_stage_is_transactional(stage);
      t->committed = KSNAP_CHECKPOINT_NONE;
      tasks->names[k++] = t->name;
    }
  }
  tasks->cnt = n;
  return tasks;
}

void ksnap__coord_tasks_destroy(coord_tasks_t *tasks) {
  if (!tasks)
    return;
  free(tasks->names);
  free(tasks->tasks);
  free(tasks);
}

size_t ksnap__coord_tasks_cnt(const coord_tasks_t *tasks) {
  return tasks->cnt;
}

const char *const *ksnap__coord_tasks_names(const coord_tasks_t *tasks) {
  return tasks->names;
}

static coord_task_t *find(const coord_tasks_t *tasks,
                          const ksnap_task_id_t *id) {
  if (!id->stage)
    return NULL;
  for (size_t i = 0; i < tasks->cnt; i++)
    if (tasks->tasks[i].index == id->index &&
        !strcmp(tasks->tasks[i].stage, id->stage))
      return &tasks->tasks[i];
  return NULL;
}

coord_task_t *ksnap__coord_tasks_known(coord_tasks_t *tasks, const char *what,
                                       const ksnap_task_id_t *id) {
  coord_task_t *t = find(tasks, id);

  if (!t)
    ksnap__coord_log(tasks->acts, KSNAP_LOG_WARNING,
                     "%s from unknown task %s[%d] ignored", what,
                     id->stage ? id->stage : "(null)", (int)id->index);
  return t;
}

size_t ksnap__coord_task_index(const coord_tasks_t *tasks,
                               const coord_task_t *t) {
  return (size_t)(t - tasks->tasks);
}

const char *ksnap__coord_task_name(const coord_task_t *t) {
  return t->name;
}

/* ------------------------------------------------- readiness, liveness */

bool ksnap__coord_tasks_ready(coord_tasks_t *tasks, int64_t now_ms,
                              int64_t generation) {
  size_t ready = 0, len = 0;
  char list[256];

  list[0] = '\0';
  for (size_t i = 0; i < tasks->cnt; i++) {
    if (tasks->tasks[i].ready)
      ready++;
    else if (len < sizeof(list) - 1)
      len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
                              len ? ", " : "", tasks->tasks[i].name);
  }
  if (ready == tasks->cnt)
    return true;
  if (now_ms - tasks->waiting_log_ms >= tasks->heartbeat_timeout_ms) {
    ksnap__coord_log(tasks->acts, KSNAP_LOG_INFO,
                     "Waiting for %zu of %zu tasks to register in generation "
                     "%" PRId64 ": %s",
                     tasks->cnt - ready, tasks->cnt, generation, list);
    tasks->waiting_log_ms = now_ms;
  }
  return false;
}

/* @p t, presumed dead, had not registered in @p generation: nothing of it
 * in G needs undoing (its REGISTER precedes its first write in G, and in
 * the acks topic any claim of a replacement), so its owner is only made
 * vacant and the job keeps waiting for a new instance. */
static void silent_unregistered(coord_tasks_t *tasks, const coord_task_t *t,
                                int64_t now_ms, int64_t generation) {
  ksnap__coord_log(tasks->acts, KSNAP_LOG_WARNING,
                   "Task %s sent no heartbeat for %" PRId64
                   " ms (heartbeat.timeout=%" PRId64 " ms): presumed dead, "
                   "its owner vacant; it had not registered in generation %"
                   PRId64 ", so the job waits for a new instance",
                   t->name, now_ms - t->last_seen_ms,
                   tasks->heartbeat_timeout_ms, generation);
}

bool ksnap__coord_tasks_silent(coord_tasks_t *tasks, int64_t now_ms,
                               int64_t generation, coord_tasks_verdict_t *v) {
  coord_task_t *first = NULL;

  memset(v, 0, sizeof(*v));
  for (size_t i = 0; i < tasks->cnt; i++) {
    coord_task_t *t = &tasks->tasks[i];
    if (!t->watched || now_ms - t->last_seen_ms < tasks->heartbeat_timeout_ms)
      continue;
    t->watched = false;
    ksnap__coord_owner_vacate(t); /* presumed dead: see coord_owner.c */
    /* after a recovery every task is presumed registered in G */
    if (!t->ready && !tasks->hb_registers)
      silent_unregistered(tasks, t, now_ms, generation);
    else if (!first)
      first = t;
  }
  if (!first)
    return false;
  snprintf(v->why, sizeof(v->why),
           "task %s sent no heartbeat for %" PRId64
           " ms (heartbeat.timeout=%" PRId64 " ms)",
           first->name, now_ms - first->last_seen_ms,
           tasks->heartbeat_timeout_ms);
  v->restore = true;
  return true;
}

void ksnap__coord_tasks_restore_pending(coord_tasks_t *tasks) {
  tasks->restore_pending = true;
}

void ksnap__coord_tasks_restored(coord_tasks_t *tasks, int64_t now_ms) {
  for (size_t i = 0; i < tasks->cnt; i++)
    tasks->tasks[i].ready = false;
  tasks->hb_registers = false;
  tasks->restore_pending = false;
  tasks->waiting_log_ms = now_ms;
}

void ksnap__coord_tasks_start(coord_tasks_t *tasks, int64_t now_ms,
                              bool recovered) {
  tasks->waiting_log_ms = now_ms;
  if (!recovered)
    return;
  tasks->hb_registers = true;
  for (size_t i = 0; i < tasks->cnt; i++) {
    tasks->tasks[i].watched = true;
    tasks->tasks[i].last_seen_ms = now_ms;
  }
}

static void heard(coord_task_t *t, int64_t now_ms) {
  t->last_seen_ms = now_ms;
  t->watched = true;
}

ksnap_err_t ksnap__coord_tasks_register(coord_tasks_t *tasks, int64_t now_ms,
                                        coord_task_t *t,
                                        const ksnap_register_t *reg,
                                        int64_t generation,
                                        coord_tasks_verdict_t *v) {
  const char *instance = reg->worker_id ? reg->worker_id : "";
  coord_acts_t *acts = tasks->acts;
  bool accepted = false;
  ksnap_err_t err;

  memset(v, 0, sizeof(*v));
  if (reg->generation > generation) {
    ksnap__coord_log(acts, KSNAP_LOG_ERR,
                     "REGISTER of task %s refused: generation %" PRId64
                     " is newer than the coordinator's %" PRId64,
                     t->name, reg->generation, generation);
    return KSNAP_ERR_STATE;
  }
  if (reg->claim) {
    err = ksnap__coord_owner_claim(acts, t, reg, generation,
                                   tasks->restore_pending, &accepted, v);
    if (accepted)
      heard(t, now_ms);
    return ksnap__coord_is_oom(acts) ? KSNAP_ERR_NOMEM : err;
  }
  if (ksnap__coord_owner_refuses(acts, t, "REGISTER", instance))
    return KSNAP_ERR_OK;
  heard(t, now_ms);
  if (reg->generation < generation) {
    ksnap__coord_log(acts, KSNAP_LOG_INFO,
                     "REGISTER of task %s from old generation %" PRId64
                     " ignored (current %" PRId64 ")",
                     t->name, reg->generation, generation);
    return KSNAP_ERR_OK;
  }
  if (!ksnap__coord_owner_ready(acts, t, instance, v))
    return ksnap__coord_is_oom(acts) ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
  if (t->ready)
    return KSNAP_ERR_OK; /* the same registration again */
  t->ready = true;
  ksnap__coord_log(acts, KSNAP_LOG_INFO,
                   "Task %s registered in generation %" PRId64
                   " (instance %s, pid %d)",
                   t->name, generation, instance, (int)reg->pid);
  v->ready = true;
  return ksnap__coord_is_oom(acts) ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

ksnap_err_t ksnap__coord_tasks_heartbeat(coord_tasks_t *tasks, int64_t now_ms,
                                         coord_task_t *t,
                                         const ksnap_heartbeat_t *hb,
                                         int64_t generation,
                                         coord_tasks_verdict_t *v) {
  memset(v, 0, sizeof(*v));
  if (hb->generation > generation) {
    ksnap__coord_log(tasks->acts, KSNAP_LOG_ERR,
                     "HEARTBEAT of task %s refused: generation %" PRId64
                     " is newer than the coordinator's %" PRId64,
                     t->name, hb->generation, generation);
    return KSNAP_ERR_STATE;
  }
  heard(t, now_ms);
  if (hb->generation == generation && !t->ready && tasks->hb_registers) {
    t->ready = true; /* registered with the previous coordinator */
    v->ready = true;
  }
  return ksnap__coord_is_oom(tasks->acts) ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

/* --------------------------------------------------------- sink commits */

int64_t ksnap__coord_tasks_fully_committed(const coord_tasks_t *tasks) {
  int64_t min = KSNAP_CHECKPOINT_NONE;
  bool any = false;

  for (size_t i = 0; i < tasks->cnt; i++) {
    const coord_task_t *t = &tasks->tasks[i];
    if (!t->is_sink)
      continue;
    if (t->committed == KSNAP_CHECKPOINT_NONE)
      return KSNAP_CHECKPOINT_NONE;
    if (!any || t->committed < min)
      min = t->committed;
    any = true;
  }
  return min;
}

bool ksnap__coord_tasks_commit_floor(const coord_tasks_t *tasks, bool *sinks,
                                     int64_t *cmin) {
  *sinks = false;
  *cmin = INT64_MAX;
  for (size_t i = 0; i < tasks->cnt; i++) {
    const coord_task_t *t = &tasks->tasks[i];
    if (!t->is_sink)
      continue;
    if (t->committed == KSNAP_CHECKPOINT_NONE)
      return false; /* a sink that never committed may need everything */
    *sinks = true;
    if (t->committed < *cmin)
      *cmin = t->committed;
  }
  return true;
}

ksnap_err_t ksnap__coord_tasks_committed(coord_tasks_t *tasks,
                                         coord_task_t *t, int64_t id,
                                         int64_t max_id, bool *advanced) {
  int64_t before;

  *advanced = false;
  if (!t->is_sink || id < 1 || id > max_id) {
    ksnap__coord_log(tasks->acts, KSNAP_LOG_WARNING,
                     "COMMITTED(%" PRId64 ") of task %s refused: %s", id,
                     t->name,
                     !t->is_sink ? "it is not a sink task"
                                 : "no such checkpoint was triggered");
    return KSNAP_ERR_STATE;
  }
  if (t->committed != KSNAP_CHECKPOINT_NONE && id <= t->committed)
    return KSNAP_ERR_OK; /* not news: commits only move forward */
  before = ksnap__coord_tasks_fully_committed(tasks);
  t->committed = id;
  if (ksnap__coord_tasks_fully_committed(tasks) != before) {
    ksnap__coord_log(tasks->acts, KSNAP_LOG_INFO,
                     "Checkpoint %" PRId64 " fully committed by every sink",
                     ksnap__coord_tasks_fully_committed(tasks));
    *advanced = true;
  }
  return ksnap__coord_is_oom(tasks->acts) ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

/* ---------------------------------------------------------- owner table */

void ksnap__coord_tasks_owner_table(coord_tasks_t *tasks,
                                    ksnap_coord_action_t *act) {
  if (!(act->owners = calloc(tasks->cnt ? tasks->cnt : 1,
                             sizeof(*act->owners)))) {
    ksnap__coord_oom(tasks->acts);
    return;
  }
  for (size_t i = 0; i < tasks->cnt; i++) {
    const coord_task_t *t = &tasks->tasks[i];
    act->owners[i].task = (ksnap_task_id_t){(char *)t->stage, t->index};
    if (!(act->owners[i].instance =
              ksnap__coord_strdup(tasks->acts, ksnap__coord_owner_of(t))))
      return;
    act->owner_cnt = i + 1;
  }
}

static void replay_owner(coord_tasks_t *tasks, const ksnap_task_id_t *id,
                         const char *instance) {
  coord_task_t *t = find(tasks, id);

  if (t && instance) /* else a task of an older job graph */
    ksnap__coord_owner_replayed(t, instance);
}

void ksnap__coord_tasks_owner_replay(coord_tasks_t *tasks,
                                     const ksnap_control_record_t *rec) {
  if (rec->type == KSNAP_CONTROL_ASSIGN) {
    replay_owner(tasks, &rec->u.assign.task, rec->u.assign.instance);
    return;
  }
  if (rec->type == KSNAP_CONTROL_JOB_STOPPED ||
      rec->type == KSNAP_CONTROL_JOB_FINISHED ||
      rec->type == KSNAP_CONTROL_JOB_FAILED) {
    for (size_t i = 0; i < tasks->cnt; i++) /* its workers exited */
      ksnap__coord_owner_vacate(&tasks->tasks[i]);
    return;
  }
  if (rec->type != KSNAP_CONTROL_RESTORE)
    return;
  for (size_t i = 0; i < rec->u.restore.owner_cnt; i++)
    replay_owner(tasks, &rec->u.restore.owners[i].task,
                 rec->u.restore.owners[i].instance);
}

/* -------------------------------------------------------------- members */

const char *ksnap__coord_tasks_stage_at(const coord_tasks_t *tasks,
                                        size_t i) {
  return tasks->tasks[i].stage;
}

const char *ksnap__coord_task_name_at(const coord_tasks_t *tasks, size_t i) {
  return tasks->tasks[i].name;
}

const char *ksnap__coord_tasks_owner_at(const coord_tasks_t *tasks,
                                        size_t i) {
  return ksnap__coord_owner_of(&tasks->tasks[i]);
}

const char *ksnap__coord_tasks_last_owner_at(const coord_tasks_t *tasks,
                                             size_t i) {
  return ksnap__coord_owner_last(&tasks->tasks[i]);
}

void ksnap__coord_tasks_assign_at(coord_tasks_t *tasks, size_t i,
                                  const char *instance, bool announce) {
  ksnap__coord_owner_assigned(tasks->acts, &tasks->tasks[i], instance,
                              announce);
}

bool ksnap__coord_tasks_vacate_instance(coord_tasks_t *tasks,
                                        const char *instance,
                                        int64_t generation,
                                        coord_tasks_verdict_t *v) {
  coord_task_t *first = NULL;

  memset(v, 0, sizeof(*v));
  for (size_t i = 0; i < tasks->cnt; i++) {
    coord_task_t *t = &tasks->tasks[i];
    if (!*instance ||
        strncmp(ksnap__coord_owner_of(t), instance, COORD_INSTANCE_SIZE - 1))
      continue;
    t->watched = false;
    ksnap__coord_owner_vacate(t);
    if ((t->ready || tasks->hb_registers) && !first)
      first = t; /* it may have written in G: see silent_unregistered() */
  }
  if (!first)
    return false;
  snprintf(v->why, sizeof(v->why),
           "member %s was lost while it ran task %s in generation %" PRId64,
           instance, first->name, generation);
  v->restore = true;
  return true;
}
