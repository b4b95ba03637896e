/*
 * Transactional Kafka sink: one Kafka transaction per task per epoch, on
 * a pool of sink.producer-pool-size producers with fixed transactional
 * ids "<job>.<stage>.<task>.<slot>", slot = epoch mod pool size.
 *
 * Life of epoch N:
 *   ksnap_sink_begin(N)        slot N mod K must be idle (else the pool is
 *                              exhausted: K epochs pending), and epoch N-1
 *                              pre-committed or aborted (partition order)
 *   ksnap_sink_produce(...)*   output records of epoch N
 *   ksnap_sink_precommit(N)    at barrier N: flush, all delivered (a
 *                              timed-out flush leaves N open: produce
 *                              and flush again later)
 *   ksnap_sink_begin(N+1) ...  then the next epoch may start
 *   ksnap_sink_commit(N, progress)  on COMPLETE(N): writes the progress
 *                              record to <job>.ksnap.progress (key "stage[task]")
 *                              inside the transaction, then commits
 *   or ksnap_sink_abort(N)
 * An aborted CHECKPOINT does not abort its sink transaction: it stays
 * pending and the caller commits it, in order, when a later checkpoint
 * completes. Commits go strictly in increasing epoch order: commit(N) is
 * refused while an older epoch is still pending.
 *
 * Partition order: epochs N and N+1 are transactions on two producers,
 * and records of two producers interleave in a partition in the order the
 * broker appends them: had epoch N+1 begun while N's records were still
 * queued, a read_committed reader would see some of N+1's records
 * before N's last ones (one key's values out of order, and a compacted
 * topic keeping a stale last value; measured in test_two_phase). So
 * ksnap_sink_begin(N+1) refuses while epoch N is still open: every record
 * of N is acknowledged (pre-commit: flush) before the first one of N+1 is
 * produced, and in every partition all of N's records precede N+1's, as
 * with Flink's KafkaSink, which flushes at the barrier. A read_committed
 * consumer stops at the first offset of the oldest open transaction (the
 * last stable offset), so committed epoch N becomes visible when it
 * commits.
 *
 * Start / restore: ksnap_sink_new() calls init_transactions on EVERY
 * slot id before anything else, which fences zombies of this task and
 * aborts their open transactions; only then may the caller read its last
 * committed progress (progress.h) and replay a lost commit.
 *
 * Errors: fatal ones (fenced by a newer instance: KSNAP_ERR_FENCED, or
 * any librdkafka fatal error) make the sink unusable: every later call
 * returns the same error, the task must fail and the job restore.
 * KSNAP_ERR_TXN_ABORTABLE: the epoch's transaction was aborted (its
 * output is lost: the task must fail so the job restores and replays).
 *
 * The task runtime does not call this directly: two_phase.h, above it,
 * keeps a task's pending transactions and the rules of the two-phase
 * commit (when a transaction may be committed, with which progress
 * record).
 *
 * Threading: begin, produce and precommit from the task thread (the
 * precommit of N precedes begin(N+1)); commit and abort of an epoch from
 * one thread at a time. The pool's state is mutex-guarded; no call is
 * made on a slot concurrently with another.
 */
#ifndef KSNAP_SINK_H
#define KSNAP_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/kafka_types.h"
#include "ksnap/buf.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

#define KSNAP_SINK_PROGRESS_SUFFIX ".ksnap.progress"

typedef struct ksnap_sink_s ksnap_sink_t;

/**
 * Checks that kafka.transaction.timeout.ms (librdkafka default 60000)
 * exceeds the longest life of a sink transaction:
 * execution.checkpointing.interval * sink.producer-pool-size +
 * execution.checkpointing.timeout (K epochs may be pending, the last one
 * waits at most for the checkpoint timeout). The rule is the
 * configuration's (conf/conf_job.h): the job's preflight reports it in the
 * same words before anything starts; this check keeps a program that
 * skips the preflight from starting a sink that would fail later.
 * @returns KSNAP_ERR_OK or KSNAP_ERR_CONF_VALUE naming every key involved.
 */
ksnap_err_t ksnap_sink_check_txn_timeout(const ksnap_conf_t *conf,
                                         ksnap_error_t *error);

/**
 * Creates the sink of task @p task of stage @p stage: checks the
 * transaction timeout, creates the pool and fences every slot id.
 * @returns the sink or NULL (CONF_VALUE, FENCED/KAFKA fatal, CONNECT or
 * TIMEOUT retriable).
 */
ksnap_sink_t *ksnap_sink_new(const ksnap_conf_t *conf, const char *stage,
                             int task, int timeout_ms, ksnap_error_t *error);

