#include "pipetest.h"

#include <check.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include <librdkafka/rdkafka.h>

#include "kafka_testutil.h"
#include "pipeops.h"

struct pt_acks_s {
  rd_kafka_t *rk;
  ksnap_ack_record_t *recs;
  size_t n, cap;
  const ksnap_ack_record_t **view;
};

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void produce(const char *bootstrap, const char *topic,
                    int32_t partition, const void *data, size_t len) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bootstrap, NULL);
  rd_kafka_resp_err_t err = rd_kafka_producev(
      rk, RD_KAFKA_V_TOPIC(topic),
      RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA : partition),
      RD_KAFKA_V_VALUE((void *)data, len),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  ck_assert_msg(!err, "produce to %s: %s", topic, rd_kafka_err2str(err));
  ck_assert_int_eq(rd_kafka_flush(rk, 30000), 0);
  rd_kafka_destroy(rk);
}

void pt_produce(const char *bootstrap, const char *topic, int32_t partition,
                const char *const *values, size_t n) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bootstrap, NULL);

  for (size_t i = 0; i < n; i++) {
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC(topic),
        RD_KAFKA_V_PARTITION(partition < 0 ? RD_KAFKA_PARTITION_UA
                                           : partition),
        RD_KAFKA_V_VALUE((void *)values[i], strlen(values[i])),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    ck_assert_msg(!err, "produce to %s: %s", topic, rd_kafka_err2str(err));
  }
  ck_assert_int_eq(rd_kafka_flush(rk, 30000), 0);
  rd_kafka_destroy(rk);
}

void pt_send_control(const char *bootstrap, const char *job,
                     const ksnap_control_record_t *rec) {
  char topic[512];
  ksnap_buf_t buf;
  ksnap_error_t error;

  snprintf(topic, sizeof(topic), "%s.ksnap.control", job);
  ksnap_buf_init(&buf);
  ck_assert_msg(!ksnap_codec_control_encode(rec, &buf, &error), "%s",
                error.msg);
  produce(bootstrap, topic, 0, buf.data, buf.len);
  ksnap_buf_cleanup(&buf);
}

void pt_trigger(const char *bootstrap, const char *job, int64_t id,
                int64_t gen) {
  ksnap_control_record_t rec = {.type = KSNAP_CONTROL_TRIGGER};
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  rec.u.trigger = (ksnap_trigger_t){
      id, (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
      {KSNAP_CKPT_ALIGNED, false, false}, gen};
  pt_send_control(bootstrap, job, &rec);
}

void pt_complete(const char *bootstrap, const char *job, int64_t id,
                 int64_t gen) {
  ksnap_control_record_t rec = {.type = KSNAP_CONTROL_COMPLETE};
  char path[512];

  snprintf(path, sizeof(path), "%s/chk-%lld/_metadata", job, (long long)id);
  rec.u.complete = (ksnap_complete_t){id, gen, path};
  pt_send_control(bootstrap, job, &rec);
}

void pt_restore(const char *bootstrap, const char *job, int64_t gen,
                int64_t id) {
  ksnap_control_record_t rec = {.type = KSNAP_CONTROL_RESTORE};

  /* no owner table: every running instance restores (the test plays the
   * coordinator) */
  rec.u.restore = (ksnap_restore_t){gen, id, NULL, NULL, 0};
  pt_send_control(bootstrap, job, &rec);
}

pt_acks_t *pt_acks_new(const char *bootstrap, const char *job) {
  const char *kv[] = {"group.id", "pipetest", NULL};
  pt_acks_t *acks = calloc(1, sizeof(*acks));
  rd_kafka_topic_partition_list_t *list =
      rd_kafka_topic_partition_list_new(1);
  char topic[512];

  snprintf(topic, sizeof(topic), "%s.ksnap.acks", job);
  acks->rk = ksnap_test_kafka_new(RD_KAFKA_CONSUMER, bootstrap, kv);
  rd_kafka_poll_set_consumer(acks->rk);
  rd_kafka_topic_partition_list_add(list, topic, 0)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(acks->rk, list), 0);
  rd_kafka_topic_partition_list_destroy(list);
  return acks;
}

