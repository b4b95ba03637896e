/* Checkpoint statistics rebuilt from the job's control and ack topics
 * (for `ksnap checkpoints list JOB` without a running coordinator). See
 * ksnap_coord_stats_from_history() in coord_stats.h. */
#include <stdlib.h>

#include "coord_stats.h"

/* "stage[i]" of every task of @p job, in job order (one malloc). */
static char **task_names(const ksnap_job_t *job, size_t *cntp) {
  size_t n = 0, k = 0;
  char **names;

  for (size_t s = 0; s < ksnap_job_stage_cnt(job); s++)
    n += (size_t)ksnap_job_stage_parallelism(ksnap_job_stage(job, s));
  names = malloc(n * (sizeof(char *) + KSNAP_JOB_TASK_ID_SIZE) + 1);
  if (!names)
    return NULL;
  for (size_t s = 0; s < ksnap_job_stage_cnt(job); s++) {
    const ksnap_job_stage_t *stage = ksnap_job_stage(job, s);
    for (int32_t i = 0; i < ksnap_job_stage_parallelism(stage); i++, k++) {
      names[k] = (char *)(names + n) + k * KSNAP_JOB_TASK_ID_SIZE;
      ksnap_job_task_id(stage, i, names[k], KSNAP_JOB_TASK_ID_SIZE);
    }
  }
  *cntp = n;
  return names;
}

static int64_t handles_size(const ksnap_task_snapshot_t *snap) {
  int64_t size = 0;
  for (size_t h = 0; h < snap->handle_cnt; h++)
    size += snap->handles[h].size;
  return size;
}

/* A COMPLETE: a savepoint's names its directory. */
static ksnap_err_t completed(ksnap_coord_stats_t *stats,
                             const ksnap_complete_t *c, int64_t ts) {
  ksnap_err_t e = ksnap_coord_stats_completed(stats, c->checkpoint_id, ts);

  if (!e && ksnap_coord_stats_external_path(stats, c->checkpoint_id,
                                            c->metadata_path) ==
                KSNAP_ERR_NOMEM)
    e = KSNAP_ERR_NOMEM;
  return e;
}

ksnap_err_t ksnap_coord_stats_from_history(
    const ksnap_job_t *job, const ksnap_control_record_t *ctl,
    const int64_t *ctl_ts, size_t ctl_cnt, const ksnap_ack_record_t *acks,
    const int64_t *ack_ts, size_t ack_cnt, size_t history,
    ksnap_coord_stats_t **statsp) {
  ksnap_coord_stats_t *stats = NULL;
  size_t task_cnt = 0;
  char **names = task_names(job, &task_cnt);
  ksnap_err_t err = KSNAP_ERR_NOMEM;

  *statsp = NULL;
  if (!names || !(stats = ksnap_coord_stats_new(history)))
    goto done;
  /* Pass 1: every TRIGGER; 2: every ACK; 3: how each ended. Producers'
   * clocks differ, so the passes, not the timestamps, give the order. */
  for (size_t i = 0; i < ctl_cnt; i++) {
    const ksnap_trigger_t *t = &ctl[i].u.trigger;
    if (ctl[i].type == KSNAP_CONTROL_TRIGGER &&
        ksnap_coord_stats_triggered(stats, t->checkpoint_id, t->timestamp_ms,
                                    t->options.is_savepoint,
                                    (const char *const *)names,
                                    task_cnt) == KSNAP_ERR_NOMEM)
      goto done;
  }
  for (size_t i = 0; i < ack_cnt; i++) {
    const ksnap_ack_t *a = &acks[i].u.ack;
    char name[KSNAP_JOB_TASK_ID_SIZE];
    const ksnap_job_stage_t *stage;
    const ksnap_heartbeat_t *hb = &acks[i].u.heartbeat;
    if (acks[i].type == KSNAP_ACKT_HEARTBEAT && hb->task.stage &&
        ksnap_job_stage_find(job, hb->task.stage) &&
        ksnap_coord_stats_heartbeat(stats, ack_ts[i], hb) == KSNAP_ERR_NOMEM)
      goto done;
    if (acks[i].type != KSNAP_ACKT_ACK || !a->snapshot.task.stage ||
        !(stage = ksnap_job_stage_find(job, a->snapshot.task.stage)))
      continue;
    ksnap_job_task_id(stage, a->snapshot.task.index, name, sizeof(name));
    /* unknown ids (history cut by retention) and duplicates: skipped */
    ksnap_coord_stats_acked(stats, a->checkpoint_id, name, ack_ts[i],
                            &a->snapshot.timings,
                            handles_size(&a->snapshot), &a->errors);
    ksnap_coord_stats_aligned(stats, a->checkpoint_id, name, &a->align);
  }
  for (size_t i = 0; i < ctl_cnt; i++) {
    const ksnap_control_record_t *r = &ctl[i];
    ksnap_err_t e = KSNAP_ERR_OK;
    if (r->type == KSNAP_CONTROL_COMPLETE)
      e = completed(stats, &r->u.complete, ctl_ts[i]);
    else if (r->type == KSNAP_CONTROL_ABORT)
      e = ksnap_coord_stats_failed(stats, r->u.abort.checkpoint_id,
                                   ctl_ts[i],
                                   r->u.abort.reason ? r->u.abort.reason
                                                     : "aborted");
    else if (r->type == KSNAP_CONTROL_RESTORE)
      ksnap_coord_stats_restored(stats, r->u.restore.generation,
                                 r->u.restore.checkpoint_id, ctl_ts[i]);
    if (e == KSNAP_ERR_NOMEM)
      goto done;
  }
  *statsp = stats;
  stats = NULL;
  err = KSNAP_ERR_OK;
done:
  ksnap_coord_stats_destroy(stats);
  free(names);
  return err;
}
