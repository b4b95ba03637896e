/*
 * The aligner's private struct and the helpers its state machine calls.
 *
 * Files, by concern:
 *   aligner.c     the state machine: diagram, invariants, transitions,
 *                 buffering and release, the unaligned switch, the API
 *   align_snap.c  the SNAPSHOT action and its statistics; the snapshots
 *                 taken on a TRIGGER (T12 after the end of input, T13
 *                 snapshot-on-trigger)
 *   align_ids.c   the ids above last_started: aborted ones, pending
 *                 TRIGGERs
 *   align_gate.c  what alignment asks of the gate (every channel aligned,
 *                 ended, caught up) and the partitions' pauses
 *   align_wait.c  a savepoint's wait without memory (T14): dropping the
 *                 blocked channels' records, then the re-read (SEEK)
 *   alignq.c      the action and record FIFOs
 * Calls go one way: aligner.c -> align_snap.c align_wait.c -> align_ids.c
 * align_gate.c alignq.c; aligner.c calls the lower three too. Only aligner.c changes
 * the state (ST_IDLE / ST_ALIGNING) and the channels' blocked flags.
 *
 * Threading: an aligner belongs to the task's processing thread.
 */
#ifndef KSNAP_ALIGNER_INT_H
#define KSNAP_ALIGNER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "aligner.h"
#include "alignq.h"

typedef enum { ST_IDLE = 0, ST_ALIGNING } align_state_t;

typedef struct trig_s {
  int64_t id, ts; /* a TRIGGER's checkpoint id and trigger timestamp */
  int must_align; /* a savepoint's: never taken on the TRIGGER (T13) */
} trig_t;

struct ksnap_aligner_s {
  ksnap_gate_t *gate;
  ksnap_accept_t acc;
  ksnap_aligner_conf_t conf;
  align_state_t state;
  int64_t cur;          /* checkpoint being aligned (ST_ALIGNING) */
  int cur_must_align;   /* cur is a savepoint: ALIGNED whatever the mode */
  int64_t last_started; /* highest id aligned, snapshotted or cancelled */
  trig_t *trig;         /* TRIGGERs seen above last_started, ascending (T12) */
  size_t ntrig, captrig;
  int64_t trigger_ts;   /* cur's trigger timestamp */
  int64_t align_start;  /* time cur's first barrier arrived */
  int catchup_logged;
  int64_t *aborted;     /* aborted ids > last_started, not yet seen */
  size_t naborted, capaborted;
  ksnap_recq_t buf;     /* records of blocked channels, arrival order */
  size_t peak_bytes;
  int releasing;        /* inside a refeed: no unaligned switch */
  int waiting;          /* T14: a savepoint's wait, blocked records dropped */
  size_t drop_bytes;    /* T14: bytes dropped in cur's alignment */
  int64_t drop_recs;    /* T14: records dropped in cur's alignment */
  ksnap_actq_t actq;    /* actions for the caller */
  int nomem;            /* sticky: after_event() reports a fatal NOMEM */
};

/* ---- align_snap.c ----------------------------------------------------- */

/** Emits SNAPSHOT(cur) with the gate's positions (ksnap_accept_capture)
 * and the alignment's statistics; @p unaligned says why it did not wait
 * for full alignment (KSNAP_UNALIGNED_NO: it did). Changes nothing else;
 * out of memory sets al->nomem. */
void ksnap__align_snapshot(ksnap_aligner_t *al,
                           ksnap_unaligned_reason_t unaligned, int64_t now);

/** T12: once every channel ended and IDLE, snapshots every pending
 * TRIGGER in id order, every channel at its end. */
void ksnap__align_snapshot_if_ended(ksnap_aligner_t *al, int64_t now);

/** T13: with snapshot_on_trigger in UNALIGNED mode, IDLE, outside a
 * release and caught up, snapshots the pending TRIGGERs in id order at the
 * read positions, stopping at a savepoint's. */
void ksnap__align_snapshot_on_trigger(ksnap_aligner_t *al, int64_t now);

/* ---- align_ids.c ------------------------------------------------------ */

int ksnap__align_is_aborted(const ksnap_aligner_t *al, int64_t id);

/** Remembers an abort of @p id > last_started, so that its barriers are
 * ignored. Out of memory sets al->nomem. */
void ksnap__align_add_aborted(ksnap_aligner_t *al, int64_t id);

/** Raises last_started to @p id and forgets the aborted ids and pending
 * TRIGGERs at or below it. */
void ksnap__align_set_last_started(ksnap_aligner_t *al, int64_t id);

/** Remembers TRIGGER(@p id) for T12 and T13, in id order; ids at or below
 * last_started are stale. Out of memory sets al->nomem. */
void ksnap__align_add_trigger(ksnap_aligner_t *al, int64_t id, int64_t ts,
                              int must_align);

/* ---- align_wait.c ----------------------------------------------------- */

/** T14: a savepoint's alignment over the limit starts waiting without
 * memory: every buffered record is dropped (DROP), and so is every later
 * record of a blocked channel (ksnap__align_drop). */
void ksnap__align_wait_start(ksnap_aligner_t *al);

/** Drops @p in, a record of a blocked channel during the wait: DROP, and
 * its partition remembers the first offset dropped. */
void ksnap__align_drop(ksnap_aligner_t *al, const ksnap_in_t *in);

/** Ends the wait as the alignment ends (snapshot, abort, subsume), before
 * the channels are unblocked: every channel of a partition that dropped
 * records moves its acceptance position to what it handled (blocked: just
 * after its barrier; finished: after its end; open: the read position),
 * forgets the control records it dropped, and the partition is read again
 * from its first dropped offset (SEEK). No-op unless waiting. */
void ksnap__align_wait_end(ksnap_aligner_t *al);

/** A record pushed on a partition that was SEEKed back: 1 (and DROP) if
 * it was fetched before the seek and must wait for the re-read. */
int ksnap__align_drop_stale(ksnap_aligner_t *al, const ksnap_in_t *in);

/* ---- align_gate.c ----------------------------------------------------- */

/** @returns 1 when every unfinished channel is blocked. */
int ksnap__align_all_aligned(const ksnap_aligner_t *al);

/** @returns the first open channel that still replays the base
 * generation (not passed the restore's barrier), or -1. */
int32_t ksnap__align_catching_up(const ksnap_aligner_t *al);

/** @returns 1 when every channel delivered its end of input. */
int ksnap__align_all_ended(const ksnap_aligner_t *al);

/** Starts the partitions' pause clocks of a new alignment at @p now. */
void ksnap__align_pauses_start(ksnap_aligner_t *al, int64_t now);

/** @returns the longest time a partition has been paused in this
 * alignment. */
int64_t ksnap__align_longest_pause(const ksnap_aligner_t *al, int64_t now);

/** Emits PAUSE / RESUME so that a partition is paused iff @p blocking (an
 * alignment in a blocking mode runs) and all its unfinished channels are
 * blocked, at least one (invariant 6). */
void ksnap__align_sync_pauses(ksnap_aligner_t *al, int blocking, int64_t now);

#endif /* KSNAP_ALIGNER_INT_H */
