/* The coordinator state machine's private struct and helpers, shared by
 * coord_sm.c (job-level states, triggering, restore), coord_ckpt.c
 * (per-checkpoint states: acks, metadata, completion, abort) and
 * coord_tasks.c (tasks, heartbeats, sink commits, retention, recovery
 * from the control topic). Not installed. */
#ifndef KSNAP_COORD_INT_H
#define KSNAP_COORD_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_sm.h"
#include "stats/coord_stats.h"

/** Instance ids (REGISTER worker_id) longer than this are cut. */
#define COORD_INSTANCE_SIZE 128
/** Replaced instances remembered per task (older ones are forgotten). */
#define COORD_REPLACED_MAX 8

/** One task of the job graph. */
typedef struct coord_task_s {
  char name[KSNAP_JOB_TASK_ID_SIZE]; /**< "stage[i]" */
  const char *stage;                 /**< owned by the job */
  int32_t index;
  bool is_sink;
  bool ready;           /**< registered with the current generation */
  bool watched;         /**< heartbeats are checked (seen at least once) */
  int64_t last_seen_ms; /**< last REGISTER or HEARTBEAT, any generation */
  /* ownership (coord_owner.c) */
  char owner[COORD_INSTANCE_SIZE];      /**< owning instance, "": vacant */
  char last_owner[COORD_INSTANCE_SIZE]; /**< vacant: who may reclaim it */
  char replaced[COORD_REPLACED_MAX][COORD_INSTANCE_SIZE]; /**< refused */
  unsigned replaced_next;                                 /**< ring index */
  int64_t committed; /**< highest COMMITTED id (sinks), or NONE */
} coord_task_t;

/** One pending checkpoint (TRIGGERED .. COMPLETING). */
typedef struct coord_ckpt_s {
  int64_t id;
  int64_t generation;
  int64_t trigger_ms;
  ksnap_ckpt_options_t options;
  bool stop; /**< stop-with-savepoint */
  ksnap_ckpt_state_t state;
  bool *acked; /**< per task */
  size_t acked_cnt;
  ksnap_task_snapshot_t *snaps; /**< per task, moved out of the ACKs */
  int64_t state_size;
  ksnap_checkpoint_meta_t meta; /**< built at WRITING_METADATA */
} coord_ckpt_t;

/** One completed checkpoint not retired (ascending ids); also used for
 *  the checkpoints a replayed history left unresolved (no refs). */
typedef struct coord_done_s {
  int64_t id;
  int64_t generation;
  bool is_savepoint;
  int64_t *refs; /**< older checkpoints whose objects it reuses */
  size_t ref_cnt;
  bool refs_unknown; /**< replayed: its metadata was not fed */
} coord_done_t;

struct ksnap_coord_sm_s {
  const ksnap_job_t *job;
  ksnap_coord_sm_conf_t conf;
  ksnap_coord_state_t state;
  bool started;
  bool recovered;     /**< the replayed history was not empty */
  bool hb_registers;  /**< a HEARTBEAT at G counts as registration */
  bool oom;           /**< an allocation failed: the sm is unusable */
  int64_t generation;
  int64_t max_id; /**< highest id ever used, or NONE */

  coord_task_t *tasks;
  size_t task_cnt;

  coord_ckpt_t **pending; /**< ascending ids */
  size_t pending_cnt, pending_cap;

  coord_done_t *done;
  size_t done_cnt, done_cap;
  int64_t latest_completed;   /**< NONE if none */
  int64_t last_completion_ms; /**< -1 if none since start */

  int64_t next_periodic_ms;
  bool manual_requested;
  bool deferral_logged, pause_logged;
  int64_t waiting_log_ms;

  int failures;            /**< consecutive counted failures */
  int64_t last_success_id; /**< NONE if none */
  char *restore_reason;    /**< RESTORE_PENDING: why */

  coord_done_t *unresolved; /**< replay: triggered, neither done nor aborted */
  size_t unresolved_cnt, unresolved_cap;

  ksnap_coord_action_t *acts; /**< queue: acts[act_head .. act_cnt) */
  size_t act_head, act_cnt, act_cap;

  ksnap_coord_stats_t *stats;
};

/* coord_sm.c */
ksnap_coord_action_t *ksnap__coord_emit(ksnap_coord_sm_t *sm,
                                        ksnap_coord_act_type_t type);
