/*
 * Exchange writer (see exchange.h): idempotent producer, headers, barrier
 * broadcast and per-epoch delivery tracking.
 *
 * Threads: the owner (produce, broadcast, destroy), the poll thread
 * (delivery reports -> segment counters), any waiter (wait_delivered).
 * ex->lock guards stop, segs, nsegs, base, pruned_through and last_barrier
 * (the owner reads last_barrier without it: only the owner writes it);
 * everything else is the owner's or immutable after creation.
 *
 * Segments: segs[i] is segment base + i. Each produced record carries its
 * segment number as msg_opaque; a segment is closed by its barrier (its
 * barrier_id). Fully delivered, failure-free closed segments are dropped
 * from the front; a failed one stays, failing every later wait.
 */
#include "exchange.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka/kafka_client.h"
#include "ksnap/log.h"

typedef struct seg_s {
  int64_t outstanding;
  int64_t barrier_id; /* -1 until this segment's barrier was broadcast */
  int failed;
  char failure[256];
} seg_t;

typedef struct out_topic_s {
  char *name;
  int partitions;
} out_topic_t;

struct ksnap_exchange_s {
  rd_kafka_t *rk;
  char *writer;
  char gen[24];
  out_topic_t *topics;
  size_t ntopics;
  int64_t last_barrier;
  int ended; /* the end of input went out: no barrier follows */

  pthread_t poller;
  int stop; /* guarded by lock */
  pthread_mutex_t lock;
  pthread_cond_t cond;
  seg_t *segs;
  size_t nsegs, cap;
  int64_t base; /* segment number of segs[0] */
  int64_t pruned_through; /* newest barrier whose segments were dropped */
};

static seg_t *seg_get(ksnap_exchange_t *ex, int64_t s) {
  if (s < ex->base || s >= ex->base + (int64_t)ex->nsegs)
    return NULL;
  return &ex->segs[s - ex->base];
}

/* Drops delivered, barrier-closed, failure-free segments from the front
 * (never the open last one), remembering the newest barrier dropped. */
static void seg_prune(ksnap_exchange_t *ex) {
  size_t k = 0;

  while (k + 1 < ex->nsegs && ex->segs[k].outstanding == 0 &&
         !ex->segs[k].failed && ex->segs[k].barrier_id >= 0)
    ex->pruned_through = ex->segs[k++].barrier_id;
  if (k == 0)
    return;
  memmove(ex->segs, ex->segs + k, (ex->nsegs - k) * sizeof(seg_t));
  ex->nsegs -= k;
  ex->base += (int64_t)k;
}

static int seg_open_new(ksnap_exchange_t *ex) {
  if (ex->nsegs == ex->cap) {
    size_t cap = ex->cap ? ex->cap * 2 : 8;
    seg_t *segs = realloc(ex->segs, cap * sizeof(seg_t));
    if (!segs)
      return -1;
    ex->segs = segs;
    ex->cap = cap;
  }
  memset(&ex->segs[ex->nsegs], 0, sizeof(seg_t));
  ex->segs[ex->nsegs++].barrier_id = -1;
  return 0;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  ksnap_exchange_t *ex = ksnap__kafka_opaque(rk);
  seg_t *seg;

  (void)opaque;
  int wake = 0;

  pthread_mutex_lock(&ex->lock);
  if ((seg = seg_get(ex, (int64_t)(intptr_t)m->_private))) {
    wake = --seg->outstanding == 0;
    if (m->err && !seg->failed) {
      seg->failed = wake = 1;
      snprintf(seg->failure, sizeof(seg->failure),
               "delivery to %s [%d] failed: %s", rd_kafka_topic_name(m->rkt),
               (int)m->partition, rd_kafka_err2str(m->err));
      KSNAP_ERR("EXCHANGE", "%s: %s", ex->writer, seg->failure);
    }
  }
  /* waiters only care about a segment completing or failing: waking them
   * on every report would make them fight the poll thread for the lock */
  if (wake)
    pthread_cond_broadcast(&ex->cond);
  pthread_mutex_unlock(&ex->lock);
}

