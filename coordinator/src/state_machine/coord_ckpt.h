/* The pending checkpoints of the coordinator state machine and their
 * states (coord_ckpt.c; diagram there). Called by the hub only
 * (coord_sm.c, coord_events.c, coord_setup.c); it calls coord_actions.c
 * and the statistics (stats/coord_stats.h). It never changes the job's
 * state: what an abort means for the job comes back as a coord_abort_t,
 * a completion as a coord_completion_t. Not installed. */
#ifndef KSNAP_COORD_CKPT_H
#define KSNAP_COORD_CKPT_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_actions.h"

typedef struct coord_ckpts_s coord_ckpts_t;
typedef struct coord_ckpt_s coord_ckpt_t;

/** The abort of one checkpoint, for the hub: the failure counter and the
 *  stop-with-savepoint are job-level. */
typedef struct coord_abort_s {
  bool aborted;      /**< a checkpoint was aborted: the fields are set */
  int64_t id;
  bool is_savepoint;
  bool counted;      /**< decline, expiry, metadata or COMPLETE failed */
  bool stop;         /**< it was the stop-with-savepoint */
  char reason[512];  /**< the ABORT's text */
} coord_abort_t;

/** A checkpoint whose COMPLETE is committed; its snapshots stay valid
 *  until ksnap__coord_ckpts_subsume() frees it. */
typedef struct coord_completion_s {
  coord_ckpt_t *ck; /**< NULL: no completion */
  int64_t id;
  int64_t generation;
  bool is_savepoint;
  bool stop;
  const ksnap_task_snapshot_t *snaps; /**< per task */
  size_t task_cnt;
} coord_completion_t;

/** @p job, @p stats and @p names (one per task, the task table's order)
 *  are borrowed. @returns NULL when out of memory. */
coord_ckpts_t *ksnap__coord_ckpts_new(coord_acts_t *acts,
                                      ksnap_coord_stats_t *stats,
                                      const ksnap_job_t *job,
                                      const char *const *names,
                                      size_t task_cnt, int64_t timeout_ms);
void ksnap__coord_ckpts_destroy(coord_ckpts_t *ckpts);

size_t ksnap__coord_ckpts_cnt(const coord_ckpts_t *ckpts);
/** @returns the state of pending checkpoint @p id, or -1. */
int ksnap__coord_ckpts_state(const coord_ckpts_t *ckpts, int64_t id);
/** @returns true if a COMPLETE record is in flight. */
bool ksnap__coord_ckpts_completing(const coord_ckpts_t *ckpts);

/** TRIGGERED: TRIGGER(@p id) out. @returns false when out of memory. */
bool ksnap__coord_ckpts_trigger(coord_ckpts_t *ckpts, int64_t id,
                                int64_t generation, int64_t now_ms,
                                const ksnap_ckpt_options_t *options,
                                bool stop);
/** Aborts every pending checkpoint, newest first, not counted; with
 *  @p spare_completing the one whose COMPLETE is in flight stays. */
void ksnap__coord_ckpts_abort_all(coord_ckpts_t *ckpts, int64_t now_ms,
                                  const char *reason, bool spare_completing);
/** Aborts the oldest checkpoint still collecting ACKs past the timeout.
 *  @returns false if none expired. */
bool ksnap__coord_ckpts_expire_one(coord_ckpts_t *ckpts, int64_t now_ms,
                                   coord_abort_t *v);

/** ACK by the task at @p ti named @p task; on KSNAP_ERR_OK the snapshot
 *  is taken. @p full: every task ACKed it (now ACKED). */
ksnap_err_t ksnap__coord_ckpts_ack(coord_ckpts_t *ckpts, int64_t now_ms,
                                   size_t ti, const char *task,
                                   ksnap_ack_t *ack, int64_t generation,
                                   int64_t max_id, bool *full);
/** DECLINE by @p task; v->aborted when it aborted the checkpoint. */
ksnap_err_t ksnap__coord_ckpts_decline(coord_ckpts_t *ckpts, int64_t now_ms,
                                       const char *task,
                                       const ksnap_decline_t *decline,
                                       int64_t generation, coord_abort_t *v);
/** @returns the oldest ACKED checkpoint if none is WRITING_METADATA or
 *  COMPLETING (invariant 7), else NONE. */
int64_t ksnap__coord_ckpts_next_to_finalize(const coord_ckpts_t *ckpts);
/** ACKED -> WRITING_METADATA: WRITE_METADATA(@p id) out, its parent
 *  @p parent_id. */
void ksnap__coord_ckpts_write_metadata(coord_ckpts_t *ckpts, int64_t id,
                                       int64_t parent_id);
/** Result of WRITE_METADATA: COMPLETING, or aborted (v). */
ksnap_err_t ksnap__coord_ckpts_metadata_written(coord_ckpts_t *ckpts,
                                                int64_t now_ms, int64_t id,
                                                const char *errmsg,
                                                coord_abort_t *v);
/** Result of SEND_COMPLETE: COMPLETED (c), or aborted (v). */
ksnap_err_t ksnap__coord_ckpts_complete_result(coord_ckpts_t *ckpts,
                                               int64_t now_ms, int64_t id,
                                               const char *errmsg,
                                               coord_abort_t *v,
                                               coord_completion_t *c);
/** Frees the completed checkpoint and aborts the older pending ones but
 *  savepoints and a COMPLETE in flight (subsumed, not counted). */
void ksnap__coord_ckpts_subsume(coord_ckpts_t *ckpts, coord_completion_t *c,
                                int64_t now_ms);

#endif /* KSNAP_COORD_CKPT_H */