void pt_acks_destroy(pt_acks_t *acks) {
  if (!acks)
    return;
  rd_kafka_consumer_close(acks->rk);
  rd_kafka_destroy(acks->rk);
  for (size_t i = 0; i < acks->n; i++)
    ksnap_ack_record_cleanup(&acks->recs[i]);
  free(acks->recs);
  free(acks->view);
  free(acks);
}

static void poll_once(pt_acks_t *acks) {
  rd_kafka_message_t *m = rd_kafka_consumer_poll(acks->rk, 100);
  ksnap_error_t error;

  if (!m)
    return;
  if (!m->err) {
    if (acks->n == acks->cap) {
      acks->cap = acks->cap ? acks->cap * 2 : 64;
      acks->recs = realloc(acks->recs, acks->cap * sizeof(*acks->recs));
      ck_assert_ptr_nonnull(acks->recs);
    }
    if (!ksnap_codec_ack_decode(m->payload, m->len, &acks->recs[acks->n],
                                &error))
      acks->n++;
  }
  rd_kafka_message_destroy(m);
}

static const ksnap_task_id_t *rec_task(const ksnap_ack_record_t *r,
                                       int64_t *idp, int64_t *genp) {
  switch (r->type) {
  case KSNAP_ACKT_ACK:
    *idp = r->u.ack.checkpoint_id;
    *genp = r->u.ack.generation;
    return &r->u.ack.snapshot.task;
  case KSNAP_ACKT_DECLINE:
    *idp = r->u.decline.checkpoint_id;
    *genp = r->u.decline.generation;
    return &r->u.decline.task;
  case KSNAP_ACKT_HEARTBEAT:
    *idp = 0;
    *genp = r->u.heartbeat.generation;
    return &r->u.heartbeat.task;
  case KSNAP_ACKT_REGISTER:
    *idp = 0;
    *genp = r->u.reg.generation;
    return &r->u.reg.task;
  case KSNAP_ACKT_COMMITTED:
    *idp = r->u.committed.checkpoint_id;
    *genp = r->u.committed.generation;
    return &r->u.committed.task;
  default:
    return NULL;
  }
}

size_t pt_acks_wait(pt_acks_t *acks, ksnap_ack_type_t type, int64_t id,
                    int64_t gen, size_t n, int timeout_ms,
                    const ksnap_ack_record_t ***recs) {
  int64_t deadline = now_ms() + timeout_ms;
  size_t found = 0;

  for (;;) {
    int declined = 0;
    free(acks->view);
    acks->view = calloc(acks->n + 1, sizeof(*acks->view));
    found = 0;
    for (size_t i = 0; i < acks->n; i++) {
      int64_t rid, rgen;
      const ksnap_task_id_t *t = rec_task(&acks->recs[i], &rid, &rgen);
      int dup = 0;
      if (!t || rid != id || rgen != gen)
        continue;
      if (acks->recs[i].type == KSNAP_ACKT_DECLINE && type == KSNAP_ACKT_ACK)
        declined = 1;
      if (acks->recs[i].type != type)
        continue;
      for (size_t k = 0; k < found; k++) {
        int64_t a, b;
        const ksnap_task_id_t *u = rec_task(acks->view[k], &a, &b);
        dup |= !strcmp(u->stage, t->stage) && u->index == t->index;
      }
      if (!dup)
        acks->view[found++] = &acks->recs[i];
    }
    if (recs)
      *recs = acks->view;
    if (found >= n || declined || now_ms() > deadline) {
      if (found < n && getenv("KSNAP_TEST_DEBUG"))
        for (size_t i = 0; i < acks->n; i++)
          fprintf(stderr, "acks[%zu]: %s\n", i,
                  ksnap_ack_type_name(acks->recs[i].type));
      return found;
    }
    poll_once(acks);
  }
}

