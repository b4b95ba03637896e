/*
 * Manually assigned consumer (see consumer.h). Owner: one thread.
 */
#include "consumer.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka_client.h"
#include "base/util.h"

#define BATCH_MAX 1000

struct ksnap_kafka_consumer_s {
  rd_kafka_t *rk;
  ksnap_kafka_pos_t *pos; /* assigned partitions, topics owned */
  int64_t *eof; /* per pos: the offset of its last end-of-partition event
                 * since the assignment or a seek (past transaction
                 * markers, which move no position), or -1 */
  size_t npos;
  size_t last; /* index of the last hit, a cheap cache */
  ksnap_kafka_header_t *hdrs; /* the last message's headers (user_headers) */
  size_t caphdrs;
};

void ksnap_kafka_pos_free(ksnap_kafka_pos_t *positions, size_t n) {
  if (!positions)
    return;
  for (size_t i = 0; i < n; i++)
    free((char *)positions[i].topic);
  free(positions);
}

static ksnap_kafka_pos_t *pos_dup(const ksnap_kafka_pos_t *src, size_t n) {
  ksnap_kafka_pos_t *dst = calloc(n ? n : 1, sizeof(*dst));

  for (size_t i = 0; dst && i < n; i++) {
    dst[i] = src[i];
    if (!(dst[i].topic = strdup(src[i].topic))) {
      ksnap_kafka_pos_free(dst, i);
      return NULL;
    }
  }
  return dst;
}

ksnap_kafka_consumer_t *ksnap_kafka_consumer_new(const ksnap_conf_t *conf,
                                                 const char *isolation,
                                                 const char *group_id,
                                                 int partition_eof,
                                                 ksnap_error_t *error) {
  /* auto.offset.reset=error: a position whose data retention deleted
   * fails loudly instead of silently jumping to the end (librdkafka's
   * default "largest" would skip the lost records) */
  const char *defaults[] = {"group.id", group_id, "fetch.wait.max.ms", "50",
                            "auto.offset.reset", "error", NULL};
  const char *forced[] = {"isolation.level", isolation,
                          "enable.auto.commit", "false",
                          "enable.auto.offset.store", "false",
                          "enable.partition.eof",
                          partition_eof ? "true" : "false", NULL};
  ksnap__kafka_opts_t opts = {RD_KAFKA_CONSUMER, defaults, forced, NULL, NULL};
  ksnap_kafka_consumer_t *c = calloc(1, sizeof(*c));

  if (!c) {
    ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
    return NULL;
  }
  if (!(c->rk = ksnap__kafka_new(conf, &opts, error))) {
    free(c);
    return NULL;
  }
  rd_kafka_poll_set_consumer(c->rk);
  return c;
}

void ksnap_kafka_consumer_destroy(ksnap_kafka_consumer_t *c) {
  if (!c)
    return;
  rd_kafka_consumer_close(c->rk);
  ksnap__kafka_destroy(c->rk);
  ksnap_kafka_pos_free(c->pos, c->npos);
  free(c->eof);
  free(c->hdrs);
  free(c);
}

int ksnap__consumer_user_headers(ksnap_kafka_consumer_t *c,
                                 const rd_kafka_message_t *m,
                                 const ksnap_kafka_header_t **hdrsp,
                                 size_t *np) {
  rd_kafka_headers_t *h = NULL;
  const char *name;
  const void *value;
  size_t len, n = 0;

  *hdrsp = NULL;
  *np = 0;
  /* headers belong to the message: librdkafka parses them on first use */
  if (rd_kafka_message_headers(m, &h) || !h)
    return 0;
  for (size_t i = 0; !rd_kafka_header_get_all(h, i, &name, &value, &len);
       i++) {
    if (!strncmp(name, "ksnap.", 6))
      continue;
    if (n == c->caphdrs) {
      size_t cap = c->caphdrs ? 2 * c->caphdrs : 16;
      ksnap_kafka_header_t *v = realloc(c->hdrs, cap * sizeof(*v));
      if (!v)
        return -1;
      c->hdrs = v;
      c->caphdrs = cap;
    }
    c->hdrs[n++] = (ksnap_kafka_header_t){name, value, len};
  }
  *hdrsp = n ? c->hdrs : NULL;
  *np = n;
  return 0;
}

static rd_kafka_topic_partition_list_t *to_list(const ksnap_kafka_pos_t *pos,
                                                size_t n, int logical) {
  rd_kafka_topic_partition_list_t *list =
      rd_kafka_topic_partition_list_new((int)n);

  for (size_t i = 0; i < n; i++) {
    if (!logical && pos[i].offset < 0)
      continue;
    rd_kafka_topic_partition_list_add(list, pos[i].topic, pos[i].partition)
        ->offset = pos[i].offset;
  }
  return list;
}

