/* Demo input and output of `ksnap run` and `ksnap verify` (see devio.h). */
#include "devio.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka_client.h"
#include "base/util.h"

struct ksnap_devio_producer_s {
  rd_kafka_t *rk;
  int64_t failed;
  rd_kafka_resp_err_t first_err;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m,
                        void *opaque) {
  ksnap_devio_producer_t *p = ksnap__kafka_opaque(rk);

  (void)opaque;
  if (m->err && !p->failed++)
    p->first_err = m->err;
}

ksnap_devio_producer_t *ksnap_devio_producer_new(const ksnap_conf_t *conf,
                                                 ksnap_error_t *error) {
  static const char *const defaults[] = {"linger.ms", "5", NULL};
  static const char *const forced[] = {"enable.idempotence", "true", NULL};
  ksnap_devio_producer_t *p = calloc(1, sizeof(*p));
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, defaults, forced,
                              on_delivery, p};

  if (!p) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  if (!(p->rk = ksnap__kafka_new(conf, &opts, error))) {
    free(p);
    return NULL;
  }
  return p;
}

ksnap_err_t ksnap_devio_produce(ksnap_devio_producer_t *p, const char *topic,
                                const void *value, size_t len,
                                ksnap_error_t *error) {
  rd_kafka_resp_err_t err;

  while ((err = rd_kafka_producev(
              p->rk, RD_KAFKA_V_TOPIC(topic),
              RD_KAFKA_V_VALUE((void *)value, len),
              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
         RD_KAFKA_RESP_ERR__QUEUE_FULL)
    rd_kafka_poll(p->rk, 10);
  rd_kafka_poll(p->rk, 0);
  if (err)
    return ksnap__kafka_resp_error(error, p->rk, err, "produce");
  if (p->failed)
    return ksnap__kafka_resp_error(error, p->rk, p->first_err, "delivery");
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_devio_producer_flush(ksnap_devio_producer_t *p,
                                       int timeout_ms, ksnap_error_t *error) {
  int64_t end = ksnap__now_us() + (int64_t)timeout_ms * 1000;
  rd_kafka_resp_err_t err;

  /* in slices: a refused login or an untrusted broker ends the wait */
  while ((err = rd_kafka_flush(p->rk, 250)) && ksnap__now_us() < end)
    if (ksnap__kafka_security_failure(error, "produce"))
      return error->code;
  if (err)
    return ksnap_error_set_retriable(error, KSNAP_ERR_TIMEOUT,
                                     "not delivered within %d ms",
                                     timeout_ms);
  if (p->failed)
    return ksnap__kafka_resp_error(error, p->rk, p->first_err, "delivery");
  return KSNAP_ERR_OK;
}

void ksnap_devio_producer_destroy(ksnap_devio_producer_t *p) {
  if (!p)
    return;
  ksnap__kafka_destroy(p->rk);
  free(p);
}

ksnap_err_t ksnap_devio_produce_file(const ksnap_conf_t *conf,
                                     const char *topic, const char *path,
                                     int timeout_ms,
                                     ksnap_devio_pace_cb_t *pace,
                                     void *opaque, int64_t *countp,
                                     ksnap_error_t *error) {
  FILE *f = fopen(path, "r");
  ksnap_devio_producer_t *p;
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  ksnap_err_t code = KSNAP_ERR_OK;
  int64_t n = 0;

  *countp = 0;
  if (!f)
    return ksnap_error_set(error, KSNAP_ERR_IO, "cannot open %s: %s", path,
                           strerror(errno));
  if (!(p = ksnap_devio_producer_new(conf, error))) {
    fclose(f);
    return error->code;
  }
  while (!code && (len = getline(&line, &cap, f)) >= 0) {
    if (len > 0 && line[len - 1] == '\n')
      len--;
    if (!(code = ksnap_devio_produce(p, topic, line, (size_t)len, error)))
      n++;
    if (!code && pace && n % KSNAP_DEVIO_PACE_LINES == 0) {
      /* the pacer sees them consumed */
      code = ksnap_devio_producer_flush(p, timeout_ms, error);
      if (!code && pace(opaque, n))
        code = ksnap_error_set(error, KSNAP_ERR_INTERRUPTED,
                               "stopped after %" PRId64 " lines", n);
    }
  }
  if (!code && (code = ksnap_devio_producer_flush(p, timeout_ms, error)))
    ksnap_error_prefix(error, "%s", topic);
  free(line);
  fclose(f);
  ksnap_devio_producer_destroy(p);
  *countp = n;
  return code;
}

static ksnap_err_t partitions(rd_kafka_t *rk, const char *topic,
                              int timeout_ms, int *cntp,
                              ksnap_error_t *error) {
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  const struct rd_kafka_metadata *md = NULL;
  rd_kafka_resp_err_t err;
  ksnap_err_t code = KSNAP_ERR_OK;

  err = rd_kafka_metadata(rk, 0, rkt, &md, timeout_ms);
  if (err)
    code = ksnap__kafka_resp_error(error, rk, err, "metadata");
  else if (md->topic_cnt != 1 || md->topics[0].err ||
           md->topics[0].partition_cnt < 1)
    code = ksnap_error_set(error, KSNAP_ERR_NOT_FOUND, "no topic %s", topic);
  else
    *cntp = md->topics[0].partition_cnt;
  if (md)
    rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  return code;
}

ksnap_err_t ksnap_devio_read_topic(const ksnap_conf_t *conf,
                                   const char *topic, int timeout_ms,
                                   ksnap_devio_record_cb_t *cb, void *opaque,
                                   ksnap_error_t *error) {
  /* a group (never joined) named after the job: under the job's ACLs */
  const char *job = NULL;
  char group[256];
  const char *const defaults[] = {"group.id", group, "fetch.wait.max.ms",
                                  "10", NULL};
  static const char *const forced[] = {
      "isolation.level", "read_committed", "enable.auto.commit", "false",
      "enable.partition.eof", "true", NULL};
  ksnap__kafka_opts_t opts = {RD_KAFKA_CONSUMER, defaults, forced, NULL,
                              NULL};
  rd_kafka_t *rk;
  rd_kafka_topic_partition_list_t *parts = NULL;
  int64_t deadline = ksnap__now_us() + (int64_t)timeout_ms * 1000;
  int cnt = 0, at_end = 0;
  char *done = NULL;
  ksnap_err_t code;

  if (conf)
    ksnap_conf_get_str(conf, "job.name", &job);
  snprintf(group, sizeof(group), "%s.ksnap.reader", job ? job : "ksnap");
  if (!(rk = ksnap__kafka_new(conf, &opts, error)))
    return error->code;
  if ((code = partitions(rk, topic, timeout_ms, &cnt, error)))
    goto out;
  parts = rd_kafka_topic_partition_list_new(cnt);
  done = calloc((size_t)cnt, 1);
  for (int p = 0; p < cnt; p++)
    rd_kafka_topic_partition_list_add(parts, topic, p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  if (!done) {
    code = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    goto out;
  }
  if ((code = ksnap__kafka_error(error, rd_kafka_incremental_assign(rk, parts),
                                 "assign")))
    goto out;
  while (at_end < cnt) {
    rd_kafka_message_t *m;
    if (ksnap__now_us() > deadline) {
      code = ksnap_error_set_retriable(error, KSNAP_ERR_TIMEOUT,
                                       "%s: end not reached within %d ms",
                                       topic, timeout_ms);
      break;
    }
    if (!(m = rd_kafka_consumer_poll(rk, 100)))
      continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      if (m->partition >= 0 && m->partition < cnt && !done[m->partition]) {
        done[m->partition] = 1;
        at_end++;
      }
    } else if (m->err) {
      code = ksnap__kafka_resp_error(error, rk, m->err, "consume");
      rd_kafka_message_destroy(m);
      break;
    } else {
      cb(opaque, m->key, m->key_len, m->payload, m->len);
    }
    rd_kafka_message_destroy(m);
  }
out:
  if (parts)
    rd_kafka_topic_partition_list_destroy(parts);
  free(done);
  rd_kafka_consumer_close(rk);
  ksnap__kafka_destroy(rk);
  return code;
}

/* end - committed (or - first offset) of every partition of @p parts. */
static ksnap_err_t sum_lag(rd_kafka_t *rk,
                           rd_kafka_topic_partition_list_t *parts,
                           int timeout_ms, int64_t *lagp,
                           ksnap_error_t *error) {
  ksnap_err_t code;

  *lagp = 0;
  if ((code = ksnap__kafka_resp_error(
           error, rk, rd_kafka_committed(rk, parts, timeout_ms), "committed")))
    return code;
  for (int i = 0; i < parts->cnt; i++) {
    rd_kafka_topic_partition_t *tp = &parts->elems[i];
    int64_t low = 0, high = 0;
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
        rk, tp->topic, tp->partition, &low, &high, timeout_ms);
    if (err)
      return ksnap__kafka_resp_error(error, rk, err, "watermarks");
    *lagp += high - (tp->offset >= 0 ? tp->offset : low);
  }
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_devio_group_lag(const ksnap_conf_t *conf,
                                  const char *group, const char *topic,
                                  int timeout_ms, int64_t *lagp,
                                  ksnap_error_t *error) {
  const char *const forced[] = {"group.id", group, "enable.auto.commit",
                                "false", NULL};
  ksnap__kafka_opts_t opts = {RD_KAFKA_CONSUMER, NULL, forced, NULL, NULL};
  rd_kafka_t *rk = ksnap__kafka_new(conf, &opts, error);
  rd_kafka_topic_partition_list_t *parts = NULL;
  int cnt = 0;
  ksnap_err_t code;

  *lagp = 0;
  if (!rk)
    return error->code;
  if (!(code = partitions(rk, topic, timeout_ms, &cnt, error))) {
    parts = rd_kafka_topic_partition_list_new(cnt);
    for (int p = 0; p < cnt; p++)
      rd_kafka_topic_partition_list_add(parts, topic, p);
    code = sum_lag(rk, parts, timeout_ms, lagp, error);
    rd_kafka_topic_partition_list_destroy(parts);
  }
  ksnap__kafka_destroy(rk); /* never subscribed: nothing to close */
  return code;
}
