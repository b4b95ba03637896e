/*
 * The sink's two-phase commit: one Kafka transaction per sink task per
 * epoch (a task of a stage with sink topics or a dead-letter topic: its
 * sink output and its dead-letter records go into the same transaction),
 * flushed at the barrier that ends it, pre-committed when the task's
 * snapshot of the epoch's cut is durable, committed when the
 * coordinator's COMPLETE decides the checkpoint. This module owns the
 * task's pending transactions and the rules for them; sink.c underneath
 * runs the epochs on the producer pool (txn_pool.c, one slot per pending
 * epoch). It knows nothing of the task runtime, which calls it
 * (task_open.c, task_snap.c, task_commit.c, task_ctx.c, replay.c).
 *
 * A transaction's states (epoch E: its begin number, one more than the
 * epoch before; N: the barrier, i.e. the checkpoint, that ends it):
 *
 *                      flush timed out at barrier N: OPEN still,
 *                      N declined, E ends at a later barrier
 *                           +--+
 *                           |  v
 *        ksnap_2pc_begin(E)   ksnap_2pc_end(N): flushed, then
 * (none) ----------------> OPEN ------------------> ENDED
 *                           |   epoch E+1 begins OPEN |
 *                           |                         | ksnap_2pc_precommit(E)
 *                           |             +-----------+----------+
 *                           |    snapshot |               snapshot failed
 *                           |     durable v                      v
 *  ksnap_2pc_commit_now()   |       PRECOMMITTED               FAILED
 *  (the epoch replay: pre-  |             |                never committed: the
 *  commit and commit at     |             |                task fails, the job
 *  once, progress E)        |             |                restores, the epoch
 *                           |             |                replay redoes it
 *                           |             | ksnap_2pc_commit_upto(M >= N):
 *                           v             v oldest first, progress {N, G}
 *                       COMMITTED <-------+
 *
 *   ABORTED: what a dead instance left OPEN, ENDED or PRECOMMITTED is
 *   aborted by the broker when ksnap_2pc_new() fences the slot ids; an
 *   abortable Kafka error aborts the slot's transaction (txn_pool.c),
 *   e.g. a record whose delivery failed, found by the flush at the
 *   barrier: ksnap_2pc_end() fails and so does the task. ABORT(N) of a
 *   checkpoint is no transition (invariant 5).
 *
 * Invariants:
 *  1. At most one transaction is OPEN; produce goes to it. Epochs only
 *     grow, and a transaction of epoch E ends at a barrier N >= E.
 *  2. The pending transactions (ENDED, PRECOMMITTED, FAILED) are kept in
 *     the order they ended, at most KSNAP_2PC_MAX_PENDING of them. Each
 *     pending or open one holds the producer slot of its epoch (epoch mod
 *     sink.producer-pool-size): ksnap_2pc_end fails when the next epoch's
 *     slot is still held ("producer pool exhausted").
 *  3. A transaction is committed only if pre-committed, and it is
 *     pre-committed only after every record of it was acknowledged
 *     (invariant 7) and the sink's own snapshot at its cut was uploaded:
 *     a transaction whose snapshot failed is FAILED, never committed.
 *     Only a durable snapshot at the cut lets a lost commit be replayed
 *     exactly.
 *  4. Commits happen on COMPLETE(M) only, for the transactions that ended
 *     at barriers <= M, oldest first, each after the previous one
 *     returned, each with its own progress record {sink task, N, G}
 *     written inside the transaction, so Kafka itself records which
 *     epochs are committed. A FAILED one stops them (KSNAP_ERR_STATE).
 *  5. An aborted checkpoint changes nothing here: its transaction stays
 *     pending and the next completed checkpoint commits it (as Flink's
 *     two-phase-commit sink does). A checkpoint declined because the
 *     flush at its barrier timed out ends no transaction: the open one
 *     takes the records after that barrier too and ends at a later
 *     barrier, whose checkpoint commits it (progress {that barrier, G};
 *     the epoch replay replays from the last committed cut, whatever the
 *     epochs were). Should it then outlive kafka.transaction.timeout.ms,
 *     the broker aborts it and its commit fails the task.
 *  6. On start every slot id is fenced (init_transactions) before
 *     anything is read or written, and only then may the last committed
 *     transaction be read (ksnap_2pc_last_committed): a zombie's late
 *     commit is then either visible or impossible.
 *  7. Partition order: the first record of epoch E+1 is produced only
 *     after the broker acknowledged every record of epoch E
 *     (ksnap_2pc_end flushes E's producer at the barrier, on the
 *     processing thread, before E+1 begins; ksnap_sink_begin refuses
 *     while E is open), and the epoch replay's transaction is committed
 *     before the first live epoch begins (task_open.c). The epochs are
 *     transactions on different producers, whose records would otherwise
 *     interleave in a partition in the order the broker appends them. So
 *     in every partition a task's records of E precede its records of
 *     E+1, and a read_committed reader sees one sink task's committed
 *     records in the order the task produced them, epoch after epoch:
 *     one key's values in order, the last one last in a compacted topic.
 *     Nothing of an aborted transaction is visible to that reader, so
 *     across a restore the order is the committed prefix, then the
 *     replayed epochs, then the new run's (plugin/PROTOCOL.md section
 *     2.4).
 *
 * Transitions and their functions:
 *   (start)                -> fenced        ksnap_2pc_new
 *   (none)                 -> OPEN          ksnap_2pc_begin
 *   OPEN                   -> ENDED         ksnap_2pc_end (flushed; then
 *                                           the next epoch OPEN)
 *   OPEN                   -> OPEN          ksnap_2pc_end (flush timed out)
 *   ENDED                  -> PRECOMMITTED  ksnap_2pc_precommit (snapshot
 *                                           durable)
 *   ENDED                  -> FAILED        ksnap_2pc_precommit (snapshot
 *                                           failed)
 *   PRECOMMITTED           -> COMMITTED     ksnap_2pc_commit_upto
 *   OPEN                   -> COMMITTED     ksnap_2pc_commit_now (replay)
 *
 * Threading: the task's processing thread makes every call but
 * ksnap_2pc_precommit(), which the snapshot pool makes, once per ended
 * transaction, and which makes no Kafka call. The mutex guards the table
 * of pending transactions and their states; the condition variable
 * signals a pre-commit's result, which ksnap_2pc_commit_upto() waits for.
 * No Kafka call is made under the mutex. The OPEN epoch belongs to the
 * processing thread. ksnap_2pc_destroy() only when no pre-commit runs
 * (the task waits for its snapshots first).
 */
