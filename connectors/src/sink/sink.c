/*
 * Transactional Kafka sink (see sink.h): epoch bookkeeping over the
 * producer pool (txn_pool.c), progress records, commit order, and the
 * transaction-timeout check. current/last_begun belong to the task thread;
 * last_committed and progress_epoch to the committing thread.
 */
#include "sink.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf_job.h"
#include "kafka/kafka_client.h"
#include "ksnap/log.h"
#include "txn_pool.h"

struct ksnap_sink_s {
  ksnap__txn_pool_t *pool;
  char task_id[256];
  char *progress_topic;
  int64_t current;        /* epoch produce goes to, -1 none */
  int64_t last_begun;     /* -1 none */
  int64_t last_committed; /* -1 none */
  int64_t progress_epoch; /* epoch whose progress record is written */
};

/* The rule is the configuration's (conf/conf_job.h), so that the job's
 * preflight reports it in the same words before anything starts. */
ksnap_err_t ksnap_sink_check_txn_timeout(const ksnap_conf_t *conf,
                                         ksnap_error_t *error) {
  char msg[1024];

  if (!ksnap__conf_check_txn_timeout(conf, msg, sizeof(msg)))
    return KSNAP_ERR_OK;
  return ksnap_error_set(error, KSNAP_ERR_CONF_VALUE, "%s", msg);
}

ksnap_sink_t *ksnap_sink_new(const ksnap_conf_t *conf, const char *stage,
                             int task, int timeout_ms, ksnap_error_t *error) {
  ksnap_sink_t *sink;
  const char *job = NULL;
  int64_t size = 0;
  char prefix[600];

  if (ksnap_sink_check_txn_timeout(conf, error))
    return NULL;
  if (ksnap_conf_get_str(conf, "job.name", &job) || !job ||
      ksnap_conf_get_int(conf, "sink.producer-pool-size", &size)) {
    ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                    "missing required property \"job.name\"");
    return NULL;
  }
  if (!(sink = calloc(1, sizeof(*sink)))) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  sink->current = sink->last_begun = sink->last_committed = -1;
  sink->progress_epoch = -1;
  ksnap__kafka_task_id(sink->task_id, sizeof(sink->task_id), stage, task);
  snprintf(prefix, sizeof(prefix), "%s.%s.%d", job, stage, task);
  sink->progress_topic = malloc(strlen(job) + sizeof(KSNAP_SINK_PROGRESS_SUFFIX));
  if (sink->progress_topic)
    sprintf(sink->progress_topic, "%s%s", job, KSNAP_SINK_PROGRESS_SUFFIX);
  if (!sink->progress_topic ||
      !(sink->pool = ksnap__txn_pool_new(conf, prefix, (int)size, timeout_ms,
                                         error))) {
    if (!sink->progress_topic)
      ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    ksnap_sink_destroy(sink);
    return NULL;
  }
  ksnap__txn_pool_warm(sink->pool, sink->progress_topic, timeout_ms);
  KSNAP_INFO("SINK", "%s: fenced transactional ids %s.{0..%" PRId64 "}",
             sink->task_id, prefix, size - 1);
  return sink;
}

void ksnap_sink_destroy(ksnap_sink_t *sink) {
  if (!sink)
    return;
  ksnap__txn_pool_destroy(sink->pool);
  free(sink->progress_topic);
  free(sink);
}

void ksnap_sink_warm_topic(ksnap_sink_t *sink, const char *topic,
                           int timeout_ms) {
  ksnap__txn_pool_warm(sink->pool, topic, timeout_ms);
}

const char *ksnap_sink_task_id(const ksnap_sink_t *sink) {
  return sink->task_id;
}

static int slot_of(const ksnap_sink_t *sink, int64_t epoch) {
  return (int)(epoch % ksnap__txn_pool_size(sink->pool));
}

const char *ksnap_sink_txn_id(const ksnap_sink_t *sink, int64_t epoch) {
  return ksnap__txn_pool_id(sink->pool, slot_of(sink, epoch));
}

int ksnap_sink_is_open(ksnap_sink_t *sink, int64_t epoch) {
  int64_t held;

  return epoch >= 0 &&
         ksnap__txn_pool_state(sink->pool, slot_of(sink, epoch), &held) ==
             KSNAP__SLOT_OPEN &&
         held == epoch;
}

ksnap_err_t ksnap_sink_begin(ksnap_sink_t *sink, int64_t epoch,
                             ksnap_error_t *error) {
  int slot;
  int64_t held;
  ksnap_err_t code;

  if (epoch < 0 || epoch <= sink->last_begun)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: epoch %" PRId64 " does not follow epoch %" PRId64,
                           sink->task_id, epoch, sink->last_begun);
  if ((code = ksnap__txn_pool_dead(sink->pool, error)))
    return code;
  /* partition order: the previous epoch's records must all be
   * acknowledged before a record of this one is sent (sink.h) */
  if (ksnap_sink_is_open(sink, sink->last_begun))
    return ksnap_error_set(
        error, KSNAP_ERR_STATE,
        "%s: epoch %" PRId64 " cannot begin before epoch %" PRId64 " is "
        "pre-committed or aborted: their records would interleave in a "
        "partition",
        sink->task_id, epoch, sink->last_begun);
  slot = slot_of(sink, epoch);
  if (ksnap__txn_pool_state(sink->pool, slot, &held) != KSNAP__SLOT_IDLE)
    return ksnap_error_set(
        error, KSNAP_ERR_STATE,
        "%s: producer pool exhausted: epoch %" PRId64 " needs slot %d (%s), "
        "which still holds pending epoch %" PRId64 "; at most "
        "sink.producer-pool-size=%d epochs can be pending (commit or abort "
        "the older ones first)",
        sink->task_id, epoch, slot, ksnap__txn_pool_id(sink->pool, slot), held,
        ksnap__txn_pool_size(sink->pool));
  if ((code = ksnap__txn_pool_begin(sink->pool, slot, epoch, error)))
    return code;
  sink->current = sink->last_begun = epoch;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_sink_produce(ksnap_sink_t *sink, const char *topic,
                               int32_t partition, const void *key,
                               size_t key_len, const void *value,
                               size_t value_len, int64_t timestamp_ms,
                               const ksnap_kafka_header_t *headers,
                               size_t nheaders, ksnap_error_t *error) {
  int64_t epoch;

  if (sink->current < 0 ||
      ksnap__txn_pool_state(sink->pool, slot_of(sink, sink->current),
                            &epoch) != KSNAP__SLOT_OPEN ||
      epoch != sink->current)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "%s: produce outside an open epoch", sink->task_id);
  return ksnap__txn_pool_produce(sink->pool, slot_of(sink, sink->current),
                                 topic, partition, key, key_len, value,
                                 value_len, timestamp_ms, headers, nheaders,
                                 error);
}

