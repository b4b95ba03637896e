/* The completed checkpoints the coordinator has not retired yet, and their
 * retention (coord_retain.c). Called by the hub only (coord_sm.c,
 * coord_setup.c); it calls coord_actions.c only. Not installed. */
#ifndef KSNAP_COORD_RETAIN_H
#define KSNAP_COORD_RETAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_actions.h"

typedef struct coord_retain_s coord_retain_t;

/** Keeps @p num_retained (>= 1) completed checkpoints. @returns NULL when
 *  out of memory. */
coord_retain_t *ksnap__coord_retain_new(coord_acts_t *acts, int num_retained);
void ksnap__coord_retain_destroy(coord_retain_t *retain);

/**
 * Checkpoint @p id completed (again: a no-op) and becomes the latest if it
 * is newer. @p tasks: its snapshots, whose handle paths tell which older
 * checkpoints' objects it reuses; NULL: unknown (replayed) until
 * ksnap__coord_retain_metadata().
 * @returns KSNAP_ERR_OK or KSNAP_ERR_NOMEM (the latest is raised anyway).
 */
ksnap_err_t ksnap__coord_retain_add(coord_retain_t *retain, int64_t id,
                                    int64_t generation, bool is_savepoint,
                                    const ksnap_task_snapshot_t *tasks,
                                    size_t task_cnt);
/** @returns the latest completed checkpoint (savepoints included), or
 *  NONE. */
int64_t ksnap__coord_retain_latest(const coord_retain_t *retain);
/** @returns true if @p id is a completed checkpoint not retired. */
bool ksnap__coord_retain_has(const coord_retain_t *retain, int64_t id);
/** @returns the newest retained completed checkpoint older than @p id,
 *  or NONE: the parent of checkpoint @p id. */
int64_t ksnap__coord_retain_parent(const coord_retain_t *retain, int64_t id);
/** The `_metadata` of a replayed completed checkpoint: its references.
 *  @returns KSNAP_ERR_OK, KSNAP_ERR_NOT_FOUND or KSNAP_ERR_NOMEM. */
ksnap_err_t ksnap__coord_retain_metadata(coord_retain_t *retain,
                                         const ksnap_checkpoint_meta_t *meta);
/** RETIRE out for every checkpoint invariant 10 lets go. @p sinks: the
 *  job has sink tasks, the lowest of whose last COMMITTED ids is
 *  @p committed_min. */
void ksnap__coord_retain_retire(coord_retain_t *retain, bool sinks,
                                int64_t committed_min);

#endif /* KSNAP_COORD_RETAIN_H */
