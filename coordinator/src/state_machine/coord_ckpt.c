/* Per-checkpoint states of the coordinator (diagram and invariants at the
 * top of coord_sm.c): ACK collection, metadata, the COMPLETE decision,
 * subsumption, expiry, abort and the tolerable-failure counter. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "ksnap/log.h"

#define CS(x) (1u << KSNAP_CKPT_##x)
static const unsigned ckpt_allowed[] = {
    [KSNAP_CKPT_TRIGGERED] = CS(ACKED) | CS(ABORTED),
    [KSNAP_CKPT_ACKED] = CS(WRITING_METADATA) | CS(ABORTED),
    [KSNAP_CKPT_WRITING_METADATA] = CS(COMPLETING) | CS(ABORTED),
    [KSNAP_CKPT_COMPLETING] = CS(COMPLETED) | CS(ABORTED),
    [KSNAP_CKPT_COMPLETED] = 0,
    [KSNAP_CKPT_ABORTED] = 0,
};
#undef CS

ksnap_err_t ksnap__coord_ckpt_set_state(ksnap_coord_sm_t *sm,
                                        coord_ckpt_t *ck,
                                        ksnap_ckpt_state_t to) {
  if (!(ckpt_allowed[ck->state] & (1u << to))) {
    ksnap__coord_log(sm, KSNAP_LOG_ERR,
                     "Illegal transition of checkpoint %" PRId64
                     " %s -> %s refused",
                     ck->id, ksnap_ckpt_state_name(ck->state),
                     ksnap_ckpt_state_name(to));
    return KSNAP_ERR_STATE;
  }
  ck->state = to;
  return KSNAP_ERR_OK;
}

coord_ckpt_t *ksnap__coord_ckpt_find(const ksnap_coord_sm_t *sm, int64_t id) {
  for (size_t i = 0; i < sm->pending_cnt; i++)
    if (sm->pending[i]->id == id)
      return sm->pending[i];
  return NULL;
}

int ksnap_coord_sm_ckpt_state(const ksnap_coord_sm_t *sm, int64_t id) {
  coord_ckpt_t *ck = ksnap__coord_ckpt_find(sm, id);

  if (ck)
    return (int)ck->state;
  for (size_t i = 0; i < sm->done_cnt; i++)
    if (sm->done[i].id == id)
      return KSNAP_CKPT_COMPLETED;
  return -1;
}

coord_ckpt_t *ksnap__coord_ckpt_new(ksnap_coord_sm_t *sm, int64_t id,
                                    int64_t now_ms,
                                    const ksnap_ckpt_options_t *options) {
  coord_ckpt_t *ck = calloc(1, sizeof(*ck));
  const char **names = calloc(sm->task_cnt, sizeof(*names));

  if (sm->pending_cnt == sm->pending_cap) {
    size_t cap = sm->pending_cap ? sm->pending_cap * 2 : 8;
    coord_ckpt_t **p = realloc(sm->pending, cap * sizeof(*p));
    if (p) {
      sm->pending = p;
      sm->pending_cap = cap;
    }
  }
  if (!ck || !names || sm->pending_cnt == sm->pending_cap ||
      !(ck->acked = calloc(sm->task_cnt, sizeof(*ck->acked))) ||
      !(ck->snaps = calloc(sm->task_cnt, sizeof(*ck->snaps)))) {
    if (ck) {
      free(ck->acked);
      free(ck);
    }
    free(names);
    sm->oom = true;
    return NULL;
  }
  ck->id = id;
  ck->generation = sm->generation;
  ck->trigger_ms = now_ms;
  ck->options = *options;
  ck->state = KSNAP_CKPT_TRIGGERED;
  sm->pending[sm->pending_cnt++] = ck; /* ids ascend: appended last */
  for (size_t i = 0; i < sm->task_cnt; i++)
    names[i] = sm->tasks[i].name;
  if (ksnap_coord_stats_triggered(sm->stats, id, now_ms,
                                  options->is_savepoint, names,
                                  sm->task_cnt) == KSNAP_ERR_NOMEM)
    sm->oom = true;
  free(names);
  return ck;
}

