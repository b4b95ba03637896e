/* Checkpoint statistics as Prometheus text (exposition format 0.0.4, see
 * coord_stats.h): the job's counters and the figures of its latest
 * completed checkpoint, labelled job; then per-task series labelled job,
 * task, stage and subtask: each task's part of the latest completed
 * checkpoint (from its ACK) and its record counts (from its latest
 * HEARTBEAT); then the source lag (coord_stats_lag.c), per source task
 * and per source partition (labelled job, topic, partition), once the
 * driver has fed in the end offsets; then the members
 * (coord_stats_members.c), once the coordinator has a member view. Every
 * family has its HELP and TYPE once, its samples right after them. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_stats_int.h"

/* Label values are at most a task name, escaped (each char at most 2). */
#define LABEL_SIZE (2 * KSNAP_JOB_TASK_ID_SIZE + 512)

/* A label value with the escapes of the format: backslash, double quote,
 * newline. Truncated (never mid-escape) to fit @p size. */
static void label_escape(const char *s, char *out, size_t size) {
  size_t n = 0;

  for (; *s && n + 3 < size; s++) {
    if (*s == '\\' || *s == '"' || *s == '\n')
      out[n++] = '\\';
    out[n++] = *s == '\n' ? 'n' : *s;
  }
  out[n] = '\0';
}

/* job="..",task="stage[i]",stage="stage",subtask="i" for task @p task
 * (@p job already escaped). */
static void task_labels(const char *job, const char *task, char *out,
                        size_t size) {
  char stage[KSNAP_JOB_TASK_ID_SIZE], t[LABEL_SIZE], st[LABEL_SIZE];
  const char *br = strrchr(task, '[');
  int len = br ? (int)(br - task) : (int)strlen(task);

  snprintf(stage, sizeof(stage), "%.*s", len, task);
  label_escape(task, t, sizeof(t));
  label_escape(stage, st, sizeof(st));
  snprintf(out, size, "job=\"%s\",task=\"%s\",stage=\"%s\",subtask=\"%ld\"",
           job, t, st, br ? strtol(br + 1, NULL, 10) : 0L);
}

static void prom(ksnap_buf_t *out, ksnap_err_t *rcp, const char *name,
                 const char *type, const char *help, const char *job,
                 int64_t value) {
  ksnap_err_t rc = KSNAP_ERR_OK;

  P("# HELP %s %s\n# TYPE %s %s\n%s{job=\"%s\"} %" PRId64 "\n", name, help,
    name, type, name, job, value);
  if (rc)
    *rcp = rc;
}

/* ------------------------------------------- per task, latest checkpoint */

typedef enum ckpt_metric_e {
  M_DURATION, M_SYNC, M_ASYNC, M_ALIGNMENT, M_START_DELAY, M_SIZE,
  M_BUFFERED, M_PAUSED, M_UNALIGNED, M_REREAD, M_FAILED, M_DEAD_LETTERED,
  M_CKPT_CNT
} ckpt_metric_t;

static const struct {
  const char *name, *help;
} ckpt_metrics[M_CKPT_CNT] = {
    {"ksnap_task_checkpoint_duration_ms",
     "End-to-end duration of the task's part of the latest completed "
     "checkpoint: from the trigger to its ACK."},
    {"ksnap_task_checkpoint_sync_duration_us",
     "Synchronous part of the task's snapshot in the latest completed "
     "checkpoint."},
    {"ksnap_task_checkpoint_async_duration_us",
     "Asynchronous part (upload) of the task's snapshot in the latest "
     "completed checkpoint."},
    {"ksnap_task_checkpoint_alignment_duration_us",
     "Time the task aligned its inputs' barriers in the latest completed "
     "checkpoint."},
    {"ksnap_task_checkpoint_start_delay_us",
     "From the trigger to the task's first barrier (a source: to its "
     "snapshot) in the latest completed checkpoint."},
    {"ksnap_task_checkpoint_size_bytes",
     "State size of the task in the latest completed checkpoint."},
    {"ksnap_task_checkpoint_buffered_bytes",
     "Bytes the task buffered during alignment in the latest completed "
     "checkpoint."},
    {"ksnap_task_checkpoint_paused_us",
     "Longest time one of the task's input partitions was paused by the "
     "alignment of the latest completed checkpoint."},
    {"ksnap_task_checkpoint_unaligned_reason",
     "Why the task took its part of the latest completed checkpoint "
     "before every barrier came: 0 aligned, 1 unaligned mode, 2 "
     "aligned-checkpoint-timeout, 3 alignment buffer limit, 4 its TRIGGER "
     "(snapshot-on-trigger); 5: aligned all the same, a savepoint whose "
     "alignment reached the buffer limit waited and re-read."},
    {"ksnap_task_checkpoint_reread_bytes",
     "Bytes of a savepoint's task that waited at the alignment buffer "
     "limit: dropped, then read again after its snapshot (latest "
     "completed checkpoint)."},
    {"ksnap_records_failed",
     "Records whose processing failed and that the task tolerated "
     "(errors.tolerance=all), up to the latest completed checkpoint."},
    {"ksnap_records_dead_lettered",
     "Records the task wrote to its dead-letter topic, up to the latest "
     "completed checkpoint (committed with it)."},
};

