/*
 * Where a restore point named by URL lives (restore_point.c): a
 * savepoint's directory, or a checkpoint's chk-N directory, each with or
 * without the trailing /_metadata. Pure string work, any thread.
 */
#ifndef KSNAP_RESTORE_POINT_H
#define KSNAP_RESTORE_POINT_H

#include "ksnap/error.h"

#include <stdint.h>

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

/**
 * 1 if @p a and @p b name the same restore point (the same storage URL
 * and `_metadata` key after ksnap_restore_point_split()), else 0 (also
 * when either is not a restore point's URL).
 */
int ksnap_restore_point_same(const char *a, const char *b);

/**
 * 1 if @p url names checkpoint @p id of job @p job in the checkpoints
 * directory @p dir (`DIR/JOB/chk-ID`, with or without `/_metadata`): the
 * job's own checkpoint, not a savepoint or another job's. 0 when @p dir
 * or @p url is NULL.
 */
int ksnap_restore_point_is_own(const char *url, const char *dir,
                               const char *job, int64_t id);

#endif /* KSNAP_RESTORE_POINT_H */
