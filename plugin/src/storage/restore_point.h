/*
 * Where a restore point named by URL lives (restore_point.c): a
 * savepoint's directory, or a checkpoint's chk-N directory, each with or
 * without the trailing /_metadata. Pure string work, any thread.
 */
#ifndef KSNAP_RESTORE_POINT_H
#define KSNAP_RESTORE_POINT_H

#include "ksnap/error.h"

/**
 * Splits @p url into *@p basep, the storage URL the handles of its
 * `_metadata` are relative to, and *@p keyp, the key of that `_metadata`
 * there (both malloc'd):
 *  - `.../JOB/chk-N[/_metadata]`: base `...`, key `JOB/chk-N/_metadata`
 *    (a checkpoint's handles name paths under the checkpoints' root);
 *  - any other directory `D[/_metadata]` (a savepoint): base `D`, key
 *    `_metadata` (its handles are relative to it).
 * @returns KSNAP_ERR_INVALID_ARG for an empty URL or one without a
 * scheme, KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_restore_point_split(const char *url, char **basep,
                                      char **keyp, ksnap_error_t *error);

#endif /* KSNAP_RESTORE_POINT_H */