/** Frees the sink; open transactions are left to the next instance's
 * fencing (or the broker's timeout). NULL is a no-op. */
void ksnap_sink_destroy(ksnap_sink_t *sink);

/**
 * Loads output @p topic's metadata into every producer of the pool (best
 * effort, bounded by @p timeout_ms). Without it, the first transaction of
 * each producer that writes to a topic waits about 1 s for the metadata
 * (measured with bench_connectors: the first pool-size epochs paid 1 s at
 * pre-commit). ksnap_sink_new() does it for the progress topic.
 * Call it once per output topic at start.
 */
void ksnap_sink_warm_topic(ksnap_sink_t *sink, const char *topic,
                           int timeout_ms);

/** @returns the sink task id "stage[task]" (the progress record key). */
const char *ksnap_sink_task_id(const ksnap_sink_t *sink);

/** @returns the transactional.id of epoch @p epoch's slot. */
const char *ksnap_sink_txn_id(const ksnap_sink_t *sink, int64_t epoch);

/**
 * Begins epoch @p epoch (greater than every earlier one) on slot
 * epoch mod K; later produce calls go to it.
 * @returns KSNAP_ERR_STATE "producer pool exhausted" when that slot still
 * holds a pending epoch, or when the epoch begun before is still open
 * (neither pre-committed nor aborted: partition order);
 * KSNAP_ERR_INVALID_ARG for a non-increasing epoch.
 */
ksnap_err_t ksnap_sink_begin(ksnap_sink_t *sink, int64_t epoch,
                             ksnap_error_t *error);

/** @returns 1 if @p epoch is begun and neither pre-committed nor
 * aborted (its records may still be unacknowledged), else 0. */
int ksnap_sink_is_open(ksnap_sink_t *sink, int64_t epoch);

/** Produces into the current epoch (partition < 0: by key), with Kafka
 * timestamp @p timestamp_ms (CreateTime; <= 0: the producer's clock). */
ksnap_err_t ksnap_sink_produce(ksnap_sink_t *sink, const char *topic,
                               int32_t partition, const void *key,
                               size_t key_len, const void *value,
                               size_t value_len, int64_t timestamp_ms,
                               const ksnap_kafka_header_t *headers,
                               size_t nheaders, ksnap_error_t *error);

/** Pre-commit of @p epoch: flush until all delivered, bounded by
 * @p timeout_ms. @returns KSNAP_ERR_TIMEOUT (retriable) when it timed out:
 * the epoch is still open; KSNAP_ERR_TXN_ABORTABLE when a delivery
 * failed: the epoch's transaction was aborted. */
ksnap_err_t ksnap_sink_precommit(ksnap_sink_t *sink, int64_t epoch,
                                 int timeout_ms, ksnap_error_t *error);

/**
 * Commits pre-committed epoch @p epoch, writing @p progress (the caller's
 * encoded progress record) to <job>.ksnap.progress inside the same
 * transaction. @returns KSNAP_ERR_STATE if an older epoch is pending or
 * @p epoch is not pre-committed; retriable errors may be retried (the
 * progress record is written once).
 */
ksnap_err_t ksnap_sink_commit(ksnap_sink_t *sink, int64_t epoch,
                              const void *progress, size_t progress_len,
                              int timeout_ms, ksnap_error_t *error);

/**
 * Encodes the progress record of @p epoch into @p out (reset by the
 * caller). @returns KSNAP_ERR_OK or an error (stops the commits).
 */
typedef ksnap_err_t(ksnap_sink_progress_cb_t)(void *opaque, int64_t epoch,
                                              ksnap_buf_t *out,
                                              ksnap_error_t *error);

/**
 * On COMPLETE(@p epoch): commits every pending epoch up to @p epoch in
 * increasing order, each with its own progress record from @p cb, each
 * after the previous commit returned. Stops at the first failure (an
 * epoch not pre-committed: KSNAP_ERR_STATE naming it).
 * @p committedp (may be NULL) receives the newest epoch committed, -1 if
 * none.
 */
ksnap_err_t ksnap_sink_commit_upto(ksnap_sink_t *sink, int64_t epoch,
                                   ksnap_sink_progress_cb_t *cb,
                                   void *opaque, int timeout_ms,
                                   int64_t *committedp, ksnap_error_t *error);

/** Aborts pending epoch @p epoch. */
ksnap_err_t ksnap_sink_abort(ksnap_sink_t *sink, int64_t epoch,
                             int timeout_ms, ksnap_error_t *error);

/** @returns the oldest pending epoch, or -1 if none is pending. */
int64_t ksnap_sink_oldest_pending(ksnap_sink_t *sink);

#endif /* KSNAP_SINK_H */
