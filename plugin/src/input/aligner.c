/*
 * Barrier alignment of a task's inputs (see aligner.h for the API).
 *
 * INVARIANTS
 *  1. Every rec pushed comes back exactly once: PROCESS, SKIP, CONSUMED or
 *     DROP (BUFFER only announces that the aligner holds it for a while;
 *     a DROPped rec is pushed again after its partition's SEEK, T14).
 *  2. Per channel, records come out in the order they went in. Buffered
 *     records are re-fed in arrival order (= offset order per partition)
 *     before any later record is taken in (release is synchronous).
 *  3. chan->blocked is set only while ALIGNING and only on channels that
 *     delivered barrier `cur`; only blocked channels have buffered records
 *     (never a cancellation marker of `cur`: it is acted on at once); in
 *     AT_LEAST_ONCE nothing is buffered (blocked only counts).
 *  4. A snapshot is emitted only when (a) every non-finished channel is
 *     blocked (aligned, at-least-once), or (b) it is a switch to unaligned
 *     outside a release and every non-blocked, non-finished channel has
 *     passed the restore's base barrier (catch-up done, see "Why unaligned
 *     waits for catch-up" below).
 *  5. Barrier and cancel ids strictly grow per channel (refused otherwise),
 *     but a cancellation marker may follow the barrier of the same id (its
 *     writer declined the checkpoint after its barrier went out);
 *     last_started only grows; a barrier id <= last_started that is not
 *     `cur` is ignored (stale: subsumed, aborted, or already snapshotted).
 *  6. A partition is paused iff ALIGNING in a blocking mode and all its
 *     non-finished channels are blocked (and at least one is).
 *
 * STATE DIAGRAM
 *
 *              T1: barrier n > last_started (and not aborted)
 *     +------+ ----------------------------------------------> +----------+
 *     | IDLE |                                                 | ALIGNING |
 *     |      | <---------------------------------------------- |  (cur)   |
 *     +------+  T3: last open channel delivers cur (or ends):  +----------+
 *      |    ^       snapshot + release                          |  ^   |  ^
 *      +----+   T7/T8: switch to unaligned: snapshot + release  +--+   +--+
 *     T2: stale T7/T9/T10: abort (decline) + release          T4:     T3, T5, T6:
 *     barrier,                                                subsume block, stale
 *     records: PROCESS / SKIP                                 n > cur barrier,
 *                                                                     buffer,
 *                                                                     T14: drop
 *
 * TRANSITIONS (state, event -> function -> state); events enter through
 * ksnap_aligner_push() (records: acceptance rule, then feed()),
 * ksnap_aligner_tick(), ksnap_aligner_abort() and ksnap_aligner_trigger();
 * after_event() runs after each of them. The functions named are in this
 * file but snapshot (ksnap__align_snapshot) and the two of T12 and T13,
 * ksnap__align_snapshot_if_ended and _on_trigger, in align_snap.c
 * (aligner_int.h lists the files).
 *  T1  IDLE,     barrier n > last_started     -> on_barrier: start_alignment
 *                                                + block_channel -> ALIGNING
 *  T2  IDLE,     barrier n <= last_started    -> on_barrier: ignored  IDLE
 *  T3  ALIGNING, barrier cur, open channel    -> block_channel      ALIGNING
 *                ... the last open one        -> complete_if_aligned:
 *                                                snapshot + release -> IDLE
 *  T4  ALIGNING, barrier n > cur              -> on_barrier: ABORT(cur)
 *                "subsumed", start n, re-feed the buffer -> ALIGNING(n)
 *  T5  ALIGNING, barrier n < cur              -> on_barrier: ignored
 *  T6  ALIGNING, record on blocked channel    -> buffer_record      ALIGNING
 *  T7  ALIGNING, buffer over the limit        -> limit_and_switch: snapshot
 *                (unaligned, reason "buffer limit") in every blocking mode,
 *                ALIGNED too; one still waiting for catch-up (not a
 *                savepoint's): abort_current "alignment buffer full" -> IDLE;
 *                a savepoint's: T14
 *  T8  ALIGNING, UNALIGNED mode, or the timeout since the trigger timestamp
 *                passed (ALIGNED_TIMEOUT)     -> limit_and_switch: snapshot
 *                (unaligned) + release        -> IDLE   (waits for catch-up)
 *                T7 and T8 treat a savepoint's alignment (must_align) as
 *                ALIGNED mode: never unaligned, always blocking
 *  T9  ALIGNING, ksnap_aligner_abort(cur) / cancel marker cur (also on a
 *                channel that delivered barrier cur: not buffered)
 *                                             -> abort_current / on_cancel
 *                                                + FORWARD_CANCEL -> IDLE
 *  T10 any,      cancel n > last_started      -> on_cancel: ABORT(cur) if
 *                aligning, ABORT(n), FORWARD_CANCEL(n) -> IDLE
 *  T11 any,      end of input                 -> on_end (may complete T3,
 *                                                or T12 on the last one)
 *  T12 IDLE,     every channel ended, TRIGGER n > last_started (and not
 *                aborted), in either order    -> _snapshot_if_ended: a
 *                snapshot at the ends for every such n, in id order -> IDLE
 *  T13 IDLE,     UNALIGNED mode with snapshot_on_trigger, TRIGGER n >
 *                last_started (not aborted, not a savepoint's), every open
 *                channel passed the restore's base barrier (caught up)
 *                                             -> _snapshot_on_trigger: a
 *                snapshot at the read positions, nothing passed, for each
 *                such n in id order, stopping at a savepoint's -> IDLE;
 *                before catch-up the TRIGGERs wait and barrier n may take
 *                n first (T1 + T8, then the TRIGGER is stale)
 *  T14 ALIGNING, a savepoint's buffer over the limit -> limit_and_switch:
 *                ksnap__align_wait_start: DROP the buffered records; later
 *                records of blocked channels are DROPped (feed) -> ALIGNING
 *                (waiting); when the alignment ends (T3 snapshot, T4, T9,
 *                T10), detach: ksnap__align_wait_end: SEEK each partition
 *                that dropped back to its first dropped offset, the
 *                channels' off_c at what they handled (align_wait.c)
 *  Illegal (ksnap_aligner_push refuses with an error and changes nothing):
 *  unknown channel, offset below the partition's next offset, record after
 *  the end of input that the acceptance rule does not skip, barrier or
 *  cancel id not above the channel's previous (a cancel of the id of the
 *  channel's last barrier is allowed, once).
 *
 * POSITIONS IN A SNAPSHOT: ksnap_accept_capture() in accept.c, with the
 *  reasoning why restoring them neither loses nor duplicates a record
 *  (blocked: just after the barrier, passed; open: next offset, not passed).
 *
 * WHY UNALIGNED WAITS FOR CATCH-UP
 *  After a restore from M, a channel with passed_c = 0 still replays g(M)
 *  records up to its barrier M. If an unaligned snapshot N were taken then,
 *  a restore from N would accept only g(N) and generation-G' records: the
 *  g(M) records of that channel between the read position and its barrier
 *  M would be lost (possible as soon as a task reads 2+ partitions; the
 *  model reads one, where barrier M always comes first). So the switch to
 *  unaligned (and UNALIGNED mode's snapshot at the first barrier) waits,
 *  aligned, until every open channel has passed its base barrier; an
 *  aligned snapshot is always safe because barrier N of a channel comes
 *  after its barrier M in the log.
 *
 * BUFFER FULL
 *  The buffer holds records of blocked channels. Pausing the partition of
 *  the record that overflowed would deadlock when that partition still has
 *  an open channel whose barrier is behind the buffered records, so a full
 *  buffer switches the checkpoint to unaligned, in ALIGNED mode as well
 *  (a channel is a durable log: the unaligned cut copies nothing, it only
 *  records positions). It declines the checkpoint only where an unaligned
 *  cut is not allowed: before catch-up. A savepoint (must_align) waits
 *  without memory instead (T14, align_wait.c): it drops the blocked
 *  channels' records and reads them again after its aligned snapshot.
 *  Partitions are paused only when all their channels are blocked
 *  (invariant 6); the SNAPSHOT reports the longest such pause.
 */