static int64_t ckpt_value(ckpt_metric_t m, const ksnap_task_stats_t *ts,
                          int64_t trigger_ms) {
  switch (m) {
  case M_DURATION:
    return ts->ack_ms - trigger_ms;
  case M_SYNC:
    return ts->timings.sync_us;
  case M_ASYNC:
    return ts->timings.async_us;
  case M_ALIGNMENT:
    return ts->timings.alignment_us;
  case M_START_DELAY:
    return ts->timings.start_delay_us;
  case M_SIZE:
    return ts->state_size;
  case M_BUFFERED:
    return ts->timings.bytes_buffered;
  case M_PAUSED:
    return ts->align.paused_us;
  case M_UNALIGNED:
    return ts->align.unaligned_reason;
  case M_REREAD:
    return ts->bytes_reread;
  case M_FAILED:
    return ts->errors.failed;
  case M_DEAD_LETTERED:
  case M_CKPT_CNT:
    break;
  }
  return ts->errors.dead_lettered;
}

static void prom_ckpt_tasks(ksnap_buf_t *out, ksnap_err_t *rcp,
                            const ksnap_stats_summary_t *s, const char *job) {
  int64_t trigger_ms = s->last_end_ms - s->last_duration_ms;
  ksnap_err_t rc = KSNAP_ERR_OK;
  char labels[4 * LABEL_SIZE];

  for (int m = 0; m < M_CKPT_CNT; m++) {
    P("# HELP %s %s\n# TYPE %s gauge\n", ckpt_metrics[m].name,
      ckpt_metrics[m].help, ckpt_metrics[m].name);
    for (size_t i = 0; i < s->last_task_cnt; i++) {
      if (!s->last_tasks[i].acked)
        continue;
      task_labels(job, s->last_tasks[i].task, labels, sizeof(labels));
      P("%s{%s} %" PRId64 "\n", ckpt_metrics[m].name, labels,
        ckpt_value((ckpt_metric_t)m, &s->last_tasks[i], trigger_ms));
    }
  }
  if (rc)
    *rcp = rc;
}

/* ------------------------------------------------ per task, heartbeats */

static void prom_live_tasks(ksnap_buf_t *out, ksnap_err_t *rcp,
                            const ksnap_coord_stats_t *stats,
                            const char *job) {
  static const char *const names[2] = {"ksnap_task_records_in_total",
                                       "ksnap_task_records_out_total"};
  static const char *const helps[2] = {
      "Records the task's running instance took in since it started (its "
      "latest heartbeat).",
      "Records the task's running instance sent out since it started (its "
      "latest heartbeat)."};
  ksnap_err_t rc = KSNAP_ERR_OK;
  char labels[4 * LABEL_SIZE];

  if (stats->live_cnt == 0)
    return;
  for (int m = 0; m < 2; m++) {
    P("# HELP %s %s\n# TYPE %s counter\n", names[m], helps[m], names[m]);
    for (size_t i = 0; i < stats->live_cnt; i++) {
      task_labels(job, stats->live[i].task, labels, sizeof(labels));
      P("%s{%s} %" PRId64 "\n", names[m], labels,
        m ? stats->live[i].records_out : stats->live[i].records_in);
    }
  }
  if (rc)
    *rcp = rc;
}

/* ------------------------------------------------------ source lag */

#define LAG_HELP_TAIL                                                      \
  " after the latest completed checkpoint's position (the broker's end "   \
  "offset as last read, minus the position the checkpoint committed to "   \
  "the job's consumer group), summed over the task's partitions."

static void prom_task_lag(ksnap_buf_t *out, ksnap_err_t *rcp,
                          const ksnap_stats_summary_t *s,
                          const ksnap_coord_stats_t *stats, const char *job) {
  static const char *const name = "ksnap_task_source_lag_records";
  ksnap_err_t rc = KSNAP_ERR_OK;
  char labels[4 * LABEL_SIZE];
  bool head = false;
  int64_t lag;

  for (size_t i = 0; i < s->last_task_cnt; i++) {
    if (!ksnap_coord_stats_task_lag(stats, s->last_tasks[i].task, &lag))
      continue;
    if (!head)
      P("# HELP %s Source records" LAG_HELP_TAIL "\n# TYPE %s gauge\n", name,
        name);
    head = true;
    task_labels(job, s->last_tasks[i].task, labels, sizeof(labels));
    P("%s{%s} %" PRId64 "\n", name, labels, lag);
  }
  if (rc)
    *rcp = rc;
}

