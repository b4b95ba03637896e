/*
 * The aligner's snapshots (see aligner_int.h): the SNAPSHOT action with
 * the gate's positions and the alignment's statistics, and the snapshots
 * a TRIGGER takes without a barrier: T12, once every input ended, and
 * T13, snapshot-on-trigger in UNALIGNED mode (transitions at the top of
 * aligner.c). Neither changes the state: the aligner is IDLE before and
 * after.
 *
 * Threading: the aligner's, i.e. the task's processing thread.
 */
#include "aligner_int.h"

#include <stdlib.h>

#include "ksnap/log.h"

void ksnap__align_snapshot(ksnap_aligner_t *al,
                           ksnap_unaligned_reason_t unaligned, int64_t now) {
  int32_t n = ksnap_gate_nchans(al->gate);
  ksnap_chan_pos_t *pos = ksnap_accept_capture(al->gate);
  ksnap_action_t *act;

  if (!pos) {
    al->nomem = 1;
    return;
  }
  act = ksnap_actq_emit(&al->actq, KSNAP_ACT_SNAPSHOT);
  if (al->actq.nomem) {
    free(pos);
    return;
  }
  act->id = al->cur;
  act->pos = pos;
  act->npos = n;
  act->unaligned = unaligned != KSNAP_UNALIGNED_NO &&
                  unaligned != KSNAP_UNALIGNED_REREAD;
  act->unaligned_reason = unaligned;
  act->paused_ms = ksnap__align_longest_pause(al, now);
  act->align_ms = now - al->align_start;
  act->start_delay_ms = al->align_start - al->trigger_ts;
  act->bytes_buffered = al->peak_bytes;
  act->bytes_dropped = al->drop_bytes;
  act->records_dropped = al->drop_recs;
  if (unaligned == KSNAP_UNALIGNED_REREAD)
    KSNAP_INFO("ALIGN", "Savepoint %lld aligned in %lld ms without memory: "
               "%lld records (%zu bytes) dropped, read again now",
               (long long)al->cur, (long long)(now - al->align_start),
               (long long)al->drop_recs, al->drop_bytes);
  else if (unaligned)
    KSNAP_DBG(BARRIER, "ALIGN", "Checkpoint %lld switched to unaligned "
              "(%s) after %lld ms (%zu bytes buffered)", (long long)al->cur,
              ksnap_unaligned_reason2str(unaligned),
              (long long)(now - al->align_start), al->peak_bytes);
  else
    KSNAP_DBG(BARRIER, "ALIGN", "Checkpoint %lld aligned in %lld ms",
              (long long)al->cur, (long long)(now - al->align_start));
}

/* Takes the oldest pending TRIGGER off the queue (later barriers of its
 * id are stale, an abort of it is dropped) and, unless it was aborted,
 * snapshots it at once with @p reason. */
static void snapshot_first_trigger(ksnap_aligner_t *al,
                                   ksnap_unaligned_reason_t reason,
                                   int64_t now) {
  trig_t t = al->trig[0];
  int aborted = ksnap__align_is_aborted(al, t.id);

  ksnap__align_set_last_started(al, t.id);
  if (aborted)
    return;
  al->cur = t.id;
  al->trigger_ts = t.ts;
  al->align_start = now;
  al->peak_bytes = 0;
  ksnap__align_snapshot(al, reason, now);
}

/* T12. Once every input ended no barrier can come (a finished writer sends
 * none, and a writer's barriers precede its end), so the task takes its
 * part of a checkpoint on the TRIGGER, as a source does: its state holds
 * everything its writers ever sent, and every channel is recorded at its
 * end. The TRIGGER and the last end of input may come in either order.
 * Every pending one gets its snapshot, in id order, not only the newest:
 * an older one may be a savepoint, which nothing subsumes. */
void ksnap__align_snapshot_if_ended(ksnap_aligner_t *al, int64_t now) {
  if (al->state != ST_IDLE || !al->ntrig || !ksnap__align_all_ended(al))
    return;
  while (al->ntrig)
    snapshot_first_trigger(al, KSNAP_UNALIGNED_NO, now);
}

/* T13. The log is the in-flight state: a snapshot at the read positions
 * with nothing passed replays, after a restore, every record of every
 * channel from there, the barrier n records included (acceptance rule).
 * Not while catching up (WHY UNALIGNED WAITS FOR CATCH-UP: the same loss),
 * so those TRIGGERs wait, in id order. */
void ksnap__align_snapshot_on_trigger(ksnap_aligner_t *al, int64_t now) {
  if (!al->conf.snapshot_on_trigger || al->conf.mode != KSNAP_ALIGN_UNALIGNED ||
      al->state != ST_IDLE || al->releasing || ksnap__align_all_ended(al) ||
      ksnap__align_catching_up(al) >= 0)
    return;
  while (al->ntrig && !al->trig[0].must_align)
    snapshot_first_trigger(al, KSNAP_UNALIGNED_TRIGGER, now);
}