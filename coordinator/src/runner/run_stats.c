/*
 * A run's statistics (ksnap_run_stats(), ksnap/run.h): the summary the
 * coordinator's thread publishes after every turn of its loop, and the
 * figures of the run's tasks, read from any thread under the run's lock
 * (run_int.h).
 */
#include <string.h>

#include "ksnap/records.h"
#include "run_int.h"
#include "task/task.h"

void ksnap__run_observe(void *opaque, const ksnap_stats_summary_t *summary) {
  ksnap_run_t *run = opaque;

  pthread_mutex_lock(&run->lock);
  run->summary = *summary;
  pthread_mutex_unlock(&run->lock);
}

/* @returns the stage of task id "stage[i]", or NULL. */
static const ksnap_job_stage_t *task_stage(const ksnap_job_t *job,
                                           const char *id) {
  char name[KSNAP_JOB_TASK_ID_SIZE];
  size_t n = strcspn(id, "[");

  if (n >= sizeof(name))
    return NULL;
  memcpy(name, id, n);
  name[n] = '\0';
  return ksnap_job_stage_find(job, name);
}

void ksnap__run_task_stats(ksnap_run_t *run, ksnap_run_stats_t *st) {
  size_t n = run->worker ? ksnap_worker_task_cnt(run->worker) : 0;

  st->tasks = (int32_t)n;
  for (size_t i = 0; i < n; i++) {
    ksnap_task_t *t = ksnap_worker_task(run->worker, i);
    const ksnap_job_stage_t *stage = task_stage(run->job, ksnap_task_id(t));
    if (stage && ksnap_job_stage_is_source(stage))
      st->records_in += ksnap_task_records_in(t);
    if (stage && ksnap_job_stage_is_sink(stage))
      st->records_out += ksnap_task_records_out(t);
    st->tasks_running += ksnap_task_running(t) ? 1 : 0;
    st->tasks_failed += ksnap_task_failed(t) ? 1 : 0;
  }
}

static void from_summary(const ksnap_stats_summary_t *s,
                         ksnap_run_stats_t *st) {
  st->checkpoints_triggered = s->triggered;
  st->checkpoints_in_progress = s->in_progress;
  st->checkpoints_completed = s->completed;
  st->checkpoints_failed = s->failed;
  st->restores = s->restored;
  st->last_completed_id = s->last_completed_id;
  st->last_completed_ms = s->last_end_ms;
  st->last_duration_ms = s->last_duration_ms;
  st->last_state_size = s->last_size;
  st->last_alignment_us = s->last_alignment_us;
  st->last_failed_id = s->last_failed_id;
  st->last_restored_id = s->last_restored_id;
}

void ksnap_run_stats(ksnap_run_t *run, ksnap_run_stats_t *stats,
                     size_t size) {
  ksnap_run_stats_t st;

  memset(&st, 0, sizeof(st));
  pthread_mutex_lock(&run->lock);
  if (run->worker)
    ksnap__run_task_stats(run, &st);
  else
    st = run->final; /* no tasks, or the run ended */
  from_summary(&run->summary, &st);
  pthread_mutex_unlock(&run->lock);
  memcpy(stats, &st, size < sizeof(st) ? size : sizeof(st));
}