static void ckpt_free(ksnap_coord_sm_t *sm, coord_ckpt_t *ck) {
  size_t i;

  for (i = 0; i < sm->pending_cnt && sm->pending[i] != ck; i++)
    ;
  if (i < sm->pending_cnt) {
    memmove(&sm->pending[i], &sm->pending[i + 1],
            (sm->pending_cnt - i - 1) * sizeof(*sm->pending));
    sm->pending_cnt--;
  }
  for (i = 0; i < sm->task_cnt; i++)
    ksnap_task_snapshot_cleanup(&ck->snaps[i]);
  free(ck->snaps);
  free(ck->acked);
  free(ck);
}

bool ksnap__coord_completing(const ksnap_coord_sm_t *sm) {
  for (size_t i = 0; i < sm->pending_cnt; i++)
    if (sm->pending[i]->state == KSNAP_CKPT_COMPLETING)
      return true;
  return false;
}

/* Invariant 11 (Flink's CheckpointFailureManager). */
static void count_failure(ksnap_coord_sm_t *sm, const coord_ckpt_t *ck,
                          int64_t now_ms, const char *reason) {
  char why[512];

  if (ck->options.is_savepoint ||
      (sm->last_success_id != KSNAP_CHECKPOINT_NONE &&
       ck->id <= sm->last_success_id))
    return;
  sm->failures++;
  if (sm->failures <= sm->conf.tolerable_failed ||
      ksnap__coord_is_terminal(sm))
    return;
  snprintf(why, sizeof(why),
           "Exceeded checkpoint tolerable failure threshold: %d consecutive "
           "checkpoint failures "
           "(execution.checkpointing.tolerable-failed-checkpoints=%d); the "
           "last: checkpoint %" PRId64 " %s",
           sm->failures, sm->conf.tolerable_failed, ck->id, reason);
  ksnap__coord_fail(sm, now_ms, why);
}

void ksnap__coord_ckpt_abort(ksnap_coord_sm_t *sm, coord_ckpt_t *ck,
                             int64_t now_ms, const char *reason,
                             bool counted) {
  ksnap_coord_action_t *act;
  bool stop = ck->stop;

  if (ksnap__coord_ckpt_set_state(sm, ck, KSNAP_CKPT_ABORTED))
    return;
  ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                   "Aborting %s %" PRId64 ": %s",
                   ck->options.is_savepoint ? "savepoint" : "checkpoint",
                   ck->id, reason);
  if ((act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_SEND_ABORT))) {
    act->checkpoint_id = ck->id;
    act->generation = ck->generation;
    if (!(act->text = strdup(reason)))
      sm->oom = true;
  }
  if (ksnap_coord_stats_failed(sm->stats, ck->id, now_ms, reason) ==
      KSNAP_ERR_NOMEM)
    sm->oom = true;
  if (counted)
    count_failure(sm, ck, now_ms, reason);
  ckpt_free(sm, ck);
  if (stop && sm->state == KSNAP_COORD_STOPPING) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Stop-with-savepoint failed; the job keeps running");
    ksnap__coord_set_state(sm, KSNAP_COORD_RUNNING);
  }
}

void ksnap__coord_expire(ksnap_coord_sm_t *sm, int64_t now_ms) {
  for (size_t i = 0; i < sm->pending_cnt; i++) {
    coord_ckpt_t *ck = sm->pending[i];
    if ((ck->state != KSNAP_CKPT_TRIGGERED && ck->state != KSNAP_CKPT_ACKED) ||
        now_ms < ck->trigger_ms + sm->conf.timeout_ms)
      continue;
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Checkpoint %" PRId64 " expired before completing.",
                     ck->id);
    ksnap__coord_ckpt_abort(sm, ck, now_ms, "expired before completing",
                            true);
    i--;
    if (ksnap__coord_is_terminal(sm))
      return;
  }
}

