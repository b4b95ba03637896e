/*
 * The pending checkpoints of the coordinator (coord_ckpt.h): ACK
 * collection, metadata, the COMPLETE result, subsumption, expiry, abort.
 * Invariants 3 and 6-8 (numbered at the top of coord_sm.c) are kept here;
 * the failure counter, the stop-with-savepoint and the restores are the
 * hub's, told by the coord_abort_t of each abort.
 *
 * Per-checkpoint states (ksnap_ckpt_state_t):
 *
 *   TRIGGERED --all tasks ACKed at G--> ACKED --its turn--> WRITING_METADATA
 *       |                                 |                      |
 *       | decline, expiry, subsumed,      | expiry, subsumed,    | ok
 *       | restore, job failed             | restore, job failed  v
 *       v                                 v                  COMPLETING
 *    ABORTED <----------------------------+--- write failed /    |
 *                                              restore           | COMPLETE
 *    ABORTED <---------- COMPLETE not committed ---------------- + committed
 *                                                                v
 *                                                            COMPLETED
 *
 *   transition                     function (event)
 *   (new) -> TRIGGERED             ksnap__coord_ckpts_trigger (TRIGGER out)
 *   TRIGGERED -> ACKED             ksnap__coord_ckpts_ack (the last ACK)
 *   ACKED -> WRITING_METADATA      ksnap__coord_ckpts_write_metadata (the
 *                                  hub picks the next_to_finalize)
 *   WRITING_METADATA -> COMPLETING ksnap__coord_ckpts_metadata_written (ok:
 *                                  SEND_COMPLETE out)
 *   COMPLETING -> COMPLETED        ksnap__coord_ckpts_complete_result (ok)
 *   any but final -> ABORTED       abort_ck(), from: _decline, _expire_one
 *                                  (TRIGGERED, ACKED), _metadata_written
 *                                  and _complete_result (failed), _subsume,
 *                                  _abort_all (restore, job failed, stopped)
 *   COMPLETED, ABORTED             final: the checkpoint is freed at once
 *
 * ckpt_allowed[] refuses any other transition loudly (an ERR log).
 *
 * Decisions (Flink's CheckpointCoordinator is the reference):
 *  - Any completion, a savepoint's included, subsumes older pending
 *    checkpoints but savepoints. Flink >= 1.15 skips that for non-stop
 *    savepoints because it does not notify tasks of them; in ksnap a
 *    savepoint's COMPLETE commits the sinks' transactions like any other,
 *    so it subsumes.
 *  - Expiry (timeout after the trigger) applies while ACKs are collected
 *    (TRIGGERED, ACKED); once the metadata write started, the driver's
 *    storage and Kafka timeouts decide through the result events.
 *  - Counted failures: decline (unless the task failed with it: the job
 *    restores instead, as Flink does not count a TASK_FAILURE either),
 *    expiry, metadata write failed, COMPLETE not committed. Not counted:
 *    subsumed, aborted by a restore, by the job's failure or stop.
 */
#include "coord_ckpt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"

/** One pending checkpoint (TRIGGERED .. COMPLETING). */
struct coord_ckpt_s {
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
};

struct coord_ckpts_s {
  coord_acts_t *acts;         /**< borrowed */
  ksnap_coord_stats_t *stats; /**< borrowed */
  const ksnap_job_t *job;     /**< borrowed */
  const char *const *names;   /**< borrowed: per task */
  size_t task_cnt;
  int64_t timeout_ms;
  coord_ckpt_t **pending; /**< ascending ids */
  size_t cnt, cap;
};

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

static ksnap_err_t set_state(coord_ckpts_t *ckpts, coord_ckpt_t *ck,
                             ksnap_ckpt_state_t to) {
  if (!(ckpt_allowed[ck->state] & (1u << to))) {
    ksnap__coord_log(ckpts->acts, KSNAP_LOG_ERR,
                     "Illegal transition of checkpoint %" PRId64
                     " %s -> %s refused",
                     ck->id, ksnap_ckpt_state_name(ck->state),
                     ksnap_ckpt_state_name(to));
    return KSNAP_ERR_STATE;
  }
  ck->state = to;
  return KSNAP_ERR_OK;
}