#ifndef KSNAP_TWO_PHASE_H
#define KSNAP_TWO_PHASE_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/kafka_types.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

/** Pending transactions a sink task keeps at most (invariant 2). */
#define KSNAP_2PC_MAX_PENDING 64

typedef struct ksnap_2pc_s ksnap_2pc_t;

/**
 * The two-phase commit of task @p task of sink stage @p stage: creates
 * the sink (ksnap_sink_new: checks the transaction timeout, fences every
 * slot id). @p conf is borrowed and must outlive it.
 * @returns NULL on error (the errors of ksnap_sink_new()).
 */
ksnap_2pc_t *ksnap_2pc_new(const ksnap_conf_t *conf, const char *stage,
                           int task, int timeout_ms, ksnap_error_t *error);

/** Frees; pending and open transactions are left to the next instance's
 * fencing. NULL is a no-op. */
void ksnap_2pc_destroy(ksnap_2pc_t *tpc);

/** Loads output @p topic's metadata into every producer (sink.h). */
void ksnap_2pc_warm_topic(ksnap_2pc_t *tpc, const char *topic,
                          int timeout_ms);

/**
 * The last transaction this task committed, from the progress topic read
 * with read_committed to its end (progress.h): *@p cp is its checkpoint
 * id, 0 if the task never committed (or the topic does not exist).
 * Invariant 6: call it after ksnap_2pc_new() only.
 */
