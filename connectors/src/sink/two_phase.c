/*
 * The sink's two-phase commit (see two_phase.h for the states, the
 * invariants and the threads): the table of pending transactions over
 * sink.c's epochs.
 */
#include "two_phase.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base/fault.h"
#include "ksnap/log.h"
#include "ksnap/records.h"
#include "progress.h"
#include "sink.h"

#define COMMIT_TIMEOUT_MS 60000
#define COMMIT_RETRIES 5

typedef enum txn_state_e {
  TXN_ENDED = 0, /* flushed; its snapshot's upload running */
  TXN_PRECOMMITTED,
  TXN_FAILED,
} txn_state_t;

/* A pending transaction: its epoch (begin number), the barrier that
 * ended it, its state. */
typedef struct txn_s {
  int64_t epoch;
  int64_t end_id;
  txn_state_t state;
} txn_t;

struct ksnap_2pc_s {
  const ksnap_conf_t *conf;
  ksnap_sink_t *sink;
  char stage[256];
  int task;
  int64_t open; /* the OPEN transaction's epoch (processing thread) */
  pthread_mutex_t mu;
  pthread_cond_t cv;                /* a pre-commit's result */
  txn_t txns[KSNAP_2PC_MAX_PENDING]; /* [mu] oldest first */
  size_t ntxns;                     /* [mu] */
};

ksnap_2pc_t *ksnap_2pc_new(const ksnap_conf_t *conf, const char *stage,
                           int task, int timeout_ms, ksnap_error_t *error) {
  ksnap_2pc_t *tpc = calloc(1, sizeof(*tpc));

  if (!tpc) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  tpc->conf = conf;
  snprintf(tpc->stage, sizeof(tpc->stage), "%s", stage);
  tpc->task = task;
  tpc->open = -1;
  pthread_mutex_init(&tpc->mu, NULL);
  pthread_cond_init(&tpc->cv, NULL);
  /* invariant 6: every slot id is fenced before anything else */
  if (!(tpc->sink = ksnap_sink_new(conf, stage, task, timeout_ms, error))) {
    ksnap_2pc_destroy(tpc);
    return NULL;
  }
  return tpc;
}

void ksnap_2pc_destroy(ksnap_2pc_t *tpc) {
  if (!tpc)
    return;
  ksnap_sink_destroy(tpc->sink);
  pthread_mutex_destroy(&tpc->mu);
  pthread_cond_destroy(&tpc->cv);
  free(tpc);
}

void ksnap_2pc_warm_topic(ksnap_2pc_t *tpc, const char *topic,
                          int timeout_ms) {
  ksnap_sink_warm_topic(tpc->sink, topic, timeout_ms);
}

static const char *task_id(const ksnap_2pc_t *tpc) {
  return ksnap_sink_task_id(tpc->sink);
}

ksnap_err_t ksnap_2pc_last_committed(ksnap_2pc_t *tpc, int timeout_ms,
                                     int64_t *cp, ksnap_error_t *error) {
  return ksnap_2pc_last_committed_of(tpc->conf, task_id(tpc), timeout_ms, cp,
                                     error);
}

ksnap_err_t ksnap_2pc_last_committed_of(const ksnap_conf_t *conf,
                                        const char *task, int timeout_ms,
                                        int64_t *cp, ksnap_error_t *error) {
  ksnap_sink_progress_t pr;
  ksnap_buf_t buf;
  int found = 0;
  ksnap_err_t err;

  *cp = 0;
  ksnap_buf_init(&buf);
  err = ksnap_progress_read_last(conf, task, timeout_ms, &buf, &found, error);
  if (err == KSNAP_ERR_NOT_FOUND) { /* no progress topic: nothing committed */
    err = KSNAP_ERR_OK;
    found = 0;
  }
  if (!err && found &&
      !(err = ksnap_codec_progress_decode(buf.data, buf.len, &pr, error))) {
    *cp = pr.transaction_id > 0 ? pr.transaction_id : 0;
    ksnap_sink_progress_cleanup(&pr);
  }
  ksnap_buf_cleanup(&buf);
  if (err)
    ksnap_error_prefix(error, "%s: reading the last committed transaction",
                       task);
  return err;
}

ksnap_err_t ksnap_2pc_begin(ksnap_2pc_t *tpc, int64_t epoch,
                            ksnap_error_t *error) {
  tpc->open = epoch;
  return ksnap_sink_begin(tpc->sink, epoch, error);
}

ksnap_err_t ksnap_2pc_produce(ksnap_2pc_t *tpc, const char *topic,
                              int32_t partition, const void *key,
                              size_t key_len, const void *value,
                              size_t value_len, int64_t timestamp_ms,
                              const ksnap_kafka_header_t *headers,
                              size_t nheaders, ksnap_error_t *error) {
  return ksnap_sink_produce(tpc->sink, topic, partition, key, key_len, value,
                            value_len, timestamp_ms, headers, nheaders,
                            error);
}

