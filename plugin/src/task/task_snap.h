/*
 * A task's snapshots (task_snap.c): the sync phase on the processing
 * thread, the async phase on the worker's snapshot pool, DECLINE, and the
 * source positions each snapshot took until its checkpoint completes.
 * task->snap is task_snap.c's.
 */
#ifndef KSNAP_TASK_SNAP_H
#define KSNAP_TASK_SNAP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/snap_pool.h"
#include "input/aligner.h"
#include "kafka/kafka_types.h"
#include "ksnap/error.h"
#include "ksnap/records.h"

struct ksnap_task_s;

#define KSNAP__TASK_MAX_SRCPOS 16

/** Source positions of a snapshot, committed to the group on COMPLETE. */
typedef struct ksnap__srcpos_s {
  int64_t id;
  ksnap_kafka_pos_t *pos;
  size_t n;
} ksnap__srcpos_t;

/** task->snap: no other file touches it. */
typedef struct ksnap__task_snap_s {
  ksnap__snap_pool_t *pool; /* the worker's, borrowed */
  pthread_mutex_t mu;
  pthread_cond_t cv;     /* an async phase ended */
  int inflight;          /* [mu] async phases running */
  atomic_int sink_failed; /* an async phase found the sink's transaction
                           * can never be committed: the task must fail
                           * (set by the pool, read by task.c) */
  ksnap__srcpos_t srcpos[KSNAP__TASK_MAX_SRCPOS]; /* processing thread */
  size_t nsrcpos;
  atomic_llong declined; /* the newest checkpoint an async phase declined
                          * (set by the pool, read by the processing
                          * thread, which sends its cancellation marker) */
  int64_t declined_sent; /* processing thread: the last one handled */
} ksnap__task_snap_t;

void ksnap__task_snap_init(struct ksnap_task_s *task,
                           ksnap__snap_pool_t *pool);
void ksnap__task_snap_cleanup(struct ksnap_task_s *task);

/**
 * The sync phase of checkpoint @p id (triggered at @p trigger_ts with
 * @p opts) between two records, and the async phase submitted to the
 * pool. @p act: the aligner's SNAPSHOT action (its channel positions and
 * timings), NULL for a source task (TRIGGER).
 */
ksnap_err_t ksnap__task_snapshot(struct ksnap_task_s *task, int64_t id,
                                 int64_t trigger_ts,
                                 const ksnap_ckpt_options_t *opts,
                                 const ksnap_action_t *act,
                                 ksnap_error_t *error);

/** DECLINE(id); @p task_failed: the task fails with it (the coordinator
 *  restores the job and does not count the decline). Any thread. */
void ksnap__task_decline(struct ksnap_task_s *task, int64_t id,
                         const char *reason, bool task_failed);

/** On the processing thread, between records: the cancellation marker of
 * the newest checkpoint an async phase declined since the last call, if
 * a reader downstream can still act on it (task_out.h). */
void ksnap__task_snap_cancel_declined(struct ksnap_task_s *task);

/** 1 once an async phase found that the task must fail (any thread). */
int ksnap__task_snap_failed(const struct ksnap_task_s *task);

/** On COMPLETE(@p id): commits the source positions of the newest
 * snapshot <= @p id to the job's consumer group (monitoring only) and
 * forgets every one <= @p id. */
void ksnap__task_commit_source(struct ksnap_task_s *task, int64_t id);

/** Clears that failure when a run starts RUNNING (task.c). */
void ksnap__task_snap_clear_failed(struct ksnap_task_s *task);

/** At the end of a run: waits for the async phases still running, then
 * forgets the source positions. */
void ksnap__task_snap_close(struct ksnap_task_s *task);

#endif /* KSNAP_TASK_SNAP_H */
