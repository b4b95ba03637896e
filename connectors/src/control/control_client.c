/*
 * Control-plane client (see control_client.h). Owner: the worker's main
 * thread; the reader thread below owns the consumer once started.
 */
#include "control_client.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka/consumer.h"
#include "kafka/kafka_client.h"
#include "ksnap/log.h"
#include "base/util.h"

#define POLL_MS 100

struct ksnap_control_client_s {
  ksnap_kafka_consumer_t *consumer;
  rd_kafka_t *producer;
  char *control, *acks;
  ksnap_control_cb_t *cb;
  void *opaque;
  pthread_t thread;
  int started;
  atomic_int stop;
};

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *op) {
  (void)rk;
  (void)op;
  if (m->err)
    KSNAP_ERR("control", "delivery to %s failed: %s",
              rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
}

static char *topic_name(const ksnap_conf_t *conf, const char *suffix) {
  const char *job = NULL;
  char *name;

  if (ksnap_conf_get_str(conf, "job.name", &job) || !job)
    return NULL;
  if (!(name = malloc(strlen(job) + strlen(suffix) + 1)))
    return NULL;
  strcpy(name, job);
  strcat(name, suffix);
  return name;
}

ksnap_control_client_t *ksnap_control_client_new(const ksnap_conf_t *conf,
                                                 ksnap_error_t *error) {
  const char *forced[] = {"enable.idempotence", "true", NULL};
  const char *defaults[] = {"linger.ms", "5", NULL};
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, defaults, forced, dr_cb,
                              NULL};
  ksnap_control_client_t *cc = calloc(1, sizeof(*cc));
  ksnap_kafka_pos_t pos;

  if (!cc || !(cc->control = topic_name(conf, KSNAP_CONTROL_TOPIC_SUFFIX)) ||
      !(cc->acks = topic_name(conf, KSNAP_ACKS_TOPIC_SUFFIX))) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory or no job.name");
    goto fail;
  }
  if (!(cc->consumer = ksnap_kafka_consumer_new(conf, "read_committed",
                                                cc->control, 1, error)))
    goto fail;
  pos = (ksnap_kafka_pos_t){cc->control, 0, KSNAP_OFFSET_BEGINNING};
  if (ksnap_kafka_consumer_assign(cc->consumer, &pos, 1, error))
    goto fail;
  if (!(cc->producer = ksnap__kafka_new(conf, &opts, error)))
    goto fail;
  return cc;
fail:
  ksnap_control_client_destroy(cc);
  return NULL;
}

void ksnap_control_client_destroy(ksnap_control_client_t *cc) {
  if (!cc)
    return;
  if (cc->started) {
    atomic_store(&cc->stop, 1);
    pthread_join(cc->thread, NULL);
  }
  if (cc->producer) {
    rd_kafka_flush(cc->producer, 5000);
    ksnap__kafka_destroy(cc->producer);
  }
  ksnap_kafka_consumer_destroy(cc->consumer);
  free(cc->control);
  free(cc->acks);
  free(cc);
}

typedef struct deliver_s {
  ksnap_control_client_t *cc;
  ksnap_control_cb_t *cb;
  void *opaque;
} deliver_t;

static int on_msg(void *opaque, const struct rd_kafka_message_s *m) {
  deliver_t *d = opaque;

  if (m->err || !m->payload)
    return 0;
  d->cb(d->opaque, m->payload, m->len, m->offset);
  return 0;
}

/* Reads @p topic [0] with @p consumer up to its end as of this call. */
static ksnap_err_t read_to_end(ksnap_kafka_consumer_t *consumer,
                               const char *topic, ksnap_control_cb_t *cb,
                               void *opaque, int timeout_ms,
                               ksnap_error_t *error) {
  deliver_t d = {NULL, cb, opaque};

  return ksnap__consumer_read_to_end(consumer, topic, timeout_ms, on_msg, &d,
                                     error);
}

ksnap_err_t ksnap_control_client_catch_up(ksnap_control_client_t *cc,
                                          ksnap_control_cb_t *cb,
                                          void *opaque, int timeout_ms,
                                          ksnap_error_t *error) {
  return read_to_end(cc->consumer, cc->control, cb, opaque, timeout_ms,
                     error);
}

ksnap_err_t ksnap_control_client_scan_acks(ksnap_control_client_t *cc,
                                           const ksnap_conf_t *conf,
                                           ksnap_control_cb_t *cb,
                                           void *opaque, int timeout_ms,
                                           ksnap_error_t *error) {
  ksnap_kafka_consumer_t *c =
      ksnap_kafka_consumer_new(conf, "read_uncommitted", cc->acks, 1, error);
  ksnap_kafka_pos_t pos = {cc->acks, 0, KSNAP_OFFSET_BEGINNING};
  ksnap_err_t err;

  if (!c)
    return error->code;
  if (!(err = ksnap_kafka_consumer_assign(c, &pos, 1, error)))
    err = read_to_end(c, cc->acks, cb, opaque, timeout_ms, error);
  ksnap_kafka_consumer_destroy(c);
  return err;
}

static void *reader_main(void *arg) {
  ksnap_control_client_t *cc = arg;
  deliver_t d = {cc, cc->cb, cc->opaque};
  ksnap_error_t error;

  while (!atomic_load(&cc->stop)) {
    if (ksnap__consumer_poll(cc->consumer, POLL_MS, on_msg, &d, &error) < 0)
      KSNAP_WARN("control", "reading %s: %s", cc->control, error.msg);
    rd_kafka_poll(cc->producer, 0);
  }
  return NULL;
}

ksnap_err_t ksnap_control_client_start(ksnap_control_client_t *cc,
                                       ksnap_control_cb_t *cb, void *opaque,
                                       ksnap_error_t *error) {
  cc->cb = cb;
  cc->opaque = opaque;
  if (pthread_create(&cc->thread, NULL, reader_main, cc))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM,
                           "cannot start the control reader thread");
  cc->started = 1;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_control_client_send(ksnap_control_client_t *cc,
                                      const ksnap_ack_record_t *rec,
                                      ksnap_error_t *error) {
  ksnap_buf_t buf;
  ksnap_err_t err;
  rd_kafka_resp_err_t kerr;

  ksnap_buf_init(&buf);
  if ((err = ksnap_codec_ack_encode(rec, &buf, error))) {
    ksnap_buf_cleanup(&buf);
    return err;
  }
  kerr = rd_kafka_producev(cc->producer, RD_KAFKA_V_TOPIC(cc->acks),
                           RD_KAFKA_V_PARTITION(0),
                           RD_KAFKA_V_VALUE(buf.data, buf.len),
                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                           RD_KAFKA_V_END);
  ksnap_buf_cleanup(&buf);
  if (kerr)
    return ksnap__kafka_resp_error(error, cc->producer, kerr,
                                   "producing to the acks topic");
  if (!cc->started)
    rd_kafka_poll(cc->producer, 0);
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_control_client_flush(ksnap_control_client_t *cc,
                                       int timeout_ms, ksnap_error_t *error) {
  rd_kafka_resp_err_t kerr = rd_kafka_flush(cc->producer, timeout_ms);

  if (kerr)
    return ksnap__kafka_resp_error(error, cc->producer, kerr,
                                   "flushing the acks topic");
  return KSNAP_ERR_OK;
}