#include "aligner_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"
#include "base/util.h"

static void feed(ksnap_aligner_t *al, const ksnap_in_t *in, int64_t now);

/* ---- actions ---------------------------------------------------------- */

static ksnap_action_t *emit(ksnap_aligner_t *al, ksnap_action_kind_t kind) {
  return ksnap_actq_emit(&al->actq, kind);
}

static void emit_rec(ksnap_aligner_t *al, ksnap_action_kind_t kind,
                     const ksnap_in_t *in) {
  emit(al, kind)->in = *in;
}

static void emit_abort(ksnap_aligner_t *al, int64_t id, const char *reason) {
  ksnap_action_t *act = emit(al, KSNAP_ACT_ABORT);

  act->id = id;
  /* a longer reason is cut to the action's field */
  snprintf(act->reason, sizeof(act->reason), "%.*s",
           (int)sizeof(act->reason) - 1, reason);
  KSNAP_WARN("ALIGN", "Declining checkpoint %lld: %s", (long long)id, reason);
}

/* ---- buffer and release ----------------------------------------------- */

/* The mode of the current alignment: a savepoint's is ALIGNED. */
static ksnap_align_mode_t mode(const ksnap_aligner_t *al) {
  return al->state == ST_ALIGNING && al->cur_must_align ? KSNAP_ALIGN_ALIGNED
                                                        : al->conf.mode;
}

