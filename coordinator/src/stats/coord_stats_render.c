/* Checkpoint statistics renderers: JSON, table, per-task detail
 * (Prometheus text: coord_stats_prom.c). Each appends to a ksnap_buf_t;
 * an allocation failure anywhere makes the whole call return
 * KSNAP_ERR_NOMEM (sticky rc, see P in coord_stats_int.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "coord_stats_int.h"

/* ---------------------------------------------------------- formatting */

static void fmt_time(int64_t ms, char *buf, size_t size) {
  time_t secs = (time_t)(ms / 1000);
  struct tm tm;

  if (ms < 0 || !gmtime_r(&secs, &tm)) {
    snprintf(buf, size, "-");
    return;
  }
  snprintf(buf, size, "%04d-%02d-%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900,
           tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
           (int)(ms % 1000));
}

static void fmt_size(int64_t bytes, char *buf, size_t size) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  int u = -1;

  if (bytes < 1024) {
    snprintf(buf, size, "%" PRId64 " B", bytes);
    return;
  }
  while (v >= 1024 && u < 3) {
    v /= 1024;
    u++;
  }
  snprintf(buf, size, "%.1f %s", v, units[u]);
}

static void fmt_us(int64_t us, char *buf, size_t size) {
  snprintf(buf, size, "%" PRId64 ".%03" PRId64 " ms", us / 1000,
           (us < 0 ? -us : us) % 1000);
}

/* JSON string with the escapes RFC 8259 requires. */
static ksnap_err_t json_str(ksnap_buf_t *out, const char *s) {
  ksnap_err_t rc = KSNAP_ERR_OK;

  P("\"");
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      P("\\%c", c);
    else if (c == '\n')
      P("\\n");
    else if (c < 0x20)
      P("\\u%04x", c);
    else
      P("%c", c);
  }
  P("\"");
  return rc;
}

/* ---------------------------------------------------------------- JSON */

static ksnap_err_t json_minmax(ksnap_buf_t *out, const char *name,
                               const ksnap_stats_minmax_t *mm) {
  ksnap_err_t rc = KSNAP_ERR_OK;

  if (mm->cnt == 0)
    P("\"%s\": null", name);
  else
    P("\"%s\": {\"min\": %" PRId64 ", \"avg\": %" PRId64 ", \"max\": %" PRId64
      "}",
      name, mm->min, mm->sum / mm->cnt, mm->max);
  return rc;
}

static void json_id(ksnap_buf_t *out, ksnap_err_t *rcp, int64_t id) {
  ksnap_err_t rc = KSNAP_ERR_OK;

  if (id == KSNAP_CHECKPOINT_NONE)
    P("null");
  else
    P("%" PRId64, id);
  if (rc)
    *rcp = rc;
}

/* null (aligned) or the reason's name. */
static void json_reason(ksnap_buf_t *out, ksnap_err_t *rcp, int32_t reason) {
  ksnap_err_t rc = KSNAP_ERR_OK;

  if (reason && reason != KSNAP_STATS_REREAD) /* that one is aligned */
    P("\"%s\"", ksnap_stats_unaligned_name(reason));
  else
    P("null");
  if (rc)
    *rcp = rc;
}

