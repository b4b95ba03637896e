/*
 * The coordinator's Kafka I/O (no decisions here: coord_sm.c decides,
 * coord_driver.c drives):
 *  - the control producer: transactional, with the FIXED id
 *    "<job>.ksnap.coordinator", so init_transactions fences any older
 *    coordinator of the job (a zombie's next write fails fatally) and
 *    aborts its open transaction; every control record is written and
 *    committed in its own transaction;
 *  - reading a job topic's history (read_committed, to the end);
 *  - the ack-topic consumer (partition 0, from the beginning or the end);
 *  - ksnap_coord_request_send(): the CLI's REQUEST record on the ack topic.
 *
 * Threading: every object belongs to one thread.
 */
#ifndef KSNAP_COORD_IO_H
#define KSNAP_COORD_IO_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/kafka_types.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/records.h"

#define KSNAP_COORD_CONTROL_SUFFIX ".ksnap.control"
#define KSNAP_COORD_ACKS_SUFFIX ".ksnap.acks"
#define KSNAP_COORD_TXN_SUFFIX ".ksnap.coordinator"

typedef struct ksnap__coord_producer_s ksnap__coord_producer_t;

/** "<job><suffix>" into @p buf. */
void ksnap__coord_topic(char *buf, size_t size, const char *job,
                        const char *suffix);

/**
 * Creates the control producer and calls init_transactions (fencing).
 * @returns NULL with @p error set (retriable CONNECT/TIMEOUT, or fatal).
 */
ksnap__coord_producer_t *ksnap__coord_producer_new(const ksnap_conf_t *conf,
                                                   const char *job,
                                                   int timeout_ms,
                                                   ksnap_error_t *error);
void ksnap__coord_producer_destroy(ksnap__coord_producer_t *p);

/**
 * Writes @p rec to the control topic in its own transaction and commits
 * it. KSNAP_ERR_OK means committed (visible to read_committed readers).
 * @returns KSNAP_ERR_TXN_ABORTABLE (the transaction was aborted: NOT
 * written), a fatal error (error->fatal: KSNAP_ERR_FENCED when a newer
 * coordinator took over; the producer is unusable), or a retriable one
 * after the commit's own retries (outcome unknown: treat as fatal).
 */
ksnap_err_t ksnap__coord_producer_write(ksnap__coord_producer_t *p,
                                        const ksnap_control_record_t *rec,
                                        int timeout_ms, ksnap_error_t *error);

/** Callback of ksnap__coord_read_history(): one record; non-zero stops. */
typedef int(ksnap__coord_rec_cb_t)(void *opaque, const void *buf,
                                   size_t len, int64_t timestamp_ms);

/**
 * Reads partition 0 of @p topic with read_committed from the beginning
 * to the last stable offset at the time of the call.
 * @returns KSNAP_ERR_OK, KSNAP_ERR_TIMEOUT, a Kafka error.
 */
ksnap_err_t ksnap__coord_read_history(const ksnap_conf_t *conf,
                                      const char *topic, int timeout_ms,
                                      ksnap__coord_rec_cb_t *cb, void *opaque,
                                      ksnap_error_t *error);

/** Opens a read_committed consumer on partition 0 of @p topic at
 *  @p offset (KSNAP_OFFSET_BEGINNING / KSNAP_OFFSET_END / absolute);
 *  @p eof: deliver partition-EOF events (history reads). */
ksnap_kafka_consumer_t *ksnap__coord_consumer_open(const ksnap_conf_t *conf,
                                                   const char *topic,
                                                   int64_t offset, int eof,
                                                   ksnap_error_t *error);

/** Polls up to @p timeout_ms; every data record goes to @p cb.
 *  @returns records handed over or -1 with @p error set. */
int ksnap__coord_consumer_poll(ksnap_kafka_consumer_t *c, int timeout_ms,
                               ksnap__coord_rec_cb_t *cb, void *opaque,
                               ksnap_error_t *error);

/**
 * Writes a REQUEST(@p kind) to the ack topic of the job in @p conf
 * (idempotent producer, flushed before returning): `ksnap checkpoint
 * trigger` and `ksnap savepoint`. @returns KSNAP_ERR_OK or a Kafka error.
 */
ksnap_err_t ksnap_coord_request_send(const ksnap_conf_t *conf,
                                     ksnap_request_kind_t kind,
                                     const char *requester, int timeout_ms,
                                     ksnap_error_t *error);

#endif /* KSNAP_COORD_IO_H */
