/*
 * Kafka client wrapper: the one place where connector modules create
 * librdkafka handles from a ksnap_conf_t, route librdkafka's log lines into
 * ksnap's logger, and map librdkafka errors onto ksnap_error_t.
 *
 * Only connector modules (connectors/src) include this header: it exposes
 * librdkafka types. Everything else talks to the connectors through
 * headers free of librdkafka (exchange.h, source.h, sink.h, progress.h,
 * topics.h); the layering check (tests/layering) fails otherwise.
 *
 * Configuration order for every client:
 *   1. opts->defaults (e.g. group.id=<job>): the user may override them;
 *   2. every kafka.* property of the job, prefix stripped;
 *   3. opts->forced (e.g. enable.idempotence=true, isolation.level): the
 *      semantics depend on them, so the user cannot override them.
 *
 * Threading: ksnap__kafka_new()/destroy() from the owner's thread. The
 * log callback runs on librdkafka's internal threads and only calls the
 * thread-safe ksnap_log(). ksnap__kafka_error() and friends are reentrant.
 */
#ifndef KSNAP_KAFKA_CLIENT_H
#define KSNAP_KAFKA_CLIENT_H

#include <librdkafka/rdkafka.h>

#include "ksnap/conf.h"
#include "ksnap/error.h"

typedef void(ksnap__kafka_dr_cb_t)(rd_kafka_t *rk,
                                   const rd_kafka_message_t *rkmessage,
                                   void *opaque);

typedef struct ksnap__kafka_opts_s {
  rd_kafka_type_t type;
  const char *const *defaults; /**< NULL-terminated key, value pairs */
  const char *const *forced;   /**< NULL-terminated key, value pairs */
  ksnap__kafka_dr_cb_t *dr_msg_cb; /**< producers: delivery reports */
  void *opaque; /**< handed to dr_msg_cb; see ksnap__kafka_opaque() */
} ksnap__kafka_opts_t;

/**
 * Creates a client. @p conf may be NULL (only defaults and forced keys).
 * @returns the handle (free with ksnap__kafka_destroy()), or NULL with
 * KSNAP_ERR_CONF_VALUE (a property librdkafka refused, message naming
 * it, secret values never included) or KSNAP_ERR_KAFKA.
 */
rd_kafka_t *ksnap__kafka_new(const ksnap_conf_t *conf,
                             const ksnap__kafka_opts_t *opts,
                             ksnap_error_t *error);

/** Destroys @p rk (NULL is a no-op) and the wrapper's context. */
void ksnap__kafka_destroy(rd_kafka_t *rk);

/** @returns opts->opaque of ksnap__kafka_new(). */
void *ksnap__kafka_opaque(rd_kafka_t *rk);

/**
 * THE error classifier (fatal vs abortable vs retriable, as in
 * librdkafka's examples/transactions.c). Fills @p error from @p kerr,
 * prefixed with @p what, and DESTROYS @p kerr:
 *  - fatal (rd_kafka_error_is_fatal, or fenced): KSNAP_ERR_FENCED when a
 *    newer instance fenced this producer, else KSNAP_ERR_KAFKA; fatal=1:
 *    the client is unusable, the owner must be recreated;
 *  - txn_requires_abort: KSNAP_ERR_TXN_ABORTABLE: abort the transaction,
 *    the client stays usable;
 *  - broker unreachable: KSNAP_ERR_CONNECT, retriable=1;
 *  - a timeout: KSNAP_ERR_TIMEOUT, retriable=1;
 *  - unknown topic or partition: KSNAP_ERR_NOT_FOUND;
 *  - other retriable errors: KSNAP_ERR_KAFKA with retriable=1;
 *  - anything else: KSNAP_ERR_KAFKA.
 * @returns the code set; KSNAP_ERR_OK if @p kerr is NULL.
 */
ksnap_err_t ksnap__kafka_error(ksnap_error_t *error, rd_kafka_error_t *kerr,
                               const char *what);

/**
 * A login the broker refused (wrong SASL credentials) or a broker
 * certificate this process did not trust in the last minute, as
 * librdkafka's error callback saw it (it retries those forever itself):
 * sets @p error (KSNAP_ERR_AUTH or KSNAP_ERR_TLS, fatal, not retriable,
 * prefixed with @p what) and returns its code; else KSNAP_ERR_OK. Waits
 * on the broker call it between slices so that they end at once.
 */
ksnap_err_t ksnap__kafka_security_failure(ksnap_error_t *error,
                                          const char *what);

/**
 * The same classification for a plain response code. @p rk (may be NULL)
 * resolves RD_KAFKA_RESP_ERR__FATAL to the underlying fatal error.
 */
ksnap_err_t ksnap__kafka_resp_error(ksnap_error_t *error, rd_kafka_t *rk,
                                    rd_kafka_resp_err_t err,
                                    const char *what);

/**
 * @returns the partition count of @p topic (metadata request), or -1 with
 * KSNAP_ERR_NOT_FOUND (no such topic) / a Kafka error in @p error.
 */
int ksnap__kafka_partition_count(rd_kafka_t *rk, const char *topic,
                                 int timeout_ms, ksnap_error_t *error);

/** Formats the sink/writer task id "stage[task]" into @p buf. */
void ksnap__kafka_task_id(char *buf, size_t size, const char *stage,
                          int task);

#endif /* KSNAP_KAFKA_CLIENT_H */
