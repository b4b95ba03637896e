/*
 * The transactional sink's producer pool: K producers with fixed
 * transactional ids "<prefix>.<slot>" (prefix "<job>.<stage>.<task>"),
 * one open transaction each. Epoch N uses slot N mod K.
 *
 * Slot states and transitions (each one function below):
 *
 *   IDLE --begin(N)--> OPEN --flush--> PRECOMMITTED --commit--> IDLE
 *    ^                  |                   |
 *    +-----abort--------+-------abort-------+
 *   any --fatal error (fenced, ...)--> the whole pool is DEAD
 *
 * Every librdkafka transactional error goes through ONE function,
 * settle() in txn_pool.c (the pattern of librdkafka's
 * examples/transactions.c): a fatal error kills the pool (every later
 * call returns the same fatal error); an abortable one aborts the slot's
 * transaction (slot back to IDLE) and reports KSNAP_ERR_TXN_ABORTABLE;
 * a retriable one leaves the slot as it was so the call can be repeated.
 *
 * Threading: the pool's state is guarded by its mutex; the blocking calls
 * (init, flush, commit, abort) run without it. A slot is driven by one
 * thread at a time (the sink guarantees it, see sink.h).
 */
#ifndef KSNAP_TXN_POOL_H
#define KSNAP_TXN_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "kafka/kafka_types.h"
#include "ksnap/conf.h"
#include "ksnap/error.h"

typedef enum ksnap__slot_state_e {
  KSNAP__SLOT_IDLE,
  KSNAP__SLOT_OPEN,
  KSNAP__SLOT_PRECOMMITTED,
} ksnap__slot_state_t;

typedef struct ksnap__txn_pool_s ksnap__txn_pool_t;

/**
 * Creates @p size producers and calls init_transactions on EVERY one of
 * them before returning, fencing any older instance with the same ids and
 * aborting its open transactions. @returns the pool or NULL (error set;
 * fatal for fencing problems, CONNECT/TIMEOUT retriable).
 */
ksnap__txn_pool_t *ksnap__txn_pool_new(const ksnap_conf_t *conf,
                                       const char *prefix, int size,
                                       int timeout_ms, ksnap_error_t *error);

void ksnap__txn_pool_destroy(ksnap__txn_pool_t *pool);

int ksnap__txn_pool_size(const ksnap__txn_pool_t *pool);

/** The transactional.id of @p slot (owned by the pool). */
const char *ksnap__txn_pool_id(const ksnap__txn_pool_t *pool, int slot);

/** State and epoch of @p slot (epoch -1 when IDLE). */
ksnap__slot_state_t ksnap__txn_pool_state(ksnap__txn_pool_t *pool, int slot,
                                          int64_t *epochp);

/** @returns the pool's fatal error code, KSNAP_ERR_OK while alive. */
ksnap_err_t ksnap__txn_pool_dead(ksnap__txn_pool_t *pool,
                                 ksnap_error_t *error);

/** IDLE -> OPEN for @p epoch. KSNAP_ERR_STATE if the slot is not idle. */
ksnap_err_t ksnap__txn_pool_begin(ksnap__txn_pool_t *pool, int slot,
                                  int64_t epoch, ksnap_error_t *error);

/** Produces one record into @p slot's open transaction, with Kafka
 * timestamp @p timestamp_ms (CreateTime; <= 0: the producer's clock). */
ksnap_err_t ksnap__txn_pool_produce(ksnap__txn_pool_t *pool, int slot,
                                    const char *topic, int32_t partition,
                                    const void *key, size_t key_len,
                                    const void *value, size_t value_len,
                                    int64_t timestamp_ms,
                                    const ksnap_kafka_header_t *headers,
                                    size_t nheaders, ksnap_error_t *error);

/** OPEN -> PRECOMMITTED once every record is delivered. */
ksnap_err_t ksnap__txn_pool_flush(ksnap__txn_pool_t *pool, int slot,
                                  int timeout_ms, ksnap_error_t *error);

/** PRECOMMITTED -> IDLE, committing; retriable errors keep the state. */
ksnap_err_t ksnap__txn_pool_commit(ksnap__txn_pool_t *pool, int slot,
                                   int timeout_ms, ksnap_error_t *error);

/** OPEN/PRECOMMITTED -> IDLE, aborting. */
ksnap_err_t ksnap__txn_pool_abort(ksnap__txn_pool_t *pool, int slot,
                                  int timeout_ms, ksnap_error_t *error);

/**
 * Loads @p topic's metadata into every slot's producer (best effort), so
 * the first transaction writing to it does not wait for it.
 */
void ksnap__txn_pool_warm(ksnap__txn_pool_t *pool, const char *topic,
                          int timeout_ms);

#endif /* KSNAP_TXN_POOL_H */
