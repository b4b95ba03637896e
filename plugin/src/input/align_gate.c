/*
 * What alignment asks of the gate (see aligner_int.h): whether every
 * channel is aligned, ended or caught up with the restore, and the
 * partitions' pauses (invariant 6 in aligner.c) with their clocks, which
 * a SNAPSHOT reports (paused_ms).
 *
 * Threading: the aligner's, i.e. the task's processing thread.
 */
#include "aligner_int.h"

int ksnap__align_all_aligned(const ksnap_aligner_t *al) {
  for (int32_t c = 0; c < ksnap_gate_nchans(al->gate); c++) {
    const ksnap_chan_t *chan = ksnap_gate_chan_c(al->gate, c);
    if (!chan->finished && !chan->blocked)
      return 0;
  }
  return 1;
}

int32_t ksnap__align_catching_up(const ksnap_aligner_t *al) {
  for (int32_t c = 0; c < ksnap_gate_nchans(al->gate); c++) {
    const ksnap_chan_t *chan = ksnap_gate_chan_c(al->gate, c);
    if (!chan->finished && !chan->blocked && !chan->passed)
      return c;
  }
  return -1;
}

int ksnap__align_all_ended(const ksnap_aligner_t *al) {
  for (int32_t c = 0; c < ksnap_gate_nchans(al->gate); c++)
    if (!ksnap_gate_chan_c(al->gate, c)->finished)
      return 0;
  return 1;
}

void ksnap__align_pauses_start(ksnap_aligner_t *al, int64_t now) {
  for (int32_t p = 0; p < ksnap_gate_nparts(al->gate); p++) {
    ksnap_gate_part_t *part = ksnap_gate_part(al->gate, p);
    part->paused_ms = 0;
    part->paused_since = now;
  }
}

int64_t ksnap__align_longest_pause(const ksnap_aligner_t *al, int64_t now) {
  int64_t max = 0;

  for (int32_t p = 0; p < ksnap_gate_nparts(al->gate); p++) {
    const ksnap_gate_part_t *part = ksnap_gate_part_c(al->gate, p);
    int64_t ms = part->paused_ms + (part->paused ? now - part->paused_since
                                                 : 0);
    if (ms > max)
      max = ms;
  }
  return max;
}

void ksnap__align_sync_pauses(ksnap_aligner_t *al, int blocking, int64_t now) {
  for (int32_t p = 0; p < ksnap_gate_nparts(al->gate); p++) {
    ksnap_gate_part_t *part = ksnap_gate_part(al->gate, p);
    int want = blocking, nblocked = 0;

    for (int32_t w = 0; want && w < part->nwriters; w++) {
      const ksnap_chan_t *chan =
          ksnap_gate_chan_c(al->gate, part->first_chan + w);
      if (chan->blocked)
        nblocked++;
      else if (!chan->finished)
        want = 0;
    }
    want = want && nblocked > 0; /* invariant 6 */
    if (want != part->paused) {
      part->paused = want;
      if (want)
        part->paused_since = now;
      else
        part->paused_ms += now - part->paused_since;
      ksnap_actq_emit(&al->actq, want ? KSNAP_ACT_PAUSE : KSNAP_ACT_RESUME)
          ->part = p;
    }
  }
}