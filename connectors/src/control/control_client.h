/*
 * The control-plane client of a worker (plugin/PROTOCOL.md section
 * 13.1): reads <job>.ksnap.control (read_committed: the coordinator writes it
 * transactionally, so an aborted or open transaction of a zombie
 * coordinator is never seen) and writes <job>.ksnap.acks (REGISTER,
 * HEARTBEAT, ACK, DECLINE, COMMITTED) with an idempotent producer.
 *
 * Use: ksnap_control_client_new(); ksnap_control_client_catch_up() reads
 * the control topic from the beginning to its current end (the last
 * stable offset read at the call) on the caller's thread, so a starting
 * worker learns the generation and the checkpoint to restore from; then
 * ksnap_control_client_start() reads on from there on the client's own
 * thread, handing every record's bytes (still encoded: each task decodes
 * its own copy) to the callback.
 *
 * Threading: new/catch_up/start/destroy from the owner's thread; the
 * callback runs on the client's thread; ksnap_control_client_send() from
 * any thread (librdkafka's produce is thread-safe; delivery reports are
 * served by the client's thread).
 */
#ifndef KSNAP_CONTROL_CLIENT_H
#define KSNAP_CONTROL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"
#include "ksnap/records.h"

#define KSNAP_CONTROL_TOPIC_SUFFIX ".ksnap.control"
#define KSNAP_ACKS_TOPIC_SUFFIX ".ksnap.acks"

typedef struct ksnap_control_client_s ksnap_control_client_t;

/** One control record's bytes (encoded ControlRecord) at @p offset. */
typedef void(ksnap_control_cb_t)(void *opaque, const void *rec, size_t len,
                                 int64_t offset);

/**
 * Creates the client of job @p conf (job.name): a read_committed consumer
 * of the control topic assigned at its beginning and the acks producer.
 * @returns the client or NULL (CONF_VALUE, KAFKA, NOMEM).
 */
ksnap_control_client_t *ksnap_control_client_new(const ksnap_conf_t *conf,
                                                 ksnap_error_t *error);

/** Stops the thread, flushes the acks producer (up to 5 s), frees. */
void ksnap_control_client_destroy(ksnap_control_client_t *cc);

/**
 * Reads the control topic up to its end as of this call (bounded by
 * @p timeout_ms), calling @p cb for each record on this thread.
 * @returns OK; TIMEOUT (retriable); CONNECT, KAFKA, NOT_FOUND.
 */
ksnap_err_t ksnap_control_client_catch_up(ksnap_control_client_t *cc,
                                          ksnap_control_cb_t *cb,
                                          void *opaque, int timeout_ms,
                                          ksnap_error_t *error);

/**
 * Reads the acks topic from its beginning to its current end with a
 * consumer of its own, calling @p cb with each record's bytes (encoded
 * AckRecord) on this thread: a starting worker looks for REGISTER records
 * of an earlier instance of its tasks in the current generation.
 */
ksnap_err_t ksnap_control_client_scan_acks(ksnap_control_client_t *cc,
                                           const ksnap_conf_t *conf,
                                           ksnap_control_cb_t *cb,
                                           void *opaque, int timeout_ms,
                                           ksnap_error_t *error);

/** Starts the reading thread: @p cb for every later record. */
ksnap_err_t ksnap_control_client_start(ksnap_control_client_t *cc,
                                       ksnap_control_cb_t *cb, void *opaque,
                                       ksnap_error_t *error);

/**
 * Encodes @p rec and produces it to the acks topic (asynchronously;
 * a failed delivery is logged). @returns OK, INVALID_ARG (encoding),
 * KAFKA (local queue full, fatal producer error).
 */
ksnap_err_t ksnap_control_client_send(ksnap_control_client_t *cc,
                                      const ksnap_ack_record_t *rec,
                                      ksnap_error_t *error);

/** Waits until every sent record is delivered. */
ksnap_err_t ksnap_control_client_flush(ksnap_control_client_t *cc,
                                       int timeout_ms, ksnap_error_t *error);

#endif /* KSNAP_CONTROL_CLIENT_H */