static ksnap_err_t json_task(ksnap_buf_t *out, const ksnap_ckpt_stats_t *ent,
                             const ksnap_task_stats_t *ts) {
  ksnap_err_t rc = KSNAP_ERR_OK;

  P("{\"task\": ");
  if (json_str(out, ts->task))
    rc = KSNAP_ERR_NOMEM;
  P(", \"acknowledged\": %s", ts->acked ? "true" : "false");
  if (!ts->acked) {
    P("}");
    return rc;
  }
  P(", \"ack_timestamp_ms\": %" PRId64 ", \"end_to_end_duration_ms\": %" PRId64
    ", \"sync_duration_us\": %" PRId64 ", \"async_duration_us\": %" PRId64
    ", \"alignment_duration_us\": %" PRId64 ", \"start_delay_us\": %" PRId64
    ", \"state_size\": %" PRId64 ", \"bytes_buffered\": %" PRId64
    ", \"records_failed\": %" PRId64 ", \"records_dead_lettered\": %" PRId64
    ", \"paused_us\": %" PRId64 ", \"unaligned_reason\": ",
    ts->ack_ms, ts->ack_ms - ent->trigger_ms, ts->timings.sync_us,
    ts->timings.async_us, ts->timings.alignment_us,
    ts->timings.start_delay_us, ts->state_size, ts->timings.bytes_buffered,
    ts->errors.failed, ts->errors.dead_lettered, ts->align.paused_us);
  json_reason(out, &rc, ts->align.unaligned_reason);
  if (ts->align.unaligned_reason == KSNAP_STATS_REREAD)
    P(", \"reread\": {\"reason\": \"alignment buffer limit\", "
      "\"bytes\": %" PRId64 "}", ts->bytes_reread);
  else
    P(", \"reread\": null");
  P("}");
  return rc;
}

static ksnap_err_t json_entry(ksnap_buf_t *out, const ksnap_ckpt_stats_t *ent) {
  ksnap_err_t rc = KSNAP_ERR_OK;

  P("{\"id\": %" PRId64 ", \"status\": \"%s\", \"is_savepoint\": %s, "
    "\"trigger_timestamp_ms\": %" PRId64,
    ent->id, ksnap_stats_status_name(ent->status),
    ent->is_savepoint ? "true" : "false", ent->trigger_ms);
  if (ent->end_ms < 0)
    P(", \"end_timestamp_ms\": null, \"end_to_end_duration_ms\": null");
  else
    P(", \"end_timestamp_ms\": %" PRId64
      ", \"end_to_end_duration_ms\": %" PRId64,
      ent->end_ms, ent->end_ms - ent->trigger_ms);
  P(", \"state_size\": %" PRId64 ", \"bytes_buffered\": %" PRId64
    ", \"records_failed\": %" PRId64 ", \"records_dead_lettered\": %" PRId64
    ", \"num_acknowledged_tasks\": %zu, \"num_tasks\": %zu, "
    "\"max_paused_us\": %" PRId64 ", \"num_unaligned_tasks\": %zu, "
    "\"num_reread_tasks\": %zu, \"bytes_reread\": %" PRId64 ", "
    "\"unaligned_reason\": ",
    ent->state_size, ent->bytes_buffered, ent->errors.failed,
    ent->errors.dead_lettered, ent->acked_cnt, ent->task_cnt, ent->paused_us,
    ent->unaligned_cnt, ent->reread_cnt, ent->bytes_reread);
  json_reason(out, &rc, ent->unaligned_reason);
  P(", \"failure_message\": ");
  if (ent->failure) {
    if (json_str(out, ent->failure))
      rc = KSNAP_ERR_NOMEM;
  } else {
    P("null");
  }
  if (ent->external_path) { /* Flink's name */
    P(", \"external_path\": ");
    if (json_str(out, ent->external_path))
      rc = KSNAP_ERR_NOMEM;
  }
  P(", \"tasks\": [");
  for (size_t i = 0; i < ent->task_cnt; i++) {
    P("%s", i ? ", " : "");
    if (json_task(out, ent, &ent->tasks[i]))
      rc = KSNAP_ERR_NOMEM;
  }
  P("]}");
  return rc;
}

/* A task's latest heartbeat counts. */
static ksnap_err_t json_live(ksnap_buf_t *out,
                             const ksnap_coord_stats_t *stats,
                             const ksnap_task_live_t *t) {
  ksnap_err_t rc = KSNAP_ERR_OK;
  int64_t lag;

  P("{\"task\": ");
  if (json_str(out, t->task))
    rc = KSNAP_ERR_NOMEM;
  P(", \"generation\": %" PRId64 ", \"heartbeat_timestamp_ms\": %" PRId64
    ", \"records_in\": %" PRId64 ", \"records_out\": %" PRId64,
    t->generation, t->heartbeat_ms, t->records_in, t->records_out);
  if (ksnap_coord_stats_task_lag(stats, t->task, &lag)) /* a source task */
    P(", \"source_lag_records\": %" PRId64, lag);
  P("}");
  return rc;
}

