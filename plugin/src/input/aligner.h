/*
 * The barrier handler of a task's input side (plugin/PROTOCOL.md sections
 * 3.3 and 10): acceptance
 * rule + barrier alignment as one state machine, as pure logic. No Kafka, no
 * threads, no clock: the caller passes every consumed exchange record and the
 * current time in, and drains a FIFO of actions:
 *
 *   PROCESS(rec)       hand rec to the operator, then free it
 *   SKIP(rec, verdict) free rec unprocessed (acceptance rule)
 *   CONSUMED(rec)      a control record (barrier, cancel, end) was used up
 *                      (also a stale barrier, which is ignored)
 *   BUFFER(rec)        rec is held by the aligner (comes back later as
 *                      PROCESS, or to conf.free_rec at destroy)
 *   PAUSE(part)        rd_kafka_pause_partitions() that partition
 *   RESUME(part)       rd_kafka_resume_partitions() that partition
 *   SNAPSHOT(id, pos)  run the synchronous snapshot phase NOW, before the
 *                      next action; pos has one entry per channel
 *   ABORT(id, reason)  checkpoint id is aborted at this task (decline it)
 *   FORWARD_CANCEL(id) broadcast a cancellation marker for id downstream
 *   DROP(rec)          free rec unprocessed: a savepoint's wait dropped it,
 *                      it is read again after the SEEK that ends the wait
 *   SEEK(part, off)    seek that partition back to offset off (the first
 *                      record dropped there) before the next record
 *
 * Actions must be executed in order: a SNAPSHOT's positions count every
 * PROCESS before it as in the state, and none after it. Every rec pushed
 * comes back exactly once as PROCESS, SKIP, CONSUMED or DROP (or to
 * free_rec); a DROPped record is pushed again after its partition's SEEK.
 *
 * Modes (conf.mode): ALIGNED (exactly-once default), ALIGNED_TIMEOUT
 * (aligned, switched to unaligned when conf.timeout_ms has passed since the
 * checkpoint's trigger timestamp), UNALIGNED (snapshot at the first barrier),
 * AT_LEAST_ONCE (count barriers, never block). A barrier with must_align
 * (a savepoint's) is aligned whatever the mode: the savepoint records no
 * channel before its barrier and nothing after it, so it restores at any
 * parallelism. The state diagram and the transitions are at the top of
 * aligner.c.
 *
 * Driving it from the task loop (sketch; the Kafka calls are the caller's):
 *
 *   gate: ksnap_gate_add_partition() for every input partition;
 *   ksnap_accept_init(&acc, gate, G) or ksnap_accept_restore(&acc, gate, G,
 *       N, gN, positions_from_chk_N, n, &err);
 *   assign each partition at ksnap_gate_part(gate, p)->pos;
 *   al = ksnap_aligner_new(gate, &acc, &conf);
 *   loop:
 *     msg = consume(); decode ksnap.w / ksnap.g / ksnap.ctl headers;
 *     ksnap_gate_find(gate, topic, partition, w, &in.chan, &err);
 *     in.offset = ...; in.rec = msg; ksnap_aligner_push(al, &in, now, &err);
 *     (or ksnap_aligner_tick(al, now, &err) when idle)
 *     while (ksnap_aligner_pop(al, &act)) switch (act.kind) {
 *       PROCESS: operator->process(act.in.rec); destroy msg;
 *       SKIP, CONSUMED: destroy msg;        BUFFER: keep msg;
 *       PAUSE/RESUME: rd_kafka_pause/resume_partitions(part act.part);
 *       SNAPSHOT: sync phase now (barrier downstream first), positions
 *                 act.pos[0..npos) go to the checkpoint metadata;
 *       ABORT: DECLINE(act.id, act.reason);  FORWARD_CANCEL: broadcast;
 *     }
 *
 * Threading: an aligner and its gate belong to the task's processing thread.
 */
#ifndef KSNAP_ALIGNER_H
#define KSNAP_ALIGNER_H

#include <stddef.h>
#include <stdint.h>

#include "accept.h"
#include "channel.h"
#include "ksnap/error.h"

typedef enum ksnap_align_mode_e {
  KSNAP_ALIGN_ALIGNED = 0,
  KSNAP_ALIGN_ALIGNED_TIMEOUT,
  KSNAP_ALIGN_UNALIGNED,
  KSNAP_ALIGN_AT_LEAST_ONCE,
} ksnap_align_mode_t;

