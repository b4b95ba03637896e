/*
 * Last committed progress record of a sink task (see progress.h).
 */
#include "progress.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka/consumer.h"
#include "kafka/kafka_client.h"
#include "sink.h"
#include "base/util.h"

typedef struct scan_s {
  const char *task_id;
  int64_t *target; /* per partition: read until position >= target */
  int *done;
  int ndone, npart;
  ksnap_buf_t *out;
  int found;
  ksnap_err_t code;
} scan_t;

static void mark(scan_t *s, int32_t p, int64_t next) {
  if (p >= 0 && p < s->npart && !s->done[p] && next >= s->target[p]) {
    s->done[p] = 1;
    s->ndone++;
  }
}

static int scan_cb(void *opaque, const rd_kafka_message_t *m) {
  scan_t *s = opaque;
  size_t klen = strlen(s->task_id);

  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    mark(s, m->partition, m->offset);
    return s->ndone == s->npart;
  }
  if (m->key_len == klen && !memcmp(m->key, s->task_id, klen)) {
    ksnap_buf_reset(s->out);
    if (ksnap_buf_append(s->out, m->payload ? m->payload : "", m->len))
      s->code = KSNAP_ERR_NOMEM;
    s->found = 1;
  }
  mark(s, m->partition, m->offset + 1);
  return s->ndone == s->npart || s->code;
}

/* Fills s->target with every partition's read_uncommitted high mark. */
static ksnap_err_t read_targets(const ksnap_conf_t *conf, const char *topic,
                                scan_t *s, int timeout_ms,
                                ksnap_error_t *error) {
  ksnap_kafka_consumer_t *c =
      ksnap_kafka_consumer_new(conf, "read_uncommitted", topic, 0, error);
  int64_t deadline = ksnap__now_us() + (int64_t)timeout_ms * 1000;
  ksnap_err_t code = KSNAP_ERR_OK;
  int64_t lo;

  if (!c)
    return error ? error->code : KSNAP_ERR_KAFKA;
  s->npart = ksnap__consumer_partition_count(c, topic, timeout_ms, error);
  if (s->npart < 0)
    code = error ? error->code : KSNAP_ERR_KAFKA;
  else if (!(s->target = calloc((size_t)s->npart + 1, sizeof(int64_t))) ||
           !(s->done = calloc((size_t)s->npart + 1, sizeof(int))))
    code = ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  for (int p = 0; !code && p < s->npart; p++) {
    /* retriable (e.g. a leader still moving): again until the deadline */
    while ((code = ksnap__consumer_watermarks(c, topic, p, &lo,
                                              &s->target[p], timeout_ms,
                                              error)) &&
           error && error->retriable && ksnap__now_us() < deadline)
      usleep(100 * 1000);
  }
  ksnap_kafka_consumer_destroy(c);
  return code;
}

static ksnap_err_t scan(const ksnap_conf_t *conf, const char *topic,
                        scan_t *s, int timeout_ms, ksnap_error_t *error) {
  int64_t deadline = ksnap__now_us() + (int64_t)timeout_ms * 1000;
  ksnap_kafka_consumer_t *c = ksnap_kafka_consumer_new(
      conf, "read_committed", topic, 1, error);
  ksnap_kafka_pos_t *pos = calloc((size_t)s->npart + 1, sizeof(*pos));
  ksnap_err_t code = KSNAP_ERR_OK;

  if (!c || !pos) {
    code = c ? ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory")
             : (error ? error->code : KSNAP_ERR_KAFKA);
    goto out;
  }
  for (int p = 0; p < s->npart; p++) {
    pos[p] = (ksnap_kafka_pos_t){topic, p, KSNAP_OFFSET_BEGINNING};
    mark(s, p, 0); /* empty partitions are done at once */
  }
  if ((code = ksnap_kafka_consumer_assign(c, pos, (size_t)s->npart, error)))
    goto out;
  while (s->ndone < s->npart && !s->code) {
    if (ksnap__now_us() > deadline) {
      code = ksnap_error_set_retriable(
          error, KSNAP_ERR_TIMEOUT,
          "%s: read_committed end not reached within %d ms (an open "
          "transaction of another sink holds the last stable offset back)",
          topic, timeout_ms);
      goto out;
    }
    if (ksnap__consumer_poll(c, 100, scan_cb, s, error) < 0) {
      code = error ? error->code : KSNAP_ERR_KAFKA;
      goto out;
    }
  }
  if (s->code)
    code = ksnap_error_set(error, s->code, "out of memory");
out:
  free(pos);
  ksnap_kafka_consumer_destroy(c);
  return code;
}

ksnap_err_t ksnap_progress_read_last(const ksnap_conf_t *conf,
                                     const char *task_id, int timeout_ms,
                                     ksnap_buf_t *out, int *foundp,
                                     ksnap_error_t *error) {
  const char *job = NULL;
  char topic[300];
  scan_t s;
  ksnap_err_t code;

  memset(&s, 0, sizeof(s));
  s.task_id = task_id;
  s.out = out;
  *foundp = 0;
  ksnap_buf_reset(out);
  if (ksnap_conf_get_str(conf, "job.name", &job) || !job)
    return ksnap_error_set(error, KSNAP_ERR_CONF_MISSING,
                           "missing required property \"job.name\"");
  snprintf(topic, sizeof(topic), "%s%s", job, KSNAP_SINK_PROGRESS_SUFFIX);
  code = read_targets(conf, topic, &s, timeout_ms, error);
  if (!code)
    code = scan(conf, topic, &s, timeout_ms, error);
  if (!code)
    *foundp = s.found;
  else
    ksnap_buf_reset(out);
  free(s.target);
  free(s.done);
  return code;
}
