/*
 * A manually assigned consumer (assign(), never subscribe(): no group
 * membership, no rebalances) shared by the exchange reader and the Kafka
 * source: start positions given by the caller, pause/resume, seek, the
 * next offset of every assigned partition (tracked from the records handed
 * out), and an explicit synchronous offset commit to a group.
 *
 * Threading: one owner thread makes every call.
 */
#ifndef KSNAP_CONSUMER_H
#define KSNAP_CONSUMER_H

#include "kafka_types.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

struct rd_kafka_message_s;

/**
 * Creates a consumer with @p isolation ("read_committed" or
 * "read_uncommitted", forced) and @p group_id as default group.id
 * (librdkafka needs one even for assign(); the group never joins, it only
 * receives explicit commits; kafka.group.id overrides it).
 * Auto commit and offset store are off (forced): offsets come from
 * snapshots, never from the group.
 */
ksnap_kafka_consumer_t *ksnap_kafka_consumer_new(const ksnap_conf_t *conf,
                                                 const char *isolation,
                                                 const char *group_id,
                                                 int partition_eof,
                                                 ksnap_error_t *error);

void ksnap_kafka_consumer_destroy(ksnap_kafka_consumer_t *c);

/** Replaces the assignment with @p positions (copied). */
ksnap_err_t ksnap_kafka_consumer_assign(ksnap_kafka_consumer_t *c,
                                        const ksnap_kafka_pos_t *positions,
                                        size_t n, ksnap_error_t *error);

/** Raw message callback (connector modules only); non-zero stops. */
typedef int(ksnap__consumer_raw_cb_t)(void *opaque,
                                      const struct rd_kafka_message_s *msg);

/**
 * Waits up to @p timeout_ms for one message, then takes what is already
 * queued (up to 1000), handing each data message to @p cb and updating
 * the partition's position to offset + 1. Partition EOF events go to
 * @p cb too when the consumer was created with @p partition_eof (their
 * err is RD_KAFKA_RESP_ERR__PARTITION_EOF); other errors end the call.
 * @returns messages handed over, or -1 with @p error set.
 */
int ksnap__consumer_poll(ksnap_kafka_consumer_t *c, int timeout_ms,
                         ksnap__consumer_raw_cb_t *cb, void *opaque,
                         ksnap_error_t *error);

/**
 * The headers of message @p m (one that ksnap__consumer_poll() handed
 * over) in their order, without ksnap's own (names starting "ksnap."):
 * *@p hdrsp, valid until the next call or the message's end (NULL and 0
 * without any). @returns 0, or -1 out of memory.
 */
int ksnap__consumer_user_headers(ksnap_kafka_consumer_t *c,
                                 const struct rd_kafka_message_s *m,
                                 const ksnap_kafka_header_t **hdrsp,
                                 size_t *np);

/** Pauses (@p pause 1) or resumes (0) one assigned partition. */
ksnap_err_t ksnap_kafka_consumer_pause(ksnap_kafka_consumer_t *c,
                                       const char *topic, int32_t partition,
                                       int pause, ksnap_error_t *error);

/** Moves one assigned partition to @p offset; its position follows. */
ksnap_err_t ksnap_kafka_consumer_seek(ksnap_kafka_consumer_t *c,
                                      const char *topic, int32_t partition,
                                      int64_t offset, int timeout_ms,
                                      ksnap_error_t *error);

/**
 * @returns the next offset of @p topic / @p partition (the start position
 * until a record was handed out; a logical KSNAP_OFFSET_* if it was one),
 * or KSNAP_ERR_NOT_FOUND if it is not assigned.
 */
ksnap_err_t ksnap_kafka_consumer_position(const ksnap_kafka_consumer_t *c,
                                          const char *topic,
                                          int32_t partition,
                                          int64_t *offsetp);

/**
 * Copies the positions of every assigned partition into a new array
 * (topics owned; free with ksnap_kafka_pos_free()).
 */
ksnap_err_t ksnap_kafka_consumer_positions(const ksnap_kafka_consumer_t *c,
                                           ksnap_kafka_pos_t **positionsp,
                                           size_t *np, ksnap_error_t *error);

/**
 * Commits @p positions (next offsets) to the consumer's group,
 * synchronously. Logical offsets are skipped. @returns KSNAP_ERR_STATE if
 * the consumer has no group.id, else as ksnap__kafka_resp_error().
 */
ksnap_err_t ksnap_kafka_consumer_commit(ksnap_kafka_consumer_t *c,
                                        const ksnap_kafka_pos_t *positions,
                                        size_t n, ksnap_error_t *error);

/**
 * @returns the partition count of @p topic as the broker reports it, or -1
 * with KSNAP_ERR_NOT_FOUND / CONNECT / TIMEOUT / KAFKA in @p error.
 */
int ksnap__consumer_partition_count(ksnap_kafka_consumer_t *c,
                                    const char *topic, int timeout_ms,
                                    ksnap_error_t *error);

/**
 * Asks the broker for @p topic / @p partition's low and high offsets, as
 * this consumer's isolation level sees them (read_committed: the high one
 * is the last stable offset).
 */
ksnap_err_t ksnap__consumer_watermarks(ksnap_kafka_consumer_t *c,
                                       const char *topic, int32_t partition,
                                       int64_t *lowp, int64_t *highp,
                                       int timeout_ms, ksnap_error_t *error);

/**
 * Reads partition 0 of @p topic, from the consumer's assigned position to
 * the topic's end as of this call (read_committed: the last stable offset),
 * handing every message to @p cb (non-zero stops early). The consumer must
 * have been created with partition EOF events on: a topic written in
 * transactions ends with a commit marker that is never delivered, so the
 * position can stay below the end, and partition EOF says it got there.
 * A topic whose partition is not known yet is retried until the deadline.
 * @returns OK, TIMEOUT (retriable) or a Kafka error.
 */
ksnap_err_t ksnap__consumer_read_to_end(ksnap_kafka_consumer_t *c,
                                        const char *topic, int timeout_ms,
                                        ksnap__consumer_raw_cb_t *cb,
                                        void *opaque, ksnap_error_t *error);

#endif /* KSNAP_CONSUMER_H */
