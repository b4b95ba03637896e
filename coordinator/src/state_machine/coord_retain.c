/* Retention of completed checkpoints (coord_retain.h; invariant 10 at the
 * top of coord_sm.c): keep state.checkpoints.num-retained completed
 * checkpoints, never retire a savepoint, a checkpoint a sink repair may
 * start from (the newest completed one at or below the slowest sink's
 * last COMMITTED id, and everything after it), or a checkpoint whose
 * objects a retained incremental checkpoint reuses (a handle path naming
 * ".../chk-<id>/..."). RETIRE is idempotent for the driver: a restarted
 * coordinator may retire a checkpoint again. */
#include "coord_retain.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"

/** One completed checkpoint not retired. */
typedef struct coord_done_s {
  int64_t id;
  int64_t generation;
  bool is_savepoint;
  int64_t *refs; /**< older checkpoints whose objects it reuses */
  size_t ref_cnt;
  bool refs_unknown; /**< replayed: its metadata was not fed */
} coord_done_t;

struct coord_retain_s {
  coord_acts_t *acts; /**< borrowed */
  int num_retained;
  coord_done_t *done; /**< ascending ids */
  size_t cnt, cap;
  int64_t latest; /**< NONE if none */
};

coord_retain_t *ksnap__coord_retain_new(coord_acts_t *acts,
                                        int num_retained) {
  coord_retain_t *retain = calloc(1, sizeof(*retain));

  if (!retain)
    return NULL;
  retain->acts = acts;
  retain->num_retained = num_retained;
  retain->latest = KSNAP_CHECKPOINT_NONE;
  return retain;
}

void ksnap__coord_retain_destroy(coord_retain_t *retain) {
  if (!retain)
    return;
  for (size_t i = 0; i < retain->cnt; i++)
    free(retain->done[i].refs);
  free(retain->done);
  free(retain);
}

/* The checkpoint ids other than @p self that a handle path names as
 * ".../chk-<id>/...": an incremental snapshot reuses older objects. */
static ksnap_err_t refs_from(const ksnap_task_snapshot_t *tasks,
                             size_t task_cnt, int64_t self, int64_t **refsp,
                             size_t *cntp) {
  int64_t *refs = NULL;
  size_t cnt = 0, cap = 0;

  for (size_t t = 0; t < task_cnt; t++) {
    for (size_t h = 0; h < tasks[t].handle_cnt; h++) {
      const char *p = tasks[t].handles[h].path;
      while (p && (p = strstr(p, "chk-"))) {
        char *end;
        long long id;
        bool at_start = p == tasks[t].handles[h].path || p[-1] == '/';
        p += 4;
        id = strtoll(p, &end, 10);
        if (!at_start || end == p || *end != '/' || id == self)
          continue;
        size_t i;
        for (i = 0; i < cnt && refs[i] != id; i++)
          ;
        if (i < cnt)
          continue;
        if (cnt == cap) {
          int64_t *r = realloc(refs, (cap = cap ? cap * 2 : 4) * sizeof(*r));
          if (!r) {
            free(refs);
            return KSNAP_ERR_NOMEM;
          }
          refs = r;
        }
        refs[cnt++] = id;
      }
    }
  }
  *refsp = refs;
  *cntp = cnt;
  return KSNAP_ERR_OK;
}

static coord_done_t *done_find(const coord_retain_t *retain, int64_t id) {
  for (size_t i = 0; i < retain->cnt; i++)
    if (retain->done[i].id == id)
      return &retain->done[i];
  return NULL;
}