ksnap_err_t ksnap_2pc_last_committed(ksnap_2pc_t *tpc, int timeout_ms,
                                     int64_t *cp, ksnap_error_t *error);

/** ksnap_2pc_last_committed() of any sink task @p task ("stage[i]") of
 * the job of @p conf. */
ksnap_err_t ksnap_2pc_last_committed_of(const ksnap_conf_t *conf,
                                        const char *task, int timeout_ms,
                                        int64_t *cp, ksnap_error_t *error);

/** (none) -> OPEN: begins epoch @p epoch (ksnap_sink_begin()'s errors). */
ksnap_err_t ksnap_2pc_begin(ksnap_2pc_t *tpc, int64_t epoch,
                            ksnap_error_t *error);

/** Produces into the OPEN transaction (partition < 0: by key), with
 * Kafka timestamp @p timestamp_ms (<= 0: the producer's clock). */
ksnap_err_t ksnap_2pc_produce(ksnap_2pc_t *tpc, const char *topic,
                              int32_t partition, const void *key,
                              size_t key_len, const void *value,
                              size_t value_len, int64_t timestamp_ms,
                              const ksnap_kafka_header_t *headers,
                              size_t nheaders, ksnap_error_t *error);

/**
 * OPEN -> ENDED at barrier @p barrier (the snapshot's sync phase): waits
 * until the broker acknowledged every record of the open transaction
 * (rd_kafka_flush, bounded by @p timeout_ms; invariant 7), then it
 * becomes pending, *@p epochp is its epoch (for ksnap_2pc_precommit()),
 * and the next epoch begins OPEN.
 * @returns KSNAP_ERR_TIMEOUT when the flush timed out: nothing changed,
 * the transaction stays OPEN and takes the records after the barrier too
 * (invariant 5; the caller declines checkpoint @p barrier, *@p epochp is
 * -1); KSNAP_ERR_STATE when KSNAP_2PC_MAX_PENDING are pending; the
 * flush's other errors (a failed delivery: the transaction was aborted;
 * a dead pool) and ksnap_sink_begin()'s (pool exhausted), on which the
 * task must fail.
 */
ksnap_err_t ksnap_2pc_end(ksnap_2pc_t *tpc, int64_t barrier, int timeout_ms,
                          int64_t *epochp, ksnap_error_t *error);

/**
 * ENDED -> PRECOMMITTED, or FAILED if @p snapshot_failed, once the task's
 * snapshot at epoch @p epoch's cut is durable or failed (invariant 3);
 * wakes a waiting ksnap_2pc_commit_upto(). No Kafka call: the flush was
 * done at the barrier (ksnap_2pc_end()). Threading: the snapshot pool.
 */
void ksnap_2pc_precommit(ksnap_2pc_t *tpc, int64_t epoch,
                         int snapshot_failed);

/**
 * On COMPLETE(@p id) of generation @p gen: PRECOMMITTED -> COMMITTED for
 * every pending transaction that ended at a barrier <= @p id, oldest
 * first, each with progress record {task, its barrier, @p gen}; waits for
 * a pre-commit still running. Retriable commit errors are retried a few
 * times. @returns OK; KSNAP_ERR_STATE at a FAILED one (nothing after it
 * is committed); the commit's error. The task must fail on an error.
 */
ksnap_err_t ksnap_2pc_commit_upto(ksnap_2pc_t *tpc, int64_t id, int64_t gen,
                                  ksnap_error_t *error);

/**
 * OPEN -> COMMITTED at once, for the epoch replay: pre-commits and
 * commits the open transaction of epoch E with progress record
 * {task, E, @p gen}, once (no retry). Nothing is OPEN afterwards.
 */
ksnap_err_t ksnap_2pc_commit_now(ksnap_2pc_t *tpc, int64_t gen,
                                 ksnap_error_t *error);

#endif /* KSNAP_TWO_PHASE_H */
