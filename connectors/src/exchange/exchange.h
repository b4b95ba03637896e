/*
 * Exchange topics (plugin/PROTOCOL.md sections 2.2, 2.3 and 2.5): the writer side (idempotent
 * producer, ksnap.w / ksnap.g headers, barrier broadcast, per-epoch
 * delivery tracking) and the reader side (header decoding over a
 * manually assigned read_uncommitted consumer).
 *
 * Record headers:
 *   ksnap.w    writer task id "stage[i]" (every record)
 *   ksnap.g    generation, decimal text (every record)
 *   ksnap.ctl  present on control records only: "barrier" for a barrier,
 *              or the kind given to ksnap_exchange_broadcast_marker()
 *              (e.g. "cancel"); the record value is the caller's encoded
 *              payload (Avro, from the codec module)
 *
 * Writer threading: one owner thread calls produce/broadcast/destroy;
 * ksnap_exchange_wait_delivered() may be called from any thread (the
 * snapshot's async phase). Delivery reports are served by a background
 * poll thread the writer starts and joins (rd_kafka_poll every 100 ms), so
 * the owner never needs to poll. The per-epoch counters are guarded by one
 * mutex; waiters sleep on a condition variable signalled by the poll
 * thread.
 *
 * Epoch accounting: records produced after barrier N-1 (or since start)
 * and barrier N's records form segment N. wait_delivered(N) returns OK
 * once every record of every segment up to and including N's has been
 * acknowledged; a record whose delivery failed fails every epoch N whose
 * cut contains it, i.e. that epoch and all later ones, permanently (the
 * job must restore).
 */
#ifndef KSNAP_EXCHANGE_H
#define KSNAP_EXCHANGE_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/kafka_types.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

#define KSNAP_EXCHANGE_HDR_WRITER "ksnap.w"
#define KSNAP_EXCHANGE_HDR_GEN "ksnap.g"
#define KSNAP_EXCHANGE_HDR_CTL "ksnap.ctl"
#define KSNAP_EXCHANGE_CTL_BARRIER "barrier"
#define KSNAP_EXCHANGE_CTL_END "end"

typedef struct ksnap_exchange_s ksnap_exchange_t;

/**
 * Creates the writer of task @p writer_id ("stage[i]") in @p generation
 * for the output exchange topics @p topics (they must exist: their
 * partition counts are read at creation). The producer has
 * enable.idempotence=true (forced) plus the job's kafka.* properties.
 * @returns the writer or NULL (KSNAP_ERR_NOT_FOUND for a missing topic,
 * KSNAP_ERR_CONNECT / KSNAP_ERR_TIMEOUT (retriable) if the broker did not
 * answer within @p timeout_ms,
 * KSNAP_ERR_CONF_VALUE, KSNAP_ERR_KAFKA).
 */
ksnap_exchange_t *ksnap_exchange_new(const ksnap_conf_t *conf,
                                     const char *writer_id,
                                     int64_t generation,
                                     const char *const *topics,
                                     size_t ntopics, int timeout_ms,
                                     ksnap_error_t *error);

/** Flushes nothing, stops the poll thread, frees. NULL is a no-op. */
void ksnap_exchange_destroy(ksnap_exchange_t *ex);

/**
 * Produces one record to output @p topic (partition by key hash when
 * @p partition < 0) with the ksnap.w/ksnap.g headers plus @p headers,
 * and Kafka timestamp @p timestamp_ms (CreateTime: the reading stage's
 * record timestamp; <= 0: the producer's clock). Copies key and value.
 * @returns KSNAP_ERR_OK; KSNAP_ERR_INVALID_ARG for a topic or partition
 * that is not an output of this writer (barriers would not follow it);
 * KSNAP_ERR_KAFKA with retriable=1 when the local
 * queue is full; KSNAP_ERR_KAFKA / FENCED (fatal) otherwise.
 */
ksnap_err_t ksnap_exchange_produce(ksnap_exchange_t *ex, const char *topic,
                                   int32_t partition, const void *key,
                                   size_t key_len, const void *value,
                                   size_t value_len, int64_t timestamp_ms,
                                   const ksnap_kafka_header_t *headers,
                                   size_t nheaders, ksnap_error_t *error);

/**
 * Broadcasts barrier @p checkpoint_id: one record with header ksnap.ctl
 * and value @p payload to every partition of every output topic, after
 * every record produced so far (per-partition order). Checkpoint ids must
 * increase. @returns as ksnap_exchange_produce(); KSNAP_ERR_INVALID_ARG
 * for a non-increasing id.
 */
