/*
 * Reading a task's part of a completed checkpoint: its _metadata, the
 * state of the task's stage, and the stage's snapshots in it. Below both
 * the task's open path (task_open.c) and the epoch replay (replay.c); calls
 * nothing of theirs. Threading: the task's processing thread.
 */
#ifndef KSNAP_RESTORE_H
#define KSNAP_RESTORE_H

#include "ksnap/error.h"
#include "ksnap/records.h"
#include "ksnap/storage.h"

struct ksnap_task_s;

/** Loads and decodes <job>/chk-<id>/_metadata from @p st into @p meta
 * (the caller cleans it up, also on error). */
ksnap_err_t ksnap__restore_load_meta(struct ksnap_task_s *task, int64_t id,
                                     ksnap_storage_t *st,
                                     ksnap_checkpoint_meta_t *meta,
                                     ksnap_error_t *error);

/**
 * Opens the storage the restore point of checkpoint @p id lives in and
 * loads its `_metadata` into @p meta: the job's own `<job>/chk-<id>/`,
 * or, when the RESTORE named another URL (a savepoint's directory, a
 * retained checkpoint elsewhere: task->life.base_url), that one, whose
 * handles are relative to it. *@p stp is the storage to read the
 * handles from (the caller destroys it, also on error).
 * @returns KSNAP_ERR_INCOMPATIBLE when the `_metadata` found there is
 * not checkpoint @p id's.
 */
ksnap_err_t ksnap__restore_open_point(struct ksnap_task_s *task, int64_t id,
                                      ksnap_storage_t **stp,
                                      ksnap_checkpoint_meta_t *meta,
                                      ksnap_error_t *error);

/** Loads the state (and keyed timers) of the task's stage in @p meta into
 * the task's current state: one chain per old task of the stage, in old
 * task order; a gap (a task of the stage missing, as in an aborted
 * checkpoint's ACKs) is skipped. */
ksnap_err_t ksnap__restore_state(struct ksnap_task_s *task,
                                 const ksnap_checkpoint_meta_t *meta,
                                 ksnap_storage_t *st, ksnap_error_t *error);

struct ksnap__fired_list_s;
/** The firing log (fired.h) in the task's own snapshot of @p meta: its
 * firings tagged @p from_tag or later, in firing order, into @p log (the
 * caller cleans it up). Reads the log's key group alone (that of the
 * task's timers without a key) into a scratch state, dropped after. */
ksnap_err_t ksnap__restore_fired(struct ksnap_task_s *task,
                                 const ksnap_checkpoint_meta_t *meta,
                                 ksnap_storage_t *st, int64_t from_tag,
                                 struct ksnap__fired_list_s *log,
                                 ksnap_error_t *error);

/** 1 if @p ts is a snapshot of the task's stage. */
int ksnap__restore_is_mine(const struct ksnap_task_s *task,
                           const ksnap_task_snapshot_t *ts);

#endif /* KSNAP_RESTORE_H */
