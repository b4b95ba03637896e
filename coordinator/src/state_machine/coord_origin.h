/* Where the job's current line of checkpoints started when it is not the
 * latest completed checkpoint (coord_origin.c): a restore point from
 * outside the job's history (`--from-savepoint`: a savepoint, a retained
 * checkpoint), until a checkpoint of the job completes after it. Calls
 * nothing. Not installed. */
#ifndef KSNAP_COORD_ORIGIN_H
#define KSNAP_COORD_ORIGIN_H

#include <stdint.h>

#include "ksnap/error.h"

typedef struct coord_origin_s coord_origin_t;

/** @returns an empty origin, or NULL (no memory). */
coord_origin_t *ksnap__coord_origin_new(void);
void ksnap__coord_origin_destroy(coord_origin_t *o);

/** The job restores from checkpoint @p id at @p url (copied).
 *  @returns KSNAP_ERR_OK or KSNAP_ERR_NOMEM. */
ksnap_err_t ksnap__coord_origin_set(coord_origin_t *o, int64_t id,
                                    const char *url);
/** A checkpoint of the job completed: it is the restore point now. */
void ksnap__coord_origin_clear(coord_origin_t *o);
/** The origin's URL (NULL: none, the latest completed checkpoint is the
 *  restore point); *@p idp is set to its id when there is one. */
const char *ksnap__coord_origin_get(const coord_origin_t *o, int64_t *idp);

#endif /* KSNAP_COORD_ORIGIN_H */
