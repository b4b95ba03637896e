/*
 * The coordinator's storage side: checkpoint `_metadata` objects written
 * and retired checkpoints deleted on a worker thread (the driver loop never
 * waits for storage), results collected without blocking; plus the
 * synchronous read of a checkpoint's `_metadata` at start-up.
 *
 * Keys (relative to state.checkpoints.dir): "<job>/chk-<id>/_metadata";
 * a checkpoint's objects all live under "<job>/chk-<id>/".
 *
 * Threading: a ksnap__coord_store_t is driven by one thread (the loop);
 * its worker thread owns its own storage handle.
 */
#ifndef KSNAP_COORD_STORE_H
#define KSNAP_COORD_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/records.h"
#include "ksnap/storage.h"

typedef struct ksnap__coord_store_s ksnap__coord_store_t;

typedef enum ksnap__store_op_e {
  KSNAP__STORE_PUT_META,
  KSNAP__STORE_RETIRE,
} ksnap__store_op_t;

/**
 * Lists the job's checkpoints (ksnap_storage_probe()), so that
 * credentials the store refuses, a certificate not trusted or a missing
 * bucket end the coordinator's start instead of failing every checkpoint and restoring
 * the job in a loop. @returns OK, also when the store cannot be reached
 * (a restart may fix that); KSNAP_ERR_ACCESS_DENIED, KSNAP_ERR_TLS or
 * KSNAP_ERR_NO_SUCH_BUCKET with @p error set, prefixed.
 */
ksnap_err_t ksnap__coord_storage_probe(const ksnap_conf_t *conf,
                                       const char *job, ksnap_error_t *error);

/**
 * Opens state.checkpoints.dir with the s3.* settings of @p conf mapped
 * onto ksnap_storage_opts_t (unset keys: the AWS_* environment).
 * @returns KSNAP_ERR_CONF_MISSING when state.checkpoints.dir is unset.
 */
ksnap_err_t ksnap__coord_storage_open(const ksnap_conf_t *conf,
                                      ksnap_storage_t **stp,
                                      ksnap_error_t *error);

/** Opens the directory URL @p dir with the s3.* settings of @p conf. */
ksnap_err_t ksnap__coord_storage_open_dir(const ksnap_conf_t *conf,
                                          const char *dir,
                                          ksnap_storage_t **stp,
                                          ksnap_error_t *error);

/** "<job>/chk-<id>/_metadata" into @p buf. */
void ksnap__coord_meta_key(char *buf, size_t size, const char *job,
                           int64_t id);

/** The full URL of checkpoint @p id's `_metadata` (malloc'd) or NULL. */
char *ksnap__coord_meta_url(const ksnap_conf_t *conf, const char *job,
                            int64_t id);

/**
 * Reads and decodes checkpoint @p id's `_metadata` (storage verifies its
 * CRC: KSNAP_ERR_CHECKSUM / KSNAP_ERR_TRUNCATED name the object).
 */
ksnap_err_t ksnap__coord_meta_load(ksnap_storage_t *st, const char *job,
                                   int64_t id, ksnap_checkpoint_meta_t *meta,
                                   ksnap_error_t *error);

/**
 * Checks that every state handle of @p meta (keys relative to
 * state.checkpoints.dir) exists with the size and CRC32C its ACK recorded,
 * from the objects' trailers (no data is read).
 * @returns KSNAP_ERR_OK, KSNAP_ERR_NOT_FOUND, KSNAP_ERR_TRUNCATED or
 * KSNAP_ERR_CHECKSUM naming the object, or a storage error.
 */
ksnap_err_t ksnap__coord_meta_verify(ksnap_storage_t *st,
                                     const ksnap_checkpoint_meta_t *meta,
                                     ksnap_error_t *error);

/** Opens the storage and starts the worker thread. */
ksnap__coord_store_t *ksnap__coord_store_new(const ksnap_conf_t *conf,
                                             const char *job,
                                             ksnap_error_t *error);

/** Finishes the queued work, stops the worker, frees. NULL: no-op. */
void ksnap__coord_store_destroy(ksnap__coord_store_t *s);

/** Queues the write of checkpoint @p id's `_metadata` (takes @p data,
 *  malloc'd, and @p sp on success). A savepoint's @p sp (else NULL) is
 *  copied into its own directory first: its `_metadata` is written only
 *  when that copy is whole, so the COMPLETE names a whole directory. */
struct ksnap__coord_savepoint_s;
ksnap_err_t ksnap__coord_store_put_meta(ksnap__coord_store_t *s, int64_t id,
                                        uint8_t *data, size_t len,
                                        struct ksnap__coord_savepoint_s *sp);

/** Queues the deletion of every object under "<job>/chk-<id>/". */
ksnap_err_t ksnap__coord_store_retire(ksnap__coord_store_t *s, int64_t id);

/**
 * Takes one finished operation, if any: its @p op, @p id and *@p errmsg
 * (NULL on success, else malloc'd: free() it). @returns 1 or 0 (none).
 */
int ksnap__coord_store_result(ksnap__coord_store_t *s, ksnap__store_op_t *op,
                              int64_t *id, char **errmsg);

/** @returns the number of operations queued or running. */
int ksnap__coord_store_busy(ksnap__coord_store_t *s);

#endif /* KSNAP_COORD_STORE_H */