void ksnap__coord_log(ksnap_coord_sm_t *sm, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ksnap_err_t ksnap__coord_set_state(ksnap_coord_sm_t *sm,
                                   ksnap_coord_state_t to);
ksnap_err_t ksnap__coord_restore(ksnap_coord_sm_t *sm, int64_t now_ms,
                                 const char *reason);
void ksnap__coord_fail(ksnap_coord_sm_t *sm, int64_t now_ms,
                       const char *reason);
bool ksnap__coord_is_terminal(const ksnap_coord_sm_t *sm);
/** Entry check of an event named @p what: KSNAP_ERR_NOMEM after an
 *  allocation failure; KSNAP_ERR_STATE (logged) before start or in a
 *  terminal state. */
ksnap_err_t ksnap__coord_enter(ksnap_coord_sm_t *sm, const char *what);

/* coord_ckpt.c */
coord_ckpt_t *ksnap__coord_ckpt_new(ksnap_coord_sm_t *sm, int64_t id,
                                    int64_t now_ms,
                                    const ksnap_ckpt_options_t *options);
coord_ckpt_t *ksnap__coord_ckpt_find(const ksnap_coord_sm_t *sm, int64_t id);
ksnap_err_t ksnap__coord_ckpt_set_state(ksnap_coord_sm_t *sm,
                                        coord_ckpt_t *ck,
                                        ksnap_ckpt_state_t to);
/** Aborts @p ck (ABORT out, stats, failure counter if @p counted), frees
 *  it. */
void ksnap__coord_ckpt_abort(ksnap_coord_sm_t *sm, coord_ckpt_t *ck,
                             int64_t now_ms, const char *reason,
                             bool counted);
/** Starts writing the metadata of the oldest fully acked checkpoint if
 *  none is being finalized. */
void ksnap__coord_finalize_next(ksnap_coord_sm_t *sm);
/** Aborts expired checkpoints. */
void ksnap__coord_expire(ksnap_coord_sm_t *sm, int64_t now_ms);
bool ksnap__coord_completing(const ksnap_coord_sm_t *sm);

/* coord_tasks.c, coord_retain.c */
coord_task_t *ksnap__coord_task_find(const ksnap_coord_sm_t *sm,
                                     const ksnap_task_id_t *task);
/** As ksnap__coord_task_find(), logging "WHAT from unknown task". */
coord_task_t *ksnap__coord_known_task(ksnap_coord_sm_t *sm, const char *what,
                                      const ksnap_task_id_t *task);
size_t ksnap__coord_task_index(const ksnap_coord_sm_t *sm,
                               const coord_task_t *task);
ksnap_err_t ksnap__coord_tasks_init(ksnap_coord_sm_t *sm);
/** Restores the job if a watched task is silent for heartbeat.timeout. */
void ksnap__coord_check_heartbeats(ksnap_coord_sm_t *sm, int64_t now_ms);
/** WAITING -> RUNNING once every task is ready; else a periodic log. */
void ksnap__coord_check_ready(ksnap_coord_sm_t *sm, int64_t now_ms);
/** Records a completed checkpoint; @p tasks NULL: its references are
 *  unknown (replayed). */
ksnap_err_t ksnap__coord_done_add(ksnap_coord_sm_t *sm, int64_t id,
                                  int64_t generation, bool is_savepoint,
                                  const ksnap_task_snapshot_t *tasks,
                                  size_t task_cnt);
void ksnap__coord_retire(ksnap_coord_sm_t *sm);

/* coord_owner.c */
/** A claim (REGISTER with claim set) of @p t by reg->worker_id. */
ksnap_err_t ksnap__coord_owner_claim(ksnap_coord_sm_t *sm, int64_t now_ms,
                                     coord_task_t *t,
                                     const ksnap_register_t *reg);
/** A ready REGISTER at generation G of an instance that was not
 *  replaced: true if it owns @p t now (a vacant task is taken); false if
 *  it replaced the owner (the job is being restored). */
bool ksnap__coord_owner_ready(ksnap_coord_sm_t *sm, int64_t now_ms,
                              coord_task_t *t, const char *instance);
/** True (logged: "WHAT of task T by instance I refused") if @p instance
 *  is a replaced instance of @p t. */
bool ksnap__coord_owner_refuses(ksnap_coord_sm_t *sm, const coord_task_t *t,
                                const char *what, const char *instance);
/** @p t missed its heartbeats: its owner is presumed dead (vacant). */
void ksnap__coord_owner_vacate(coord_task_t *t);
/** Fills @p act's owner table (a RESTORE) from the tasks. */
void ksnap__coord_owner_table(ksnap_coord_sm_t *sm, ksnap_coord_action_t *act);
/** Replay of a RESTORE's owner table or of an ASSIGN. */
void ksnap__coord_owner_replay(ksnap_coord_sm_t *sm,
                               const ksnap_control_record_t *rec);

#endif /* KSNAP_COORD_INT_H */