ksnap_err_t ksnap_coord_stats_json(const ksnap_coord_stats_t *stats,
                                   ksnap_buf_t *out) {
  const ksnap_stats_summary_t *s = &stats->sum;
  ksnap_err_t rc = KSNAP_ERR_OK;

  P("{\"counts\": {\"triggered\": %" PRId64 ", \"in_progress\": %" PRId64
    ", \"completed\": %" PRId64 ", \"failed\": %" PRId64
    ", \"restored\": %" PRId64 ", \"unaligned_timeout\": %" PRId64
    ", \"unaligned_buffer_limit\": %" PRId64 "}, \"summary\": {",
    s->triggered, s->in_progress, s->completed, s->failed, s->restored,
    s->unaligned_timeout, s->unaligned_buffer_limit);
  if (json_minmax(out, "end_to_end_duration_ms", &s->duration_ms) ||
      ksnap_buf_appendf(out, ", ") ||
      json_minmax(out, "state_size", &s->state_size) ||
      ksnap_buf_appendf(out, ", ") ||
      json_minmax(out, "bytes_buffered", &s->bytes_buffered))
    rc = KSNAP_ERR_NOMEM;
  P("}, \"latest\": {\"completed\": ");
  json_id(out, &rc, s->last_completed_id);
  P(", \"failed\": ");
  json_id(out, &rc, s->last_failed_id);
  P(", \"restored\": ");
  if (s->restored == 0) {
    P("null");
  } else {
    P("{\"generation\": %" PRId64 ", \"id\": ", s->last_restored_generation);
    json_id(out, &rc, s->last_restored_id);
    P(", \"timestamp_ms\": %" PRId64 "}", s->last_restored_ms);
  }
  P(", \"records_failed\": %" PRId64 ", \"records_dead_lettered\": %" PRId64,
    s->last_errors.failed, s->last_errors.dead_lettered);
  P(", \"finished\": "); /* the final checkpoint of a finished job */
  json_id(out, &rc, s->finished_id);
  P("}, \"tasks\": [");
  for (size_t i = 0; i < stats->live_cnt; i++) {
    P("%s", i ? ", " : "");
    if (json_live(out, stats, &stats->live[i]))
      rc = KSNAP_ERR_NOMEM;
  }
  P("]");
  if (ksnap__stats_members_json(stats, out))
    rc = KSNAP_ERR_NOMEM;
  P(", \"history\": [");
  for (size_t i = 0; i < stats->cnt; i++) {
    P("%s", i ? ", " : "");
    if (json_entry(out, ksnap_coord_stats_at(stats, i)))
      rc = KSNAP_ERR_NOMEM;
  }
  P("]}\n");
  return rc;
}

ksnap_err_t ksnap__stats_json_str(ksnap_buf_t *out, const char *s) {
  return json_str(out, s);
}

/* --------------------------------------------------------------- table */

static void minmax_line(ksnap_buf_t *out, ksnap_err_t *rcp, const char *name,
                        const ksnap_stats_minmax_t *mm, int is_size) {
  ksnap_err_t rc = KSNAP_ERR_OK;
  char a[32], b[32], c[32];

  if (mm->cnt == 0) {
    P("%-20s -\n", name);
  } else if (is_size) {
    fmt_size(mm->min, a, sizeof(a));
    fmt_size(mm->sum / mm->cnt, b, sizeof(b));
    fmt_size(mm->max, c, sizeof(c));
    P("%-20s min %s, avg %s, max %s\n", name, a, b, c);
  } else {
    P("%-20s min %" PRId64 " ms, avg %" PRId64 " ms, max %" PRId64 " ms\n",
      name, mm->min, mm->sum / mm->cnt, mm->max);
  }
  if (rc)
    *rcp = rc;
}

/* The longest sync, async, alignment and start delay over the tasks that
 * acknowledged @p ent (the task that held the checkpoint up), as text:
 * "-" while none did. */