ksnap_err_t ksnap_2pc_end(ksnap_2pc_t *tpc, int64_t barrier, int timeout_ms,
                          int64_t *epochp, ksnap_error_t *error) {
  int64_t epoch = tpc->open;
  ksnap_err_t err;

  *epochp = -1;
  pthread_mutex_lock(&tpc->mu);
  err = tpc->ntxns == KSNAP_2PC_MAX_PENDING;
  pthread_mutex_unlock(&tpc->mu);
  if (err)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "%s: too many pending sink transactions",
                           task_id(tpc));
  /* invariant 7: every record of the epoch acknowledged before the next
   * one begins on another producer */
  if ((err = ksnap_sink_precommit(tpc->sink, epoch, timeout_ms, error))) {
    if (err == KSNAP_ERR_TIMEOUT && ksnap_sink_is_open(tpc->sink, epoch))
      return ksnap_error_set(error, KSNAP_ERR_TIMEOUT,
                             "%s: the sink's records were not all "
                             "acknowledged %d ms after barrier %lld; its "
                             "transaction continues to the next barrier",
                             task_id(tpc), timeout_ms, (long long)barrier);
    return err; /* aborted, or the pool is dead */
  }
  pthread_mutex_lock(&tpc->mu);
  tpc->txns[tpc->ntxns++] = (txn_t){epoch, barrier, TXN_ENDED};
  pthread_mutex_unlock(&tpc->mu);
  *epochp = epoch;
  return ksnap_2pc_begin(tpc, epoch + 1, error);
}

void ksnap_2pc_precommit(ksnap_2pc_t *tpc, int64_t epoch,
                         int snapshot_failed) {
  pthread_mutex_lock(&tpc->mu);
  for (size_t i = 0; i < tpc->ntxns; i++)
    if (tpc->txns[i].epoch == epoch)
      tpc->txns[i].state = snapshot_failed ? TXN_FAILED : TXN_PRECOMMITTED;
  pthread_cond_broadcast(&tpc->cv);
  pthread_mutex_unlock(&tpc->mu);
}

/* The commit of epoch @p epoch with progress record {task, @p end_id,
 * @p gen}; with @p retry, up to COMMIT_RETRIES tries while the error is
 * retriable. */
static ksnap_err_t commit(ksnap_2pc_t *tpc, int64_t epoch, int64_t end_id,
                          int64_t gen, int retry, ksnap_error_t *error) {
  ksnap_sink_progress_t pr = {{tpc->stage, tpc->task}, end_id, gen};
  ksnap_buf_t buf;
  ksnap_err_t err;

  ksnap_buf_init(&buf);
  if ((err = ksnap_codec_progress_encode(&pr, &buf, error)))
    goto out;
  for (int i = 0; i < COMMIT_RETRIES; i++) {
    err = ksnap_sink_commit(tpc->sink, epoch, buf.data, buf.len,
                            COMMIT_TIMEOUT_MS, error);
    if (!err || !retry || !error->retriable)
      break;
    KSNAP_WARN("task", "%s: committing transaction %lld: %s (retrying)",
               task_id(tpc), (long long)end_id, error->msg);
  }
out:
  ksnap_buf_cleanup(&buf);
  return err;
}

ksnap_err_t ksnap_2pc_commit_upto(ksnap_2pc_t *tpc, int64_t id, int64_t gen,
                                  ksnap_error_t *error) {
  ksnap_err_t err = KSNAP_ERR_OK;

  pthread_mutex_lock(&tpc->mu);
  while (!err && tpc->ntxns > 0 && tpc->txns[0].end_id <= id) {
    txn_t txn;
    while (tpc->txns[0].state == TXN_ENDED)
      pthread_cond_wait(&tpc->cv, &tpc->mu);
    txn = tpc->txns[0];
    pthread_mutex_unlock(&tpc->mu);
    if (txn.state == TXN_FAILED) /* invariant 3 */
      err = ksnap_error_set(error, KSNAP_ERR_STATE,
                            "%s: transaction of checkpoint %lld was not "
                            "pre-committed; it cannot be committed",
                            task_id(tpc), (long long)txn.end_id);
    else
      err = commit(tpc, txn.epoch, txn.end_id, gen, 1, error);
    if (!err) /* tests: die between the commits of several pending ones */
      ksnap__fault_id("sink.after-commit", txn.end_id);
    pthread_mutex_lock(&tpc->mu);
    if (!err) {
      memmove(&tpc->txns[0], &tpc->txns[1],
              (tpc->ntxns - 1) * sizeof(tpc->txns[0]));
      tpc->ntxns--;
    }
  }
  pthread_mutex_unlock(&tpc->mu);
  return err;
}

ksnap_err_t ksnap_2pc_commit_now(ksnap_2pc_t *tpc, int64_t gen,
                                 ksnap_error_t *error) {
  int64_t epoch = tpc->open;
  ksnap_err_t err;

  tpc->open = -1;
  if ((err = ksnap_sink_precommit(tpc->sink, epoch, COMMIT_TIMEOUT_MS,
                                  error)))
    return err;
  return commit(tpc, epoch, epoch, gen, 0, error);
}