static void *poll_main(void *arg) {
  ksnap_exchange_t *ex = arg;

  for (;;) {
    int stop;
    pthread_mutex_lock(&ex->lock);
    stop = ex->stop;
    pthread_mutex_unlock(&ex->lock);
    if (stop)
      break;
    rd_kafka_poll(ex->rk, 100);
  }
  return NULL;
}

static ksnap_err_t load_topics(ksnap_exchange_t *ex, const char *const *topics,
                               size_t n, int timeout_ms,
                               ksnap_error_t *error) {
  if (!(ex->topics = calloc(n ? n : 1, sizeof(*ex->topics))))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    int cnt = ksnap__kafka_partition_count(ex->rk, topics[i], timeout_ms,
                                           error);
    if (cnt < 0)
      return error ? error->code : KSNAP_ERR_KAFKA;
    ex->topics[i].name = strdup(topics[i]);
    ex->topics[i].partitions = cnt;
    ex->ntopics++;
  }
  return KSNAP_ERR_OK;
}

ksnap_exchange_t *ksnap_exchange_new(const ksnap_conf_t *conf,
                                     const char *writer_id,
                                     int64_t generation,
                                     const char *const *topics,
                                     size_t ntopics, int timeout_ms,
                                     ksnap_error_t *error) {
  const char *forced[] = {"enable.idempotence", "true", NULL};
  const char *defaults[] = {"linger.ms", "5", NULL};
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, defaults, forced, dr_cb,
                              NULL};
  ksnap_exchange_t *ex = calloc(1, sizeof(*ex));

  if (!ex) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  opts.opaque = ex;
  pthread_mutex_init(&ex->lock, NULL);
  pthread_cond_init(&ex->cond, NULL);
  ex->writer = strdup(writer_id);
  ex->last_barrier = INT64_MIN;
  ex->pruned_through = INT64_MIN;
  snprintf(ex->gen, sizeof(ex->gen), "%" PRId64, generation);
  if (!(ex->rk = ksnap__kafka_new(conf, &opts, error)) ||
      load_topics(ex, topics, ntopics, timeout_ms, error)) {
    ksnap_exchange_destroy(ex);
    return NULL;
  }
  if (seg_open_new(ex)) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    ksnap_exchange_destroy(ex);
    return NULL;
  }
  if (pthread_create(&ex->poller, NULL, poll_main, ex)) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "cannot start the poll thread");
    ex->poller = 0;
    ksnap_exchange_destroy(ex);
    return NULL;
  }
  return ex;
}

void ksnap_exchange_destroy(ksnap_exchange_t *ex) {
  if (!ex)
    return;
  if (ex->poller) {
    pthread_mutex_lock(&ex->lock);
    ex->stop = 1;
    pthread_mutex_unlock(&ex->lock);
    pthread_join(ex->poller, NULL);
  }
  ksnap__kafka_destroy(ex->rk); /* outstanding DRs are served here */
  for (size_t i = 0; i < ex->ntopics; i++)
    free(ex->topics[i].name);
  free(ex->topics);
  free(ex->segs);
  free(ex->writer);
  pthread_cond_destroy(&ex->cond);
  pthread_mutex_destroy(&ex->lock);
  free(ex);
}

int ksnap_exchange_partitions(const ksnap_exchange_t *ex, const char *topic) {
  for (size_t i = 0; i < ex->ntopics; i++)
    if (!strcmp(ex->topics[i].name, topic))
      return ex->topics[i].partitions;
  return -1;
}

/* Produces one record into the current segment (counted before sending,
 * so a fast delivery report cannot precede the increment). */