static int blocking(const ksnap_aligner_t *al) {
  return mode(al) != KSNAP_ALIGN_AT_LEAST_ONCE;
}

static void buffer_record(ksnap_aligner_t *al, const ksnap_in_t *in) {
  if (ksnap_recq_push(&al->buf, in)) {
    al->nomem = 1;
    return;
  }
  if (al->buf.bytes > al->peak_bytes)
    al->peak_bytes = al->buf.bytes;
  emit_rec(al, KSNAP_ACT_BUFFER, in);
}

/* Takes the buffered records out and unblocks every channel. */
static ksnap_in_t *detach(ksnap_aligner_t *al, size_t *nold) {
  ksnap__align_wait_end(al); /* T14: the re-read */
  for (int32_t c = 0; c < ksnap_gate_nchans(al->gate); c++)
    ksnap_gate_chan(al->gate, c)->blocked = 0;
  al->state = ST_IDLE;
  return ksnap_recq_detach(&al->buf, nold);
}

/* Re-feeds detached records in arrival order (invariant 2); a re-fed
 * barrier may start the next alignment and buffer again. */
static void refeed(ksnap_aligner_t *al, ksnap_in_t *old, size_t nold,
                   int64_t now) {
  al->releasing++;
  for (size_t i = 0; i < nold; i++)
    feed(al, &old[i], now);
  al->releasing--;
  free(old);
}

/* Ends the alignment: buffered records first, then the caller's next. */
static void release(ksnap_aligner_t *al, int64_t now) {
  size_t nold;
  ksnap_in_t *old = detach(al, &nold);

  refeed(al, old, nold, now);
}

/* ---- alignment -------------------------------------------------------- */

static void start_alignment(ksnap_aligner_t *al, const ksnap_in_t *in,
                            int64_t now) {
  al->state = ST_ALIGNING;
  al->cur = in->id;
  al->cur_must_align = in->must_align;
  ksnap__align_set_last_started(al, in->id);
  al->trigger_ts = in->trigger_ts_ms;
  al->align_start = now;
  al->peak_bytes = al->buf.bytes;
  al->drop_bytes = 0;
  al->drop_recs = 0;
  al->catchup_logged = 0;
  ksnap__align_pauses_start(al, now);
}

