/*
 * Transactional producer pool (see txn_pool.h for the slot state machine).
 * pool->lock guards every slot's state, epoch and delivery failure, and
 * the pool's fatal error; librdkafka calls that block run without it.
 */
#include "txn_pool.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/kafka_client.h"
#include "ksnap/log.h"

typedef struct slot_s {
  ksnap__txn_pool_t *pool;
  rd_kafka_t *rk;
  char *txn_id;
  ksnap__slot_state_t state;
  int64_t epoch;
  int delivery_failed;
  char failure[256];
} slot_t;

struct ksnap__txn_pool_s {
  pthread_mutex_t lock;
  slot_t *slots;
  int size;
  ksnap_error_t dead; /* code != OK: fatal error, the pool is unusable */
};

static const char *state_name(ksnap__slot_state_t s) {
  return s == KSNAP__SLOT_IDLE ? "IDLE"
         : s == KSNAP__SLOT_OPEN ? "OPEN"
                                 : "PRECOMMITTED";
}

/* Moves @p slot to @p to (under lock). */
static void set_state(slot_t *slot, ksnap__slot_state_t to, int64_t epoch) {
  KSNAP_DBG(SINK, "SINK", "%s: %s -> %s (epoch %" PRId64 ")", slot->txn_id,
            state_name(slot->state), state_name(to), epoch);
  slot->state = to;
  slot->epoch = to == KSNAP__SLOT_IDLE ? -1 : epoch;
  if (to == KSNAP__SLOT_IDLE)
    slot->delivery_failed = 0;
}

/* Refuses a call in the wrong state, loudly. Under lock. */
static ksnap_err_t expect(slot_t *slot, ksnap__slot_state_t a,
                          ksnap__slot_state_t b, const char *what,
                          ksnap_error_t *error) {
  if (slot->pool->dead.code) {
    if (error)
      *error = slot->pool->dead;
    return slot->pool->dead.code;
  }
  if (slot->state == a || slot->state == b)
    return KSNAP_ERR_OK;
  KSNAP_ERR("SINK", "%s: illegal %s in state %s", slot->txn_id, what,
            state_name(slot->state));
  return ksnap_error_set(error, KSNAP_ERR_STATE, "%s: %s refused in state %s",
                         slot->txn_id, what, state_name(slot->state));
}

/*
 * THE handler of transactional errors (librdkafka's examples/transactions.c
 * pattern, once), for an error already classified by kafka_client.c:
 * fatal -> the pool is dead; abortable -> abort the slot's transaction,
 * slot IDLE; retriable or other -> state unchanged. @returns the code.
 */
static ksnap_err_t settle_err(slot_t *slot, ksnap_error_t *e, int timeout_ms,
                              ksnap_error_t *error) {
  ksnap__txn_pool_t *pool = slot->pool;

  if (e->code == KSNAP_ERR_TXN_ABORTABLE) {
    rd_kafka_error_t *aerr = rd_kafka_abort_transaction(slot->rk, timeout_ms);
    ksnap_error_t ae;

    KSNAP_WARN("SINK", "%s: aborting epoch %" PRId64, e->msg, slot->epoch);
    if (aerr) {
      ksnap__kafka_error(&ae, aerr, "abort after an abortable error");
      ksnap_error_prefix(&ae, "%s", slot->txn_id);
      return settle_err(slot, &ae, timeout_ms, error);
    }
    pthread_mutex_lock(&pool->lock);
    set_state(slot, KSNAP__SLOT_IDLE, -1);
    pthread_mutex_unlock(&pool->lock);
  } else if (e->fatal) {
    KSNAP_ERR("SINK", "%s", e->msg);
    pthread_mutex_lock(&pool->lock);
    if (!pool->dead.code)
      pool->dead = *e;
    pthread_mutex_unlock(&pool->lock);
  }
  if (error)
    *error = *e;
  return e->code;
}