static ksnap_err_t send_one(ksnap_exchange_t *ex, const char *topic,
                            int32_t partition, const void *key,
                            size_t key_len, const void *value, size_t len,
                            int64_t ts_ms, const ksnap_kafka_header_t *hdrs,
                            size_t nhdrs, const char *ctl,
                            ksnap_error_t *error) {
  rd_kafka_headers_t *h = rd_kafka_headers_new(nhdrs + 3);
  rd_kafka_resp_err_t err;
  int64_t segno;

  rd_kafka_header_add(h, KSNAP_EXCHANGE_HDR_WRITER, -1, ex->writer, -1);
  rd_kafka_header_add(h, KSNAP_EXCHANGE_HDR_GEN, -1, ex->gen, -1);
  if (ctl)
    rd_kafka_header_add(h, KSNAP_EXCHANGE_HDR_CTL, -1, ctl, -1);
  for (size_t i = 0; i < nhdrs; i++)
    rd_kafka_header_add(h, hdrs[i].name, -1, hdrs[i].value,
                        (ssize_t)hdrs[i].len);
  pthread_mutex_lock(&ex->lock);
  segno = ex->base + (int64_t)ex->nsegs - 1;
  ex->segs[ex->nsegs - 1].outstanding++;
  pthread_mutex_unlock(&ex->lock);
  err = rd_kafka_producev(
      ex->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_VALUE((void *)value, len),
      RD_KAFKA_V_TIMESTAMP(ts_ms > 0 ? ts_ms : 0), RD_KAFKA_V_HEADERS(h),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_OPAQUE((void *)(intptr_t)segno), RD_KAFKA_V_END);
  if (!err)
    return KSNAP_ERR_OK; /* h is owned by the message now */
  rd_kafka_headers_destroy(h);
  pthread_mutex_lock(&ex->lock);
  seg_get(ex, segno)->outstanding--;
  pthread_mutex_unlock(&ex->lock);
  ksnap__kafka_resp_error(error, ex->rk, err, "produce");
  return ksnap_error_prefix(error, "%s: %s [%d]", ex->writer, topic,
                            (int)partition);
}

ksnap_err_t ksnap_exchange_produce(ksnap_exchange_t *ex, const char *topic,
                                   int32_t partition, const void *key,
                                   size_t key_len, const void *value,
                                   size_t value_len, int64_t timestamp_ms,
                                   const ksnap_kafka_header_t *headers,
                                   size_t nheaders, ksnap_error_t *error) {
  int cnt = ksnap_exchange_partitions(ex, topic);

  /* a barrier only follows records on the writer's outputs */
  if (cnt < 0 || partition >= cnt)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: %s [%d] is not an output of this writer",
                           ex->writer, topic, (int)partition);
  return send_one(ex, topic, partition < 0 ? RD_KAFKA_PARTITION_UA : partition,
                  key, key_len, value, value_len, timestamp_ms, headers,
                  nheaders, NULL, error);
}

ksnap_err_t ksnap_exchange_broadcast_barrier(ksnap_exchange_t *ex,
                                             int64_t checkpoint_id,
                                             const void *payload, size_t len,
                                             ksnap_error_t *error) {
  ksnap_err_t code = KSNAP_ERR_OK;

  if (ex->ended)
    return ksnap_error_set(error, KSNAP_ERR_STATE,
                           "%s: barrier %" PRId64 " after the end of input",
                           ex->writer, checkpoint_id);
  if (checkpoint_id <= ex->last_barrier)
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: barrier %" PRId64
                           " does not follow barrier %" PRId64,
                           ex->writer, checkpoint_id, ex->last_barrier);
  for (size_t t = 0; t < ex->ntopics && !code; t++)
    for (int p = 0; p < ex->topics[t].partitions && !code; p++)
      code = send_one(ex, ex->topics[t].name, p, NULL, 0, payload, len, 0, NULL,
                      0, KSNAP_EXCHANGE_CTL_BARRIER, error);
  /* Close the segment even after a failed send: the barrier is then
   * incomplete and wait_delivered must not report success for it. */
  pthread_mutex_lock(&ex->lock);
  ex->segs[ex->nsegs - 1].barrier_id = checkpoint_id;
  if (code) {
    ex->segs[ex->nsegs - 1].failed = 1;
    snprintf(ex->segs[ex->nsegs - 1].failure,
             sizeof(ex->segs[0].failure), "barrier broadcast failed: %.200s",
             error ? error->msg : ksnap_err2str(code));
  }
  if (seg_open_new(ex) && !code)
    code = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  ex->last_barrier = checkpoint_id;
  seg_prune(ex);
  pthread_mutex_unlock(&ex->lock);
  KSNAP_DBG(BARRIER, "EXCHANGE", "%s: broadcast barrier %" PRId64, ex->writer,
            checkpoint_id);
  return code;
}