static void abort_current(ksnap_aligner_t *al, const char *reason,
                          int64_t now) {
  emit_abort(al, al->cur, reason);
  release(al, now);
}

static void complete_if_aligned(ksnap_aligner_t *al, int64_t now) {
  if (al->state == ST_ALIGNING && ksnap__align_all_aligned(al)) {
    ksnap__align_snapshot(al, al->waiting ? KSNAP_UNALIGNED_REREAD
                                          : KSNAP_UNALIGNED_NO, now); /* T3 */
    release(al, now);
  }
}

static void block_channel(ksnap_aligner_t *al, const ksnap_in_t *in,
                          int64_t now) {
  ksnap_chan_t *chan = ksnap_gate_chan(al->gate, in->chan);

  chan->blocked = 1;
  chan->barpos = in->offset + 1;
  complete_if_aligned(al, now);
}

static void on_barrier(ksnap_aligner_t *al, const ksnap_in_t *in,
                       int64_t now) {
  char name[256];

  KSNAP_DBG(BARRIER, "ALIGN", "Received barrier for checkpoint %lld from "
            "channel %s", (long long)in->id,
            ksnap_gate_chan_name(al->gate, in->chan, name, sizeof(name)));
  emit_rec(al, KSNAP_ACT_CONSUMED, in);
  if (al->state == ST_ALIGNING && in->id == al->cur) {
    block_channel(al, in, now); /* T3 */
    return;
  }
  if (in->id <= al->last_started || ksnap__align_is_aborted(al, in->id))
    return; /* T2, T5: stale */
  if (al->state == ST_ALIGNING) { /* T4: subsume (a newer id wins): */ 
    char reason[96];              /* release, block the new channel,  */
    ksnap_in_t *old;              /* then re-feed the released records */
    size_t nold;

    snprintf(reason, sizeof(reason), "subsumed by checkpoint %lld",
             (long long)in->id);
    emit_abort(al, al->cur, reason);
    old = detach(al, &nold);
    start_alignment(al, in, now);
    block_channel(al, in, now);
    refeed(al, old, nold, now);
    return;
  }
  start_alignment(al, in, now); /* T1 */
  block_channel(al, in, now);
}

static void on_cancel(ksnap_aligner_t *al, const ksnap_in_t *in,
                      int64_t now) {
  char name[256], reason[320];
  int aligning = al->state == ST_ALIGNING;

  emit_rec(al, KSNAP_ACT_CONSUMED, in);
  if (!(aligning && in->id == al->cur) &&
      (in->id <= al->last_started || ksnap__align_is_aborted(al, in->id)))
    return; /* already aborted, snapshotted or forwarded */
  snprintf(reason, sizeof(reason), "cancellation marker from channel %s",
           ksnap_gate_chan_name(al->gate, in->chan, name, sizeof(name)));
  if (aligning && in->id != al->cur) { /* T10: a newer one is cancelled */
    char sub[96];
    snprintf(sub, sizeof(sub), "subsumed by cancelled checkpoint %lld",
             (long long)in->id);
    emit_abort(al, al->cur, sub);
  }
  /* stale barriers <= id are ignored */
  ksnap__align_set_last_started(al, in->id);
  emit_abort(al, in->id, reason); /* T9 / T10 */
  emit(al, KSNAP_ACT_FORWARD_CANCEL)->id = in->id;
  if (aligning)
    release(al, now);
}

static void on_end(ksnap_aligner_t *al, const ksnap_in_t *in, int64_t now) {
  ksnap_chan_t *chan = ksnap_gate_chan(al->gate, in->chan);
  char name[256];

  KSNAP_DBG(BARRIER, "ALIGN", "End of input on channel %s",
            ksnap_gate_chan_name(al->gate, in->chan, name, sizeof(name)));
  emit_rec(al, KSNAP_ACT_CONSUMED, in);
  chan->finished = 1; /* T11: counts as aligned */
  complete_if_aligned(al, now);
  ksnap__align_snapshot_if_ended(al, now);
}