ksnap_err_t ksnap__coord_retain_add(coord_retain_t *retain, int64_t id,
                                    int64_t generation, bool is_savepoint,
                                    const ksnap_task_snapshot_t *tasks,
                                    size_t task_cnt) {
  coord_done_t d = {id, generation, is_savepoint, NULL, 0, tasks == NULL};
  size_t i;

  if (retain->latest == KSNAP_CHECKPOINT_NONE || id > retain->latest)
    retain->latest = id;
  if (done_find(retain, id))
    return KSNAP_ERR_OK;
  if (tasks && refs_from(tasks, task_cnt, id, &d.refs, &d.ref_cnt))
    return KSNAP_ERR_NOMEM;
  if (retain->cnt == retain->cap) {
    size_t cap = retain->cap ? retain->cap * 2 : 16;
    coord_done_t *done = realloc(retain->done, cap * sizeof(*done));
    if (!done) {
      free(d.refs);
      return KSNAP_ERR_NOMEM;
    }
    retain->done = done;
    retain->cap = cap;
  }
  for (i = retain->cnt; i > 0 && retain->done[i - 1].id > id; i--)
    retain->done[i] = retain->done[i - 1];
  retain->done[i] = d;
  retain->cnt++;
  return KSNAP_ERR_OK;
}

int64_t ksnap__coord_retain_latest(const coord_retain_t *retain) {
  return retain->latest;
}

bool ksnap__coord_retain_has(const coord_retain_t *retain, int64_t id) {
  return done_find(retain, id) != NULL;
}

/* Restores always start from the latest completed checkpoint, so the
 * parent is also the checkpoint the generation started from when none
 * completed since. */
int64_t ksnap__coord_retain_parent(const coord_retain_t *retain, int64_t id) {
  int64_t parent = KSNAP_CHECKPOINT_NONE;

  for (size_t i = 0; i < retain->cnt; i++)
    if (retain->done[i].id < id && retain->done[i].id > parent)
      parent = retain->done[i].id;
  return parent;
}

ksnap_err_t ksnap__coord_retain_metadata(coord_retain_t *retain,
                                         const ksnap_checkpoint_meta_t *meta) {
  coord_done_t *d = done_find(retain, meta->checkpoint_id);
  int64_t *refs;
  size_t cnt;

  if (!d)
    return KSNAP_ERR_NOT_FOUND;
  if (refs_from(meta->tasks, meta->task_cnt, d->id, &refs, &cnt))
    return KSNAP_ERR_NOMEM;
  free(d->refs);
  d->refs = refs;
  d->ref_cnt = cnt;
  d->refs_unknown = false;
  return KSNAP_ERR_OK;
}

/* Is checkpoint @p id still needed by a newer retained one's objects? A
 * retained checkpoint whose references are unknown (replayed, metadata
 * not fed) might need any older one. */
static bool referenced(const coord_retain_t *retain, int64_t id) {
  for (size_t i = 0; i < retain->cnt; i++) {
    const coord_done_t *d = &retain->done[i];
    if (d->id <= id)
      continue;
    if (d->refs_unknown)
      return true;
    for (size_t r = 0; r < d->ref_cnt; r++)
      if (d->refs[r] == id)
        return true;
  }
  return false;
}

/* The repair floor: a sink whose last committed transaction is C replays
 * from its snapshot at C along the completed checkpoints after the newest
 * completed one at or below C, which must therefore stay. */
void ksnap__coord_retain_retire(coord_retain_t *retain, bool sinks,
                                int64_t committed_min) {
  int64_t floor = INT64_MAX;
  int kept = 0;

  if (sinks) {
    floor = committed_min;
    for (size_t i = 0; i < retain->cnt && retain->done[i].id <= committed_min;
         i++)
      floor = retain->done[i].id;
  }
  for (size_t i = retain->cnt; i-- > 0;) {
    coord_done_t *d = &retain->done[i];
    ksnap_coord_action_t *act;
    if (d->is_savepoint || ++kept <= retain->num_retained ||
        d->id >= floor || referenced(retain, d->id))
      continue;
    ksnap__coord_log(retain->acts, KSNAP_LOG_INFO,
                     "Retiring checkpoint %" PRId64, d->id);
    if ((act = ksnap__coord_emit(retain->acts, KSNAP_COORD_ACT_RETIRE))) {
      act->checkpoint_id = d->id;
      act->generation = d->generation;
    }
    free(d->refs);
    memmove(d, d + 1, (retain->cnt - i - 1) * sizeof(*d));
    retain->cnt--;
  }
}
