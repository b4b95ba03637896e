/*
 * The acceptance rule (plugin/PROTOCOL.md section 6.2): which records an exchange
 * reader processes after a restore (and, without one, "only the current
 * generation").
 *
 * A reader restored in generation G from checkpoint N, taken in generation
 * g(N), has per channel c = (partition, writer w) off_c (first offset of w
 * not in the state) and passed_c (w's barrier N was consumed). It starts each
 * partition at the smallest off_c and, for a record (w, g) at offset o:
 *
 *   1. o < off_c                        -> skip (already in the state)
 *   2. g > G                            -> skip (newer generation: this
 *                                          reader is stale; logged)
 *   3. barrier N with g == g(N)         -> sets passed_c, never aligned
 *   4. g == G: barrier id <= N          -> skip (only newer ids align)
 *              anything else            -> process (barriers: to the aligner)
 *   5. g == g(N), data, !passed_c       -> process (replays what N lacks)
 *   6. anything else                    -> skip: records after w's barrier N
 *      of g(N), every generation strictly between g(N) and G (they restored
 *      from N or earlier and never completed a checkpoint), zombies of older
 *      generations, and every old-generation barrier other than N (an old
 *      barrier never aligns: only its own checkpoint N sets passed_c).
 *
 * tests/model/ holds a reference reader of these rules (RefReader in
 * model_reader.py) and drives this code against it over random schedules
 * (ctest model_crosscheck). Rule 3 for g == G only happens in an epoch
 * replay, where the "current" generation is that of the checkpoint being
 * replayed (plugin/PROTOCOL.md section 8.2, step 5).
 *
 * Pure logic. Threading: the task's processing thread.
 */
#ifndef KSNAP_ACCEPT_H
#define KSNAP_ACCEPT_H

#include <stdint.h>

#include "channel.h"
#include "ksnap/error.h"

/** Kind of an exchange-topic record (decoded from its headers). */
typedef enum ksnap_rec_kind_e {
  KSNAP_REC_DATA = 0,
  KSNAP_REC_BARRIER, /**< barrier of checkpoint id */
  KSNAP_REC_CANCEL,  /**< cancellation marker of checkpoint id */
  KSNAP_REC_END,     /**< end of input of the writer */
} ksnap_rec_kind_t;

typedef enum ksnap_accept_verdict_e {
  KSNAP_ACCEPT_PROCESS = 0,          /**< data: hand to the operator */
  KSNAP_ACCEPT_BARRIER_ALIGN,        /**< control of gen G: to the aligner */
  KSNAP_ACCEPT_BARRIER_MARK_PASSED,  /**< base barrier: passed_c := 1 */
  KSNAP_ACCEPT_SKIP_BEFORE_OFF,      /**< rule 1 */
  KSNAP_ACCEPT_SKIP_NEWER_GEN,       /**< rule 2 */
  KSNAP_ACCEPT_SKIP_OLD_BARRIER,     /**< rules 4 and 6, control records */
  KSNAP_ACCEPT_SKIP_PASSED,          /**< rule 6: g(N) after w's barrier N */
  KSNAP_ACCEPT_SKIP_OLD_GEN,         /**< rule 6: other generations */
} ksnap_accept_verdict_t;

/** Position of one channel in a checkpoint (metadata, per task). */
typedef struct ksnap_chan_pos_s {
  int32_t chan;   /**< channel index in the gate */
  int64_t off;    /**< off_c: first offset of the writer not in the state */
  int passed;     /**< passed_c: the writer's barrier was consumed */
  int finished;   /**< the writer's end of input was consumed */
} ksnap_chan_pos_t;

typedef struct ksnap_accept_s {
  int64_t gen;      /**< G: the reader's generation */
  int64_t base_id;  /**< N: checkpoint restored from (0: none) */
  int64_t base_gen; /**< g(N); -1 without a restore */
} ksnap_accept_t;

/**
 * A fresh start in generation @p gen: every channel off 0, passed; only
 * generation @p gen is accepted. Partition start offsets are 0.
 */