/* One accepted record (data or control of the current generation). */
static void feed(ksnap_aligner_t *al, const ksnap_in_t *in, int64_t now) {
  const ksnap_chan_t *chan = ksnap_gate_chan_c(al->gate, in->chan);
  int cancels_cur = in->kind == KSNAP_REC_CANCEL &&
                    al->state == ST_ALIGNING && in->id == al->cur;

  if (chan->blocked && blocking(al) && !cancels_cur) {
    if (al->waiting)
      ksnap__align_drop(al, in); /* T14 */
    else
      buffer_record(al, in); /* T6 */
    return;
  }
  switch (in->kind) {
  case KSNAP_REC_DATA:
    emit_rec(al, KSNAP_ACT_PROCESS, in);
    break;
  case KSNAP_REC_BARRIER:
    on_barrier(al, in, now);
    break;
  case KSNAP_REC_CANCEL:
    on_cancel(al, in, now);
    break;
  case KSNAP_REC_END:
    on_end(al, in, now);
    break;
  }
}

/* ---- after every event: buffer limit, unaligned switch, pauses -------- */

static int may_switch(const ksnap_aligner_t *al) {
  return mode(al) == KSNAP_ALIGN_UNALIGNED ||
         mode(al) == KSNAP_ALIGN_ALIGNED_TIMEOUT;
}

static int switch_due(const ksnap_aligner_t *al, int64_t now) {
  return mode(al) == KSNAP_ALIGN_UNALIGNED ||
         (mode(al) == KSNAP_ALIGN_ALIGNED_TIMEOUT &&
          now - al->trigger_ts >= al->conf.timeout_ms);
}

/* T7 / T8. Returns 1 if the state changed. */
static int limit_and_switch(ksnap_aligner_t *al, int64_t now) {
  int full;
  int32_t c;

  if (al->state != ST_ALIGNING || !blocking(al) || al->releasing)
    return 0;
  full = al->conf.max_buffered_bytes &&
         al->buf.bytes > al->conf.max_buffered_bytes;
  if (!full && !switch_due(al, now))
    return 0;
  c = ksnap__align_catching_up(al);
  if ((may_switch(al) || (full && !al->cur_must_align)) && c < 0) {
    ksnap_unaligned_reason_t why =
        full ? KSNAP_UNALIGNED_BUFFER_LIMIT
        : mode(al) == KSNAP_ALIGN_UNALIGNED ? KSNAP_UNALIGNED_MODE
                                            : KSNAP_UNALIGNED_TIMEOUT;
    ksnap__align_snapshot(al, why, now); /* T7, T8 */
    release(al, now);
    return 1;
  }
  if (full && al->cur_must_align) { /* T14 */
    ksnap__align_wait_start(al);
    return 0;
  }
  if (full) { /* T7 */
    char reason[128];
    snprintf(reason, sizeof(reason),
             "alignment buffer full: %zu bytes > max %zu", al->buf.bytes,
             al->conf.max_buffered_bytes);
    abort_current(al, reason, now);
    return 1;
  }
  if (!al->catchup_logged) {
    char name[256];
    al->catchup_logged = 1;
    KSNAP_DBG(BARRIER, "ALIGN", "Checkpoint %lld stays aligned: channel %s "
              "still replays generation %lld up to barrier %lld",
              (long long)al->cur,
              ksnap_gate_chan_name(al->gate, c, name, sizeof(name)),
              (long long)al->acc.base_gen, (long long)al->acc.base_id);
  }
  return 0;
}

static ksnap_err_t after_event(ksnap_aligner_t *al, int64_t now,
                               ksnap_error_t *error) {
  while (limit_and_switch(al, now))
    ;
  ksnap__align_snapshot_on_trigger(al, now);
  ksnap__align_sync_pauses(al, al->state == ST_ALIGNING && blocking(al),
                           now);
  if (al->nomem || al->actq.nomem) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM,
                    "aligner out of memory: task must restart");
    if (error)
      error->fatal = 1;
    return KSNAP_ERR_NOMEM;
  }
  return KSNAP_ERR_OK;
}

