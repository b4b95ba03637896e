/* The bottom layer of the coordinator state machine: the queue of actions
 * the driver drains (coord_sm.h), LOG lines, the sticky out-of-memory
 * flag, and the display names of coord_sm.h. Every other file of this
 * folder may call it; it calls none of them. Not installed.
 *
 * The queue stamps each action it creates with the generation it was last
 * given (ksnap__coord_acts_stamp(), called by the hub whenever the job's
 * generation changes); a caller that means another generation (an ABORT of
 * a checkpoint, a RETIRE) overwrites the field. */
#ifndef KSNAP_COORD_ACTIONS_H
#define KSNAP_COORD_ACTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_sm.h"

typedef struct coord_acts_s coord_acts_t;

/** @returns an empty queue stamping generation 0, or NULL (no memory). */
coord_acts_t *ksnap__coord_acts_new(void);
/** Frees @p acts and every undrained action. NULL is a no-op. */
void ksnap__coord_acts_destroy(coord_acts_t *acts);
/** Actions created from now on carry @p generation. */
void ksnap__coord_acts_stamp(coord_acts_t *acts, int64_t generation);

/** Appends a zeroed action of @p type (checkpoint NONE, the stamped
 *  generation). @returns it, or NULL (the oom flag is set). */
ksnap_coord_action_t *ksnap__coord_emit(coord_acts_t *acts,
                                        ksnap_coord_act_type_t type);
/** Appends a LOG action at @p level (KSNAP_LOG_*); at KSNAP_LOG_DEBUG
 *  only while the log is at debug level with the coord context on, as
 *  KSNAP_DBG(COORD, ...) would emit it. */
void ksnap__coord_log(coord_acts_t *acts, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/** strdup(@p s), setting the oom flag when it fails. */
char *ksnap__coord_strdup(coord_acts_t *acts, const char *s);

/** An allocation failed: the state machine is unusable from now on. */
void ksnap__coord_oom(coord_acts_t *acts);
bool ksnap__coord_is_oom(const coord_acts_t *acts);

/** Moves the oldest undrained action into @p act. @returns false if none. */
bool ksnap__coord_acts_next(coord_acts_t *acts, ksnap_coord_action_t *act);

#endif /* KSNAP_COORD_ACTIONS_H */