static void prom_partition_lag(ksnap_buf_t *out, ksnap_err_t *rcp,
                               const ksnap_coord_stats_t *stats,
                               const char *job) {
  static const char *const name = "ksnap_source_partition_lag_records";
  const ksnap_source_offset_t *o;
  ksnap_err_t rc = KSNAP_ERR_OK;
  char topic[LABEL_SIZE];
  bool head = false;
  int64_t end, pos;

  for (size_t i = 0; (o = ksnap_coord_stats_source_at(stats, i)); i++) {
    if ((end = ksnap__stats_end(stats, o->topic, o->partition)) < 0)
      continue;
    if (!head)
      P("# HELP %s Records of the source partition after the latest "
        "completed checkpoint's position (the broker's end offset as last "
        "read, minus the position the checkpoint committed to the job's "
        "consumer group).\n# TYPE %s gauge\n", name, name);
    head = true;
    pos = o->offset < 0 ? 0 : o->offset;
    label_escape(o->topic, topic, sizeof(topic));
    P("%s{job=\"%s\",topic=\"%s\",partition=\"%" PRId32 "\"} %" PRId64
      "\n", name, job, topic, o->partition, end > pos ? end - pos : 0);
  }
  if (rc)
    *rcp = rc;
}

/* ------------------------------------------------------------------ job */

static void prom_last(ksnap_buf_t *out, ksnap_err_t *rcp,
                      const ksnap_stats_summary_t *s, const char *label) {
  prom(out, rcp, "ksnap_last_checkpoint_id", "gauge",
       "Id of the latest completed checkpoint.", label, s->last_completed_id);
  prom(out, rcp, "ksnap_last_checkpoint_duration_ms", "gauge",
       "End-to-end duration of the latest completed checkpoint.", label,
       s->last_duration_ms);
  prom(out, rcp, "ksnap_last_checkpoint_size_bytes", "gauge",
       "State size of the latest completed checkpoint.", label, s->last_size);
  prom(out, rcp, "ksnap_last_checkpoint_buffered_bytes", "gauge",
       "Bytes buffered during alignment in the latest completed checkpoint.",
       label, s->last_buffered);
  prom(out, rcp, "ksnap_last_checkpoint_alignment_max_us", "gauge",
       "Longest task alignment of the latest completed checkpoint.", label,
       s->last_alignment_us);
  prom(out, rcp, "ksnap_last_checkpoint_completion_timestamp_ms", "gauge",
       "When the latest completed checkpoint completed.", label,
       s->last_end_ms);
}

ksnap_err_t ksnap_coord_stats_prometheus(const ksnap_coord_stats_t *stats,
                                         const char *job, ksnap_buf_t *out) {
  const ksnap_stats_summary_t *s = &stats->sum;
  ksnap_err_t rc = KSNAP_ERR_OK;
  char label[512];

  label_escape(job, label, sizeof(label));
  prom(out, &rc, "ksnap_checkpoints_triggered_total", "counter",
       "Checkpoints and savepoints triggered.", label, s->triggered);
  prom(out, &rc, "ksnap_checkpoints_completed_total", "counter",
       "Checkpoints and savepoints completed.", label, s->completed);
  prom(out, &rc, "ksnap_checkpoints_failed_total", "counter",
       "Checkpoints and savepoints failed (declined, expired, aborted).",
       label, s->failed);
  prom(out, &rc, "ksnap_checkpoints_in_progress", "gauge",
       "Checkpoints in progress.", label, s->in_progress);
  prom(out, &rc, "ksnap_restores_total", "counter",
       "Job restores (generation bumps).", label, s->restored);
  prom(out, &rc, "ksnap_checkpoints_unaligned_timeout_total", "counter",
       "Completed checkpoints in which a task switched to unaligned on "
       "aligned-checkpoint-timeout.", label, s->unaligned_timeout);
  prom(out, &rc, "ksnap_checkpoints_unaligned_buffer_limit_total",
       "counter",
       "Completed checkpoints in which a task switched to unaligned on "
       "reaching alignment.max-buffered-bytes.",
       label, s->unaligned_buffer_limit);
  if (s->last_completed_id != KSNAP_CHECKPOINT_NONE) {
    prom_last(out, &rc, s, label);
    prom_ckpt_tasks(out, &rc, s, label);
    prom_task_lag(out, &rc, s, stats, label);
    prom_partition_lag(out, &rc, stats, label);
  }
  prom_live_tasks(out, &rc, stats, label);
  ksnap__stats_members_prom(stats, label, out, &rc);
  return rc;
}

void ksnap__stats_label_escape(const char *s, char *out, size_t size) {
  label_escape(s, out, size);
}
