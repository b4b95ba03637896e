/* Checkpoint statistics: bookkeeping (this file) and renderers
 * (coord_stats_render.c). See coord_stats.h. */
#include "coord_stats.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_stats_int.h"

ksnap_coord_stats_t *ksnap_coord_stats_new(size_t history) {
  ksnap_coord_stats_t *stats = calloc(1, sizeof(*stats));

  if (!stats)
    return NULL;
  stats->history = history ? history : 1;
  stats->sum.last_completed_id = KSNAP_CHECKPOINT_NONE;
  stats->sum.last_failed_id = KSNAP_CHECKPOINT_NONE;
  stats->sum.last_restored_id = KSNAP_CHECKPOINT_NONE;
  stats->sum.finished_id = KSNAP_CHECKPOINT_NONE;
  stats->sum.last_restored_ms = -1;
  stats->sum.last_restored_generation = -1;
  return stats;
}

static void entry_cleanup(ksnap_ckpt_stats_t *ent) {
  for (size_t i = 0; i < ent->task_cnt; i++)
    ksnap__stats_task_free(&ent->tasks[i]);
  free(ent->failure);
  free(ent->external_path);
  free(ent->tasks);
}

void ksnap_coord_stats_destroy(ksnap_coord_stats_t *stats) {
  if (!stats)
    return;
  for (size_t i = 0; i < stats->cnt; i++)
    entry_cleanup(&stats->ents[i]);
  free(stats->ents);
  for (size_t i = 0; i < stats->sum.last_task_cnt; i++)
    ksnap__stats_task_free(&stats->sum.last_tasks[i]);
  free(stats->sum.last_tasks);
  ksnap__stats_ends_free(stats);
  free(stats->live);
  free(stats->mv.members);
  free(stats);
}

static ksnap_ckpt_stats_t *find(const ksnap_coord_stats_t *stats,
                                int64_t id) {
  for (size_t i = 0; i < stats->cnt; i++)
    if (stats->ents[i].id == id)
      return &stats->ents[i];
  return NULL;
}

/* Drops the oldest entries that are not in progress beyond the history. */
static void evict(ksnap_coord_stats_t *stats) {
  size_t i = 0;

  while (stats->cnt > stats->history && i < stats->cnt) {
    if (stats->ents[i].status == KSNAP_STATS_IN_PROGRESS) {
      i++;
      continue;
    }
    entry_cleanup(&stats->ents[i]);
    memmove(&stats->ents[i], &stats->ents[i + 1],
            (stats->cnt - i - 1) * sizeof(*stats->ents));
    stats->cnt--;
  }
}

ksnap_err_t ksnap_coord_stats_triggered(ksnap_coord_stats_t *stats,
                                        int64_t id, int64_t trigger_ms,
                                        bool is_savepoint,
                                        const char *const *tasks,
                                        size_t task_cnt) {
  ksnap_ckpt_stats_t *ent;

  if (find(stats, id))
    return KSNAP_ERR_EXISTS;
  if (stats->cnt == stats->cap) {
    size_t cap = stats->cap ? stats->cap * 2 : 16;
    ksnap_ckpt_stats_t *ents = realloc(stats->ents, cap * sizeof(*ents));
    if (!ents)
      return KSNAP_ERR_NOMEM;
    stats->ents = ents;
    stats->cap = cap;
  }
  ent = &stats->ents[stats->cnt];
  memset(ent, 0, sizeof(*ent));
  ent->tasks = task_cnt ? calloc(task_cnt, sizeof(*ent->tasks)) : NULL;
  if (task_cnt && !ent->tasks)
    return KSNAP_ERR_NOMEM;
  ent->id = id;
  ent->status = KSNAP_STATS_IN_PROGRESS;
  ent->is_savepoint = is_savepoint;
  ent->trigger_ms = trigger_ms;
  ent->end_ms = -1;
  ent->task_cnt = task_cnt;
  for (size_t i = 0; i < task_cnt; i++)
    snprintf(ent->tasks[i].task, sizeof(ent->tasks[i].task), "%s", tasks[i]);
  stats->cnt++;
  stats->sum.triggered++;
  stats->sum.in_progress++;
  evict(stats);
  return KSNAP_ERR_OK;
}

/* Task @p task of checkpoint @p id while it is in progress, or NULL. */
static ksnap_task_stats_t *find_task(ksnap_coord_stats_t *stats, int64_t id,
                                     const char *task,
                                     ksnap_ckpt_stats_t **entp) {
  ksnap_ckpt_stats_t *ent = find(stats, id);

  if (!ent || ent->status != KSNAP_STATS_IN_PROGRESS)
    return NULL;
  *entp = ent;
  for (size_t i = 0; i < ent->task_cnt; i++)
    if (!strcmp(ent->tasks[i].task, task))
      return &ent->tasks[i];
  return NULL;
}