ksnap_err_t ksnap_kafka_consumer_assign(ksnap_kafka_consumer_t *c,
                                        const ksnap_kafka_pos_t *positions,
                                        size_t n, ksnap_error_t *error) {
  rd_kafka_topic_partition_list_t *list = to_list(positions, n, 1);
  ksnap_kafka_pos_t *copy = pos_dup(positions, n);
  int64_t *eof = malloc((n + 1) * sizeof(*eof));
  rd_kafka_resp_err_t err;

  if (!copy || !eof) {
    rd_kafka_topic_partition_list_destroy(list);
    ksnap_kafka_pos_free(copy, n);
    free(eof);
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  }
  for (size_t i = 0; i < n; i++)
    eof[i] = -1;
  err = rd_kafka_assign(c->rk, list);
  rd_kafka_topic_partition_list_destroy(list);
  if (err) {
    ksnap_kafka_pos_free(copy, n);
    free(eof);
    return ksnap__kafka_resp_error(error, c->rk, err, "assign");
  }
  ksnap_kafka_pos_free(c->pos, c->npos);
  free(c->eof);
  c->eof = eof;
  c->pos = copy;
  c->npos = n;
  c->last = 0;
  return KSNAP_ERR_OK;
}

static ksnap_kafka_pos_t *find(const ksnap_kafka_consumer_t *c,
                               const char *topic, int32_t partition) {
  ksnap_kafka_consumer_t *mc = (ksnap_kafka_consumer_t *)c;

  if (mc->last < c->npos && c->pos[mc->last].partition == partition &&
      !strcmp(c->pos[mc->last].topic, topic))
    return &c->pos[mc->last];
  for (size_t i = 0; i < c->npos; i++) {
    if (c->pos[i].partition == partition && !strcmp(c->pos[i].topic, topic)) {
      mc->last = i;
      return &c->pos[i];
    }
  }
  return NULL;
}

/* Hands one message to @p cb. @returns 1 to stop, -1 on error, 0 else. */
static int handle(ksnap_kafka_consumer_t *c, rd_kafka_message_t *m,
                  ksnap__consumer_raw_cb_t *cb, void *opaque, int *cnt,
                  ksnap_error_t *error) {
  int stop = 0;

  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    ksnap_kafka_pos_t *p =
        m->rkt ? find(c, rd_kafka_topic_name(m->rkt), m->partition) : NULL;
    if (p)
      c->eof[p - c->pos] = m->offset;
    stop = cb(opaque, m);
  } else if (m->err) {
    ksnap__kafka_resp_error(error, c->rk, m->err, "consume");
    if (m->rkt)
      ksnap_error_prefix(error, "%s [%d]", rd_kafka_topic_name(m->rkt),
                         (int)m->partition);
    stop = -1;
  } else {
    ksnap_kafka_pos_t *p =
        find(c, rd_kafka_topic_name(m->rkt), m->partition);
    if (p)
      p->offset = m->offset + 1;
    (*cnt)++;
    stop = cb(opaque, m);
  }
  rd_kafka_message_destroy(m);
  return stop;
}

int ksnap__consumer_poll(ksnap_kafka_consumer_t *c, int timeout_ms,
                         ksnap__consumer_raw_cb_t *cb, void *opaque,
                         ksnap_error_t *error) {
  rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, timeout_ms);
  int cnt = 0, rc;

  for (int i = 0; m && i < BATCH_MAX; i++) {
    if ((rc = handle(c, m, cb, opaque, &cnt, error)) < 0)
      return -1;
    if (rc > 0)
      break;
    m = i + 1 < BATCH_MAX ? rd_kafka_consumer_poll(c->rk, 0) : NULL;
  }
  if (!cnt && ksnap__kafka_security_failure(error, "consume"))
    return -1; /* nothing comes, and it never will */
  return cnt;
}

static ksnap_err_t one_partition_op(ksnap_kafka_consumer_t *c,
                                    const char *topic, int32_t partition,
                                    int pause, ksnap_error_t *error) {
  rd_kafka_topic_partition_list_t *list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_resp_err_t err;

  rd_kafka_topic_partition_list_add(list, topic, partition);
  err = pause ? rd_kafka_pause_partitions(c->rk, list)
              : rd_kafka_resume_partitions(c->rk, list);
  if (!err)
    err = list->elems[0].err;
  rd_kafka_topic_partition_list_destroy(list);
  return ksnap__kafka_resp_error(error, c->rk, err,
                                 pause ? "pause" : "resume");
}

ksnap_err_t ksnap_kafka_consumer_pause(ksnap_kafka_consumer_t *c,
                                       const char *topic, int32_t partition,
                                       int pause, ksnap_error_t *error) {
  if (!find(c, topic, partition))
    return ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                           "%s [%d] is not assigned", topic, (int)partition);
  return one_partition_op(c, topic, partition, pause, error);
}

