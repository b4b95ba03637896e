/*
 * Does a restore point fit the task's stage now (restore_fit.h)? Keyed
 * state is redistributed by key groups and source offsets by partition
 * (restore.c, task_input.c), whatever the parallelism; what cannot move
 * to another parallelism is refused here:
 *  - records in flight in the exchange topics (an unaligned checkpoint):
 *    they were partitioned for the old reading tasks, and those of a
 *    writer that no longer exists would have no channel;
 *  - a sink commit that the epoch replay would have to repair: the
 *    replay runs on the task's own snapshot and cut, which a changed
 *    parallelism no longer has.
 * An aligned checkpoint or a savepoint (always aligned) whose sinks all
 * committed leaves neither, so it restores at any parallelism.
 */
#include "restore_fit.h"

#include <stdio.h>
#include <string.h>

#include "ksnap/log.h"
#include "restore.h"
#include "task_int.h"

#define PROGRESS_TIMEOUT_MS 30000

int32_t ksnap__restore_fit_old_p(const ksnap_checkpoint_meta_t *meta,
                                 const char *stage) {
  int32_t p = 0;

  for (size_t i = 0; i < meta->task_cnt; i++)
    if (!strcmp(meta->tasks[i].task.stage, stage) &&
        meta->tasks[i].task.index >= p)
      p = meta->tasks[i].task.index + 1;
  return p;
}

/* A point of another job names exchange topics of that job, which this
 * one does not read. */
static int same_job(const ksnap_task_t *task,
                    const ksnap_checkpoint_meta_t *meta) {
  return meta->job && !strcmp(meta->job, ksnap_job_name(task->job));
}

static int32_t new_p(const ksnap_task_t *task, const char *stage) {
  const ksnap_job_stage_t *s = ksnap_job_stage_find(task->job, stage);
  return s ? ksnap_job_stage_parallelism(s) : 0;
}

ksnap_err_t ksnap__restore_fit_inputs(ksnap_task_t *task,
                                      const ksnap_checkpoint_meta_t *meta,
                                      ksnap_error_t *error) {
  const char *me = ksnap_job_stage_name(task->stage);
  int32_t old_me = ksnap__restore_fit_old_p(meta, me);

  for (size_t i = 0; i < meta->task_cnt; i++) {
    const ksnap_task_snapshot_t *ts = &meta->tasks[i];
    if (!ksnap__restore_is_mine(task, ts))
      continue;
    for (size_t k = 0; k < ts->channel_cnt; k++) {
      const ksnap_channel_pos_t *c = &ts->channels[k];
      const char *w = c->writer.stage;
      int32_t old_w = ksnap__restore_fit_old_p(meta, w);
      if (c->passed || (old_me == task->parallelism &&
                        old_w == new_p(task, w) && same_job(task, meta)))
        continue;
      return ksnap_error_set(
          error, KSNAP_ERR_INCOMPATIBLE,
          "stage %s: checkpoint %lld holds records in flight (channel %s[%d] "
          "of writer %s[%d] had not passed its barrier: an unaligned "
          "checkpoint of job %s), taken at parallelism %s=%d, %s=%d; "
          "restoring it at %s=%d, %s=%d%s would lose or misroute them: "
          "restore at the checkpoint's parallelism, take a savepoint "
          "(always aligned), and rescale from the savepoint",
          me, (long long)meta->checkpoint_id, c->topic, (int)c->partition, w,
          (int)c->writer.index, meta->job ? meta->job : "?", me, (int)old_me,
          w, (int)old_w, me, (int)task->parallelism, w, (int)new_p(task, w),
          same_job(task, meta) ? "" : " in another job");
    }
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__restore_fit_sink(ksnap_task_t *task,
                                    const ksnap_checkpoint_meta_t *meta,
                                    bool *markp, ksnap_error_t *error) {
  const char *me = ksnap_job_stage_name(task->stage);
  int32_t old_p = ksnap__restore_fit_old_p(meta, me);
  int64_t n = meta->checkpoint_id, c = 0;
  char id[KSNAP_JOB_TASK_ID_SIZE + 16];
  ksnap_err_t err;

  *markp = false;
  if (!same_job(task, meta) || !old_p) {
    /* another job's point: its sinks' commits are that job's; a stage the
     * point does not have (new in the graph) starts empty, with nothing
     * of it to repair */
    *markp = true;
    return KSNAP_ERR_OK;
  }
  if (old_p && old_p != task->parallelism) {
    for (int32_t i = 0; i < old_p; i++) {
      snprintf(id, sizeof(id), "%s[%d]", me, (int)i);
      if ((err = ksnap_2pc_last_committed_of(task->conf, id,
                                             PROGRESS_TIMEOUT_MS, &c, error)))
        return err;
      if (c < n)
        return ksnap_error_set(
            error, KSNAP_ERR_INCOMPATIBLE,
            "sink stage %s: task %s last committed transaction %lld, "
            "before checkpoint %lld: its output can only be repaired at "
            "the checkpoint's parallelism %s=%d, not at %d (restore at "
            "%d first, let the sinks commit, then rescale from a savepoint)",
            me, id, (long long)c, (long long)n, me, (int)old_p,
            (int)task->parallelism, (int)old_p);
    }
    KSNAP_INFO("task", "%s: sink stage %s rescaled from %d to %d tasks; "
               "every old task committed checkpoint %lld: no epoch replay",
               task->id, me, (int)old_p, (int)task->parallelism,
               (long long)n);
    *markp = true;
    return KSNAP_ERR_OK;
  }
  if ((err = ksnap_2pc_last_committed(task->sink, PROGRESS_TIMEOUT_MS, &c,
                                      error)))
    return err;
  if (c > n) {
    KSNAP_INFO("task", "%s: committed up to %lld, restored from the older "
               "checkpoint %lld: its progress starts again from %lld",
               task->id, (long long)c, (long long)n, (long long)n);
    *markp = true;
  }
  return KSNAP_ERR_OK;
}