typedef struct ksnap_aligner_conf_s {
  ksnap_align_mode_t mode;
  int64_t timeout_ms;        /**< ALIGNED_TIMEOUT: aligned-checkpoint-timeout */
  /** Over this, an alignment switches to unaligned (any blocking mode); a
   * savepoint's waits without memory (drops and re-reads, T14 in
   * aligner.c); one before catch-up is declined. 0: unlimited. */
  size_t max_buffered_bytes;
  /** UNALIGNED: take a checkpoint's snapshot at the first of its TRIGGER
   * (ksnap_aligner_trigger_opt) and its first barrier (T13 in aligner.c). */
  int snapshot_on_trigger;
  /** Frees a rec still buffered at destroy (may be NULL). */
  void (*free_rec)(void *rec, void *opaque);
  void *opaque;
} ksnap_aligner_conf_t;

/** One consumed exchange record, decoded from its headers. */
typedef struct ksnap_in_s {
  int32_t chan;           /**< channel index (ksnap_gate_find) */
  int64_t offset;
  int64_t gen;            /**< ksnap.g header */
  ksnap_rec_kind_t kind;
  int64_t id;             /**< barrier / cancel: checkpoint id */
  int64_t trigger_ts_ms;  /**< barrier: the checkpoint's trigger timestamp */
  size_t size;            /**< bytes, for the alignment buffer limit */
  void *rec;              /**< caller's record, opaque, returned in actions */
  int must_align;         /**< barrier: a savepoint's, aligned in every mode */
} ksnap_in_t;

typedef enum ksnap_action_kind_e {
  KSNAP_ACT_PROCESS = 0,
  KSNAP_ACT_SKIP,
  KSNAP_ACT_CONSUMED,
  KSNAP_ACT_BUFFER,
  KSNAP_ACT_PAUSE,
  KSNAP_ACT_RESUME,
  KSNAP_ACT_SNAPSHOT,
  KSNAP_ACT_ABORT,
  KSNAP_ACT_FORWARD_CANCEL,
  KSNAP_ACT_DROP,
  KSNAP_ACT_SEEK,
} ksnap_action_kind_t;

/** Why a SNAPSHOT was taken before full alignment (stable numbers: they
 * travel in the ACK's timings). */
typedef enum ksnap_unaligned_reason_e {
  KSNAP_UNALIGNED_NO = 0,        /**< aligned */
  KSNAP_UNALIGNED_MODE,          /**< UNALIGNED mode: at the first barrier */
  KSNAP_UNALIGNED_TIMEOUT,       /**< ALIGNED_TIMEOUT: the timeout passed */
  KSNAP_UNALIGNED_BUFFER_LIMIT,  /**< the buffer reached max_buffered_bytes */
  KSNAP_UNALIGNED_TRIGGER,       /**< snapshot_on_trigger: TRIGGER came first */
  /** Aligned all the same: a savepoint's alignment reached
   * max_buffered_bytes, dropped its blocked channels' records and re-reads
   * them after the snapshot (T14). Not an unaligned cut. */
  KSNAP_UNALIGNED_REREAD,
} ksnap_unaligned_reason_t;

typedef struct ksnap_action_s {
  ksnap_action_kind_t kind;
  ksnap_in_t in;                  /**< PROCESS/SKIP/CONSUMED/BUFFER */
  ksnap_accept_verdict_t verdict; /**< SKIP: why */
  int32_t part;                   /**< PAUSE/RESUME/SEEK: partition index */
  int64_t seek_off;               /**< SEEK: the offset to read next */
  int64_t id;                     /**< SNAPSHOT/ABORT/FORWARD_CANCEL */
  /* SNAPSHOT: positions, owned by the aligner, valid until the next
   * ksnap_aligner_pop() or ksnap_aligner_destroy(). */
  ksnap_chan_pos_t *pos;
  int32_t npos;
  int unaligned;          /**< SNAPSHOT taken before full alignment */
  ksnap_unaligned_reason_t unaligned_reason; /**< SNAPSHOT: why */
  int64_t paused_ms;      /**< SNAPSHOT: longest partition pause in it */
  int64_t align_ms;       /**< SNAPSHOT: first barrier to snapshot */
  int64_t start_delay_ms; /**< SNAPSHOT: trigger timestamp to first barrier */
  size_t bytes_buffered;  /**< SNAPSHOT: peak bytes buffered while aligning */
  size_t bytes_dropped;   /**< SNAPSHOT (reason REREAD): bytes of blocked
                               channels' records dropped, re-read after it */
  int64_t records_dropped; /**< SNAPSHOT (reason REREAD): their count */
  char reason[160];       /**< ABORT */
} ksnap_action_t;

