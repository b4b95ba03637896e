/*
 * Starting a job from a savepoint or a retained checkpoint named by URL
 * (`--from-savepoint`, coord_from.c), on the coordinator thread:
 *  - while the control history is replayed, each RESTORE whose URL is not
 *    the job's own chk-N tells the state machine that the job came from
 *    that point (ksnap_coord_sm_restore_from), and whether it is the URL
 *    asked for now;
 *  - before the state machine starts, the point is read, checked against
 *    the job graph and, unless the history already started from it, set
 *    as the restore point; then the start restores from it.
 */
#ifndef KSNAP_COORD_FROM_H
#define KSNAP_COORD_FROM_H

#include "coord_drv_int.h"

/** What the start knows of the restore point asked for. */
typedef struct ksnap__drv_from_s {
  const char *url;        /**< --from-savepoint, NULL: none */
  int allow_non_restored; /**< --allow-non-restored-state */
  int seen;     /**< a replayed RESTORE named it: the job came from it */
  int restore;  /**< set as the restore point: restore at start */
  char cause[KSNAP_ERROR_MSG_SIZE]; /**< a refusal (the job fails) */
} ksnap__drv_from_t;

/** A replayed RESTORE @p r (coord_driver.c's replay). */
void ksnap__drv_from_replayed(ksnap__drv_t *d, ksnap__drv_from_t *f,
                              const ksnap_restore_t *r);

/**
 * Before ksnap_coord_sm_start(): reads @p f->url's `_metadata` and sets it
 * as the restore point (f->restore), unless the history started from it
 * already. A point whose stages are not all in the job graph (without
 * allow_non_restored) fills f->cause: the caller fails the job with it.
 * @returns KSNAP_ERR_OK, or the error reading the point (nothing changed).
 */
ksnap_err_t ksnap__drv_from_prepare(ksnap__drv_t *d, ksnap__drv_from_t *f,
                                    const ksnap_job_t *job,
                                    ksnap_error_t *error);

#endif /* KSNAP_COORD_FROM_H */
