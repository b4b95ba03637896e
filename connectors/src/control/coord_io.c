/*
 * The coordinator's Kafka I/O (see coord_io.h).
 */
#include "coord_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka/consumer.h"
#include "kafka/kafka_client.h"
#include "ksnap/buf.h"
#include "ksnap/log.h"
#include "base/util.h"

struct ksnap__coord_producer_s {
  rd_kafka_t *rk;
  char topic[300];
  char txn_id[300];
};

void ksnap__coord_topic(char *buf, size_t size, const char *job,
                        const char *suffix) {
  snprintf(buf, size, "%s%s", job, suffix);
}

ksnap__coord_producer_t *ksnap__coord_producer_new(const ksnap_conf_t *conf,
                                                   const char *job,
                                                   int timeout_ms,
                                                   ksnap_error_t *error) {
  ksnap__coord_producer_t *p = calloc(1, sizeof(*p));
  const char *forced[] = {"transactional.id", NULL, NULL};
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, NULL, forced, NULL, NULL};
  rd_kafka_error_t *kerr;

  if (!p) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  ksnap__coord_topic(p->topic, sizeof(p->topic), job,
                     KSNAP_COORD_CONTROL_SUFFIX);
  ksnap__coord_topic(p->txn_id, sizeof(p->txn_id), job,
                     KSNAP_COORD_TXN_SUFFIX);
  forced[1] = p->txn_id;
  if (!(p->rk = ksnap__kafka_new(conf, &opts, error))) {
    free(p);
    return NULL;
  }
  /* fences every older coordinator of this job, aborts its transaction */
  if ((kerr = rd_kafka_init_transactions(p->rk, timeout_ms))) {
    ksnap__kafka_error(error, kerr, p->txn_id);
    ksnap__coord_producer_destroy(p);
    return NULL;
  }
  return p;
}

void ksnap__coord_producer_destroy(ksnap__coord_producer_t *p) {
  if (!p)
    return;
  ksnap__kafka_destroy(p->rk);
  free(p);
}

/* Aborts after an abortable error; @returns the code to report. */
static ksnap_err_t abort_txn(ksnap__coord_producer_t *p, int timeout_ms,
                             ksnap_error_t *error) {
  rd_kafka_error_t *kerr = rd_kafka_abort_transaction(p->rk, timeout_ms);
  ksnap_error_t ae;

  if (kerr) {
    ksnap__kafka_error(&ae, kerr, "abort_transaction");
    ae.fatal = 1; /* state unknown: the producer is not used again */
    if (error)
      *error = ae;
    return ae.code;
  }
  return KSNAP_ERR_TXN_ABORTABLE;
}

ksnap_err_t ksnap__coord_producer_write(ksnap__coord_producer_t *p,
                                        const ksnap_control_record_t *rec,
                                        int timeout_ms, ksnap_error_t *error) {
  ksnap_buf_t buf;
  rd_kafka_error_t *kerr;
  rd_kafka_resp_err_t rerr;
  ksnap_err_t code;

  ksnap_buf_init(&buf);
  if ((code = ksnap_codec_control_encode(rec, &buf, error)))
    goto out;
  if ((kerr = rd_kafka_begin_transaction(p->rk))) {
    code = ksnap__kafka_error(error, kerr, "begin_transaction");
    goto out;
  }
  rerr = rd_kafka_producev(p->rk, RD_KAFKA_V_TOPIC(p->topic),
                           RD_KAFKA_V_PARTITION(0),
                           RD_KAFKA_V_VALUE(buf.data, buf.len),
                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                           RD_KAFKA_V_END);
  if (rerr) {
    code = ksnap__kafka_resp_error(error, p->rk, rerr, "produce");
    if (!(error && error->fatal))
      code = abort_txn(p, timeout_ms, error);
    goto out;
  }
  for (int attempt = 0;; attempt++) {
    kerr = rd_kafka_commit_transaction(p->rk, timeout_ms);
    if (!kerr) {
      code = KSNAP_ERR_OK;
      break;
    }
    code = ksnap__kafka_error(error, kerr, "commit_transaction");
    if (code == KSNAP_ERR_TXN_ABORTABLE) {
      code = abort_txn(p, timeout_ms, error);
      break;
    }
    if (!(error && error->retriable) || attempt >= 3) {
      if (error)
        error->fatal = 1; /* outcome unknown: never report it committed */
      break;
    }
  }
out:
  ksnap_buf_cleanup(&buf);
  return code;
}

