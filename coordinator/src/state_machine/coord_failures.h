/* The tolerable-failure counter of the coordinator state machine
 * (coord_failures.c; invariant 11 at the top of coord_sm.c). Called by the
 * hub only (coord_sm.c, coord_setup.c); it calls nothing. Not installed. */
#ifndef KSNAP_COORD_FAILURES_H
#define KSNAP_COORD_FAILURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct coord_failures_s coord_failures_t;

/** @returns a counter at 0 allowing @p tolerable consecutive failures, or
 *  NULL (no memory). */
coord_failures_t *ksnap__coord_failures_new(int tolerable);
void ksnap__coord_failures_destroy(coord_failures_t *failures);

/**
 * Checkpoint @p id failed with @p reason (a counted abort). Savepoints and
 * checkpoints not newer than the last completed one do not count.
 * @returns true when the count exceeds the tolerated one (it starts again
 * at 0): a failure of the job, which @p why (of @p why_size) names.
 */
bool ksnap__coord_failures_count(coord_failures_t *failures, int64_t id,
                                 bool is_savepoint, const char *reason,
                                 char *why, size_t why_size);
/** Checkpoint @p id completed: a newer success resets the count. */
void ksnap__coord_failures_success(coord_failures_t *failures, int64_t id);
/** The coordinator starts with @p latest its last success (the count is
 *  not durable: 0). */
void ksnap__coord_failures_start(coord_failures_t *failures, int64_t latest);
int ksnap__coord_failures_cnt(const coord_failures_t *failures);

#endif /* KSNAP_COORD_FAILURES_H */
