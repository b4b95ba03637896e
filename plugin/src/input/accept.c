/* The acceptance rule (plugin/PROTOCOL.md section 6.2; see accept.h). */
#include "accept.h"

#include <stdlib.h>

#include "ksnap/log.h"

void ksnap_accept_init(ksnap_accept_t *acc, ksnap_gate_t *gate, int64_t gen) {
  acc->gen = gen;
  acc->base_id = 0;
  acc->base_gen = -1;
  for (int32_t c = 0; c < ksnap_gate_nchans(gate); c++) {
    ksnap_chan_t *chan = ksnap_gate_chan(gate, c);
    chan->off = 0;
    chan->passed = 1;
    chan->last_id = 0;
    chan->finished = 0;
    chan->blocked = 0;
  }
  for (int32_t p = 0; p < ksnap_gate_nparts(gate); p++) {
    ksnap_gate_part(gate, p)->pos = 0;
    ksnap_gate_part(gate, p)->paused = 0;
  }
}

ksnap_err_t ksnap_accept_restore(ksnap_accept_t *acc, ksnap_gate_t *gate,
                                 int64_t gen, int64_t base_id,
                                 int64_t base_gen,
                                 const ksnap_chan_pos_t *pos, int32_t npos,
                                 ksnap_error_t *error) {
  int32_t nchans = ksnap_gate_nchans(gate);
  const ksnap_chan_pos_t **by_chan;
  ksnap_err_t err = KSNAP_ERR_OK;

  if (base_gen > gen || base_id < 1)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "restore in generation %lld from checkpoint %lld "
                           "of generation %lld: generations only grow",
                           (long long)gen, (long long)base_id,
                           (long long)base_gen);
  by_chan = calloc((size_t)nchans + 1, sizeof(*by_chan));
  if (!by_chan)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int32_t i = 0; i < npos && !err; i++) {
    if (pos[i].chan < 0 || pos[i].chan >= nchans)
      err = ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                            "checkpoint %lld has a position for unknown "
                            "channel %d", (long long)base_id,
                            (int)pos[i].chan);
    else if (pos[i].off < 0)
      err = ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                            "checkpoint %lld: negative offset for channel %d",
                            (long long)base_id, (int)pos[i].chan);
    else
      by_chan[pos[i].chan] = &pos[i];
  }
  for (int32_t c = 0; c < nchans && !err; c++) {
    char name[256];
    if (!by_chan[c])
      err = ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                            "checkpoint %lld has no position for channel %s",
                            (long long)base_id,
                            ksnap_gate_chan_name(gate, c, name, sizeof(name)));
  }
  if (!err) {
    acc->gen = gen;
    acc->base_id = base_id;
    acc->base_gen = base_gen;
    for (int32_t p = 0; p < ksnap_gate_nparts(gate); p++) {
      ksnap_gate_part(gate, p)->pos = INT64_MAX;
      ksnap_gate_part(gate, p)->paused = 0;
    }
    for (int32_t c = 0; c < nchans; c++) {
      ksnap_chan_t *chan = ksnap_gate_chan(gate, c);
      ksnap_gate_part_t *part = ksnap_gate_part(gate, chan->part);
      chan->off = by_chan[c]->off;
      chan->passed = by_chan[c]->passed;
      chan->last_id = base_id;
      chan->finished = 0;
      chan->blocked = 0;
      if (chan->off < part->pos)
        part->pos = chan->off;
    }
  }
  free(by_chan);
  return err;
}

ksnap_accept_verdict_t ksnap_accept_check(const ksnap_accept_t *acc,
                                          ksnap_chan_t *chan,
                                          int64_t offset, int64_t gen,
                                          ksnap_rec_kind_t kind, int64_t id) {
  int control = kind != KSNAP_REC_DATA;

  if (offset < chan->off)
    return KSNAP_ACCEPT_SKIP_BEFORE_OFF; /* 1 */
  if (gen > acc->gen)
    return KSNAP_ACCEPT_SKIP_NEWER_GEN; /* 2 */
  if (kind == KSNAP_REC_BARRIER && acc->base_id > 0 && id == acc->base_id &&
      gen == acc->base_gen) {
    chan->passed = 1; /* 3 */
    return KSNAP_ACCEPT_BARRIER_MARK_PASSED;
  }
  if (gen == acc->gen) { /* 4 */
    if (control && kind != KSNAP_REC_END && id <= acc->base_id)
      return KSNAP_ACCEPT_SKIP_OLD_BARRIER;
    return control ? KSNAP_ACCEPT_BARRIER_ALIGN : KSNAP_ACCEPT_PROCESS;
  }
  if (control)
    return KSNAP_ACCEPT_SKIP_OLD_BARRIER; /* 6 */
  if (gen == acc->base_gen)
    return chan->passed ? KSNAP_ACCEPT_SKIP_PASSED : KSNAP_ACCEPT_PROCESS;
  return KSNAP_ACCEPT_SKIP_OLD_GEN; /* 6 */
}

ksnap_chan_pos_t *ksnap_accept_capture(const ksnap_gate_t *gate) {
  int32_t n = ksnap_gate_nchans(gate);
  ksnap_chan_pos_t *pos = calloc((size_t)n + 1, sizeof(*pos));

  if (!pos)
    return NULL;
  for (int32_t c = 0; c < n; c++) {
    const ksnap_chan_t *chan = ksnap_gate_chan_c(gate, c);
    const ksnap_gate_part_t *part = ksnap_gate_part_c(gate, chan->part);

    pos[c].chan = c;
    if (chan->finished) {
      pos[c].off = chan->endpos > chan->off ? chan->endpos : chan->off;
      pos[c].passed = pos[c].finished = 1;
    } else if (chan->blocked) {
      pos[c].off = chan->barpos;
      pos[c].passed = 1;
    } else {
      pos[c].off = part->pos > chan->off ? part->pos : chan->off;
    }
  }
  return pos;
}

int ksnap_accept_is_skip(ksnap_accept_verdict_t verdict) {
  return verdict >= KSNAP_ACCEPT_SKIP_BEFORE_OFF;
}

const char *ksnap_accept_verdict2str(ksnap_accept_verdict_t verdict) {
  static const char *names[] = {
      "PROCESS",         "BARRIER_ALIGN",     "BARRIER_MARK_PASSED",
      "SKIP_BEFORE_OFF", "SKIP_NEWER_GEN",    "SKIP_OLD_BARRIER",
      "SKIP_PASSED",     "SKIP_OLD_GEN",
  };
  if ((unsigned)verdict < sizeof(names) / sizeof(names[0]))
    return names[verdict];
  return "UNKNOWN";
}
