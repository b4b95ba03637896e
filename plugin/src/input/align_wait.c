/*
 * A savepoint's wait without memory (transition T14 in aligner.c; see
 * aligner_int.h). A savepoint must stay aligned, so when its alignment
 * buffer reaches max_buffered_bytes it cannot switch to unaligned, and
 * pausing the partition of the record that overflowed could deadlock (an
 * open channel's barrier may be behind it). Instead the aligner drops
 * what it buffered for blocked channels and every later record of a
 * blocked channel, remembering per partition the first offset dropped:
 * the log still holds them. Open channels go on being processed, so every
 * barrier still arrives. When the alignment ends, each such partition is
 * read again from its first dropped offset, and the acceptance rule's
 * first test (offset < off_c: skip) sorts the re-read records:
 *
 *  - a channel blocked at the end handled exactly its records before its
 *    barrier (all later ones were buffered, then dropped): off_c := just
 *    after its barrier, so its dropped records are processed once;
 *  - an open channel (abort or subsume) handled every record below the
 *    partition's read position: off_c := that position;
 *  - a finished channel handled everything up to its end: off_c := just
 *    after its end marker.
 *
 * These are the positions ksnap_accept_capture() computes, so a snapshot
 * taken at the end of the wait records exactly what the re-read starts
 * from. The control records a blocked channel dropped (a newer barrier,
 * a cancellation marker, its end) were never acted on: the channel's
 * last id goes back to the checkpoint's and its end is forgotten.
 * Records fetched before the SEEK may still come in on that partition:
 * until the record at the seek offset arrives, they are dropped too.
 *
 * Threading: the aligner's, i.e. the task's processing thread.
 */
#include "aligner_int.h"

#include <stdlib.h>

#include "ksnap/log.h"

static void drop_one(ksnap_aligner_t *al, const ksnap_in_t *in) {
  ksnap_gate_part_t *part = ksnap_gate_part(
      al->gate, ksnap_gate_chan_c(al->gate, in->chan)->part);

  if (!part->dropped || in->offset < part->drop_off)
    part->drop_off = in->offset;
  part->dropped = 1;
  al->drop_bytes += in->size;
  al->drop_recs++;
  ksnap_actq_emit(&al->actq, KSNAP_ACT_DROP)->in = *in;
}

void ksnap__align_wait_start(ksnap_aligner_t *al) {
  size_t n, bytes = al->buf.bytes;
  ksnap_in_t *old = ksnap_recq_detach(&al->buf, &n);

  KSNAP_INFO("ALIGN", "Savepoint %lld: alignment buffer full (%zu bytes > "
             "max %zu): waiting without memory, the blocked channels' "
             "records are dropped and read again after the snapshot",
             (long long)al->cur, bytes,
             al->conf.max_buffered_bytes);
  al->waiting = 1;
  for (size_t i = 0; i < n; i++)
    drop_one(al, &old[i]);
  free(old);
}

void ksnap__align_drop(ksnap_aligner_t *al, const ksnap_in_t *in) {
  drop_one(al, in);
}

void ksnap__align_wait_end(ksnap_aligner_t *al) {
  if (!al->waiting)
    return;
  al->waiting = 0;
  for (int32_t p = 0; p < ksnap_gate_nparts(al->gate); p++) {
    ksnap_gate_part_t *part = ksnap_gate_part(al->gate, p);
    ksnap_action_t *act;

    if (!part->dropped)
      continue;
    for (int32_t w = 0; w < part->nwriters; w++) {
      ksnap_chan_t *chan = ksnap_gate_chan(al->gate, part->first_chan + w);
      int64_t off = chan->finished  ? chan->endpos
                    : chan->blocked ? chan->barpos
                                    : part->pos;
      if (off > chan->off)
        chan->off = off;
      if (chan->blocked) { /* its dropped control records: not acted on */
        chan->last_id = al->cur;
        chan->last_cancel = 0;
        chan->endpos = 0;
      }
    }
    KSNAP_DBG(BARRIER, "ALIGN", "Checkpoint %lld: reading %s[%d] again "
              "from offset %lld (read up to %lld)", (long long)al->cur,
              part->topic, (int)part->partition, (long long)part->drop_off,
              (long long)part->pos);
    part->pos = part->drop_off;
    part->dropped = 0;
    part->seeking = 1;
    act = ksnap_actq_emit(&al->actq, KSNAP_ACT_SEEK);
    act->part = p;
    act->seek_off = part->drop_off;
  }
}

int ksnap__align_drop_stale(ksnap_aligner_t *al, const ksnap_in_t *in) {
  const ksnap_gate_part_t *part = ksnap_gate_part_c(
      al->gate, ksnap_gate_chan_c(al->gate, in->chan)->part);

  if (!part->seeking || in->offset == part->pos)
    return 0; /* push clears seeking as it takes the record */
  ksnap_actq_emit(&al->actq, KSNAP_ACT_DROP)->in = *in;
  return 1;
}
