/* Sink commits and retention of completed checkpoints (invariant 10 at
 * the top of coord_sm.c): keep state.checkpoints.num-retained completed
 * checkpoints, never retire a savepoint, a checkpoint a sink repair may
 * start from (the newest completed one at or below the slowest sink's
 * last COMMITTED id, and everything after it), or a checkpoint whose
 * objects a retained incremental checkpoint reuses (a handle path naming
 * ".../chk-<id>/..."). RETIRE is idempotent for the driver: a restarted
 * coordinator may retire a checkpoint again. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_int.h"
#include "ksnap/log.h"


int64_t ksnap_coord_sm_fully_committed(const ksnap_coord_sm_t *sm) {
  int64_t min = KSNAP_CHECKPOINT_NONE;
  bool any = false;

  for (size_t i = 0; i < sm->task_cnt; i++) {
    const coord_task_t *t = &sm->tasks[i];
    if (!t->is_sink)
      continue;
    if (t->committed == KSNAP_CHECKPOINT_NONE)
      return KSNAP_CHECKPOINT_NONE;
    if (!any || t->committed < min)
      min = t->committed;
    any = true;
  }
  return min;
}

ksnap_err_t ksnap_coord_sm_committed(ksnap_coord_sm_t *sm, int64_t now_ms,
                                     const ksnap_committed_t *committed) {
  ksnap_err_t err = ksnap__coord_enter(sm, "COMMITTED");
  int64_t before;
  coord_task_t *t;

  (void)now_ms;
  if (err)
    return err;
  if (!(t = ksnap__coord_known_task(sm, "COMMITTED", &committed->task)))
    return KSNAP_ERR_NOT_FOUND;
  if (!t->is_sink || committed->checkpoint_id < 1 ||
      committed->checkpoint_id > sm->max_id) {
    ksnap__coord_log(sm, KSNAP_LOG_WARNING,
                     "COMMITTED(%" PRId64 ") of task %s refused: %s",
                     committed->checkpoint_id, t->name,
                     !t->is_sink ? "it is not a sink task"
                                 : "no such checkpoint was triggered");
    return KSNAP_ERR_STATE;
  }
  if (t->committed != KSNAP_CHECKPOINT_NONE &&
      committed->checkpoint_id <= t->committed)
    return KSNAP_ERR_OK; /* not news: commits only move forward */
  before = ksnap_coord_sm_fully_committed(sm);
  t->committed = committed->checkpoint_id;
  if (ksnap_coord_sm_fully_committed(sm) != before) {
    ksnap__coord_log(sm, KSNAP_LOG_INFO,
                     "Checkpoint %" PRId64 " fully committed by every sink",
                     ksnap_coord_sm_fully_committed(sm));
    ksnap__coord_retire(sm);
  }
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
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

static coord_done_t *done_find(ksnap_coord_sm_t *sm, int64_t id) {
  for (size_t i = 0; i < sm->done_cnt; i++)
    if (sm->done[i].id == id)
      return &sm->done[i];
  return NULL;
}

ksnap_err_t ksnap__coord_done_add(ksnap_coord_sm_t *sm, int64_t id,
                                  int64_t generation, bool is_savepoint,
                                  const ksnap_task_snapshot_t *tasks,
                                  size_t task_cnt) {
  coord_done_t d = {id, generation, is_savepoint, NULL, 0, tasks == NULL};
  size_t i;

  if (done_find(sm, id))
    return KSNAP_ERR_OK;
  if (tasks && refs_from(tasks, task_cnt, id, &d.refs, &d.ref_cnt))
    return KSNAP_ERR_NOMEM;
  if (sm->done_cnt == sm->done_cap) {
    size_t cap = sm->done_cap ? sm->done_cap * 2 : 16;
    coord_done_t *done = realloc(sm->done, cap * sizeof(*done));
    if (!done) {
      free(d.refs);
      return KSNAP_ERR_NOMEM;
    }
    sm->done = done;
    sm->done_cap = cap;
  }
  for (i = sm->done_cnt; i > 0 && sm->done[i - 1].id > id; i--)
    sm->done[i] = sm->done[i - 1];
  sm->done[i] = d;
  sm->done_cnt++;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_coord_sm_replay_metadata(
    ksnap_coord_sm_t *sm, const ksnap_checkpoint_meta_t *meta) {
  coord_done_t *d = done_find(sm, meta->checkpoint_id);
  int64_t *refs;
  size_t cnt;

  if (sm->oom)
    return KSNAP_ERR_NOMEM;
  if (!d)
    return KSNAP_ERR_NOT_FOUND;
  if (refs_from(meta->tasks, meta->task_cnt, d->id, &refs, &cnt))
    return KSNAP_ERR_NOMEM;
  free(d->refs);
  d->refs = refs;
  d->ref_cnt = cnt;
  d->refs_unknown = false;
  ksnap__coord_retire(sm);
  return sm->oom ? KSNAP_ERR_NOMEM : KSNAP_ERR_OK;
}

/* Is checkpoint @p id still needed by a newer retained one's objects? A
 * retained checkpoint whose references are unknown (replayed, metadata
 * not fed) might need any older one. */
static bool referenced(const ksnap_coord_sm_t *sm, int64_t id) {
  for (size_t i = 0; i < sm->done_cnt; i++) {
    const coord_done_t *d = &sm->done[i];
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

/* Invariant 10. The repair floor: a sink whose last committed transaction
 * is C replays from its snapshot at C along the completed checkpoints
 * after the newest completed one at or below C (DESIGN.md 5). And a
 * checkpoint whose objects a retained incremental one reuses stays. */
void ksnap__coord_retire(ksnap_coord_sm_t *sm) {
  int64_t floor = INT64_MAX, cmin = INT64_MAX;
  int kept = 0;
  bool sinks = false;

  for (size_t i = 0; i < sm->task_cnt; i++) {
    if (!sm->tasks[i].is_sink)
      continue;
    if (sm->tasks[i].committed == KSNAP_CHECKPOINT_NONE)
      return; /* a sink that never committed may need everything */
    sinks = true;
    if (sm->tasks[i].committed < cmin)
      cmin = sm->tasks[i].committed;
  }
  if (sinks) {
    floor = cmin;
    for (size_t i = 0; i < sm->done_cnt && sm->done[i].id <= cmin; i++)
      floor = sm->done[i].id;
  }
  for (size_t i = sm->done_cnt; i-- > 0;) {
    coord_done_t *d = &sm->done[i];
    ksnap_coord_action_t *act;
    if (d->is_savepoint || ++kept <= sm->conf.num_retained ||
        d->id >= floor || referenced(sm, d->id))
      continue;
    ksnap__coord_log(sm, KSNAP_LOG_INFO, "Retiring checkpoint %" PRId64,
                     d->id);
    if ((act = ksnap__coord_emit(sm, KSNAP_COORD_ACT_RETIRE))) {
      act->checkpoint_id = d->id;
      act->generation = d->generation;
    }
    free(d->refs);
    memmove(d, d + 1, (sm->done_cnt - i - 1) * sizeof(*d));
    sm->done_cnt--;
  }
}