ksnap_err_t ksnap_exchange_broadcast_barrier(ksnap_exchange_t *ex,
                                             int64_t checkpoint_id,
                                             const void *payload, size_t len,
                                             ksnap_error_t *error);

/**
 * Broadcasts a control record of kind @p kind (not "barrier"; e.g. a
 * cancellation marker) to every partition of every output topic, after
 * every record produced so far. It belongs to the current epoch: the next
 * barrier's wait_delivered() covers its delivery.
 */
ksnap_err_t ksnap_exchange_broadcast_marker(ksnap_exchange_t *ex,
                                            const char *kind,
                                            const void *payload, size_t len,
                                            ksnap_error_t *error);

/**
 * Broadcasts the end of this writer's input (ksnap.ctl "end", empty
 * value) to every partition of every output topic, after every record
 * produced so far; once only. No barrier may follow it (KSNAP_ERR_STATE):
 * from then on wait_delivered() of any id above the last barrier waits for
 * every record this writer produced, the end markers included.
 */
ksnap_err_t ksnap_exchange_broadcast_end(ksnap_exchange_t *ex,
                                         ksnap_error_t *error);

/**
 * Waits until every record produced before barrier @p checkpoint_id and
 * the barrier records themselves are acknowledged by the broker.
 * @returns KSNAP_ERR_OK; KSNAP_ERR_NOT_FOUND if that barrier was never
 * broadcast; KSNAP_ERR_TIMEOUT (retriable) after @p timeout_ms;
 * KSNAP_ERR_KAFKA naming the first failed delivery (topic, partition,
 * reason) if any of them failed.
 */
ksnap_err_t ksnap_exchange_wait_delivered(ksnap_exchange_t *ex,
                                          int64_t checkpoint_id,
                                          int timeout_ms,
                                          ksnap_error_t *error);

/** @returns the partition count of output @p topic, -1 if not an output. */
int ksnap_exchange_partitions(const ksnap_exchange_t *ex, const char *topic);

/* ---- reader side ---- */

/** One consumed exchange record, valid during the callback only. */
typedef struct ksnap_exchange_msg_s {
  const char *topic;
  int32_t partition;
  int64_t offset;
  const char *writer; /**< ksnap.w, NUL-terminated, "" if absent */
  int64_t generation; /**< ksnap.g, -1 if absent or malformed */
  int is_control;     /**< ksnap.ctl present */
  const char *ctl;    /**< ksnap.ctl value ("barrier"), "" if none */
  const void *key;
  size_t key_len;
  const void *value;
  size_t value_len;
  int64_t timestamp_ms;
  /** the record's other headers (the emit's), in order; NULL: none */
  const ksnap_kafka_header_t *headers;
  size_t header_cnt;
} ksnap_exchange_msg_t;

/** Return non-zero to stop the current poll call early. */
typedef int(ksnap_exchange_msg_cb_t)(void *opaque,
                                     const ksnap_exchange_msg_t *msg);

typedef struct ksnap_exchange_reader_s ksnap_exchange_reader_t;

/**
 * Creates a reader (isolation.level=read_uncommitted, manual assignment,
 * no group commits) and assigns @p positions (offset < 0 means
 * KSNAP_OFFSET_BEGINNING / END as defined in kafka_types.h).
 * Threading: one owner thread for every call.
 */
ksnap_exchange_reader_t *ksnap_exchange_reader_new(
    const ksnap_conf_t *conf, const ksnap_kafka_pos_t *positions, size_t n,
    ksnap_error_t *error);

void ksnap_exchange_reader_destroy(ksnap_exchange_reader_t *rd);

/**
 * Polls up to @p timeout_ms for records and hands each one to @p cb;
 * returns after the first batch (or timeout, or a non-zero cb return).
 * @returns the number of records handed over (>= 0), or -1 with @p error
 * set (a consumer error other than partition EOF).
 */
int ksnap_exchange_reader_poll(ksnap_exchange_reader_t *rd, int timeout_ms,
                               ksnap_exchange_msg_cb_t *cb, void *opaque,
                               ksnap_error_t *error);

/** The underlying consumer, for pause/resume/seek (kafka_types.h). */
ksnap_kafka_consumer_t *ksnap_exchange_reader_consumer(
    ksnap_exchange_reader_t *rd);

#endif /* KSNAP_EXCHANGE_H */