void pt_write_metadata(ksnap_storage_t *st, const char *job, int64_t id,
                       int64_t gen, const ksnap_ack_record_t *const *acks,
                       size_t n) {
  pt_write_metadata_parent(st, job, id, gen, KSNAP_CHECKPOINT_NONE, acks, n);
}

void pt_write_metadata_parent(ksnap_storage_t *st, const char *job,
                              int64_t id, int64_t gen, int64_t parent,
                              const ksnap_ack_record_t *const *acks,
                              size_t n) {
  ksnap_checkpoint_meta_t meta = {0};
  ksnap_task_snapshot_t *tasks = calloc(n + 1, sizeof(*tasks));
  ksnap_buf_t buf;
  ksnap_error_t error;
  char key[512];

  for (size_t i = 0; i < n; i++)
    tasks[i] = acks[i]->u.ack.snapshot;
  meta.job = (char *)job;
  meta.checkpoint_id = id;
  meta.generation = gen;
  meta.parent_id = parent;
  meta.tasks = tasks;
  meta.task_cnt = n;
  ksnap_buf_init(&buf);
  ck_assert_msg(!ksnap_codec_meta_encode(&meta, &buf, &error), "%s",
                error.msg);
  snprintf(key, sizeof(key), "%s/chk-%lld/_metadata", job, (long long)id);
  ck_assert_msg(!ksnap_storage_put(st, key, buf.data, buf.len, &error), "%s",
                error.msg);
  ksnap_buf_cleanup(&buf);
  free(tasks);
}

char **pt_consume_committed(const char *bootstrap, const char *topic,
                            int partitions, size_t *np) {
  const char *kv[] = {"group.id", "pipetest", "isolation.level",
                      "read_committed", NULL};
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_CONSUMER, bootstrap, kv);
  rd_kafka_topic_partition_list_t *list =
      rd_kafka_topic_partition_list_new(partitions);
  char **out = NULL;
  size_t n = 0, cap = 0;
  int eof = 0;
  int64_t deadline = now_ms() + 30000;

  rd_kafka_poll_set_consumer(rk);
  for (int p = 0; p < partitions; p++)
    rd_kafka_topic_partition_list_add(list, topic, p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(rk, list), 0);
  rd_kafka_topic_partition_list_destroy(list);
  while (eof < partitions && now_ms() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 200);
    if (!m)
      continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
      eof++;
    else if (!m->err) {
      if (n == cap) {
        cap = cap ? cap * 2 : 256;
        out = realloc(out, cap * sizeof(*out));
      }
      out[n] = malloc(m->key_len + m->len + 2);
      memcpy(out[n], m->key, m->key_len);
      out[n][m->key_len] = ':';
      memcpy(out[n] + m->key_len + 1, m->payload, m->len);
      out[n][m->key_len + 1 + m->len] = '\0';
      n++;
    }
    rd_kafka_message_destroy(m);
  }
  ck_assert_msg(eof == partitions, "%s: end not reached", topic);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  *np = n;
  return out;
}

void pt_produce_lines(const char *bootstrap, const char *topic, int nparts,
                      size_t from, size_t to) {
  char **vals = calloc(to > from ? to - from : 1, sizeof(*vals));
  char buf[64];

  ck_assert_ptr_nonnull(vals);
  for (int p = 0; p < nparts; p++) {
    size_t n = 0;
    for (size_t i = from; i < to; i++)
      if (i % (size_t)nparts == (size_t)p) {
        pt_line(i, buf, sizeof(buf));
        vals[n++] = strdup(buf);
      }
    pt_produce(bootstrap, topic, p, (const char *const *)vals, n);
    for (size_t i = 0; i < n; i++)
      free(vals[i]);
  }
  free(vals);
}

void pt_stop_worker(pid_t pid) {
  int status;

  kill(pid, SIGTERM);
  waitpid(pid, &status, 0);
}