typedef struct ksnap_aligner_s ksnap_aligner_t;

/**
 * Creates an aligner over @p gate (not owned; must outlive it) with the
 * acceptance state @p acc (copied: call after ksnap_accept_init/_restore).
 * @returns NULL when out of memory.
 */
ksnap_aligner_t *ksnap_aligner_new(ksnap_gate_t *gate,
                                   const ksnap_accept_t *acc,
                                   const ksnap_aligner_conf_t *conf);

/** Frees @p al, handing buffered recs to conf.free_rec. NULL is a no-op. */
void ksnap_aligner_destroy(ksnap_aligner_t *al);

/**
 * Feeds one consumed record at time @p now_ms (wall clock, the timebase of
 * trigger timestamps). Queues its actions.
 * @returns KSNAP_ERR_NOT_FOUND for an unknown channel; KSNAP_ERR_STATE for an
 *          offset below the partition's next offset, a record after the
 *          channel's end of input that the acceptance rule does not skip
 *          (a late zombie is skipped), or a barrier/cancel id not above the
 *          channel's previous one. Refusals are logged; the record is not
 *          taken (the caller still owns in->rec) and nothing changes.
 *          KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_aligner_push(ksnap_aligner_t *al, const ksnap_in_t *in,
                               int64_t now_ms, ksnap_error_t *error);

/** Advances time: the aligned-checkpoint-timeout switch. */
ksnap_err_t ksnap_aligner_tick(ksnap_aligner_t *al, int64_t now_ms,
                               ksnap_error_t *error);

/**
 * Aborts checkpoint @p id at this task (coordinator ABORT, checkpoint timeout,
 * a failed snapshot): releases an alignment of @p id; later barriers of @p id
 * are ignored. Queues ABORT(id) only if an alignment of @p id was running.
 */
ksnap_err_t ksnap_aligner_abort(ksnap_aligner_t *al, int64_t id,
                                const char *reason, int64_t now_ms,
                                ksnap_error_t *error);

/**
 * The coordinator's TRIGGER(@p id) reached this task. Nothing happens
 * while any input is still open (its barriers decide); once every input
 * ended (now or later, by the last end-of-input marker), every TRIGGERed
 * checkpoint above every one started here and not aborted gets its
 * SNAPSHOT at once, in id order, every channel at its end (transition T12
 * in aligner.c).
 */
ksnap_err_t ksnap_aligner_trigger(ksnap_aligner_t *al, int64_t id,
                                  int64_t trigger_ts_ms, int64_t now_ms,
                                  ksnap_error_t *error);

/**
 * ksnap_aligner_trigger() for a TRIGGER that says whether its checkpoint
 * is a savepoint (@p must_align: never snapshotted on the TRIGGER). With
 * conf.snapshot_on_trigger in UNALIGNED mode, a TRIGGER above every
 * checkpoint started here and not aborted gives SNAPSHOT at once, every
 * open channel at its read position and not passed, once the task has
 * caught up (every open channel passed the restored checkpoint's
 * barrier); until then it waits, in id order, and a barrier may take the
 * checkpoint first (T13 in aligner.c).
 */
ksnap_err_t ksnap_aligner_trigger_opt(ksnap_aligner_t *al, int64_t id,
                                      int64_t trigger_ts_ms, int must_align,
                                      int64_t now_ms, ksnap_error_t *error);

/** @returns 1 when every input channel delivered its end of input. */
int ksnap_aligner_ended(const ksnap_aligner_t *al);

/** Pops the oldest action into @p act. @returns 1, or 0 if none. */
int ksnap_aligner_pop(ksnap_aligner_t *al, ksnap_action_t *act);

/** @returns the checkpoint being aligned, or 0 when idle. */
int64_t ksnap_aligner_current(const ksnap_aligner_t *al);

/** @returns bytes currently held in the alignment buffer. */
size_t ksnap_aligner_buffered_bytes(const ksnap_aligner_t *al);

/** @returns the reason's name ("alignment buffer limit"), static. */
const char *ksnap_unaligned_reason2str(ksnap_unaligned_reason_t reason);

/** @returns the action kind's name ("SNAPSHOT"), static. */
const char *ksnap_action2str(ksnap_action_kind_t kind);

#endif /* KSNAP_ALIGNER_H */