/* --------------------------------------------------------------- ACKs */

ksnap_err_t ksnap_coord_sm_ack(ksnap_coord_sm_t *sm, int64_t now_ms,
                               ksnap_ack_t *ack) {
  coord_task_t *t;
  coord_ckpt_t *ck;
  size_t ti, h;

  ksnap_err_t err = ksnap__coord_enter(sm, "ACK");

  if (err)
    return err;
  if (!(t = ksnap__coord_known_task(sm, "ACK", &ack->snapshot.task)))
    return KSNAP_ERR_NOT_FOUND;
  if (ack->generation < sm->generation) {
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "ACK of checkpoint %" PRId64 " by task %s from old "
                     "generation %" PRId64 " ignored (current %" PRId64 ")",
                     ack->checkpoint_id, t->name, ack->generation,
                     sm->generation);
    return KSNAP_ERR_OK;
  }
  ck = ksnap__coord_ckpt_find(sm, ack->checkpoint_id);
  if (ack->generation > sm->generation || !ck ||
      ck->state != KSNAP_CKPT_TRIGGERED) {
    ksnap__coord_log(
        sm, ck || ack->checkpoint_id <= sm->max_id ? KSNAP_LOG_INFO
                                                    : KSNAP_LOG_WARNING,
        "ACK of checkpoint %" PRId64 " by task %s (generation %" PRId64
        ") refused: %s",
        ack->checkpoint_id, t->name, ack->generation,
        ack->generation > sm->generation ? "generation newer than the "
                                           "coordinator's"
        : !ck && ack->checkpoint_id <= sm->max_id
            ? "late message for a checkpoint no longer pending"
        : !ck ? "unknown checkpoint"
              : "all tasks already acknowledged it");
    return KSNAP_ERR_STATE;
  }
  ti = ksnap__coord_task_index(sm, t);
  if (ck->acked[ti]) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Duplicate ACK of checkpoint %" PRId64
                     " by task %s ignored",
                     ck->id, t->name);
    return KSNAP_ERR_STATE;
  }
  ck->acked[ti] = true;
  ck->acked_cnt++;
  ck->snaps[ti] = ack->snapshot; /* moved */
  memset(&ack->snapshot, 0, sizeof(ack->snapshot));
  {
    int64_t size = 0;
    for (h = 0; h < ck->snaps[ti].handle_cnt; h++)
      size += ck->snaps[ti].handles[h].size;
    ck->state_size += size;
    ksnap_coord_stats_acked(sm->stats, ck->id, t->name, now_ms,
                            &ck->snaps[ti].timings, size);
  }
  if (ck->acked_cnt == sm->task_cnt) {
    ksnap__coord_ckpt_set_state(sm, ck, KSNAP_CKPT_ACKED);
    ksnap__coord_finalize_next(sm);
  }
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_sm_decline(ksnap_coord_sm_t *sm, int64_t now_ms,
                                   const ksnap_decline_t *decline) {
  coord_task_t *t;
  coord_ckpt_t *ck;
  char why[512];

  ksnap_err_t err = ksnap__coord_enter(sm, "DECLINE");

  if (err)
    return err;
  if (!(t = ksnap__coord_known_task(sm, "DECLINE", &decline->task)))
    return KSNAP_ERR_NOT_FOUND;
  if (decline->generation < sm->generation) {
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "DECLINE of checkpoint %" PRId64 " by task %s from old "
                     "generation %" PRId64 " ignored",
                     decline->checkpoint_id, t->name, decline->generation);
    return KSNAP_ERR_OK;
  }
  ck = ksnap__coord_ckpt_find(sm, decline->checkpoint_id);
  if (decline->generation > sm->generation || !ck ||
      (ck->state != KSNAP_CKPT_TRIGGERED && ck->state != KSNAP_CKPT_ACKED)) {
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "DECLINE of checkpoint %" PRId64 " by task %s refused: "
                     "the checkpoint is not pending acknowledgement",
                     decline->checkpoint_id, t->name);
    return KSNAP_ERR_STATE;
  }
  ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                   "Decline checkpoint %" PRId64 " by task %s: %s", ck->id,
                   t->name, decline->reason ? decline->reason : "");
  snprintf(why, sizeof(why), "declined by task %s: %s", t->name,
           decline->reason ? decline->reason : "");
  /* a task that failed with it: restore, not counted (Flink's
   * TASK_FAILURE is not counted against tolerable failures either) */
  ksnap__coord_ckpt_abort(sm, ck, now_ms, why, !decline->task_failed);
  if (decline->task_failed) {
    snprintf(why, sizeof(why), "task %s failed: %s", t->name,
             decline->reason ? decline->reason : "");
    ksnap__coord_restore(sm, now_ms, why);
  }
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

