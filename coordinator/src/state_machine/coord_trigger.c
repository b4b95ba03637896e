/* The periodic and manual trigger decision (coord_trigger.h): invariant 4
 * at the top of coord_sm.c. Flink's CheckpointRequestDecider is the
 * reference:
 *  - The first periodic trigger is one interval after RUNNING is entered
 *    (Flink draws a random initial delay; a fixed one is testable).
 *  - max-concurrent-checkpoints defers a due periodic or manual trigger
 *    ("Deferring checkpoint trigger: ..."), which fires at the first tick
 *    after a pending checkpoint ends. min-pause applies to periodic
 *    triggers only and is measured from the last completion (savepoints
 *    included; failures do not reset it, as in Flink): a periodic trigger
 *    inside it is skipped and rescheduled at last completion + min-pause
 *    ("Skipping checkpoint trigger: ..."). Each is logged once per trigger.
 *  - Savepoints are forced triggers and do not ask this schedule. */
#include "coord_trigger.h"

#include <inttypes.h>
#include <stdlib.h>

#include "ksnap/log.h"

struct coord_sched_s {
  coord_acts_t *acts; /**< borrowed */
  int64_t interval_ms, min_pause_ms;
  int max_concurrent;
  int64_t next_periodic_ms;
  bool manual_requested;
  bool deferral_logged, pause_logged; /**< once per trigger */
  int64_t last_completion_ms;         /**< -1 if none since start */
};

coord_sched_t *ksnap__coord_sched_new(coord_acts_t *acts,
                                      const ksnap_coord_sm_conf_t *conf) {
  coord_sched_t *sched = calloc(1, sizeof(*sched));

  if (!sched)
    return NULL;
  sched->acts = acts;
  sched->interval_ms = conf->interval_ms;
  sched->min_pause_ms = conf->min_pause_ms;
  sched->max_concurrent = conf->max_concurrent;
  sched->last_completion_ms = -1;
  return sched;
}

void ksnap__coord_sched_destroy(coord_sched_t *sched) {
  free(sched);
}

void ksnap__coord_sched_start(coord_sched_t *sched, int64_t now_ms) {
  sched->next_periodic_ms = now_ms + sched->interval_ms;
  sched->deferral_logged = sched->pause_logged = false;
}

void ksnap__coord_sched_request(coord_sched_t *sched) {
  sched->manual_requested = true;
}

void ksnap__coord_sched_restored(coord_sched_t *sched) {
  sched->manual_requested = false;
}

bool ksnap__coord_sched_due(coord_sched_t *sched, int64_t now_ms,
                            size_t pending) {
  int64_t resume = sched->last_completion_ms + sched->min_pause_ms;

  if (now_ms < sched->next_periodic_ms && !sched->manual_requested)
    return false;
  if ((int)pending >= sched->max_concurrent) {
    if (!sched->deferral_logged)
      ksnap__coord_log(sched->acts, KSNAP_LOG_INFO,
                       "Deferring checkpoint trigger: %zu checkpoints "
                       "pending (max-concurrent-checkpoints=%d)",
                       pending, sched->max_concurrent);
    sched->deferral_logged = true;
    return false;
  }
  if (!sched->manual_requested && sched->min_pause_ms > 0 &&
      sched->last_completion_ms >= 0 && now_ms < resume) {
    if (!sched->pause_logged)
      ksnap__coord_log(sched->acts, KSNAP_LOG_INFO,
                       "Skipping checkpoint trigger: min-pause of %" PRId64
                       " ms since the last completion not elapsed (next at "
                       "%" PRId64 ")",
                       sched->min_pause_ms, resume);
    sched->pause_logged = true;
    sched->next_periodic_ms = resume;
    return false;
  }
  return true;
}

void ksnap__coord_sched_triggered(coord_sched_t *sched, int64_t now_ms) {
  sched->manual_requested = false;
  sched->deferral_logged = sched->pause_logged = false;
  sched->next_periodic_ms = now_ms + sched->interval_ms;
}

void ksnap__coord_sched_completed(coord_sched_t *sched, int64_t now_ms) {
  sched->last_completion_ms = now_ms;
}
