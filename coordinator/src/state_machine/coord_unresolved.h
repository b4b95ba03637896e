/* The checkpoints a replayed control history left unresolved: triggered,
 * neither completed nor aborted, nor followed by a RESTORE
 * (coord_unresolved.c). Used only between ksnap_coord_sm_replay() and
 * ksnap_coord_sm_start(), by coord_setup.c; it calls coord_actions.c only.
 * Not installed. */
#ifndef KSNAP_COORD_UNRESOLVED_H
#define KSNAP_COORD_UNRESOLVED_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_actions.h"

typedef struct coord_unresolved_s coord_unresolved_t;

/** @returns an empty list, or NULL (no memory). */
coord_unresolved_t *ksnap__coord_unresolved_new(void);
void ksnap__coord_unresolved_destroy(coord_unresolved_t *u);

/** TRIGGER(@p id) replayed. @returns KSNAP_ERR_OK or KSNAP_ERR_NOMEM. */
ksnap_err_t ksnap__coord_unresolved_add(coord_unresolved_t *u, int64_t id,
                                        int64_t generation,
                                        bool is_savepoint);
/** COMPLETE or ABORT of @p id replayed: @returns true (and whether it was
 *  a savepoint) if it was unresolved. */
bool ksnap__coord_unresolved_take(coord_unresolved_t *u, int64_t id,
                                  bool *is_savepoint);
/** RESTORE replayed: the tasks abort everything triggered before it. */
void ksnap__coord_unresolved_clear(coord_unresolved_t *u);
/** Start: ABORT ("coordinator restarted") out for each one left in
 *  @p generation (older ones died with their generation); then empty. */
void ksnap__coord_unresolved_abort(coord_unresolved_t *u, coord_acts_t *acts,
                                   int64_t generation);

#endif /* KSNAP_COORD_UNRESOLVED_H */
