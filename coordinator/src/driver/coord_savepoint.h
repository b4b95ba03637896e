/*
 * A savepoint's own directory: where it goes and its relocated metadata.
 *
 * A savepoint is written like any checkpoint (its tasks upload to
 * "<job>/chk-<id>/", full snapshots, always aligned), then copied by the
 * coordinator's storage worker into a directory of its own, named as
 * Flink names them, savepoint-<job>-<id>-<random>, under
 * state.savepoints.dir (default: "<state.checkpoints.dir>/<job>"). That
 * directory holds one file per task ("<stage>-<index>") and a `_metadata`
 * whose handle paths are relative to the directory: the directory is
 * self-contained and may be copied to another bucket, prefix or file://
 * directory. It is never retired.
 */
#ifndef KSNAP_COORD_SAVEPOINT_H
#define KSNAP_COORD_SAVEPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/records.h"
#include "ksnap/storage.h"

/** What the storage worker copies for one savepoint. */
typedef struct ksnap__coord_savepoint_s {
  char *url;      /**< the directory's full URL (printed, in COMPLETE) */
  char *prefix;   /**< its key in the savepoint storage, no trailing '/' */
  uint8_t *meta;  /**< the relocated `_metadata`, encoded */
  size_t meta_len;
  char **src;     /**< the task files, keys of the checkpoint storage */
  char **dst;     /**< their keys in the savepoint storage */
  size_t n;
} ksnap__coord_savepoint_t;

/**
 * Opens the savepoint storage: state.savepoints.dir, else (unset)
 * state.checkpoints.dir, a handle of its own: a copy reads one while it
 * writes the other.
 */
ksnap_err_t ksnap__coord_savepoint_storage_open(const ksnap_conf_t *conf,
                                                ksnap_storage_t **stp,
                                                ksnap_error_t *error);

/**
 * Plans savepoint @p meta's directory (a new random name): its URL, its
 * keys and its `_metadata` with relative handles. A handle that is not
 * the task's own file of "<job>/chk-<id>/" is refused (INVALID_ARG):
 * a savepoint never names another checkpoint's objects.
 */
ksnap_err_t ksnap__coord_savepoint_plan(const ksnap_conf_t *conf,
                                        const ksnap_checkpoint_meta_t *meta,
                                        ksnap__coord_savepoint_t **spp,
                                        ksnap_error_t *error);

void ksnap__coord_savepoint_free(ksnap__coord_savepoint_t *sp);

#endif /* KSNAP_COORD_SAVEPOINT_H */