static void longest_timings(const ksnap_ckpt_stats_t *ent, char tm[4][32]) {
  int64_t max[4] = {0, 0, 0, 0};

  for (size_t t = 0; t < ent->task_cnt; t++) {
    const ksnap_timings_t *x = &ent->tasks[t].timings;
    const int64_t v[4] = {x->sync_us, x->async_us, x->alignment_us,
                          x->start_delay_us};
    if (!ent->tasks[t].acked)
      continue;
    for (int k = 0; k < 4; k++)
      if (v[k] > max[k])
        max[k] = v[k];
  }
  for (int k = 0; k < 4; k++) {
    if (ent->acked_cnt)
      fmt_us(max[k], tm[k], sizeof(tm[k]));
    else
      snprintf(tm[k], sizeof(tm[k]), "-");
  }
}

ksnap_err_t ksnap_coord_stats_table(const ksnap_coord_stats_t *stats,
                                    ksnap_buf_t *out) {
  const ksnap_stats_summary_t *s = &stats->sum;
  ksnap_err_t rc = KSNAP_ERR_OK;
  char when[64], dur[32], size[32], buffered[32], acked[32], tm[4][32], unal[64];

  P("Checkpoint counts:   triggered %" PRId64 ", in progress %" PRId64
    ", completed %" PRId64 ", failed %" PRId64 ", restored %" PRId64 "\n",
    s->triggered, s->in_progress, s->completed, s->failed, s->restored);
  minmax_line(out, &rc, "End to end duration:", &s->duration_ms, 0);
  minmax_line(out, &rc, "State size:", &s->state_size, 1);
  minmax_line(out, &rc, "Bytes buffered:", &s->bytes_buffered, 1);
  if (s->last_completed_id != KSNAP_CHECKPOINT_NONE &&
      (s->last_errors.failed || s->last_errors.dead_lettered))
    P("%-20s %" PRId64 " (%" PRId64 " to dead-letter topics) up to "
      "checkpoint %" PRId64 "\n", "Failed records:", s->last_errors.failed,
      s->last_errors.dead_lettered, s->last_completed_id);
  if (s->finished_id != KSNAP_CHECKPOINT_NONE)
    P("%-20s FINISHED with final checkpoint %" PRId64 "\n", "Job:",
      s->finished_id);
  if (s->restored == 0) {
    P("%-20s none\n", "Latest restore:");
  } else {
    fmt_time(s->last_restored_ms, when, sizeof(when));
    if (s->last_restored_id == KSNAP_CHECKPOINT_NONE)
      P("%-20s generation %" PRId64 " from no checkpoint at %s\n",
        "Latest restore:", s->last_restored_generation, when);
    else
      P("%-20s generation %" PRId64 " from checkpoint %" PRId64 " at %s\n",
        "Latest restore:", s->last_restored_generation, s->last_restored_id,
        when);
  }
  P("\n%-6s %-11s %-7s %-23s %-10s %-11s %-10s %-11s %-11s %-11s %-12s "
    "%-12s %-18s %s\n", "ID", "STATUS", "ACKED", "TRIGGER TIME (UTC)",
    "DURATION", "STATE SIZE", "BUFFERED", "SYNC", "ASYNC", "ALIGNMENT",
    "START DELAY", "DEAD LETTERS", "UNALIGNED", "TYPE");
  for (size_t i = 0; i < stats->cnt; i++) {
    const ksnap_ckpt_stats_t *ent = ksnap_coord_stats_at(stats, i);
    fmt_time(ent->trigger_ms, when, sizeof(when));
    if (ent->end_ms < 0)
      snprintf(dur, sizeof(dur), "-");
    else
      snprintf(dur, sizeof(dur), "%" PRId64 " ms",
               ent->end_ms - ent->trigger_ms);
    fmt_size(ent->state_size, size, sizeof(size));
    fmt_size(ent->bytes_buffered, buffered, sizeof(buffered));
    snprintf(acked, sizeof(acked), "%zu/%zu", ent->acked_cnt, ent->task_cnt);
    longest_timings(ent, tm);
    if (ent->unaligned_cnt)
      snprintf(unal, sizeof(unal), "%zu %s", ent->unaligned_cnt,
               ksnap_stats_unaligned_name(ent->unaligned_reason));
    else if (ent->reread_cnt) { /* aligned: waited, re-read what it dropped */
      char reread[32];
      fmt_size(ent->bytes_reread, reread, sizeof(reread));
      snprintf(unal, sizeof(unal), "%zu reread %s", ent->reread_cnt, reread);
    }
    else
      snprintf(unal, sizeof(unal), "-");
    P("%-6" PRId64 " %-11s %-7s %-23s %-10s %-11s %-10s %-11s %-11s %-11s "
      "%-12s %-12" PRId64 " %-18s %s",
      ent->id, ksnap_stats_status_name(ent->status), acked, when, dur, size,
      buffered, tm[0], tm[1], tm[2], tm[3], ent->errors.dead_lettered, unal,
      ent->is_savepoint ? "savepoint" : "checkpoint");
    if (ent->external_path)
      P(" %s", ent->external_path);
    if (ent->failure)
      P(" (%s)", ent->failure);
    P("\n");
  }
  return rc;
}

