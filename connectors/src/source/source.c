/*
 * Kafka source (see source.h). Owner: the task thread.
 */
#include "source.h"

#include <stdlib.h>
#include <string.h>

#include "kafka/consumer.h"
#include "kafka/kafka_client.h"
#include "ksnap/log.h"

/* Bounded inputs: the last partition EOF seen per assigned partition. */
typedef struct eof_pos_s {
  char topic[256];
  int32_t partition;
  int64_t offset;
} eof_pos_t;

struct ksnap_source_s {
  ksnap_kafka_consumer_t *consumer;
  eof_pos_t *eofs;
  size_t neofs;
};

size_t ksnap_source_partitions_for_task(int npartitions, int task,
                                        int parallelism, int32_t *out) {
  size_t n = 0;

  if (parallelism <= 0 || task < 0 || task >= parallelism)
    return 0;
  for (int p = task; p < npartitions; p += parallelism)
    out[n++] = p;
  return n;
}

static int64_t start_of(const ksnap_kafka_pos_t *start, size_t nstart,
                        const char *topic, int32_t p) {
  for (size_t i = 0; i < nstart; i++)
    if (start[i].partition == p && !strcmp(start[i].topic, topic))
      return start[i].offset;
  return KSNAP_OFFSET_BEGINNING;
}

