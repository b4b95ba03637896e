/*
 * The job's checkpoint storage, opened from its properties:
 * state.checkpoints.dir and the s3.* keys (then the environment, see
 * ksnap/storage.h). The snapshot upload and the restore each open their
 * own handle. Threading: any thread.
 */
#ifndef KSNAP_TASK_STORAGE_H
#define KSNAP_TASK_STORAGE_H

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/storage.h"

/** Opens the storage of state.checkpoints.dir (CONF_MISSING if unset). */
ksnap_err_t ksnap__task_storage_open(const ksnap_conf_t *conf,
                                     ksnap_storage_t **stp,
                                     ksnap_error_t *error);

#endif /* KSNAP_TASK_STORAGE_H */