/* ------------------------------------------------------- the list */

coord_ckpts_t *ksnap__coord_ckpts_new(coord_acts_t *acts,
                                      ksnap_coord_stats_t *stats,
                                      const ksnap_job_t *job,
                                      const char *const *names,
                                      size_t task_cnt, int64_t timeout_ms) {
  coord_ckpts_t *ckpts = calloc(1, sizeof(*ckpts));

  if (!ckpts)
    return NULL;
  ckpts->acts = acts;
  ckpts->stats = stats;
  ckpts->job = job;
  ckpts->names = names;
  ckpts->task_cnt = task_cnt;
  ckpts->timeout_ms = timeout_ms;
  return ckpts;
}

static void ckpt_free(coord_ckpts_t *ckpts, coord_ckpt_t *ck) {
  size_t i;

  for (i = 0; i < ckpts->cnt && ckpts->pending[i] != ck; i++)
    ;
  if (i < ckpts->cnt) {
    memmove(&ckpts->pending[i], &ckpts->pending[i + 1],
            (ckpts->cnt - i - 1) * sizeof(*ckpts->pending));
    ckpts->cnt--;
  }
  for (i = 0; i < ckpts->task_cnt; i++)
    ksnap_task_snapshot_cleanup(&ck->snaps[i]);
  free(ck->snaps);
  free(ck->acked);
  free(ck);
}

void ksnap__coord_ckpts_destroy(coord_ckpts_t *ckpts) {
  if (!ckpts)
    return;
  while (ckpts->cnt > 0)
    ckpt_free(ckpts, ckpts->pending[ckpts->cnt - 1]);
  free(ckpts->pending);
  free(ckpts);
}

static coord_ckpt_t *find(const coord_ckpts_t *ckpts, int64_t id) {
  for (size_t i = 0; i < ckpts->cnt; i++)
    if (ckpts->pending[i]->id == id)
      return ckpts->pending[i];
  return NULL;
}

size_t ksnap__coord_ckpts_cnt(const coord_ckpts_t *ckpts) {
  return ckpts->cnt;
}

int ksnap__coord_ckpts_state(const coord_ckpts_t *ckpts, int64_t id) {
  coord_ckpt_t *ck = find(ckpts, id);

  return ck ? (int)ck->state : -1;
}

bool ksnap__coord_ckpts_completing(const coord_ckpts_t *ckpts) {
  for (size_t i = 0; i < ckpts->cnt; i++)
    if (ckpts->pending[i]->state == KSNAP_CKPT_COMPLETING)
      return true;
  return false;
}

static coord_ckpt_t *ckpt_new(coord_ckpts_t *ckpts, int64_t id,
                              int64_t generation, int64_t now_ms,
                              const ksnap_ckpt_options_t *options) {
  coord_ckpt_t *ck = calloc(1, sizeof(*ck));

  if (ckpts->cnt == ckpts->cap) {
    size_t cap = ckpts->cap ? ckpts->cap * 2 : 8;
    coord_ckpt_t **p = realloc(ckpts->pending, cap * sizeof(*p));
    if (p) {
      ckpts->pending = p;
      ckpts->cap = cap;
    }
  }
  if (!ck || ckpts->cnt == ckpts->cap ||
      !(ck->acked = calloc(ckpts->task_cnt, sizeof(*ck->acked))) ||
      !(ck->snaps = calloc(ckpts->task_cnt, sizeof(*ck->snaps)))) {
    if (ck)
      free(ck->acked);
    free(ck);
    ksnap__coord_oom(ckpts->acts);
    return NULL;
  }
  ck->id = id;
  ck->generation = generation;
  ck->trigger_ms = now_ms;
  ck->options = *options;
  ck->state = KSNAP_CKPT_TRIGGERED;
  ckpts->pending[ckpts->cnt++] = ck; /* ids ascend: appended last */
  if (ksnap_coord_stats_triggered(ckpts->stats, id, now_ms,
                                  options->is_savepoint, ckpts->names,
                                  ckpts->task_cnt) == KSNAP_ERR_NOMEM)
    ksnap__coord_oom(ckpts->acts);
  return ck;
}

