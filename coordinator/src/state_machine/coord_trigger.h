/* The trigger schedule of the coordinator state machine (coord_trigger.c):
 * when the next periodic checkpoint is due, a pending manual request, the
 * min-pause since the last completion. Called by the hub only
 * (coord_sm.c; created by coord_setup.c); it calls coord_actions.c only
 * (its two log lines). Not installed. */
#ifndef KSNAP_COORD_TRIGGER_H
#define KSNAP_COORD_TRIGGER_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_actions.h"

typedef struct coord_sched_s coord_sched_t;

/** @returns the schedule of @p conf's interval, min-pause and
 *  max-concurrent-checkpoints, or NULL (no memory). */
coord_sched_t *ksnap__coord_sched_new(coord_acts_t *acts,
                                      const ksnap_coord_sm_conf_t *conf);
void ksnap__coord_sched_destroy(coord_sched_t *sched);

/** RUNNING was entered at @p now_ms: the first periodic trigger is one
 *  interval later. */
void ksnap__coord_sched_start(coord_sched_t *sched, int64_t now_ms);
/** A manual checkpoint was requested. */
void ksnap__coord_sched_request(coord_sched_t *sched);
/** The job was restored: a manual request is dropped. */
void ksnap__coord_sched_restored(coord_sched_t *sched);
/** @returns true if a periodic or manual checkpoint is due at @p now_ms
 *  with @p pending checkpoints pending (deferrals and skips are logged). */
bool ksnap__coord_sched_due(coord_sched_t *sched, int64_t now_ms,
                            size_t pending);
/** The due checkpoint was triggered at @p now_ms. */
void ksnap__coord_sched_triggered(coord_sched_t *sched, int64_t now_ms);
/** A checkpoint or savepoint completed at @p now_ms (min-pause). */
void ksnap__coord_sched_completed(coord_sched_t *sched, int64_t now_ms);

#endif /* KSNAP_COORD_TRIGGER_H */