/* Checks that @p epoch is the one held by its slot. */
static ksnap_err_t held(ksnap_sink_t *sink, int64_t epoch, const char *what,
                        ksnap__slot_state_t *statep, ksnap_error_t *error) {
  int64_t e;
  ksnap_err_t code;

  if ((code = ksnap__txn_pool_dead(sink->pool, error)))
    return code;
  *statep = ksnap__txn_pool_state(sink->pool, slot_of(sink, epoch), &e);
  if (epoch < 0 || *statep == KSNAP__SLOT_IDLE || e != epoch)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "%s: %s of epoch %" PRId64 ": not pending",
                           sink->task_id, what, epoch);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_sink_precommit(ksnap_sink_t *sink, int64_t epoch,
                                 int timeout_ms, ksnap_error_t *error) {
  ksnap__slot_state_t st;
  ksnap_err_t code;

  if ((code = held(sink, epoch, "pre-commit", &st, error)))
    return code;
  return ksnap__txn_pool_flush(sink->pool, slot_of(sink, epoch), timeout_ms,
                               error);
}

int64_t ksnap_sink_oldest_pending(ksnap_sink_t *sink) {
  int64_t oldest = -1, e;

  for (int i = 0; i < ksnap__txn_pool_size(sink->pool); i++)
    if (ksnap__txn_pool_state(sink->pool, i, &e) != KSNAP__SLOT_IDLE &&
        (oldest < 0 || e < oldest))
      oldest = e;
  return oldest;
}

ksnap_err_t ksnap_sink_commit(ksnap_sink_t *sink, int64_t epoch,
                              const void *progress, size_t progress_len,
                              int timeout_ms, ksnap_error_t *error) {
  int slot = slot_of(sink, epoch);
  int64_t oldest = ksnap_sink_oldest_pending(sink);
  ksnap__slot_state_t st;
  ksnap_err_t code;

  if ((code = held(sink, epoch, "commit", &st, error)))
    return code;
  if (oldest != epoch)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "%s: commit of epoch %" PRId64 " refused: older "
                           "epoch %" PRId64 " is still pending (commits go "
                           "in epoch order)",
                           sink->task_id, epoch, oldest);
  if (st != KSNAP__SLOT_PRECOMMITTED)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "%s: commit of epoch %" PRId64 " refused: not "
                           "pre-committed",
                           sink->task_id, epoch);
  if (sink->progress_epoch != epoch) {
    if ((code = ksnap__txn_pool_produce(
             sink->pool, slot, sink->progress_topic, -1, sink->task_id,
             strlen(sink->task_id), progress, progress_len, 0, NULL, 0,
             error)))
      return code;
    sink->progress_epoch = epoch;
  }
  if ((code = ksnap__txn_pool_commit(sink->pool, slot, timeout_ms, error)))
    return code;
  sink->last_committed = epoch;
  KSNAP_DBG(SINK, "SINK", "%s: committed epoch %" PRId64 " (%s)",
            sink->task_id, epoch, ksnap__txn_pool_id(sink->pool, slot));
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_sink_commit_upto(ksnap_sink_t *sink, int64_t epoch,
                                   ksnap_sink_progress_cb_t *cb,
                                   void *opaque, int timeout_ms,
                                   int64_t *committedp,
                                   ksnap_error_t *error) {
  ksnap_buf_t buf;
  int64_t next;
  ksnap_err_t code = KSNAP_ERR_OK;

  if (committedp)
    *committedp = -1;
  ksnap_buf_init(&buf);
  while (!code && (next = ksnap_sink_oldest_pending(sink)) >= 0 &&
         next <= epoch) {
    ksnap_buf_reset(&buf);
    if (!(code = cb(opaque, next, &buf, error)))
      code = ksnap_sink_commit(sink, next, buf.data, buf.len, timeout_ms,
                               error);
    if (!code && committedp)
      *committedp = next;
  }
  ksnap_buf_cleanup(&buf);
  return code;
}

ksnap_err_t ksnap_sink_abort(ksnap_sink_t *sink, int64_t epoch,
                             int timeout_ms, ksnap_error_t *error) {
  ksnap__slot_state_t st;
  ksnap_err_t code;

  if ((code = held(sink, epoch, "abort", &st, error)))
    return code;
  if (sink->progress_epoch == epoch)
    sink->progress_epoch = -1;
  return ksnap__txn_pool_abort(sink->pool, slot_of(sink, epoch), timeout_ms,
                               error);
}
