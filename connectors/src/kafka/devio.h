/*
 * Small Kafka helpers for `ksnap run` and `ksnap verify`: produce a text
 * file's lines (or single records) to a topic, read a topic's committed
 * content to its end, and measure a consumer group's lag.
 *
 * Threading: any thread; each call owns its client, and a producer
 * belongs to one thread.
 */
#ifndef KSNAP_DEVIO_H
#define KSNAP_DEVIO_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"

/**
 * Called by ksnap_devio_produce_file() every KSNAP_DEVIO_PACE_LINES lines
 * with the number produced so far; it may wait (pacing the producer).
 * @returns 0 to go on, non-zero to stop producing.
 */
typedef int(ksnap_devio_pace_cb_t)(void *opaque, int64_t produced);

#define KSNAP_DEVIO_PACE_LINES 1000

/**
 * Produces every line of the file at @p path (without its newline; no
 * key) to @p topic with the job's kafka.* settings, idempotently, and
 * waits for every delivery (bounded by @p timeout_ms). @p pace (may be
 * NULL) is called as documented above.
 * @returns OK with *countp lines; IO (unreadable file); KAFKA / TIMEOUT;
 * INTERRUPTED when @p pace stopped it.
 */
ksnap_err_t ksnap_devio_produce_file(const ksnap_conf_t *conf,
                                     const char *topic, const char *path,
                                     int timeout_ms,
                                     ksnap_devio_pace_cb_t *pace,
                                     void *opaque, int64_t *countp,
                                     ksnap_error_t *error);

/** A producer of records without key, for test input. */
typedef struct ksnap_devio_producer_s ksnap_devio_producer_t;

/**
 * An idempotent producer with the job's kafka.* settings.
 * @returns it (free with ksnap_devio_producer_destroy()), or NULL with
 * CONF_VALUE / KAFKA / NOMEM in @p error.
 */
ksnap_devio_producer_t *ksnap_devio_producer_new(const ksnap_conf_t *conf,
                                                 ksnap_error_t *error);

/**
 * Queues one record without key (@p value copied) for @p topic, waiting
 * while the producer's queue is full.
 * @returns OK; KAFKA (refused, or an earlier delivery failed).
 */
ksnap_err_t ksnap_devio_produce(ksnap_devio_producer_t *producer,
                                const char *topic, const void *value,
                                size_t len, ksnap_error_t *error);

/**
 * Waits until every queued record is delivered (at most @p timeout_ms).
 * @returns OK; TIMEOUT (retriable); KAFKA (the first failed delivery).
 */
ksnap_err_t ksnap_devio_producer_flush(ksnap_devio_producer_t *producer,
                                       int timeout_ms, ksnap_error_t *error);

/** Frees @p producer without waiting. NULL is a no-op. */
void ksnap_devio_producer_destroy(ksnap_devio_producer_t *producer);

/**
 * The lag of consumer group @p group on @p topic: the sum over its
 * partitions of the end offset (high watermark) minus the offset the
 * group committed, or minus the partition's first offset where it
 * committed none. Reads the committed offsets without
 * joining the group.
 * @returns OK with *lagp; NOT_FOUND (no such topic); KAFKA; TIMEOUT.
 */
ksnap_err_t ksnap_devio_group_lag(const ksnap_conf_t *conf,
                                  const char *group, const char *topic,
                                  int timeout_ms, int64_t *lagp,
                                  ksnap_error_t *error);

/** One record of ksnap_devio_read_topic(); key/value may be NULL. */
typedef void(ksnap_devio_record_cb_t)(void *opaque, const void *key,
                                      size_t key_len, const void *value,
                                      size_t value_len);

/**
 * Reads every partition of @p topic from the beginning to its end with
 * isolation.level=read_committed (on a real broker: committed records
 * only; the embedded mock cluster shows every record), calling @p cb per
 * record in partition order.
 * @returns OK; NOT_FOUND (no such topic); KAFKA; TIMEOUT (not at the end
 * within @p timeout_ms).
 */
ksnap_err_t ksnap_devio_read_topic(const ksnap_conf_t *conf,
                                   const char *topic, int timeout_ms,
                                   ksnap_devio_record_cb_t *cb, void *opaque,
                                   ksnap_error_t *error);

#endif /* KSNAP_DEVIO_H */