ksnap_err_t ksnap_coord_stats_acked(ksnap_coord_stats_t *stats, int64_t id,
                                    const char *task, int64_t ack_ms,
                                    const ksnap_timings_t *timings,
                                    int64_t state_size,
                                    const ksnap_record_errors_t *errors) {
  ksnap_ckpt_stats_t *ent;
  ksnap_task_stats_t *ts = find_task(stats, id, task, &ent);

  if (!ts)
    return KSNAP_ERR_NOT_FOUND;
  if (ts->acked)
    return KSNAP_ERR_EXISTS;
  ts->acked = true;
  ts->ack_ms = ack_ms;
  ts->timings = *timings;
  ts->state_size = state_size;
  ts->errors = *errors;
  ent->acked_cnt++;
  ent->state_size += state_size;
  ent->bytes_buffered += timings->bytes_buffered;
  ent->errors.failed += errors->failed;
  ent->errors.dead_lettered += errors->dead_lettered;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_stats_aligned(ksnap_coord_stats_t *stats, int64_t id,
                                      const char *task,
                                      const ksnap_align_stats_t *align) {
  ksnap_ckpt_stats_t *ent;
  ksnap_task_stats_t *ts = find_task(stats, id, task, &ent);

  if (!ts || !ts->acked)
    return KSNAP_ERR_NOT_FOUND;
  ts->align = *align;
  if (align->paused_us > ent->paused_us)
    ent->paused_us = align->paused_us;
  if (align->unaligned_reason == KSNAP_STATS_REREAD) { /* aligned, waited */
    ts->bytes_reread = ts->timings.bytes_buffered;
    ts->timings.bytes_buffered = 0;
    ent->bytes_buffered -= ts->bytes_reread;
    ent->bytes_reread += ts->bytes_reread;
    ent->reread_cnt++;
    return KSNAP_ERR_OK;
  }
  if (align->unaligned_reason)
    ent->unaligned_cnt++;
  if (align->unaligned_reason > ent->unaligned_reason)
    ent->unaligned_reason = align->unaligned_reason;
  return KSNAP_ERR_OK;
}

const char *ksnap_stats_unaligned_name(int32_t reason) {
  static const char *const names[] = {"-", "unaligned", "timeout",
                                      "buffer-limit", "trigger", "reread"};
  return reason >= 0 && (size_t)reason < sizeof(names) / sizeof(names[0])
             ? names[reason]
             : "unknown";
}

static void minmax_add(ksnap_stats_minmax_t *mm, int64_t v) {
  if (mm->cnt == 0 || v < mm->min)
    mm->min = v;
  if (mm->cnt == 0 || v > mm->max)
    mm->max = v;
  mm->cnt++;
  mm->sum += v;
}

/* The latest completed checkpoint's tasks, kept for when the history
 * drops it (the per-task series of /metrics are theirs). */
static ksnap_err_t keep_last_tasks(ksnap_coord_stats_t *stats,
                                   const ksnap_ckpt_stats_t *ent) {
  ksnap_task_stats_t *t =
      ent->task_cnt ? calloc(ent->task_cnt, sizeof(*t)) : NULL;

  if (ent->task_cnt && !t)
    return KSNAP_ERR_NOMEM;
  if (ksnap__stats_tasks_copy(t, ent->tasks, ent->task_cnt)) {
    free(t);
    return KSNAP_ERR_NOMEM;
  }
  for (size_t i = 0; i < stats->sum.last_task_cnt; i++)
    ksnap__stats_task_free(&stats->sum.last_tasks[i]);
  free(stats->sum.last_tasks);
  stats->sum.last_tasks = t;
  stats->sum.last_task_cnt = ent->task_cnt;
  stats->sum.last_errors = ent->errors;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_stats_external_path(ksnap_coord_stats_t *stats,
                                            int64_t id, const char *path) {
  ksnap_ckpt_stats_t *ent = find(stats, id);
  char *copy;

  if (!ent || !ent->is_savepoint || !path || !*path)
    return KSNAP_ERR_NOT_FOUND;
  if (!(copy = strdup(path)))
    return KSNAP_ERR_NOMEM;
  free(ent->external_path);
  ent->external_path = copy;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_stats_completed(ksnap_coord_stats_t *stats,
                                        int64_t id, int64_t end_ms) {
  ksnap_ckpt_stats_t *ent = find(stats, id);

  if (!ent || ent->status != KSNAP_STATS_IN_PROGRESS)
    return KSNAP_ERR_NOT_FOUND;
  if ((stats->sum.last_completed_id == KSNAP_CHECKPOINT_NONE ||
       id > stats->sum.last_completed_id) &&
      keep_last_tasks(stats, ent))
    return KSNAP_ERR_NOMEM;
  ent->status = KSNAP_STATS_COMPLETED;
  ent->end_ms = end_ms;
  stats->sum.in_progress--;
  stats->sum.completed++;
  if (stats->sum.last_completed_id == KSNAP_CHECKPOINT_NONE ||
      id > stats->sum.last_completed_id) {
    stats->sum.last_completed_id = id;
    stats->sum.last_duration_ms = end_ms - ent->trigger_ms;
    stats->sum.last_size = ent->state_size;
    stats->sum.last_buffered = ent->bytes_buffered;
    stats->sum.last_end_ms = end_ms;
    stats->sum.last_alignment_us = 0;
    for (size_t i = 0; i < ent->task_cnt; i++)
      if (ent->tasks[i].timings.alignment_us > stats->sum.last_alignment_us)
        stats->sum.last_alignment_us = ent->tasks[i].timings.alignment_us;
  }
  for (size_t i = 0, timeout = 0, full = 0; i < ent->task_cnt; i++) {
    int32_t r = ent->tasks[i].align.unaligned_reason;
    if (r == 2 && !timeout++) /* aligned-checkpoint-timeout */
      stats->sum.unaligned_timeout++;
    if (r == 3 && !full++) /* alignment buffer limit */
      stats->sum.unaligned_buffer_limit++;
  }
  minmax_add(&stats->sum.duration_ms, end_ms - ent->trigger_ms);
  minmax_add(&stats->sum.state_size, ent->state_size);
  minmax_add(&stats->sum.bytes_buffered, ent->bytes_buffered);
  evict(stats);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_stats_failed(ksnap_coord_stats_t *stats, int64_t id,
                                     int64_t end_ms, const char *reason) {
  ksnap_ckpt_stats_t *ent = find(stats, id);
  char *copy;

  if (!ent || ent->status != KSNAP_STATS_IN_PROGRESS)
    return KSNAP_ERR_NOT_FOUND;
  copy = strdup(reason ? reason : "");
  if (!copy)
    return KSNAP_ERR_NOMEM;
  ent->status = KSNAP_STATS_FAILED;
  ent->end_ms = end_ms;
  ent->failure = copy;
  stats->sum.in_progress--;
  stats->sum.failed++;
  stats->sum.last_failed_id = id;
  evict(stats);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_stats_heartbeat(ksnap_coord_stats_t *stats,
                                        int64_t now_ms,
                                        const ksnap_heartbeat_t *hb) {
  char name[KSNAP_JOB_TASK_ID_SIZE];
  ksnap_task_live_t *t = NULL;

  snprintf(name, sizeof(name), "%s[%" PRId32 "]",
           hb->task.stage ? hb->task.stage : "", hb->task.index);
  for (size_t i = 0; i < stats->live_cnt && !t; i++)
    if (!strcmp(stats->live[i].task, name))
      t = &stats->live[i];
  if (!t) {
    if (stats->live_cnt == stats->live_cap) {
      size_t cap = stats->live_cap ? stats->live_cap * 2 : 8;
      ksnap_task_live_t *live = realloc(stats->live, cap * sizeof(*live));
      if (!live)
        return KSNAP_ERR_NOMEM;
      stats->live = live;
      stats->live_cap = cap;
    }
    t = &stats->live[stats->live_cnt++];
    memset(t, 0, sizeof(*t));
    memcpy(t->task, name, sizeof(t->task));
  } else if (hb->generation < t->generation) {
    return KSNAP_ERR_OK; /* an instance of an older generation */
  }
  t->generation = hb->generation;
  t->heartbeat_ms = now_ms;
  t->records_in = hb->records_in;
  t->records_out = hb->records_out;
  return KSNAP_ERR_OK;
}

void ksnap_coord_stats_finished(ksnap_coord_stats_t *stats, int64_t id) {
  stats->sum.finished_id = id;
}

void ksnap_coord_stats_restored(ksnap_coord_stats_t *stats,
                                int64_t generation, int64_t id, int64_t ms) {
  stats->sum.restored++;
  stats->sum.last_restored_generation = generation;
  stats->sum.last_restored_id = id;
  stats->sum.last_restored_ms = ms;
}

const ksnap_ckpt_stats_t *ksnap_coord_stats_get(
    const ksnap_coord_stats_t *stats, int64_t id) {
  return find(stats, id);
}

const ksnap_ckpt_stats_t *ksnap_coord_stats_at(
    const ksnap_coord_stats_t *stats, size_t i) {
  return i < stats->cnt ? &stats->ents[stats->cnt - 1 - i] : NULL;
}

const ksnap_stats_summary_t *ksnap_coord_stats_summary(
    const ksnap_coord_stats_t *stats) {
  return &stats->sum;
}

const ksnap_task_live_t *ksnap_coord_stats_live_at(
    const ksnap_coord_stats_t *stats, size_t i) {
  return i < stats->live_cnt ? &stats->live[i] : NULL;
}

const char *ksnap_stats_status_name(ksnap_stats_status_t status) {
  switch (status) {
  case KSNAP_STATS_IN_PROGRESS:
    return "IN_PROGRESS";
  case KSNAP_STATS_COMPLETED:
    return "COMPLETED";
  case KSNAP_STATS_FAILED:
    return "FAILED";
  }
  return "?";
}
