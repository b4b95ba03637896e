/*
 * The input gate of a task: its input partitions of exchange topics and the
 * channels on them. A channel is (topic, partition, writer task): every
 * writer task of the upstream stage writes to every partition of its output,
 * so a partition read from a stage of parallelism P carries P channels. The
 * set of channels is fixed by the job graph (every live input channel must
 * deliver the barrier: plugin/PROTOCOL.md sections 1 and 3.3), never
 * discovered from the data: a writer that has sent nothing yet is still
 * waited for.
 *
 * Pure data: no Kafka, no threads, no I/O. The gate holds the per-channel
 * state that accept.c (acceptance rule: off, passed) and aligner.c (barrier
 * alignment: blocked, barpos, finished, last_id, last_cancel) read and
 * write; the structs
 * are visible to those two modules only through this internal header.
 *
 * Threading: a gate belongs to the task's processing thread.
 */
#ifndef KSNAP_CHANNEL_H
#define KSNAP_CHANNEL_H

#include <stdint.h>
#include <stdio.h>

#include "ksnap/error.h"

typedef struct ksnap_gate_part_s {
  char *topic;
  int32_t partition;
  char *stage;        /**< upstream (writer) stage name, for logs */
  int32_t nwriters;   /**< parallelism of the upstream stage */
  int32_t first_chan; /**< its channels: first_chan .. first_chan+nwriters-1 */
  int64_t pos;        /**< next offset to read (start offset, then last+1) */
  int paused;         /**< the caller was told to pause it */
  int64_t paused_since; /**< aligner: time of the last PAUSE */
  int64_t paused_ms;  /**< aligner: time paused in the current alignment */
  int dropped;        /**< aligner: a savepoint's wait dropped records here */
  int64_t drop_off;   /**< aligner: the first offset it dropped (re-read) */
  int seeking;        /**< aligner: SEEKed to pos, the record there not
                           yet read again (earlier fetches are stale) */
} ksnap_gate_part_t;

typedef struct ksnap_chan_s {
  int32_t part;   /**< index of its partition in the gate */
  int32_t writer; /**< writer task index in the upstream stage */
  /* Acceptance (accept.c): from the restored checkpoint. */
  int64_t off; /**< first offset of this writer not in the restored state */
  int passed;  /**< the base checkpoint's barrier of this writer was consumed */
  /* Alignment (aligner.c). */
  int64_t last_id; /**< highest barrier / cancel id seen (per-channel order) */
  int last_cancel; /**< the marker of last_id was a cancellation marker */
  int blocked;     /**< delivered the barrier of the checkpoint in progress */
  int64_t barpos;  /**< offset just after that barrier */
  int finished;    /**< end of input seen */
  int64_t endpos;  /**< offset just after the end-of-input marker */
} ksnap_chan_t;

typedef struct ksnap_gate_s ksnap_gate_t;

/** @returns an empty gate, or NULL when out of memory. */
ksnap_gate_t *ksnap_gate_new(void);

/** Frees @p gate; NULL is a no-op. */
void ksnap_gate_destroy(ksnap_gate_t *gate);

/**
 * Adds input partition @p topic [@p partition], written by the @p nwriters
 * tasks of stage @p stage: adds channels for writers 0..nwriters-1, all live
 * with off 0 and passed 1 (a fresh start). @p partidxp (may be NULL)
 * receives the partition's index.
 * @returns KSNAP_ERR_INVALID_ARG (nwriters < 1, partition < 0),
 *          KSNAP_ERR_EXISTS (partition already added) or KSNAP_ERR_NOMEM.
 */
ksnap_err_t ksnap_gate_add_partition(ksnap_gate_t *gate, const char *topic,
                                     int32_t partition, const char *stage,
                                     int32_t nwriters, int32_t *partidxp,
                                     ksnap_error_t *error);

/** Finds the partition index of @p topic [@p partition]; -1 if unknown. */
int32_t ksnap_gate_find_partition(const ksnap_gate_t *gate, const char *topic,
                                  int32_t partition);

/**
 * Finds the channel of writer @p writer on @p topic [@p partition].
 * @returns KSNAP_ERR_NOT_FOUND (logged) for a channel not in the job graph.
 */
ksnap_err_t ksnap_gate_find(const ksnap_gate_t *gate, const char *topic,
                            int32_t partition, int32_t writer, int32_t *chanp,
                            ksnap_error_t *error);

int32_t ksnap_gate_nchans(const ksnap_gate_t *gate);
int32_t ksnap_gate_nparts(const ksnap_gate_t *gate);
ksnap_chan_t *ksnap_gate_chan(ksnap_gate_t *gate, int32_t chan);
ksnap_gate_part_t *ksnap_gate_part(ksnap_gate_t *gate, int32_t part);
const ksnap_chan_t *ksnap_gate_chan_c(const ksnap_gate_t *gate, int32_t chan);
const ksnap_gate_part_t *ksnap_gate_part_c(const ksnap_gate_t *gate,
                                           int32_t part);

/** Formats "<topic>[p] writer <stage>[i]" into @p buf; returns @p buf. */
const char *ksnap_gate_chan_name(const ksnap_gate_t *gate, int32_t chan,
                                 char *buf, size_t size);

#endif /* KSNAP_CHANNEL_H */