ksnap_err_t ksnap_coord_stats_detail(const ksnap_coord_stats_t *stats,
                                     int64_t id, ksnap_buf_t *out) {
  const ksnap_ckpt_stats_t *ent = ksnap_coord_stats_get(stats, id);
  ksnap_err_t rc = KSNAP_ERR_OK;
  char when[64], sync[32], async[32], align[32], delay[32], size[32],
      buffered[32], e2e[32], paused[32], unal[96];

  if (!ent)
    return KSNAP_ERR_NOT_FOUND;
  fmt_time(ent->trigger_ms, when, sizeof(when));
  P("%s %" PRId64 ": %s, triggered %s, %zu/%zu tasks acknowledged\n",
    ent->is_savepoint ? "Savepoint" : "Checkpoint", ent->id,
    ksnap_stats_status_name(ent->status), when, ent->acked_cnt,
    ent->task_cnt);
  P("%-16s %-10s %-12s %-12s %-12s %-12s %-11s %-10s %-7s %-12s %-12s %s\n",
    "TASK", "END TO END", "SYNC", "ASYNC", "ALIGNMENT", "START DELAY",
    "STATE SIZE", "BUFFERED", "FAILED", "DEAD LETTERS", "PAUSED",
    "UNALIGNED");
  for (size_t i = 0; i < ent->task_cnt; i++) {
    const ksnap_task_stats_t *ts = &ent->tasks[i];
    if (!ts->acked) {
      P("%-16s %s\n", ts->task, "(not acknowledged)");
      continue;
    }
    fmt_us(ts->timings.sync_us, sync, sizeof(sync));
    fmt_us(ts->timings.async_us, async, sizeof(async));
    fmt_us(ts->timings.alignment_us, align, sizeof(align));
    fmt_us(ts->timings.start_delay_us, delay, sizeof(delay));
    fmt_size(ts->state_size, size, sizeof(size));
    fmt_size(ts->timings.bytes_buffered, buffered, sizeof(buffered));
    snprintf(e2e, sizeof(e2e), "%" PRId64 " ms", ts->ack_ms - ent->trigger_ms);
    fmt_us(ts->align.paused_us, paused, sizeof(paused));
    if (ts->align.unaligned_reason == KSNAP_STATS_REREAD) {
      char reread[32];
      fmt_size(ts->bytes_reread, reread, sizeof(reread));
      snprintf(unal, sizeof(unal), "- (waited: reread %s, buffer limit)",
               reread);
    } else {
      snprintf(unal, sizeof(unal), "%s",
               ksnap_stats_unaligned_name(ts->align.unaligned_reason));
    }
    P("%-16s %-10s %-12s %-12s %-12s %-12s %-11s %-10s %-7" PRId64
      " %-12" PRId64 " %-12s %s\n", ts->task, e2e, sync, async, align, delay,
      size, buffered, ts->errors.failed, ts->errors.dead_lettered, paused,
      unal);
  }
  return rc;
}
