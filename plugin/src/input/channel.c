/* The input gate: partitions and channels of a task (see channel.h). */
#include "channel.h"

#include <stdlib.h>
#include <string.h>

#include "ksnap/log.h"

struct ksnap_gate_s {
  ksnap_gate_part_t *parts;
  int32_t nparts;
  ksnap_chan_t *chans;
  int32_t nchans;
};

ksnap_gate_t *ksnap_gate_new(void) {
  return calloc(1, sizeof(ksnap_gate_t));
}

void ksnap_gate_destroy(ksnap_gate_t *gate) {
  if (!gate)
    return;
  for (int32_t i = 0; i < gate->nparts; i++) {
    free(gate->parts[i].topic);
    free(gate->parts[i].stage);
  }
  free(gate->parts);
  free(gate->chans);
  free(gate);
}

ksnap_err_t ksnap_gate_add_partition(ksnap_gate_t *gate, const char *topic,
                                     int32_t partition, const char *stage,
                                     int32_t nwriters, int32_t *partidxp,
                                     ksnap_error_t *error) {
  ksnap_gate_part_t *parts, *part;
  ksnap_chan_t *chans;

  if (!topic || !stage || partition < 0 || nwriters < 1)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "input partition needs a topic, a stage, "
                           "partition >= 0 and nwriters >= 1");
  if (ksnap_gate_find_partition(gate, topic, partition) >= 0)
    return ksnap_error_set(error, KSNAP_ERR_EXISTS,
                           "input partition %s[%d] added twice", topic,
                           (int)partition);
  parts = realloc(gate->parts, (size_t)(gate->nparts + 1) * sizeof(*parts));
  if (!parts)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  gate->parts = parts;
  chans = realloc(gate->chans,
                  (size_t)(gate->nchans + nwriters) * sizeof(*chans));
  if (!chans)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  gate->chans = chans;
  part = &gate->parts[gate->nparts];
  memset(part, 0, sizeof(*part));
  part->topic = strdup(topic);
  part->stage = strdup(stage);
  if (!part->topic || !part->stage) {
    free(part->topic);
    free(part->stage);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  part->partition = partition;
  part->nwriters = nwriters;
  part->first_chan = gate->nchans;
  for (int32_t w = 0; w < nwriters; w++) {
    ksnap_chan_t *chan = &gate->chans[gate->nchans + w];
    memset(chan, 0, sizeof(*chan));
    chan->part = gate->nparts;
    chan->writer = w;
    chan->passed = 1;
  }
  if (partidxp)
    *partidxp = gate->nparts;
  gate->nparts++;
  gate->nchans += nwriters;
  return KSNAP_ERR_OK;
}

int32_t ksnap_gate_find_partition(const ksnap_gate_t *gate, const char *topic,
                                  int32_t partition) {
  for (int32_t i = 0; i < gate->nparts; i++)
    if (gate->parts[i].partition == partition &&
        !strcmp(gate->parts[i].topic, topic))
      return i;
  return -1;
}

ksnap_err_t ksnap_gate_find(const ksnap_gate_t *gate, const char *topic,
                            int32_t partition, int32_t writer, int32_t *chanp,
                            ksnap_error_t *error) {
  int32_t p = ksnap_gate_find_partition(gate, topic, partition);

  if (p < 0 || writer < 0 || writer >= gate->parts[p].nwriters) {
    KSNAP_ERR("GATE", "Record on unknown channel %s[%d] writer %d: not in "
              "the job graph", topic, (int)partition, (int)writer);
    return ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                           "unknown channel %s[%d] writer %d", topic,
                           (int)partition, (int)writer);
  }
  *chanp = gate->parts[p].first_chan + writer;
  return KSNAP_ERR_OK;
}

int32_t ksnap_gate_nchans(const ksnap_gate_t *gate) { return gate->nchans; }
int32_t ksnap_gate_nparts(const ksnap_gate_t *gate) { return gate->nparts; }

ksnap_chan_t *ksnap_gate_chan(ksnap_gate_t *gate, int32_t chan) {
  return &gate->chans[chan];
}

ksnap_gate_part_t *ksnap_gate_part(ksnap_gate_t *gate, int32_t part) {
  return &gate->parts[part];
}

const ksnap_chan_t *ksnap_gate_chan_c(const ksnap_gate_t *gate,
                                      int32_t chan) {
  return &gate->chans[chan];
}

const ksnap_gate_part_t *ksnap_gate_part_c(const ksnap_gate_t *gate,
                                           int32_t part) {
  return &gate->parts[part];
}

const char *ksnap_gate_chan_name(const ksnap_gate_t *gate, int32_t chan,
                                 char *buf, size_t size) {
  const ksnap_chan_t *c = &gate->chans[chan];
  const ksnap_gate_part_t *p = &gate->parts[c->part];

  snprintf(buf, size, "%s[%d] writer %s[%d]", p->topic, (int)p->partition,
           p->stage, (int)c->writer);
  return buf;
}