/* settle_err() for a librdkafka error object (destroyed here). */
static ksnap_err_t settle(slot_t *slot, rd_kafka_error_t *kerr,
                          const char *what, int timeout_ms,
                          ksnap_error_t *error) {
  ksnap_error_t e;
  char ctx[512];

  if (!kerr)
    return KSNAP_ERR_OK;
  snprintf(ctx, sizeof(ctx), "%s: %s", slot->txn_id, what);
  ksnap__kafka_error(&e, kerr, ctx);
  return settle_err(slot, &e, timeout_ms, error);
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op) {
  slot_t *slot = ksnap__kafka_opaque(rk);

  (void)op;
  if (!m->err)
    return;
  pthread_mutex_lock(&slot->pool->lock);
  if (!slot->delivery_failed) {
    slot->delivery_failed = 1;
    snprintf(slot->failure, sizeof(slot->failure),
             "delivery to %s [%d] failed: %s", rd_kafka_topic_name(m->rkt),
             (int)m->partition, rd_kafka_err2str(m->err));
  }
  pthread_mutex_unlock(&slot->pool->lock);
}

static ksnap_err_t slot_new(ksnap__txn_pool_t *pool, slot_t *slot,
                            const ksnap_conf_t *conf, ksnap_error_t *error) {
  const char *forced[] = {"transactional.id", slot->txn_id, NULL};
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, NULL, forced, dr_cb, slot};

  slot->pool = pool;
  slot->epoch = -1;
  if (!(slot->rk = ksnap__kafka_new(conf, &opts, error)))
    return error ? error->code : KSNAP_ERR_KAFKA;
  return KSNAP_ERR_OK;
}

/* One slot's init_transactions, on a thread of its own: it fences every
 * older producer with the slot's id and aborts its transaction, a round
 * trip or more to the transaction coordinator (longer while the broker
 * completes the abort of a killed producer's transaction), so the slots
 * of a pool fence at the same time: a restore waits for the slowest, not
 * for the sum. */
typedef struct fence_s {
  slot_t *slot;
  int timeout_ms;
  rd_kafka_error_t *kerr;
  pthread_t thread;
  int started;
} fence_t;

static void *fence_run(void *arg) {
  fence_t *f = arg;

  f->kerr = rd_kafka_init_transactions(f->slot->rk, f->timeout_ms);
  return NULL;
}

static ksnap_err_t fence_all(ksnap__txn_pool_t *pool, int timeout_ms,
                             ksnap_error_t *error) {
  fence_t *f = calloc((size_t)pool->size, sizeof(*f));
  ksnap_err_t err = KSNAP_ERR_OK;

  if (!f)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int i = 0; i < pool->size; i++) {
    f[i] = (fence_t){&pool->slots[i], timeout_ms, NULL, 0, 0};
    if (i > 0) /* slot 0 on this thread, and any a thread cannot take */
      f[i].started = !pthread_create(&f[i].thread, NULL, fence_run, &f[i]);
  }
  for (int i = 0; i < pool->size; i++)
    if (!f[i].started)
      fence_run(&f[i]);
  for (int i = 0; i < pool->size; i++)
    if (f[i].started)
      pthread_join(f[i].thread, NULL);
  for (int i = 0; i < pool->size; i++) {
    if (err) {
      if (f[i].kerr)
        rd_kafka_error_destroy(f[i].kerr);
    } else {
      err = settle(&pool->slots[i], f[i].kerr, "init_transactions",
                   timeout_ms, error);
    }
  }
  free(f);
  return err;
}

ksnap__txn_pool_t *ksnap__txn_pool_new(const ksnap_conf_t *conf,
                                       const char *prefix, int size,
                                       int timeout_ms, ksnap_error_t *error) {
  ksnap__txn_pool_t *pool = calloc(1, sizeof(*pool));
  char id[512];

  if (!pool || !(pool->slots = calloc((size_t)size, sizeof(slot_t)))) {
    free(pool);
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&pool->lock, NULL);
  pool->size = size;
  for (int i = 0; i < size; i++) {
    snprintf(id, sizeof(id), "%s.%d", prefix, i);
    if (!(pool->slots[i].txn_id = strdup(id)))
      ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    if (!pool->slots[i].txn_id ||
        slot_new(pool, &pool->slots[i], conf, error)) {
      ksnap__txn_pool_destroy(pool);
      return NULL;
    }
  }
  if (fence_all(pool, timeout_ms, error)) {
    ksnap__txn_pool_destroy(pool);
    return NULL;
  }
  return pool;
}

