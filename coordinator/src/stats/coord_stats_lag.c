/* Source lag (see coord_stats.h): each source task's positions from its
 * ACK, kept with the checkpoint; the end offsets of the source partitions,
 * which the driver reads from the broker and feeds in; and the lag of a
 * task as Kafka's consumer-groups tool computes it for the job's group
 * (end offset minus the position the latest completed checkpoint
 * committed). No Kafka here: the numbers come from the driver. */
#include <stdlib.h>
#include <string.h>

#include "coord_stats_int.h"

static void offsets_free(ksnap_source_offset_t *o, size_t n) {
  for (size_t i = 0; i < n; i++)
    free(o[i].topic);
  free(o);
}

static ksnap_err_t offsets_copy(ksnap_source_offset_t **dstp,
                                const ksnap_source_offset_t *src, size_t n) {
  ksnap_source_offset_t *dst = n ? calloc(n, sizeof(*dst)) : NULL;

  *dstp = NULL;
  if (n && !dst)
    return KSNAP_ERR_NOMEM;
  for (size_t i = 0; i < n; i++) {
    dst[i] = src[i];
    if (!(dst[i].topic = strdup(src[i].topic ? src[i].topic : ""))) {
      offsets_free(dst, i);
      return KSNAP_ERR_NOMEM;
    }
  }
  *dstp = dst;
  return KSNAP_ERR_OK;
}

void ksnap__stats_task_free(ksnap_task_stats_t *ts) {
  offsets_free(ts->offsets, ts->offset_cnt);
  ts->offsets = NULL;
  ts->offset_cnt = 0;
}

ksnap_err_t ksnap__stats_tasks_copy(ksnap_task_stats_t *dst,
                                    const ksnap_task_stats_t *src,
                                    size_t n) {
  for (size_t i = 0; i < n; i++) {
    dst[i] = src[i];
    if (offsets_copy(&dst[i].offsets, src[i].offsets, src[i].offset_cnt)) {
      while (i-- > 0)
        ksnap__stats_task_free(&dst[i]);
      return KSNAP_ERR_NOMEM;
    }
  }
  return KSNAP_ERR_OK;
}

void ksnap__stats_ends_free(ksnap_coord_stats_t *stats) {
  offsets_free(stats->ends, stats->end_cnt);
  stats->ends = NULL;
  stats->end_cnt = stats->end_cap = 0;
}

ksnap_err_t ksnap_coord_stats_positions(ksnap_coord_stats_t *stats,
                                        int64_t id, const char *task,
                                        const ksnap_source_offset_t *offsets,
                                        size_t offset_cnt) {
  const ksnap_ckpt_stats_t *ent = ksnap_coord_stats_get(stats, id);
  ksnap_task_stats_t *ts = NULL;
  ksnap_source_offset_t *copy;

  if (!ent || ent->status != KSNAP_STATS_IN_PROGRESS)
    return KSNAP_ERR_NOT_FOUND;
  for (size_t i = 0; i < ent->task_cnt && !ts; i++)
    if (!strcmp(ent->tasks[i].task, task))
      ts = &ent->tasks[i];
  if (!ts)
    return KSNAP_ERR_NOT_FOUND;
  if (offsets_copy(&copy, offsets, offset_cnt))
    return KSNAP_ERR_NOMEM;
  ksnap__stats_task_free(ts);
  ts->offsets = copy;
  ts->offset_cnt = offset_cnt;
  return KSNAP_ERR_OK;
}

static ksnap_source_offset_t *find_end(const ksnap_coord_stats_t *stats,
                                       const char *topic,
                                       int32_t partition) {
  for (size_t i = 0; i < stats->end_cnt; i++)
    if (stats->ends[i].partition == partition &&
        !strcmp(stats->ends[i].topic, topic))
      return &stats->ends[i];
  return NULL;
}

int64_t ksnap__stats_end(const ksnap_coord_stats_t *stats, const char *topic,
                         int32_t partition) {
  const ksnap_source_offset_t *e = find_end(stats, topic, partition);

  return e ? e->offset : -1;
}

ksnap_err_t ksnap_coord_stats_end_offset(ksnap_coord_stats_t *stats,
                                         const char *topic,
                                         int32_t partition, int64_t end) {
  ksnap_source_offset_t *e = find_end(stats, topic, partition);

  if (!e) {
    if (stats->end_cnt == stats->end_cap) {
      size_t cap = stats->end_cap ? stats->end_cap * 2 : 8;
      ksnap_source_offset_t *ends = realloc(stats->ends, cap * sizeof(*ends));
      if (!ends)
        return KSNAP_ERR_NOMEM;
      stats->ends = ends;
      stats->end_cap = cap;
    }
    e = &stats->ends[stats->end_cnt];
    if (!(e->topic = strdup(topic)))
      return KSNAP_ERR_NOMEM;
    e->partition = partition;
    stats->end_cnt++;
  }
  e->offset = end;
  return KSNAP_ERR_OK;
}

const ksnap_source_offset_t *ksnap_coord_stats_source_at(
    const ksnap_coord_stats_t *stats, size_t i) {
  const ksnap_stats_summary_t *s = &stats->sum;

  for (size_t t = 0; t < s->last_task_cnt; t++) {
    if (i < s->last_tasks[t].offset_cnt)
      return &s->last_tasks[t].offsets[i];
    i -= s->last_tasks[t].offset_cnt;
  }
  return NULL;
}

bool ksnap_coord_stats_task_lag(const ksnap_coord_stats_t *stats,
                                const char *task, int64_t *lagp) {
  const ksnap_stats_summary_t *s = &stats->sum;
  const ksnap_task_stats_t *ts = NULL;
  int64_t lag = 0, end, pos;

  for (size_t t = 0; t < s->last_task_cnt && !ts; t++)
    if (s->last_tasks[t].acked && !strcmp(s->last_tasks[t].task, task))
      ts = &s->last_tasks[t];
  if (!ts || ts->offset_cnt == 0)
    return false;
  for (size_t i = 0; i < ts->offset_cnt; i++) {
    end = ksnap__stats_end(stats, ts->offsets[i].topic,
                           ts->offsets[i].partition);
    if (end < 0)
      return false;
    /* no position yet (a logical offset): counted from the start */
    pos = ts->offsets[i].offset < 0 ? 0 : ts->offsets[i].offset;
    if (end > pos)
      lag += end - pos;
  }
  *lagp = lag;
  return true;
}