/* ---- API -------------------------------------------------------------- */

ksnap_aligner_t *ksnap_aligner_new(ksnap_gate_t *gate,
                                   const ksnap_accept_t *acc,
                                   const ksnap_aligner_conf_t *conf) {
  ksnap_aligner_t *al = calloc(1, sizeof(*al));

  if (!al)
    return NULL;
  al->gate = gate;
  al->acc = *acc;
  al->conf = *conf;
  al->last_started = acc->base_id;
  return al;
}

void ksnap_aligner_destroy(ksnap_aligner_t *al) {
  if (!al)
    return;
  ksnap_recq_cleanup(&al->buf, al->conf.free_rec, al->conf.opaque);
  ksnap_actq_cleanup(&al->actq);
  free(al->aborted);
  free(al->trig);
  free(al);
}

static ksnap_err_t refuse(ksnap_err_t err, ksnap_error_t *error,
                          const char *what, const ksnap_aligner_t *al,
                          const ksnap_in_t *in) {
  char name[256] = "?";

  if (in->chan >= 0 && in->chan < ksnap_gate_nchans(al->gate))
    ksnap_gate_chan_name(al->gate, in->chan, name, sizeof(name));
  KSNAP_ERR("ALIGN", "Refusing record at offset %lld on channel %s: %s",
            (long long)in->offset, name, what);
  return ksnap_error_set(error, err, "record at offset %lld on channel %s: "
                         "%s", (long long)in->offset, name, what);
}

ksnap_err_t ksnap_aligner_push(ksnap_aligner_t *al, const ksnap_in_t *in,
                               int64_t now_ms, ksnap_error_t *error) {
  ksnap_chan_t *chan;
  ksnap_gate_part_t *part;
  ksnap_accept_verdict_t verdict;
  char what[128];

  if (in->chan < 0 || in->chan >= ksnap_gate_nchans(al->gate))
    return refuse(KSNAP_ERR_NOT_FOUND, error, "unknown channel", al, in);
  chan = ksnap_gate_chan(al->gate, in->chan);
  part = ksnap_gate_part(al->gate, chan->part);
  if (in->offset < part->pos) {
    snprintf(what, sizeof(what), "offset below the partition's next offset "
             "%lld", (long long)part->pos);
    return refuse(KSNAP_ERR_STATE, error, what, al, in);
  }
  if (ksnap__align_drop_stale(al, in)) /* fetched before a SEEK (T14) */
    return after_event(al, now_ms, error);
  /* Only BARRIER_ALIGN could fail the id check below, and neither it nor
   * PROCESS changes anything: checking first keeps a refusal side-effect
   * free. */
  verdict = ksnap_accept_check(&al->acc, chan, in->offset, in->gen, in->kind,
                               in->id);
  /* After the end of input only what the rule skips may come: a zombie of
   * an older generation delivered late, or a newer generation's record (a
   * stale reader). Anything of this generation is a broken writer. */
  if (chan->endpos > 0 && (verdict == KSNAP_ACCEPT_PROCESS ||
                           verdict == KSNAP_ACCEPT_BARRIER_ALIGN))
    return refuse(KSNAP_ERR_STATE, error, "after the end of input", al, in);
  if (verdict == KSNAP_ACCEPT_BARRIER_ALIGN && in->kind != KSNAP_REC_END &&
      in->id <= chan->last_id &&
      !(in->kind == KSNAP_REC_CANCEL && in->id == chan->last_id &&
        !chan->last_cancel)) {
    snprintf(what, sizeof(what), "checkpoint id %lld not above the "
             "channel's previous %lld", (long long)in->id,
             (long long)chan->last_id);
    return refuse(KSNAP_ERR_STATE, error, what, al, in);
  }
  part->pos = in->offset + 1;
  part->seeking = 0;
  if (verdict == KSNAP_ACCEPT_BARRIER_ALIGN) {
    if (in->kind == KSNAP_REC_END) {
      chan->endpos = in->offset + 1;
    } else {
      chan->last_id = in->id;
      chan->last_cancel = in->kind == KSNAP_REC_CANCEL;
    }
  }
  if (ksnap_accept_is_skip(verdict)) {
    ksnap_action_t *act = emit(al, KSNAP_ACT_SKIP);
    act->in = *in;
    act->verdict = verdict;
    if (verdict == KSNAP_ACCEPT_SKIP_NEWER_GEN)
      KSNAP_DBG(BARRIER, "ALIGN", "Skipping a record of generation %lld > "
                "%lld: this reader is stale", (long long)in->gen,
                (long long)al->acc.gen);
  } else if (verdict == KSNAP_ACCEPT_BARRIER_MARK_PASSED) {
    emit_rec(al, KSNAP_ACT_CONSUMED, in);
  } else {
    feed(al, in, now_ms);
  }
  return after_event(al, now_ms, error);
}

