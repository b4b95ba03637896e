/* The statistics' private struct, shared by coord_stats.c (bookkeeping)
 * and the renderers (coord_stats_render.c, coord_stats_prom.c). */
#ifndef KSNAP_COORD_STATS_INT_H
#define KSNAP_COORD_STATS_INT_H

#include "coord_stats.h"

struct ksnap_coord_stats_s {
  size_t history;           /**< completed/failed entries kept */
  ksnap_ckpt_stats_t *ents; /**< oldest first */
  size_t cnt, cap;
  ksnap_stats_summary_t sum;
  ksnap_task_live_t *live; /**< per task, in order of first heartbeat */
  size_t live_cnt, live_cap;
  ksnap_source_offset_t *ends; /**< end offsets (offset = the end) */
  size_t end_cnt, end_cap;
  ksnap_members_view_t mv; /**< coord_stats_members.c */
};

/* coord_stats_lag.c: a task's positions (free, deep copy of @p n tasks). */
void ksnap__stats_task_free(ksnap_task_stats_t *ts);
ksnap_err_t ksnap__stats_tasks_copy(ksnap_task_stats_t *dst,
                                    const ksnap_task_stats_t *src, size_t n);
void ksnap__stats_ends_free(ksnap_coord_stats_t *stats);
/* The end offset of (topic, partition), or -1 if unknown. */
int64_t ksnap__stats_end(const ksnap_coord_stats_t *stats, const char *topic,
                         int32_t partition);

/* coord_stats_members.c: the member view in the JSON document (a
 * "members" member, after a comma, only when known) and as Prometheus
 * families. */
ksnap_err_t ksnap__stats_members_json(const ksnap_coord_stats_t *stats,
                                      ksnap_buf_t *out);
void ksnap__stats_members_prom(const ksnap_coord_stats_t *stats,
                               const char *job, ksnap_buf_t *out,
                               ksnap_err_t *rcp);
/* Escapes for the renderers: a JSON string (quoted), a Prometheus label
 * value (truncated to @p size). */
ksnap_err_t ksnap__stats_json_str(ksnap_buf_t *out, const char *s);
void ksnap__stats_label_escape(const char *s, char *out, size_t size);

/* Renderers: appends to ksnap_buf_t *out; an allocation failure sets the
 * local ksnap_err_t rc to KSNAP_ERR_NOMEM (sticky) and the call goes on. */
#define P(...)                                                  \
  do {                                                          \
    if (ksnap_buf_appendf(out, __VA_ARGS__) != KSNAP_ERR_OK)    \
      rc = KSNAP_ERR_NOMEM;                                     \
  } while (0)

#endif /* KSNAP_COORD_STATS_INT_H */