/* Appends the task's partitions of @p topic to *posp. */
static ksnap_err_t add_topic(ksnap_source_t *src, const char *topic, int task,
                             int parallelism, const ksnap_kafka_pos_t *start,
                             size_t nstart, int timeout_ms,
                             ksnap_kafka_pos_t **posp, size_t *np,
                             ksnap_error_t *error) {
  int cnt = ksnap__consumer_partition_count(src->consumer, topic, timeout_ms,
                                            error);
  ksnap_kafka_pos_t *pos;
  int32_t *parts;
  size_t k;

  if (cnt < 0)
    return error ? error->code : KSNAP_ERR_KAFKA;
  parts = calloc((size_t)cnt + 1, sizeof(*parts));
  pos = realloc(*posp, (*np + (size_t)cnt + 1) * sizeof(*pos));
  if (!parts || !pos) {
    free(parts);
    if (pos)
      *posp = pos;
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  *posp = pos;
  k = ksnap_source_partitions_for_task(cnt, task, parallelism, parts);
  for (size_t i = 0; i < k; i++)
    pos[(*np)++] = (ksnap_kafka_pos_t){
        topic, parts[i], start_of(start, nstart, topic, parts[i])};
  free(parts);
  return KSNAP_ERR_OK;
}

ksnap_source_t *ksnap_source_new(const ksnap_conf_t *conf,
                                 const char *const *topics, size_t ntopics,
                                 int task, int parallelism,
                                 const ksnap_kafka_pos_t *start,
                                 size_t nstart, int timeout_ms,
                                 ksnap_error_t *error) {
  ksnap_source_t *src;
  ksnap_kafka_pos_t *pos = NULL;
  const char *job = NULL;
  size_t n = 0;
  ksnap_err_t code = KSNAP_ERR_OK;

  if (parallelism <= 0 || task < 0 || task >= parallelism) {
    ksnap_error_set(error, KSNAP_ERR_INVALID_ARG,
                    "source task %d out of range 0..%d", task,
                    parallelism - 1);
    return NULL;
  }
  if (!(src = calloc(1, sizeof(*src)))) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  if (conf)
    ksnap_conf_get_str(conf, "job.name", &job);
  src->consumer = ksnap_kafka_consumer_new(conf, "read_committed",
                                           job ? job : "ksnap", 1, error);
  if (!src->consumer)
    code = error ? error->code : KSNAP_ERR_KAFKA;
  for (size_t t = 0; !code && t < ntopics; t++)
    code = add_topic(src, topics[t], task, parallelism, start, nstart,
                     timeout_ms, &pos, &n, error);
  if (!code)
    code = ksnap_kafka_consumer_assign(src->consumer, pos, n, error);
  free(pos); /* topics were borrowed from @p topics */
  if (code) {
    ksnap_source_destroy(src);
    return NULL;
  }
  return src;
}

void ksnap_source_destroy(ksnap_source_t *src) {
  if (!src)
    return;
  ksnap_kafka_consumer_destroy(src->consumer);
  free(src->eofs);
  free(src);
}

typedef struct dispatch_s {
  ksnap_source_t *src;
  ksnap_source_msg_cb_t *cb;
  void *opaque;
} dispatch_t;

static eof_pos_t *find_eof(const ksnap_source_t *src, const char *topic,
                           int32_t partition) {
  for (size_t i = 0; i < src->neofs; i++)
    if (src->eofs[i].partition == partition &&
        !strcmp(src->eofs[i].topic, topic))
      return &src->eofs[i];
  return NULL;
}

/* A partition EOF at m->offset: the fetch position, past any transaction
 * marker that is never delivered as a record. */
static void note_eof(ksnap_source_t *src, const rd_kafka_message_t *m) {
  const char *topic = rd_kafka_topic_name(m->rkt);
  eof_pos_t *e = find_eof(src, topic, m->partition), *grown;

  if (!e && strlen(topic) < sizeof(e->topic) &&
      (grown = realloc(src->eofs, (src->neofs + 1) * sizeof(*grown)))) {
    src->eofs = grown;
    e = &grown[src->neofs++];
    strcpy(e->topic, topic);
    e->partition = m->partition;
    e->offset = -1;
  }
  if (e && m->offset > e->offset)
    e->offset = m->offset;
}

static int dispatch(void *opaque, const rd_kafka_message_t *m) {
  dispatch_t *d = opaque;
  ksnap_source_msg_t msg = {
      rd_kafka_topic_name(m->rkt), m->partition, m->offset, m->key,
      m->key_len, m->payload, m->len, rd_kafka_message_timestamp(m, NULL),
      NULL, 0};

  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
    note_eof(d->src, m);
  if (m->err)
    return 0;
  if (ksnap__consumer_user_headers(d->src->consumer, m, &msg.headers,
                                   &msg.header_cnt))
    KSNAP_ERR("source", "out of memory for the headers of %s[%d]@%lld: "
              "passed without them", msg.topic, (int)msg.partition,
              (long long)msg.offset);
  return d->cb(d->opaque, &msg);
}

int ksnap_source_poll(ksnap_source_t *src, int timeout_ms,
                      ksnap_source_msg_cb_t *cb, void *opaque,
                      ksnap_error_t *error) {
  dispatch_t d = {src, cb, opaque};

  return ksnap__consumer_poll(src->consumer, timeout_ms, dispatch, &d, error);
}

ksnap_err_t ksnap_source_positions(const ksnap_source_t *src,
                                   ksnap_kafka_pos_t **positionsp,
                                   size_t *np, ksnap_error_t *error) {
  return ksnap_kafka_consumer_positions(src->consumer, positionsp, np, error);
}

ksnap_err_t ksnap_source_commit(ksnap_source_t *src,
                                const ksnap_kafka_pos_t *positions, size_t n,
                                ksnap_error_t *error) {
  return ksnap_kafka_consumer_commit(src->consumer, positions, n, error);
}

ksnap_kafka_consumer_t *ksnap_source_consumer(ksnap_source_t *src) {
  return src->consumer;
}

ksnap_err_t ksnap_source_end_offset(ksnap_source_t *src, const char *topic,
                                    int32_t partition, int64_t *endp,
                                    int timeout_ms, ksnap_error_t *error) {
  int64_t low;

  return ksnap__consumer_watermarks(src->consumer, topic, partition, &low,
                                    endp, timeout_ms, error);
}

int ksnap_source_reached(const ksnap_source_t *src, const char *topic,
                         int32_t partition, int64_t next, int64_t end) {
  const eof_pos_t *e = find_eof(src, topic, partition);

  return end <= 0 || next >= end || (e && e->offset >= end);
}
