/* Between the two files of the task table: coord_tasks.c owns the table
 * and a task's liveness and readiness; coord_owner.c owns a task's
 * ownership record (coord_owner_t) and reads its identity. Not installed;
 * nothing else includes it. */
#ifndef KSNAP_COORD_TASKS_INT_H
#define KSNAP_COORD_TASKS_INT_H

#include "coord_tasks.h"

/** Instance ids (REGISTER worker_id) longer than this are cut. */
#define COORD_INSTANCE_SIZE 128
/** Replaced instances remembered per task (older ones are forgotten). */
#define COORD_REPLACED_MAX 8

/** Which instance runs a task (fields: coord_owner.c only). */
typedef struct coord_owner_s {
  char owner[COORD_INSTANCE_SIZE];      /**< owning instance, "": vacant */
  char last_owner[COORD_INSTANCE_SIZE]; /**< vacant: who may reclaim it */
  char replaced[COORD_REPLACED_MAX][COORD_INSTANCE_SIZE]; /**< refused */
  unsigned replaced_next;                                 /**< ring index */
} coord_owner_t;

/** One task of the job graph (fields: coord_tasks.c; own: coord_owner.c,
 *  which also reads name, stage and index). */
struct coord_task_s {
  char name[KSNAP_JOB_TASK_ID_SIZE]; /**< "stage[i]" */
  const char *stage;                 /**< owned by the job */
  int32_t index;
  bool is_sink; /**< commits transactions: a sink or dead-letter topic */
  bool ready;           /**< registered with the current generation */
  bool watched;         /**< heartbeats are checked (seen at least once) */
  int64_t last_seen_ms; /**< last REGISTER or HEARTBEAT, any generation */
  int64_t committed;    /**< highest COMMITTED id (sinks), or NONE */
  coord_owner_t own;
};

/* coord_owner.c. Instance "" is no instance. */

/** A claim (REGISTER with claim set) of @p t by reg->worker_id; with
 *  @p restore_pending a vacant task is taken without an ASSIGN (the
 *  pending RESTORE names the claimant). @p heard: the claim was accepted
 *  (the instance is alive). */
ksnap_err_t ksnap__coord_owner_claim(coord_acts_t *acts, coord_task_t *t,
                                     const ksnap_register_t *reg,
                                     int64_t generation, bool restore_pending,
                                     bool *heard, coord_tasks_verdict_t *v);
/** A ready REGISTER at the current generation of an instance that was not
 *  replaced: true if it owns @p t now (a vacant task is taken); false if
 *  it replaced the owner (v asks for the restore). */
bool ksnap__coord_owner_ready(coord_acts_t *acts, coord_task_t *t,
                              const char *instance, coord_tasks_verdict_t *v);
/** True (logged: "WHAT of task T by instance I refused") if @p instance
 *  is a replaced instance of @p t. */
bool ksnap__coord_owner_refuses(coord_acts_t *acts, const coord_task_t *t,
                                const char *what, const char *instance);
/** The coordinator gives @p t to member @p instance ("" vacant), which is
 *  no longer refused; @p announce: ASSIGN. */
void ksnap__coord_owner_assigned(coord_acts_t *acts, coord_task_t *t,
                                 const char *instance, bool announce);
/** @returns the owner of vacant @p t before it fell silent ("" none). */
const char *ksnap__coord_owner_last(const coord_task_t *t);
/** @p t missed its heartbeats: its owner is presumed dead (vacant). */
void ksnap__coord_owner_vacate(coord_task_t *t);
/** @returns the owner of @p t ("" vacant). */
const char *ksnap__coord_owner_of(const coord_task_t *t);
/** Replay: a control record named @p instance ("" vacant) owner of @p t. */
void ksnap__coord_owner_replayed(coord_task_t *t, const char *instance);

#endif /* KSNAP_COORD_TASKS_INT_H */