ksnap_err_t ksnap_aligner_tick(ksnap_aligner_t *al, int64_t now_ms,
                               ksnap_error_t *error) {
  return after_event(al, now_ms, error);
}

ksnap_err_t ksnap_aligner_abort(ksnap_aligner_t *al, int64_t id,
                                const char *reason, int64_t now_ms,
                                ksnap_error_t *error) {
  if (al->state == ST_ALIGNING && al->cur == id)
    abort_current(al, reason ? reason : "aborted", now_ms); /* T9 */
  else
    ksnap__align_add_aborted(al, id);
  return after_event(al, now_ms, error);
}

ksnap_err_t ksnap_aligner_trigger_opt(ksnap_aligner_t *al, int64_t id,
                                      int64_t trigger_ts_ms, int must_align,
                                      int64_t now_ms, ksnap_error_t *error) {
  ksnap__align_add_trigger(al, id, trigger_ts_ms, must_align);
  ksnap__align_snapshot_if_ended(al, now_ms);
  return after_event(al, now_ms, error);
}

ksnap_err_t ksnap_aligner_trigger(ksnap_aligner_t *al, int64_t id,
                                  int64_t trigger_ts_ms, int64_t now_ms,
                                  ksnap_error_t *error) {
  return ksnap_aligner_trigger_opt(al, id, trigger_ts_ms, 0, now_ms, error);
}

int ksnap_aligner_ended(const ksnap_aligner_t *al) {
  return ksnap__align_all_ended(al);
}

int ksnap_aligner_pop(ksnap_aligner_t *al, ksnap_action_t *act) {
  return ksnap_actq_pop(&al->actq, act);
}

int64_t ksnap_aligner_current(const ksnap_aligner_t *al) {
  return al->state == ST_ALIGNING ? al->cur : 0;
}

size_t ksnap_aligner_buffered_bytes(const ksnap_aligner_t *al) {
  return al->buf.bytes;
}

const char *ksnap_unaligned_reason2str(ksnap_unaligned_reason_t reason) {
  static const char *names[] = {"aligned", "unaligned mode",
                                "aligned-checkpoint-timeout",
                                "alignment buffer limit", "trigger",
                                "savepoint re-read"};
  if ((unsigned)reason < sizeof(names) / sizeof(names[0]))
    return names[reason];
  return "unknown";
}

const char *ksnap_action2str(ksnap_action_kind_t kind) {
  static const char *names[] = {"PROCESS", "SKIP",     "CONSUMED",
                                "BUFFER",  "PAUSE",    "RESUME",
                                "SNAPSHOT", "ABORT",   "FORWARD_CANCEL",
                                "DROP",    "SEEK"};
  if ((unsigned)kind < sizeof(names) / sizeof(names[0]))
    return names[kind];
  return "UNKNOWN";
}