/* How long the destroy of a pool waits for the abort of a slot's open
 * transaction. */
#define DESTROY_ABORT_MS 1000

/* A transaction still open at the destroy is aborted first: its records
 * are worth nothing (the epoch is replayed or redone after a restore),
 * and the abort waits for the requests in flight. librdkafka 2.0 asserts
 * (txn_req_cnt > 0, rdkafka_txnmgr.c) when a producer is destroyed while
 * the AddPartitionsToTxn of a transaction's first partition is in flight,
 * which a task that fails mid-epoch otherwise meets now and then. A
 * fenced or unreachable producer fails the abort, within the bound. */
static void abort_open(slot_t *slot) {
  rd_kafka_error_t *err;

  if (!slot->rk || slot->state != KSNAP__SLOT_OPEN || slot->pool->dead.code)
    return;
  if ((err = rd_kafka_abort_transaction(slot->rk, DESTROY_ABORT_MS))) {
    KSNAP_DBG(SINK, "SINK", "%s: abort at close: %s", slot->txn_id,
                rd_kafka_error_string(err));
    rd_kafka_error_destroy(err);
  }
}

void ksnap__txn_pool_destroy(ksnap__txn_pool_t *pool) {
  if (!pool)
    return;
  for (int i = 0; i < pool->size; i++) {
    abort_open(&pool->slots[i]);
    ksnap__kafka_destroy(pool->slots[i].rk);
    free(pool->slots[i].txn_id);
  }
  free(pool->slots);
  pthread_mutex_destroy(&pool->lock);
  free(pool);
}

int ksnap__txn_pool_size(const ksnap__txn_pool_t *pool) {
  return pool->size;
}

const char *ksnap__txn_pool_id(const ksnap__txn_pool_t *pool, int slot) {
  return pool->slots[slot].txn_id;
}

ksnap__slot_state_t ksnap__txn_pool_state(ksnap__txn_pool_t *pool, int slot,
                                          int64_t *epochp) {
  ksnap__slot_state_t st;

  pthread_mutex_lock(&pool->lock);
  st = pool->slots[slot].state;
  if (epochp)
    *epochp = pool->slots[slot].epoch;
  pthread_mutex_unlock(&pool->lock);
  return st;
}

ksnap_err_t ksnap__txn_pool_dead(ksnap__txn_pool_t *pool,
                                 ksnap_error_t *error) {
  ksnap_err_t code;

  pthread_mutex_lock(&pool->lock);
  code = pool->dead.code;
  if (code && error)
    *error = pool->dead;
  pthread_mutex_unlock(&pool->lock);
  return code;
}

/* expect() under the lock. */
static ksnap_err_t check(slot_t *slot, ksnap__slot_state_t a,
                         ksnap__slot_state_t b, const char *what,
                         ksnap_error_t *error) {
  ksnap_err_t code;

  pthread_mutex_lock(&slot->pool->lock);
  code = expect(slot, a, b, what, error);
  pthread_mutex_unlock(&slot->pool->lock);
  return code;
}

