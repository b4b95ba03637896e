/* The task table of the coordinator state machine (coord_tasks.c,
 * coord_owner.c): every task of the job graph, whether it registered with
 * the current generation, its heartbeats, which instance owns it, and the
 * last checkpoint a sink task committed. Called by the hub only (coord_sm.c,
 * coord_events.c, coord_setup.c); it calls coord_actions.c only. It never
 * changes the job's state: what the job must do (restore, leave WAITING)
 * comes back as a verdict. Not installed. */
#ifndef KSNAP_COORD_TASKS_H
#define KSNAP_COORD_TASKS_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_actions.h"

typedef struct coord_tasks_s coord_tasks_t;
typedef struct coord_task_s coord_task_t;

/** What an event of the task table asks of the job. */
typedef struct coord_tasks_verdict_s {
  bool ready;    /**< a task became ready: WAITING may end */
  bool restore;  /**< restore the job because of why */
  char why[512]; /**< restore: the reason */
} coord_tasks_verdict_t;

/** @returns the tasks of @p job (borrowed), none registered, or NULL. */
coord_tasks_t *ksnap__coord_tasks_new(const ksnap_job_t *job,
                                      coord_acts_t *acts,
                                      int64_t heartbeat_timeout_ms);
void ksnap__coord_tasks_destroy(coord_tasks_t *tasks);

size_t ksnap__coord_tasks_cnt(const coord_tasks_t *tasks);
/** Every task's name ("stage[i]"), in table order; valid as @p tasks. */
const char *const *ksnap__coord_tasks_names(const coord_tasks_t *tasks);
/** The task @p id names, or NULL, logging "WHAT from unknown task". */
coord_task_t *ksnap__coord_tasks_known(coord_tasks_t *tasks, const char *what,
                                       const ksnap_task_id_t *id);
size_t ksnap__coord_task_index(const coord_tasks_t *tasks,
                               const coord_task_t *t);
const char *ksnap__coord_task_name(const coord_task_t *t);

/**
 * REGISTER of @p t (claim or ready registration) in the coordinator's
 * @p generation. @returns the event's result (KSNAP_ERR_STATE: refused),
 * final unless @p v asks for something.
 */
ksnap_err_t ksnap__coord_tasks_register(coord_tasks_t *tasks, int64_t now_ms,
                                        coord_task_t *t,
                                        const ksnap_register_t *reg,
                                        int64_t generation,
                                        coord_tasks_verdict_t *v);
/** HEARTBEAT of @p t; as ksnap__coord_tasks_register(). */
ksnap_err_t ksnap__coord_tasks_heartbeat(coord_tasks_t *tasks, int64_t now_ms,
                                         coord_task_t *t,
                                         const ksnap_heartbeat_t *hb,
                                         int64_t generation,
                                         coord_tasks_verdict_t *v);
/** Watched tasks silent for heartbeat.timeout are presumed dead (vacant,
 *  unwatched). @returns true (v asks for a restore, v->why names the
 *  first) if one of them had registered in @p generation; the others are
 *  only logged. */
bool ksnap__coord_tasks_silent(coord_tasks_t *tasks, int64_t now_ms,
                               int64_t generation, coord_tasks_verdict_t *v);
/** @returns true if every task is ready; else logs the missing ones, at
 *  most once per heartbeat.timeout. */
bool ksnap__coord_tasks_ready(coord_tasks_t *tasks, int64_t now_ms,
                              int64_t generation);
/** The hub will restore the job (RESTARTING, RESTORE_PENDING): a claim
 *  of a vacant task takes it for the RESTORE, with no ASSIGN that would
 *  open it in the current generation (coord_owner.c). */
void ksnap__coord_tasks_restore_pending(coord_tasks_t *tasks);
/** The job was restored at @p now_ms: no task is ready, a HEARTBEAT no
 *  longer counts as registration, no restore is pending. */
void ksnap__coord_tasks_restored(coord_tasks_t *tasks, int64_t now_ms);
/** The coordinator starts at @p now_ms; @p recovered: after a non-empty
 *  history the tasks are presumed running (watched from now, a HEARTBEAT
 *  at the current generation counts as registration). */
void ksnap__coord_tasks_start(coord_tasks_t *tasks, int64_t now_ms,
                              bool recovered);

/** COMMITTED(@p id) of @p t; @p max_id: the highest id ever used.
 *  @p advanced: the fully committed id moved (logged). */
ksnap_err_t ksnap__coord_tasks_committed(coord_tasks_t *tasks,
                                         coord_task_t *t, int64_t id,
                                         int64_t max_id, bool *advanced);
/** @returns the id every sink committed, or NONE (also without sinks). */
int64_t ksnap__coord_tasks_fully_committed(const coord_tasks_t *tasks);
/** The sinks' commits for retention: @returns false if a sink never
 *  committed; else *sinks (the job has one) and *cmin (the lowest). */
bool ksnap__coord_tasks_commit_floor(const coord_tasks_t *tasks, bool *sinks,
                                     int64_t *cmin);

/* Members (coord_balance.c): task i in table order. */
/** @returns task @p i's stage, its owner ("" vacant) and, when vacant,
 *  the owner it had before it fell silent ("" none). */
const char *ksnap__coord_tasks_stage_at(const coord_tasks_t *tasks, size_t i);
const char *ksnap__coord_task_name_at(const coord_tasks_t *tasks, size_t i);
const char *ksnap__coord_tasks_owner_at(const coord_tasks_t *tasks, size_t i);
const char *ksnap__coord_tasks_last_owner_at(const coord_tasks_t *tasks,
                                             size_t i);
/** The coordinator gives task @p i to member @p instance ("" vacant): it
 *  may own the task even if it had it before (an ASSIGN with @p announce,
 *  else the next RESTORE's table says so). */
void ksnap__coord_tasks_assign_at(coord_tasks_t *tasks, size_t i,
                                  const char *instance, bool announce);
/** Member @p instance is gone: every task it owns is vacant and unwatched.
 *  @returns true (v asks for a restore naming the first) if one of them
 *  had registered in @p generation, as a silent task would. */
bool ksnap__coord_tasks_vacate_instance(coord_tasks_t *tasks,
                                        const char *instance,
                                        int64_t generation,
                                        coord_tasks_verdict_t *v);

/** Fills a RESTORE's owner table: every task's owner ("" vacant). */
void ksnap__coord_tasks_owner_table(coord_tasks_t *tasks,
                                    ksnap_coord_action_t *act);
/** Replay of a RESTORE's owner table or of an ASSIGN record; a
 *  JOB_STOPPED or JOB_FAILED makes every task vacant (coord_owner.c). */
void ksnap__coord_tasks_owner_replay(coord_tasks_t *tasks,
                                     const ksnap_control_record_t *rec);

#endif /* KSNAP_COORD_TASKS_H */