ksnap_kafka_consumer_t *ksnap__coord_consumer_open(const ksnap_conf_t *conf,
                                                   const char *topic,
                                                   int64_t offset, int eof,
                                                   ksnap_error_t *error) {
  /* the group (never joined) is the topic's name, under the job's ACLs */
  ksnap_kafka_consumer_t *c =
      ksnap_kafka_consumer_new(conf, "read_committed", topic, eof, error);
  ksnap_kafka_pos_t pos = {topic, 0, offset};
  int64_t lo;

  /* "The end" is the end NOW: a logical END resolved at the first fetch
     could skip records written meanwhile (the REGISTERs answering the
     RESTORE a restarted coordinator sends first). */
  if (c && offset == KSNAP_OFFSET_END &&
      ksnap__consumer_watermarks(c, topic, 0, &lo, &pos.offset, 10000,
                                 error)) {
    ksnap_kafka_consumer_destroy(c);
    return NULL;
  }
  if (c && ksnap_kafka_consumer_assign(c, &pos, 1, error)) {
    ksnap_kafka_consumer_destroy(c);
    return NULL;
  }
  return c;
}

typedef struct poll_ctx_s {
  ksnap__coord_rec_cb_t *cb;
  void *opaque;
} poll_ctx_t;

static int raw_cb(void *opaque, const rd_kafka_message_t *m) {
  poll_ctx_t *pc = opaque;
  rd_kafka_timestamp_type_t tstype;

  if (m->err)
    return 0;
  return pc->cb(pc->opaque, m->payload ? m->payload : "", m->len,
                rd_kafka_message_timestamp(m, &tstype));
}

int ksnap__coord_consumer_poll(ksnap_kafka_consumer_t *c, int timeout_ms,
                               ksnap__coord_rec_cb_t *cb, void *opaque,
                               ksnap_error_t *error) {
  poll_ctx_t pc = {cb, opaque};
  return ksnap__consumer_poll(c, timeout_ms, raw_cb, &pc, error);
}

ksnap_err_t ksnap__coord_read_history(const ksnap_conf_t *conf,
                                      const char *topic, int timeout_ms,
                                      ksnap__coord_rec_cb_t *cb, void *opaque,
                                      ksnap_error_t *error) {
  poll_ctx_t pc = {cb, opaque};
  ksnap_kafka_consumer_t *c;
  ksnap_err_t code;

  c = ksnap__coord_consumer_open(conf, topic, KSNAP_OFFSET_BEGINNING, 1,
                                 error);
  if (!c)
    return error ? error->code : KSNAP_ERR_KAFKA;
  code = ksnap__consumer_read_to_end(c, topic, timeout_ms, raw_cb, &pc, error);
  ksnap_kafka_consumer_destroy(c);
  return code;
}

ksnap_err_t ksnap_coord_request_send(const ksnap_conf_t *conf,
                                     ksnap_request_kind_t kind,
                                     const char *requester, int timeout_ms,
                                     ksnap_error_t *error) {
  const char *forced[] = {"enable.idempotence", "true", NULL};
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, NULL, forced, NULL, NULL};
  ksnap_ack_record_t rec;
  const char *job = NULL;
  char topic[300];
  ksnap_buf_t buf;
  rd_kafka_t *rk = NULL;
  rd_kafka_resp_err_t rerr;
  ksnap_err_t code;

  if (ksnap_conf_get_str(conf, "job.name", &job) || !job)
    return ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                           "missing required property \"job.name\"");
  ksnap__coord_topic(topic, sizeof(topic), job, KSNAP_COORD_ACKS_SUFFIX);
  memset(&rec, 0, sizeof(rec));
  rec.type = KSNAP_ACKT_REQUEST;
  rec.u.request.kind = kind;
  rec.u.request.requester = (char *)requester;
  rec.u.request.timestamp_ms = ksnap__wallclock_ms();
  ksnap_buf_init(&buf);
  if ((code = ksnap_codec_ack_encode(&rec, &buf, error)))
    goto out;
  if (!(rk = ksnap__kafka_new(conf, &opts, error))) {
    code = error ? error->code : KSNAP_ERR_KAFKA;
    goto out;
  }
  rerr = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                           RD_KAFKA_V_PARTITION(0),
                           RD_KAFKA_V_VALUE(buf.data, buf.len),
                           RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                           RD_KAFKA_V_END);
  if (!rerr)
    rerr = rd_kafka_flush(rk, timeout_ms);
  if (!rerr && rd_kafka_outq_len(rk) > 0)
    rerr = RD_KAFKA_RESP_ERR__TIMED_OUT;
  code = rerr ? ksnap__kafka_resp_error(error, rk, rerr, topic)
              : KSNAP_ERR_OK;
out:
  ksnap__kafka_destroy(rk);
  ksnap_buf_cleanup(&buf);
  return code;
}
