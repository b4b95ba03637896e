/*
 * The job's checkpoint storage, opened from its properties:
 * state.checkpoints.dir and the s3.* keys (then the environment, see
 * ksnap/storage.h), and the streamed upload of a snapshot file. The
 * snapshot upload and the restore each open their own handle.
 * Threading: any thread.
 */
#ifndef KSNAP_TASK_STORAGE_H
#define KSNAP_TASK_STORAGE_H

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/state.h"
#include "ksnap/storage.h"

/** Opens the storage of state.checkpoints.dir (CONF_MISSING if unset). */
ksnap_err_t ksnap__task_storage_open(const ksnap_conf_t *conf,
                                     ksnap_storage_t **stp,
                                     ksnap_error_t *error);

/** Opens the storage at @p url (a savepoint's directory, say) with the
 * job's s3.* keys. */
ksnap_err_t ksnap__task_storage_open_url(const ksnap_conf_t *conf,
                                         const char *url,
                                         ksnap_storage_t **stp,
                                         ksnap_error_t *error);

/** ksnap_storage_probe() of the job's checkpoints (JOB/chk-) in the
 * storage of state.checkpoints.dir, as the coordinator asks at its start,
 * for this process's credentials and trust: @returns KSNAP_ERR_OK,
 * KSNAP_ERR_ACCESS_DENIED or KSNAP_ERR_TLS (a missing bucket is the
 * coordinator's to refuse: the directory is the job's). */
ksnap_err_t ksnap__task_storage_probe(const ksnap_conf_t *conf,
                                      const char *job, ksnap_error_t *error);

/**
 * Streams the file of @p snap to @p key of @p st as the async phase
 * serializes it: the writer reserves the file's header (known last) and
 * writes it last, and a writer thread stores full buffers of
 * @p buffer_size bytes (two at most) while the next one fills, so the
 * state is never whole in memory and serializing overlaps the I/O.
 * Fills @p stat (the object's size and CRC32C). On error nothing is
 * stored under @p key.
 */
ksnap_err_t ksnap__task_storage_put_snapshot(ksnap_storage_t *st,
                                             const char *key,
                                             ksnap_state_snapshot_t *snap,
                                             size_t buffer_size,
                                             ksnap_storage_stat_t *stat,
                                             ksnap_error_t *error);

#endif /* KSNAP_TASK_STORAGE_H */