ksnap_err_t ksnap_exchange_broadcast_marker(ksnap_exchange_t *ex,
                                            const char *kind,
                                            const void *payload, size_t len,
                                            ksnap_error_t *error) {
  ksnap_err_t code = KSNAP_ERR_OK;

  if (!kind || !*kind || !strcmp(kind, KSNAP_EXCHANGE_CTL_BARRIER))
    return ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                           "%s: marker kind must be set and not \"%s\"",
                           ex->writer, KSNAP_EXCHANGE_CTL_BARRIER);
  for (size_t t = 0; t < ex->ntopics && !code; t++)
    for (int p = 0; p < ex->topics[t].partitions && !code; p++)
      code = send_one(ex, ex->topics[t].name, p, NULL, 0, payload, len, 0, NULL,
                      0, kind, error);
  return code;
}

ksnap_err_t ksnap_exchange_broadcast_end(ksnap_exchange_t *ex,
                                         ksnap_error_t *error) {
  ksnap_err_t code;

  if (ex->ended)
    return KSNAP_ERR_OK;
  code = ksnap_exchange_broadcast_marker(ex, KSNAP_EXCHANGE_CTL_END, "", 0,
                                         error);
  pthread_mutex_lock(&ex->lock);
  ex->ended = 1;
  if (code) {
    ex->segs[ex->nsegs - 1].failed = 1;
    snprintf(ex->segs[ex->nsegs - 1].failure, sizeof(ex->segs[0].failure),
             "end of input broadcast failed: %.200s",
             error ? error->msg : ksnap_err2str(code));
  }
  pthread_mutex_unlock(&ex->lock);
  return code;
}

/* Under lock: 1 done, 0 pending, -1 failed (error set), -2 unknown id.
 * Ids up to pruned_through were delivered (their segments are gone).
 * After the end of input an id above the last barrier waits for every
 * segment left (every record the writer produced). */
static int check_delivered(ksnap_exchange_t *ex, int64_t id,
                           ksnap_error_t *error) {
  int all = id > ex->last_barrier && ex->ended;

  if (id > ex->last_barrier && !all)
    return -2;
  if (id <= ex->pruned_through)
    return 1;
  for (size_t i = 0; i < ex->nsegs; i++) {
    if (ex->segs[i].failed) {
      ksnap_error_set(error, KSNAP_ERR_KAFKA, "%s: epoch %" PRId64 ": %s",
                      ex->writer, id, ex->segs[i].failure);
      return -1;
    }
    if (ex->segs[i].outstanding > 0)
      return 0;
    if (!all && ex->segs[i].barrier_id >= id)
      return 1;
  }
  return all ? 1 : -2;
}

ksnap_err_t ksnap_exchange_wait_delivered(ksnap_exchange_t *ex,
                                          int64_t checkpoint_id,
                                          int timeout_ms,
                                          ksnap_error_t *error) {
  struct timespec deadline;
  int rc;

  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += timeout_ms / 1000;
  deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
  if (deadline.tv_nsec >= 1000000000L) {
    deadline.tv_sec++;
    deadline.tv_nsec -= 1000000000L;
  }
  pthread_mutex_lock(&ex->lock);
  while ((rc = check_delivered(ex, checkpoint_id, error)) == 0)
    if (pthread_cond_timedwait(&ex->cond, &ex->lock, &deadline) ==
        ETIMEDOUT) {
      rc = check_delivered(ex, checkpoint_id, error);
      break;
    }
  pthread_mutex_unlock(&ex->lock);
  if (rc == 1)
    return KSNAP_ERR_OK;
  if (rc == -1)
    return KSNAP_ERR_KAFKA;
  if (rc == -2)
    return ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                           "%s: barrier %" PRId64 " was not broadcast",
                           ex->writer, checkpoint_id);
  return ksnap_error_set_retriable(error, KSNAP_ERR_TIMEOUT,
                                   "%s: records before barrier %" PRId64
                                   " not acknowledged within %d ms",
                                   ex->writer, checkpoint_id, timeout_ms);
}