ksnap_err_t ksnap__txn_pool_begin(ksnap__txn_pool_t *pool, int i,
                                  int64_t epoch, ksnap_error_t *error) {
  slot_t *slot = &pool->slots[i];
  ksnap_err_t code;

  if ((code = check(slot, KSNAP__SLOT_IDLE, KSNAP__SLOT_IDLE, "begin", error)))
    return code;
  if ((code = settle(slot, rd_kafka_begin_transaction(slot->rk),
                     "begin_transaction", 0, error)))
    return code;
  pthread_mutex_lock(&pool->lock);
  set_state(slot, KSNAP__SLOT_OPEN, epoch);
  pthread_mutex_unlock(&pool->lock);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__txn_pool_produce(ksnap__txn_pool_t *pool, int i,
                                    const char *topic, int32_t partition,
                                    const void *key, size_t key_len,
                                    const void *value, size_t value_len,
                                    int64_t timestamp_ms,
                                    const ksnap_kafka_header_t *headers,
                                    size_t nheaders, ksnap_error_t *error) {
  slot_t *slot = &pool->slots[i];
  rd_kafka_headers_t *h = NULL;
  rd_kafka_resp_err_t err;

  if (nheaders) {
    h = rd_kafka_headers_new(nheaders);
    for (size_t k = 0; k < nheaders; k++)
      rd_kafka_header_add(h, headers[k].name, -1, headers[k].value,
                          (ssize_t)headers[k].len);
  }
  err = rd_kafka_producev(
      slot->rk, RD_KAFKA_V_TOPIC(topic),
      RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
      RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_VALUE((void *)value, value_len),
      RD_KAFKA_V_TIMESTAMP(timestamp_ms > 0 ? timestamp_ms : 0),
      RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_END);
  rd_kafka_poll(slot->rk, 0); /* serve delivery reports */
  if (!err)
    return KSNAP_ERR_OK;
  if (h)
    rd_kafka_headers_destroy(h);
  {
    ksnap_error_t e;
    char ctx[512];

    snprintf(ctx, sizeof(ctx), "%s: produce to %s", slot->txn_id, topic);
    ksnap__kafka_resp_error(&e, slot->rk, err, ctx);
    return settle_err(slot, &e, 30000, error);
  }
}

ksnap_err_t ksnap__txn_pool_flush(ksnap__txn_pool_t *pool, int i,
                                  int timeout_ms, ksnap_error_t *error) {
  slot_t *slot = &pool->slots[i];
  rd_kafka_resp_err_t err;
  char failure[256];
  int failed;
  ksnap_err_t code;

  if ((code = check(slot, KSNAP__SLOT_OPEN, KSNAP__SLOT_PRECOMMITTED,
                    "flush", error)))
    return code;
  err = rd_kafka_flush(slot->rk, timeout_ms);
  pthread_mutex_lock(&pool->lock);
  failed = slot->delivery_failed;
  memcpy(failure, slot->failure, sizeof(failure));
  pthread_mutex_unlock(&pool->lock);
  if (failed) { /* the transaction is abortable now: abort it */
    ksnap_error_t e;
    ksnap_error_set(&e, KSNAP_ERR_TXN_ABORTABLE,
                    "%s: pre-commit: transaction must be aborted: %s",
                    slot->txn_id, failure);
    return settle_err(slot, &e, timeout_ms, error);
  }
  if (err)
    return ksnap__kafka_resp_error(error, slot->rk, err, "pre-commit flush");
  pthread_mutex_lock(&pool->lock);
  set_state(slot, KSNAP__SLOT_PRECOMMITTED, slot->epoch);
  pthread_mutex_unlock(&pool->lock);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__txn_pool_commit(ksnap__txn_pool_t *pool, int i,
                                   int timeout_ms, ksnap_error_t *error) {
  slot_t *slot = &pool->slots[i];
  ksnap_err_t code;

  if ((code = check(slot, KSNAP__SLOT_PRECOMMITTED, KSNAP__SLOT_PRECOMMITTED,
                    "commit", error)))
    return code;
  if ((code = settle(slot, rd_kafka_commit_transaction(slot->rk, timeout_ms),
                     "commit_transaction", timeout_ms, error)))
    return code;
  pthread_mutex_lock(&pool->lock);
  set_state(slot, KSNAP__SLOT_IDLE, -1);
  pthread_mutex_unlock(&pool->lock);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap__txn_pool_abort(ksnap__txn_pool_t *pool, int i,
                                  int timeout_ms, ksnap_error_t *error) {
  slot_t *slot = &pool->slots[i];
  ksnap_err_t code;

  if ((code = check(slot, KSNAP__SLOT_OPEN, KSNAP__SLOT_PRECOMMITTED,
                    "abort", error)))
    return code;
  if ((code = settle(slot, rd_kafka_abort_transaction(slot->rk, timeout_ms),
                     "abort_transaction", timeout_ms, error)))
    return code;
  pthread_mutex_lock(&pool->lock);
  set_state(slot, KSNAP__SLOT_IDLE, -1);
  pthread_mutex_unlock(&pool->lock);
  return KSNAP_ERR_OK;
}

void ksnap__txn_pool_warm(ksnap__txn_pool_t *pool, const char *topic,
                          int timeout_ms) {
  for (int i = 0; i < pool->size; i++)
    ksnap__kafka_partition_count(pool->slots[i].rk, topic, timeout_ms, NULL);
}