bool ksnap__coord_ckpts_trigger(coord_ckpts_t *ckpts, int64_t id,
                                int64_t generation, int64_t now_ms,
                                const ksnap_ckpt_options_t *options,
                                bool stop) {
  coord_ckpt_t *ck = ckpt_new(ckpts, id, generation, now_ms, options);
  ksnap_coord_action_t *act;

  if (!ck)
    return false;
  ck->stop = stop;
  ksnap__coord_log(ckpts->acts, KSNAP_LOG_INFO,
                   "Triggering checkpoint %" PRId64 " (type=%s%s) @ %" PRId64
                   " in generation %" PRId64,
                   id, options->is_savepoint ? "SAVEPOINT" : "CHECKPOINT",
                   stop ? ", stop" : "", now_ms, generation);
  if ((act = ksnap__coord_emit(ckpts->acts, KSNAP_COORD_ACT_TRIGGER))) {
    act->checkpoint_id = id;
    act->timestamp_ms = now_ms;
    act->options = *options;
  }
  return true;
}

/* --------------------------------------------------------------- abort */

/* ABORT out, statistics, freed; @p v (may be NULL) tells the hub. */
static void abort_ck(coord_ckpts_t *ckpts, coord_ckpt_t *ck, int64_t now_ms,
                     const char *reason, bool counted, coord_abort_t *v) {
  ksnap_coord_action_t *act;

  if (set_state(ckpts, ck, KSNAP_CKPT_ABORTED))
    return;
  ksnap__coord_log(ckpts->acts, KSNAP_LOG_WARNING,
                   "Aborting %s %" PRId64 ": %s",
                   ck->options.is_savepoint ? "savepoint" : "checkpoint",
                   ck->id, reason);
  if ((act = ksnap__coord_emit(ckpts->acts, KSNAP_COORD_ACT_SEND_ABORT))) {
    act->checkpoint_id = ck->id;
    act->generation = ck->generation;
    act->text = ksnap__coord_strdup(ckpts->acts, reason);
  }
  if (ksnap_coord_stats_failed(ckpts->stats, ck->id, now_ms, reason) ==
      KSNAP_ERR_NOMEM)
    ksnap__coord_oom(ckpts->acts);
  if (v) {
    v->aborted = true;
    v->id = ck->id;
    v->is_savepoint = ck->options.is_savepoint;
    v->counted = counted;
    v->stop = ck->stop;
    snprintf(v->reason, sizeof(v->reason), "%s", reason);
  }
  ckpt_free(ckpts, ck);
}

void ksnap__coord_ckpts_abort_all(coord_ckpts_t *ckpts, int64_t now_ms,
                                  const char *reason, bool spare_completing) {
  for (size_t i = ckpts->cnt; i-- > 0;) {
    coord_ckpt_t *ck = ckpts->pending[i];
    if (!spare_completing || ck->state != KSNAP_CKPT_COMPLETING)
      abort_ck(ckpts, ck, now_ms, reason, false, NULL);
  }
}

