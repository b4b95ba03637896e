/*
 * Exchange reader (see exchange.h): a read_uncommitted consumer whose
 * records are decoded into {writer, generation, control} before they reach
 * the caller. Owner: one thread.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/consumer.h"
#include "exchange.h"
#include "kafka/kafka_client.h"
#include "ksnap/log.h"

struct ksnap_exchange_reader_s {
  ksnap_kafka_consumer_t *consumer;
};

typedef struct dispatch_s {
  ksnap_exchange_reader_t *rd;
  ksnap_exchange_msg_cb_t *cb;
  void *opaque;
} dispatch_t;

/* Copies header @p name into @p buf (NUL-terminated). @returns 1 if found */
static int header_str(rd_kafka_headers_t *h, const char *name, char *buf,
                      size_t size) {
  const void *v = NULL;
  size_t len = 0;

  buf[0] = '\0';
  if (!h || rd_kafka_header_get_last(h, name, &v, &len))
    return 0;
  if (len >= size)
    len = size - 1;
  if (v)
    memcpy(buf, v, len);
  buf[len] = '\0';
  return 1;
}

static int64_t parse_gen(const char *s) {
  char *end;
  long long g;

  if (!*s)
    return -1;
  g = strtoll(s, &end, 10);
  return *end || g < 0 ? -1 : (int64_t)g;
}

static int dispatch(void *opaque, const rd_kafka_message_t *m) {
  dispatch_t *d = opaque;
  rd_kafka_headers_t *h = NULL;
  char writer[256], gen[32], ctl[64];
  ksnap_exchange_msg_t msg;

  if (m->err)
    return 0; /* partition EOF: not a record */
  rd_kafka_message_headers(m, &h);
  header_str(h, KSNAP_EXCHANGE_HDR_WRITER, writer, sizeof(writer));
  header_str(h, KSNAP_EXCHANGE_HDR_GEN, gen, sizeof(gen));
  memset(&msg, 0, sizeof(msg));
  msg.is_control = header_str(h, KSNAP_EXCHANGE_HDR_CTL, ctl, sizeof(ctl));
  msg.ctl = ctl;
  msg.topic = rd_kafka_topic_name(m->rkt);
  msg.partition = m->partition;
  msg.offset = m->offset;
  msg.writer = writer;
  msg.generation = parse_gen(gen);
  msg.key = m->key;
  msg.key_len = m->key_len;
  msg.value = m->payload;
  msg.value_len = m->len;
  msg.timestamp_ms = rd_kafka_message_timestamp(m, NULL);
  if (ksnap__consumer_user_headers(d->rd->consumer, m, &msg.headers,
                                   &msg.header_cnt))
    KSNAP_ERR("exchange", "out of memory for the headers of %s[%d]@%lld: "
              "passed without them", msg.topic, (int)msg.partition,
              (long long)msg.offset);
  return d->cb(d->opaque, &msg);
}

ksnap_exchange_reader_t *ksnap_exchange_reader_new(
    const ksnap_conf_t *conf, const ksnap_kafka_pos_t *positions, size_t n,
    ksnap_error_t *error) {
  ksnap_exchange_reader_t *rd = calloc(1, sizeof(*rd));
  const char *job = "ksnap";
  char group[300];

  if (!rd) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  if (conf)
    ksnap_conf_get_str(conf, "job.name", &job);
  /* never joined, never committed to: librdkafka needs a group for assign */
  snprintf(group, sizeof(group), "%s.ksnap.exchange", job ? job : "ksnap");
  rd->consumer =
      ksnap_kafka_consumer_new(conf, "read_uncommitted", group, 0, error);
  if (!rd->consumer ||
      ksnap_kafka_consumer_assign(rd->consumer, positions, n, error)) {
    ksnap_exchange_reader_destroy(rd);
    return NULL;
  }
  return rd;
}

void ksnap_exchange_reader_destroy(ksnap_exchange_reader_t *rd) {
  if (!rd)
    return;
  ksnap_kafka_consumer_destroy(rd->consumer);
  free(rd);
}

int ksnap_exchange_reader_poll(ksnap_exchange_reader_t *rd, int timeout_ms,
                               ksnap_exchange_msg_cb_t *cb, void *opaque,
                               ksnap_error_t *error) {
  dispatch_t d = {rd, cb, opaque};

  return ksnap__consumer_poll(rd->consumer, timeout_ms, dispatch, &d, error);
}

ksnap_kafka_consumer_t *ksnap_exchange_reader_consumer(
    ksnap_exchange_reader_t *rd) {
  return rd->consumer;
}