void ksnap_accept_init(ksnap_accept_t *acc, ksnap_gate_t *gate, int64_t gen);

/**
 * A restore in generation @p gen from checkpoint @p base_id taken in
 * generation @p base_gen, with one position per channel (@p pos, @p npos,
 * in any order). Sets every channel's off/passed and each partition's start
 * offset (ksnap_gate_part_t.pos) to the smallest off_c of its channels.
 * Channels restart live (not finished).
 * A live restore has base_gen < gen; a repair replay uses the replayed
 * checkpoint's generation as @p gen, so base_gen == gen is allowed.
 * @returns KSNAP_ERR_STATE if base_gen > gen or base_id < 1,
 *          KSNAP_ERR_NOT_FOUND if a channel has no position or a position
 *          names an unknown channel, KSNAP_ERR_INVALID_ARG on a negative
 *          offset. Nothing is changed on error.
 */
ksnap_err_t ksnap_accept_restore(ksnap_accept_t *acc, ksnap_gate_t *gate,
                                 int64_t gen, int64_t base_id,
                                 int64_t base_gen,
                                 const ksnap_chan_pos_t *pos, int32_t npos,
                                 ksnap_error_t *error);

/**
 * Applies the rule to a record of @p kind (barrier/cancel @p id) of
 * generation @p gen at @p offset on @p chan; sets chan->passed on
 * KSNAP_ACCEPT_BARRIER_MARK_PASSED.
 */
ksnap_accept_verdict_t ksnap_accept_check(const ksnap_accept_t *acc,
                                          ksnap_chan_t *chan,
                                          int64_t offset, int64_t gen,
                                          ksnap_rec_kind_t kind, int64_t id);

/**
 * The positions (off_c, passed_c) of every channel for a snapshot taken now,
 * from the gate's state, indexed by channel. The caller guarantees that no
 * record of an open (not blocked, not finished) channel is held back
 * (buffered or waiting to be re-fed); aligner.c does (its invariant 4).
 *
 *  - blocked channel (delivered barrier N): off_c = offset just after the
 *    barrier, passed_c = 1. Its buffered records are after the barrier, NOT
 *    in the state; after a restore they are records of g(N) past w's barrier
 *    N, which the acceptance rule skips, and the restored writer writes them
 *    again in the new generation. So nothing is lost and nothing doubled.
 *  - finished channel: off_c = just after its end marker, passed_c = 1.
 *  - any other channel c on partition p (unaligned / timeout switch only):
 *    off_c = max(restored off_c, next offset to read on p), passed_c = 0.
 *    Every record of c below that offset was PROCESSed (or skipped by the
 *    acceptance rule, which skips it again after a restore): c is not
 *    blocked, so none of its records is buffered, and no release is running
 *    (aligner.c invariant 4b), so none is waiting to be re-fed. The restore
 *    then processes c's g(N) records from off_c until w's barrier N:
 *    exactly the pre-barrier records the state lacks. The max() keeps the
 *    records that the restored checkpoint already had in the state (its
 *    off_c beyond the read position) out of the new off_c range. In a live
 *    restore those records are of an older generation than g(N) and would
 *    be skipped anyway (tests/model found no schedule where the max()
 *    matters); it stays as a guard for repair replays, where the replay's
 *    generation can equal g(N).
 *  This is the unaligned reader of plugin/PROTOCOL.md sections 6.3 and
 *  10.2 (position = read position, passed = the writer's barrier was
 *  read), for several partitions and a switch in mid-alignment.
 *
 * @returns a malloc'd array of ksnap_gate_nchans() entries, or NULL when
 *          out of memory.
 */
ksnap_chan_pos_t *ksnap_accept_capture(const ksnap_gate_t *gate);

/** @returns 1 for the SKIP_* verdicts. */
int ksnap_accept_is_skip(ksnap_accept_verdict_t verdict);

/** @returns the verdict's name ("SKIP_OLD_GEN"), static. */
const char *ksnap_accept_verdict2str(ksnap_accept_verdict_t verdict);

#endif /* KSNAP_ACCEPT_H */