bool ksnap__coord_ckpts_expire_one(coord_ckpts_t *ckpts, int64_t now_ms,
                                   coord_abort_t *v) {
  memset(v, 0, sizeof(*v));
  for (size_t i = 0; i < ckpts->cnt; i++) {
    coord_ckpt_t *ck = ckpts->pending[i];
    if ((ck->state != KSNAP_CKPT_TRIGGERED && ck->state != KSNAP_CKPT_ACKED) ||
        now_ms < ck->trigger_ms + ckpts->timeout_ms)
      continue;
    ksnap__coord_log(ckpts->acts, KSNAP_LOG_WARNING,
                     "Checkpoint %" PRId64 " expired before completing.",
                     ck->id);
    abort_ck(ckpts, ck, now_ms, "expired before completing", true, v);
    return true;
  }
  return false;
}

/* --------------------------------------------------------------- ACKs */

static const char *ack_refusal(const ksnap_ack_t *ack, const coord_ckpt_t *ck,
                               int64_t generation, int64_t max_id) {
  if (ack->generation > generation)
    return "generation newer than the coordinator's";
  if (!ck && ack->checkpoint_id <= max_id)
    return "late message for a checkpoint no longer pending";
  return !ck ? "unknown checkpoint" : "all tasks already acknowledged it";
}