/* ---------------------------------------------- metadata and COMPLETE */

/* Parent: the newest completed checkpoint older than @p id (DESIGN.md 5:
 * restores always start from the latest completed one, so this is also
 * the checkpoint the generation started from when none completed since). */
static int64_t parent_of(const ksnap_coord_sm_t *sm, int64_t id) {
  int64_t parent = KSNAP_CHECKPOINT_NONE;

  for (size_t i = 0; i < sm->done_cnt; i++)
    if (sm->done[i].id < id && sm->done[i].id > parent)
      parent = sm->done[i].id;
  return parent;
}

void ksnap__coord_finalize_next(ksnap_coord_sm_t *sm) {
  coord_ckpt_t *next = NULL;
  ksnap_coord_action_t *act;

  if (ksnap__coord_is_terminal(sm))
    return;
  for (size_t i = 0; i < sm->pending_cnt; i++) {
    coord_ckpt_t *ck = sm->pending[i];
    if (ck->state == KSNAP_CKPT_WRITING_METADATA ||
        ck->state == KSNAP_CKPT_COMPLETING)
      return; /* invariant 7: one at a time */
    if (ck->state == KSNAP_CKPT_ACKED && !next)
      next = ck; /* ascending ids: the oldest fully acked */
  }
  if (!next || ksnap__coord_ckpt_set_state(sm, next,
                                           KSNAP_CKPT_WRITING_METADATA))
    return;
  next->meta.job = (char *)ksnap_job_name(sm->job);
  next->meta.checkpoint_id = next->id;
  next->meta.generation = next->generation;
  next->meta.parent_id = parent_of(sm, next->id);
  next->meta.timestamp_ms = next->trigger_ms;
  next->meta.is_savepoint = next->options.is_savepoint;
  next->meta.tasks = next->snaps;
  next->meta.task_cnt = sm->task_cnt;
  if ((act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_WRITE_METADATA))) {
    act->checkpoint_id = next->id;
    act->meta = &next->meta;
  }
}

ksnap_err_t ksnap_coord_sm_metadata_written(ksnap_coord_sm_t *sm,
                                            int64_t now_ms, int64_t id,
                                            const char *errmsg) {
  ksnap_err_t err = ksnap__coord_enter(sm, "Metadata result");
  ksnap_coord_action_t *act;
  coord_ckpt_t *ck;
  char why[512];

  if (err)
    return err;
  ck = ksnap__coord_ckpt_find(sm, id);
  if (!ck || ck->state != KSNAP_CKPT_WRITING_METADATA) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "Metadata result for checkpoint %" PRId64
                     " refused: it is not writing metadata (%s)",
                     id, ck ? ksnap_ckpt_state_name(ck->state)
                            : "not pending");
    return KSNAP_ERR_STATE;
  }
  if (errmsg) {
    snprintf(why, sizeof(why), "writing its metadata failed: %s", errmsg);
    ksnap__coord_ckpt_abort(sm, ck, now_ms, why, true);
    ksnap__coord_finalize_next(sm);
    return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
  }
  ksnap__coord_ckpt_set_state(sm, ck, KSNAP_CKPT_COMPLETING);
  if ((act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_SEND_COMPLETE))) {
    act->checkpoint_id = ck->id;
    act->generation = ck->generation;
  }
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

