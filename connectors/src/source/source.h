/*
 * Kafka source for external topics (plugin/PROTOCOL.md section 2.1).
 *
 * Assignment: partition p of every source topic goes to task p mod P
 * (P = the stage's parallelism), see ksnap_source_partitions_for_task().
 * A task of a topic with fewer than P partitions may get none of it. No
 * consumer-group membership: the consumer uses assign(), never
 * subscribe(), so there are no rebalances and each task owns its
 * partitions by this rule alone.
 *
 * Positions come from the caller (restored from a snapshot), never from
 * committed offsets; a partition without one starts at the beginning.
 * After a completed checkpoint the caller commits the checkpoint's
 * positions to the job's consumer group (group.id = job.name unless
 * kafka.group.id is set) with ksnap_source_commit(), only so that standard
 * lag tools show progress.
 *
 * Threading: every call from the task's one thread.
 */
#ifndef KSNAP_SOURCE_H
#define KSNAP_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/kafka_types.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

typedef struct ksnap_source_s ksnap_source_t;

/**
 * Fills @p out (room for @p npartitions entries) with the partitions of a
 * topic of @p npartitions partitions that task @p task of @p parallelism
 * reads: every p with p mod parallelism == task, ascending.
 * @returns how many; 0 for invalid arguments.
 */
size_t ksnap_source_partitions_for_task(int npartitions, int task,
                                        int parallelism, int32_t *out);

/** One source record, valid during the callback only. */
typedef struct ksnap_source_msg_s {
  const char *topic;
  int32_t partition;
  int64_t offset;
  const void *key;
  size_t key_len;
  const void *value;
  size_t value_len;
  int64_t timestamp_ms;
  const ksnap_kafka_header_t *headers; /**< without ksnap.*; NULL: none */
  size_t header_cnt;
} ksnap_source_msg_t;

/** Return non-zero to stop the current poll early. */
typedef int(ksnap_source_msg_cb_t)(void *opaque, const ksnap_source_msg_t *m);

/**
 * Creates the source of task @p task (of @p parallelism) over @p topics
 * (which must exist), starting every assigned partition at its entry in
 * @p start (matched by topic and partition; extra entries are ignored) or
 * at the beginning. Reads with read_committed (source topics may be
 * written transactionally).
 * @returns the source or NULL: KSNAP_ERR_INVALID_ARG (task out of range),
 * KSNAP_ERR_NOT_FOUND (missing topic), CONNECT / TIMEOUT, KAFKA,
 * CONF_VALUE.
 */
ksnap_source_t *ksnap_source_new(const ksnap_conf_t *conf,
                                 const char *const *topics, size_t ntopics,
                                 int task, int parallelism,
                                 const ksnap_kafka_pos_t *start,
                                 size_t nstart, int timeout_ms,
                                 ksnap_error_t *error);

void ksnap_source_destroy(ksnap_source_t *src);

/** As ksnap_exchange_reader_poll(): records of the assigned partitions. */
int ksnap_source_poll(ksnap_source_t *src, int timeout_ms,
                      ksnap_source_msg_cb_t *cb, void *opaque,
                      ksnap_error_t *error);

/**
 * The next offset of every assigned partition (what a snapshot stores):
 * a new array with owned topics, free with ksnap_kafka_pos_free().
 * A partition nothing was read from yet keeps its start position
 * (possibly KSNAP_OFFSET_BEGINNING).
 */
ksnap_err_t ksnap_source_positions(const ksnap_source_t *src,
                                   ksnap_kafka_pos_t **positionsp,
                                   size_t *np, ksnap_error_t *error);

/**
 * Commits @p positions (typically a completed checkpoint's) to the job's
 * consumer group, synchronously (rd_kafka_commit with an explicit list;
 * logical offsets skipped). Failure is not fatal for the job: the group
 * offsets only serve monitoring.
 */
ksnap_err_t ksnap_source_commit(ksnap_source_t *src,
                                const ksnap_kafka_pos_t *positions, size_t n,
                                ksnap_error_t *error);

/**
 * Bounded inputs (source.stop-at): the end of @p topic / @p partition as
 * this source's read_committed consumer sees it now (the last stable
 * offset), asked of the broker.
 */
ksnap_err_t ksnap_source_end_offset(ksnap_source_t *src, const char *topic,
                                    int32_t partition, int64_t *endp,
                                    int timeout_ms, ksnap_error_t *error);

/**
 * @returns 1 when @p topic / @p partition has no record left below @p end:
 * its next offset @p next (KSNAP_OFFSET_BEGINNING counts as 0) is at or
 * past it, or a partition EOF was reported at or past it (a topic written
 * in transactions ends with a commit marker, never delivered as a record,
 * so the next offset alone may stay below the end).
 */
int ksnap_source_reached(const ksnap_source_t *src, const char *topic,
                         int32_t partition, int64_t next, int64_t end);

/** The consumer (pause/resume/seek of assigned partitions). */
ksnap_kafka_consumer_t *ksnap_source_consumer(ksnap_source_t *src);

#endif /* KSNAP_SOURCE_H */