ksnap_err_t ksnap__coord_ckpts_ack(coord_ckpts_t *ckpts, int64_t now_ms,
                                   size_t ti, const char *task,
                                   ksnap_ack_t *ack, int64_t generation,
                                   int64_t max_id, bool *full) {
  coord_acts_t *acts = ckpts->acts;
  coord_ckpt_t *ck;
  int64_t size = 0;

  *full = false;
  if (ack->generation < generation) {
    ksnap__coord_log(acts, KSNAP_LOG_INFO,
                     "ACK of checkpoint %" PRId64 " by task %s from old "
                     "generation %" PRId64 " ignored (current %" PRId64 ")",
                     ack->checkpoint_id, task, ack->generation, generation);
    return KSNAP_ERR_OK;
  }
  ck = find(ckpts, ack->checkpoint_id);
  if (ack->generation > generation || !ck ||
      ck->state != KSNAP_CKPT_TRIGGERED) {
    ksnap__coord_log(acts,
                     ck || ack->checkpoint_id <= max_id ? KSNAP_LOG_INFO
                                                        : KSNAP_LOG_WARNING,
                     "ACK of checkpoint %" PRId64 " by task %s (generation %"
                     PRId64 ") refused: %s",
                     ack->checkpoint_id, task, ack->generation,
                     ack_refusal(ack, ck, generation, max_id));
    return KSNAP_ERR_STATE;
  }
  if (ck->acked[ti]) {
    ksnap__coord_log(acts, KSNAP_LOG_WARNING,
                     "Duplicate ACK of checkpoint %" PRId64
                     " by task %s ignored",
                     ck->id, task);
    return KSNAP_ERR_STATE;
  }
  ck->acked[ti] = true;
  ck->acked_cnt++;
  ksnap__coord_log(acts, KSNAP_LOG_DEBUG,
                   "Received acknowledge for checkpoint %" PRId64
                   " from task %s", ck->id, task);
  ck->snaps[ti] = ack->snapshot; /* moved */
  memset(&ack->snapshot, 0, sizeof(ack->snapshot));
  for (size_t h = 0; h < ck->snaps[ti].handle_cnt; h++)
    size += ck->snaps[ti].handles[h].size;
  ck->state_size += size;
  ksnap_coord_stats_acked(ckpts->stats, ck->id, task, now_ms,
                          &ck->snaps[ti].timings, size, &ack->errors);
  ksnap_coord_stats_aligned(ckpts->stats, ck->id, task, &ack->align);
  ksnap_coord_stats_positions(ckpts->stats, ck->id, task,
                              ck->snaps[ti].offsets,
                              ck->snaps[ti].offset_cnt);
  if (ck->acked_cnt == ckpts->task_cnt) {
    set_state(ckpts, ck, KSNAP_CKPT_ACKED);
    *full = true;
  }
  return ksnap__coord_is_oom(acts) ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

ksnap_err_t ksnap__coord_ckpts_decline(coord_ckpts_t *ckpts, int64_t now_ms,
                                       const char *task,
                                       const ksnap_decline_t *decline,
                                       int64_t generation, coord_abort_t *v) {
  const char *reason = decline->reason ? decline->reason : "";
  coord_ckpt_t *ck;
  char why[512];

  memset(v, 0, sizeof(*v));
  if (decline->generation < generation) {
    ksnap__coord_log(ckpts->acts, KSNAP_LOG_INFO,
                     "DECLINE of checkpoint %" PRId64 " by task %s from old "
                     "generation %" PRId64 " ignored",
                     decline->checkpoint_id, task, decline->generation);
    return KSNAP_ERR_OK;
  }
  ck = find(ckpts, decline->checkpoint_id);
  if (decline->generation > generation || !ck ||
      (ck->state != KSNAP_CKPT_TRIGGERED && ck->state != KSNAP_CKPT_ACKED)) {
    ksnap__coord_log(ckpts->acts, KSNAP_LOG_INFO,
                     "DECLINE of checkpoint %" PRId64 " by task %s refused: "
                     "the checkpoint is not pending acknowledgement",
                     decline->checkpoint_id, task);
    return KSNAP_ERR_STATE;
  }
  ksnap__coord_log(ckpts->acts, KSNAP_LOG_WARNING,
                   "Decline checkpoint %" PRId64 " by task %s: %s", ck->id,
                   task, reason);
  snprintf(why, sizeof(why), "declined by task %s: %s", task, reason);
  abort_ck(ckpts, ck, now_ms, why, !decline->task_failed, v);
  return KSNAP_ERR_OK;
}

/* ---------------------------------------------- metadata and COMPLETE */

int64_t ksnap__coord_ckpts_next_to_finalize(const coord_ckpts_t *ckpts) {
  const coord_ckpt_t *next = NULL;

  for (size_t i = 0; i < ckpts->cnt; i++) {
    const coord_ckpt_t *ck = ckpts->pending[i];
    if (ck->state == KSNAP_CKPT_WRITING_METADATA ||
        ck->state == KSNAP_CKPT_COMPLETING)
      return KSNAP_CHECKPOINT_NONE; /* invariant 7: one at a time */
    if (ck->state == KSNAP_CKPT_ACKED && !next)
      next = ck; /* ascending ids: the oldest fully acked */
  }
  return next ? next->id : KSNAP_CHECKPOINT_NONE;
}

void ksnap__coord_ckpts_write_metadata(coord_ckpts_t *ckpts, int64_t id,
                                       int64_t parent_id) {
  coord_ckpt_t *ck = find(ckpts, id);
  ksnap_coord_action_t *act;

  if (!ck || set_state(ckpts, ck, KSNAP_CKPT_WRITING_METADATA))
    return;
  ck->meta.job = (char *)ksnap_job_name(ckpts->job);
  ck->meta.checkpoint_id = ck->id;
  ck->meta.generation = ck->generation;
  ck->meta.parent_id = parent_id;
  ck->meta.timestamp_ms = ck->trigger_ms;
  ck->meta.is_savepoint = ck->options.is_savepoint;
  ck->meta.tasks = ck->snaps;
  ck->meta.task_cnt = ckpts->task_cnt;
  if ((act = ksnap__coord_emit(ckpts->acts,
                               KSNAP_COORD_ACT_WRITE_METADATA))) {
    act->checkpoint_id = ck->id;
    act->meta = &ck->meta;
  }
}

/* The result event for checkpoint @p id, expected in state @p want. */
static coord_ckpt_t *result_for(coord_ckpts_t *ckpts, int64_t id,
                                ksnap_ckpt_state_t want, const char *what,
                                const char *refusal) {
  coord_ckpt_t *ck = find(ckpts, id);

  if (ck && ck->state == want)
    return ck;
  ksnap__coord_log(ckpts->acts, KSNAP_LOG_WARNING,
                   "%s for checkpoint %" PRId64 " refused: %s (%s)", what, id,
                   refusal, ck ? ksnap_ckpt_state_name(ck->state)
                               : "not pending");
  return NULL;
}

ksnap_err_t ksnap__coord_ckpts_metadata_written(coord_ckpts_t *ckpts,
                                                int64_t now_ms, int64_t id,
                                                const char *errmsg,
                                                coord_abort_t *v) {
  ksnap_coord_action_t *act;
  coord_ckpt_t *ck;
  char why[512];

  memset(v, 0, sizeof(*v));
  if (!(ck = result_for(ckpts, id, KSNAP_CKPT_WRITING_METADATA,
                        "Metadata result", "it is not writing metadata")))
    return KSNAP_ERR_STATE;
  if (errmsg) {
    snprintf(why, sizeof(why), "writing its metadata failed: %s", errmsg);
    abort_ck(ckpts, ck, now_ms, why, true, v);
    return KSNAP_ERR_OK;
  }
  set_state(ckpts, ck, KSNAP_CKPT_COMPLETING);
  if ((act = ksnap__coord_emit(ckpts->acts, KSNAP_COORD_ACT_SEND_COMPLETE))) {
    act->checkpoint_id = ck->id;
    act->generation = ck->generation;
  }
  return ksnap__coord_is_oom(ckpts->acts) ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

ksnap_err_t ksnap__coord_ckpts_complete_result(coord_ckpts_t *ckpts,
                                               int64_t now_ms, int64_t id,
                                               const char *errmsg,
                                               coord_abort_t *v,
                                               coord_completion_t *c) {
  coord_ckpt_t *ck;
  char why[512];

  memset(v, 0, sizeof(*v));
  memset(c, 0, sizeof(*c));
  if (!(ck = result_for(ckpts, id, KSNAP_CKPT_COMPLETING, "COMPLETE result",
                        "no COMPLETE record is in flight for it")))
    return KSNAP_ERR_STATE;
  if (errmsg) {
    snprintf(why, sizeof(why), "its COMPLETE record was not committed: %s",
             errmsg);
    abort_ck(ckpts, ck, now_ms, why, true, v);
    return KSNAP_ERR_OK;
  }
  /* the decision is made (invariant 8) */
  set_state(ckpts, ck, KSNAP_CKPT_COMPLETED);
  ksnap__coord_log(ckpts->acts, KSNAP_LOG_INFO,
                   "Completed %s %" PRId64 " (%" PRId64 " bytes in %" PRId64
                   " ms)",
                   ck->options.is_savepoint ? "savepoint" : "checkpoint", id,
                   ck->state_size, now_ms - ck->trigger_ms);
  if (ksnap_coord_stats_completed(ckpts->stats, id, now_ms) ==
      KSNAP_ERR_NOMEM)
    ksnap__coord_oom(ckpts->acts);
  *c = (coord_completion_t){ck, ck->id, ck->generation,
                            ck->options.is_savepoint, ck->stop, ck->snaps,
                            ckpts->task_cnt};
  return KSNAP_ERR_OK;
}

void ksnap__coord_ckpts_subsume(coord_ckpts_t *ckpts, coord_completion_t *c,
                                int64_t now_ms) {
  char why[128];

  c->ck->meta.tasks = NULL;
  ckpt_free(ckpts, c->ck);
  c->ck = NULL;
  c->snaps = NULL;
  snprintf(why, sizeof(why), "subsumed by checkpoint %" PRId64, c->id);
  for (size_t i = 0; i < ckpts->cnt; i++) {
    coord_ckpt_t *old = ckpts->pending[i];
    if (old->id < c->id && !old->options.is_savepoint &&
        old->state != KSNAP_CKPT_COMPLETING) {
      abort_ck(ckpts, old, now_ms, why, false, NULL);
      i--;
    }
  }
}