/* The decision is made: record it, subsume older pending checkpoints
 * (invariant 8), stop after a stop-with-savepoint, retire. */
static void completed(ksnap_coord_sm_t *sm, coord_ckpt_t *ck,
                      int64_t now_ms) {
  int64_t id = ck->id;
  bool stop = ck->stop;
  char why[128];

  ksnap__coord_ckpt_set_state(sm, ck, KSNAP_CKPT_COMPLETED);
  ksnap__coord_log(sm, KSNAP_LOG_INFO,
                   "Completed %s %" PRId64 " (%" PRId64 " bytes in %" PRId64
                   " ms)",
                   ck->options.is_savepoint ? "savepoint" : "checkpoint", id,
                   ck->state_size, now_ms - ck->trigger_ms);
  if (ksnap_coord_stats_completed(sm->stats, id, now_ms) == KSNAP_ERR_NOMEM)
    sm->oom = true;
  if (ksnap__coord_done_add(sm, id, ck->generation, ck->options.is_savepoint,
                            ck->snaps, sm->task_cnt))
    sm->oom = true;
  if (sm->latest_completed == KSNAP_CHECKPOINT_NONE ||
      id > sm->latest_completed)
    sm->latest_completed = id;
  sm->last_completion_ms = now_ms;
  if (sm->last_success_id == KSNAP_CHECKPOINT_NONE ||
      id > sm->last_success_id) {
    sm->last_success_id = id;
    sm->failures = 0;
  }
  ck->meta.tasks = NULL;
  ckpt_free(sm, ck);
  snprintf(why, sizeof(why), "subsumed by checkpoint %" PRId64, id);
  for (size_t i = 0; i < sm->pending_cnt; i++) {
    coord_ckpt_t *old = sm->pending[i];
    if (old->id < id && !old->options.is_savepoint &&
        old->state != KSNAP_CKPT_COMPLETING) {
      ksnap__coord_ckpt_abort(sm, old, now_ms, why, false);
      i--;
    }
  }
  if (stop && sm->state == KSNAP_COORD_STOPPING) {
    ksnap_coord_action_t *act;
    while (sm->pending_cnt > 0)
      ksnap__coord_ckpt_abort(sm, sm->pending[sm->pending_cnt - 1], now_ms,
                              "job stopped with a savepoint", false);
    ksnap__coord_set_state(sm, KSNAP_COORD_FINISHED);
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "Job stopped with savepoint %" PRId64, id);
    if ((act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_STOP_JOB)))
      act->checkpoint_id = id;
  }
  ksnap__coord_retire(sm);
}

ksnap_err_t ksnap_coord_sm_complete_committed(ksnap_coord_sm_t *sm,
                                              int64_t now_ms, int64_t id,
                                              const char *errmsg) {
  ksnap_err_t err = ksnap__coord_enter(sm, "COMPLETE result");
  coord_ckpt_t *ck;
  char why[512];

  if (err)
    return err;
  ck = ksnap__coord_ckpt_find(sm, id);
  if (!ck || ck->state != KSNAP_CKPT_COMPLETING) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "COMPLETE result for checkpoint %" PRId64
                     " refused: no COMPLETE record is in flight for it (%s)",
                     id, ck ? ksnap_ckpt_state_name(ck->state)
                            : "not pending");
    return KSNAP_ERR_STATE;
  }
  if (errmsg) {
    snprintf(why, sizeof(why), "its COMPLETE record was not committed: %s",
             errmsg);
    ksnap__coord_ckpt_abort(sm, ck, now_ms, why, true);
  } else {
    completed(sm, ck, now_ms);
  }
  if (sm->state == KSNAP_COORD_RESTORE_PENDING) {
    char *reason = sm->restore_reason;
    sm->restore_reason = NULL;
    ksnap__coord_restore(sm, now_ms, reason ? reason : "deferred restore");
    free(reason);
  } else {
    ksnap__coord_finalize_next(sm);
  }
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}