ksnap_err_t ksnap_kafka_consumer_seek(ksnap_kafka_consumer_t *c,
                                      const char *topic, int32_t partition,
                                      int64_t offset, int timeout_ms,
                                      ksnap_error_t *error) {
  ksnap_kafka_pos_t *p = find(c, topic, partition);
  rd_kafka_topic_partition_list_t *list;
  rd_kafka_error_t *kerr;
  rd_kafka_resp_err_t err;

  if (!p)
    return ksnap_error_set(error, KSNAP_ERR_NOT_FOUND,
                           "%s [%d] is not assigned", topic, (int)partition);
  list = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(list, topic, partition)->offset = offset;
  kerr = rd_kafka_seek_partitions(c->rk, list, timeout_ms);
  err = list->elems[0].err;
  rd_kafka_topic_partition_list_destroy(list);
  if (kerr)
    return ksnap__kafka_error(error, kerr, "seek");
  if (err)
    return ksnap__kafka_resp_error(error, c->rk, err, "seek");
  p->offset = offset;
  c->eof[p - c->pos] = -1;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_kafka_consumer_position(const ksnap_kafka_consumer_t *c,
                                          const char *topic,
                                          int32_t partition,
                                          int64_t *offsetp) {
  const ksnap_kafka_pos_t *p = find(c, topic, partition);

  if (!p)
    return KSNAP_ERR_NOT_FOUND;
  *offsetp = p->offset;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_kafka_consumer_positions(const ksnap_kafka_consumer_t *c,
                                           ksnap_kafka_pos_t **positionsp,
                                           size_t *np, ksnap_error_t *error) {
  if (!(*positionsp = pos_dup(c->pos, c->npos)))
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  *np = c->npos;
  return KSNAP_ERR_OK;
}

ksnap_err_t ksnap_kafka_consumer_commit(ksnap_kafka_consumer_t *c,
                                        const ksnap_kafka_pos_t *positions,
                                        size_t n, ksnap_error_t *error) {
  rd_kafka_topic_partition_list_t *list = to_list(positions, n, 0);
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;

  if (list->cnt > 0)
    err = rd_kafka_commit(c->rk, list, 0 /* sync */);
  for (int i = 0; !err && i < list->cnt; i++)
    err = list->elems[i].err;
  rd_kafka_topic_partition_list_destroy(list);
  return ksnap__kafka_resp_error(error, c->rk, err, "commit offsets");
}

int ksnap__consumer_partition_count(ksnap_kafka_consumer_t *c,
                                    const char *topic, int timeout_ms,
                                    ksnap_error_t *error) {
  return ksnap__kafka_partition_count(c->rk, topic, timeout_ms, error);
}

ksnap_err_t ksnap__consumer_watermarks(ksnap_kafka_consumer_t *c,
                                       const char *topic, int32_t partition,
                                       int64_t *lowp, int64_t *highp,
                                       int timeout_ms, ksnap_error_t *error) {
  rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(
      c->rk, topic, partition, lowp, highp, timeout_ms);

  if (!err)
    return KSNAP_ERR_OK;
  ksnap__kafka_resp_error(error, c->rk, err, "watermarks");
  return ksnap_error_prefix(error, "%s [%d]", topic, (int)partition);
}

typedef struct to_end_s {
  ksnap__consumer_raw_cb_t *cb;
  void *opaque;
  int64_t end;
  int done; /* the end was reached, or the callback stopped */
} to_end_t;

static int to_end_cb(void *opaque, const rd_kafka_message_t *m) {
  to_end_t *t = opaque;

  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    t->done = m->offset >= t->end;
    return t->done;
  }
  t->done = t->cb(t->opaque, m) || m->offset + 1 >= t->end;
  return t->done;
}

ksnap_err_t ksnap__consumer_read_to_end(ksnap_kafka_consumer_t *c,
                                        const char *topic, int timeout_ms,
                                        ksnap__consumer_raw_cb_t *cb,
                                        void *opaque, ksnap_error_t *error) {
  int64_t deadline = ksnap__now_us() + (int64_t)timeout_ms * 1000;
  to_end_t t = {cb, opaque, 0, 0};
  int64_t low, pos;
  ksnap_err_t err;

  /* Right after the topic's creation the partition may be unknown for a
   * moment: retry until the deadline. */
  while ((err = ksnap__consumer_watermarks(c, topic, 0, &low, &t.end, 5000,
                                           error)) &&
         (err == KSNAP_ERR_NOT_FOUND || error->retriable) &&
         ksnap__now_us() < deadline)
    usleep(100 * 1000);
  if (err)
    return ksnap_error_prefix(error, "reading the end of %s", topic);
  for (;;) {
    const ksnap_kafka_pos_t *p = find(c, topic, 0);
    /* an earlier call may have seen the end-of-partition event, which
     * does not come again while nothing is written */
    if (t.end <= low || t.done ||
        (!ksnap_kafka_consumer_position(c, topic, 0, &pos) && pos >= t.end) ||
        (p && c->eof[p - c->pos] >= t.end))
      return KSNAP_ERR_OK;
    if (ksnap__now_us() > deadline)
      return ksnap_error_set_retriable(error, KSNAP_ERR_TIMEOUT,
                                       "%s: end %lld not reached in %d ms",
                                       topic, (long long)t.end, timeout_ms);
    if (ksnap__consumer_poll(c, 100, to_end_cb, &t, error) < 0)
      return error->code;
  }
}
