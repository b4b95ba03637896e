/* Fake tasks speaking the coordinator's record contract (see faketask.h). */
#include "faketask.h"

#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka/consumer.h"
#include "control/coord_io.h"
#include "driver/coord_store.h"
#include "kafka/kafka_client.h"
#include "ksnap/buf.h"
#include "base/util.h"

#define MAX_TASKS 16

struct ksnap_fake_tasks_s {
  const ksnap_conf_t *conf;
  char stage[64];
  int n;
  char job[256];
  char acks[300], ctl[300];
  pthread_t thread;
  pthread_mutex_t lock;
  int stop;
  int64_t generation;
  int64_t decline_id;
  int silent[MAX_TASKS];
  char pos_topic[256];      /* "": the ACKs carry no source positions */
  int64_t pos[MAX_TASKS];   /* task i's position in pos_topic [i] */
  ksnap_fake_event_t *ev;
  int nev, cap;
  rd_kafka_t *prod;
  ksnap_storage_t *st; /* state.checkpoints.dir, for the metadata check */
};

static void send_ack(ksnap_fake_tasks_t *ft, ksnap_ack_record_t *rec) {
  ksnap_buf_t buf;
  ksnap_error_t error;

  ksnap_buf_init(&buf);
  ck_assert_int_eq(ksnap_codec_ack_encode(rec, &buf, &error), 0);
  rd_kafka_producev(ft->prod, RD_KAFKA_V_TOPIC(ft->acks),
                    RD_KAFKA_V_PARTITION(0),
                    RD_KAFKA_V_VALUE(buf.data, buf.len),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
  ksnap_buf_cleanup(&buf);
}

static ksnap_task_id_t tid(ksnap_fake_tasks_t *ft, int i) {
  return (ksnap_task_id_t){ft->stage, i};
}

static void register_all(ksnap_fake_tasks_t *ft, int64_t g) {
  for (int i = 0; i < ft->n; i++) {
    ksnap_ack_record_t r = {.type = KSNAP_ACKT_REGISTER};
    r.u.reg = (ksnap_register_t){tid(ft, i), "fake", "localhost",
                                 (int32_t)getpid(), g, false};
    send_ack(ft, &r);
  }
}

static void heartbeats(ksnap_fake_tasks_t *ft, int64_t g) {
  for (int i = 0; i < ft->n; i++) {
    ksnap_ack_record_t r = {.type = KSNAP_ACKT_HEARTBEAT};
    pthread_mutex_lock(&ft->lock);
    int silent = ft->silent[i];
    pthread_mutex_unlock(&ft->lock);
    if (silent)
      continue;
    r.u.heartbeat = (ksnap_heartbeat_t){tid(ft, i), g, ksnap__wallclock_ms(),
                                        100, 100, false};
    send_ack(ft, &r);
  }
}

/* Stores task @p i's "state" at checkpoint @p id and describes it. */
static void put_state(ksnap_fake_tasks_t *ft, int i, int64_t id,
                      ksnap_state_handle_t *h, char *key, char *sum) {
  ksnap_storage_stat_t st;
  ksnap_error_t error;
  char data[128];

  snprintf(key, 512, "%s/chk-%" PRId64 "/%s-%d", ft->job, id, ft->stage, i);
  snprintf(data, sizeof(data), "state of %s[%d] at %" PRId64, ft->stage, i,
           id);
  ck_assert_msg(!ksnap_storage_put(ft->st, key, data, strlen(data), &error)
                && !ksnap_storage_head(ft->st, key, &st, &error), "%s",
                error.msg);
  snprintf(sum, 32, "crc32c:%08x", st.crc32c);
  *h = (ksnap_state_handle_t){key, (int64_t)st.size, sum, 0, 127};
}

static void on_trigger(ksnap_fake_tasks_t *ft, const ksnap_trigger_t *t) {
  ksnap_state_handle_t h;
  ksnap_source_offset_t pos;
  char key[512], sum[32], topic[256];

  for (int i = 0; i < ft->n; i++) {
    ksnap_ack_record_t r;
    memset(&r, 0, sizeof(r));
    pthread_mutex_lock(&ft->lock);
    int silent = ft->silent[i], decline = ft->decline_id == t->checkpoint_id;
    snprintf(topic, sizeof(topic), "%s", ft->pos_topic);
    pos = (ksnap_source_offset_t){topic, i, ft->pos[i]};
    pthread_mutex_unlock(&ft->lock);
    if (silent)
      continue;
    if (decline && i == 0) {
      r.type = KSNAP_ACKT_DECLINE;
      r.u.decline = (ksnap_decline_t){t->checkpoint_id, tid(ft, i),
                                      t->generation, "fake decline", false};
    } else {
      r.type = KSNAP_ACKT_ACK;
      r.u.ack.checkpoint_id = t->checkpoint_id;
      r.u.ack.generation = t->generation;
      r.u.ack.snapshot.task = tid(ft, i);
      put_state(ft, i, t->checkpoint_id, &h, key, sum);
      r.u.ack.snapshot.handles = &h;
      r.u.ack.snapshot.handle_cnt = 1;
      r.u.ack.snapshot.timings = (ksnap_timings_t){1000, 2000, 300, 400, 0};
      if (topic[0]) {
        r.u.ack.snapshot.offsets = &pos;
        r.u.ack.snapshot.offset_cnt = 1;
      }
    }
    send_ack(ft, &r);
  }
}

static void on_complete(ksnap_fake_tasks_t *ft, const ksnap_complete_t *c,
                        ksnap_fake_event_t *ev) {
  ksnap_storage_stat_t st;
  ksnap_error_t error;
  char key[512];

  ksnap__coord_meta_key(key, sizeof(key), ft->job, c->checkpoint_id);
  ev->meta_existed = ksnap_storage_head(ft->st, key, &st, &error) == 0;
  snprintf(ev->path, sizeof(ev->path), "%s", c->metadata_path);
  for (int i = 0; i < ft->n; i++) {
    ksnap_ack_record_t r = {.type = KSNAP_ACKT_COMMITTED};
    r.u.committed = (ksnap_committed_t){c->checkpoint_id, tid(ft, i),
                                        c->generation};
    send_ack(ft, &r);
  }
}

static int on_control(void *opaque, const void *buf, size_t len, int64_t ts) {
  ksnap_fake_tasks_t *ft = opaque;
  ksnap_fake_event_t ev;
  ksnap_control_record_t rec;
  ksnap_error_t error;

  (void)ts;
  ck_assert_int_eq(ksnap_codec_control_decode(buf, len, &rec, &error), 0);
  memset(&ev, 0, sizeof(ev));
  ev.type = rec.type;
  ev.seen_us = ksnap__now_us();
  switch (rec.type) {
  case KSNAP_CONTROL_TRIGGER:
    ev.checkpoint_id = rec.u.trigger.checkpoint_id;
    ev.generation = rec.u.trigger.generation;
    ev.is_savepoint = rec.u.trigger.options.is_savepoint;
    if (ev.generation == ft->generation)
      on_trigger(ft, &rec.u.trigger);
    break;
  case KSNAP_CONTROL_COMPLETE:
    ev.checkpoint_id = rec.u.complete.checkpoint_id;
    ev.generation = rec.u.complete.generation;
    on_complete(ft, &rec.u.complete, &ev);
    break;
  case KSNAP_CONTROL_ABORT:
    ev.checkpoint_id = rec.u.abort.checkpoint_id;
    ev.generation = rec.u.abort.generation;
    break;
  case KSNAP_CONTROL_RESTORE:
    ev.checkpoint_id = rec.u.restore.checkpoint_id;
    ev.generation = rec.u.restore.generation;
    pthread_mutex_lock(&ft->lock);
    ft->generation = ev.generation;
    memset(ft->silent, 0, sizeof(ft->silent));
    pthread_mutex_unlock(&ft->lock);
    register_all(ft, ev.generation);
    break;
  case KSNAP_CONTROL_ASSIGN: /* the fake instance owns every task */
  case KSNAP_CONTROL_MEMBER:  /* and is no member */
    ksnap_control_record_cleanup(&rec);
    return 0;
  case KSNAP_CONTROL_JOB_FAILED:
    ev.generation = rec.u.job_failed.generation;
    break;
  case KSNAP_CONTROL_JOB_STOPPED:
    ev.checkpoint_id = rec.u.job_stopped.checkpoint_id;
    ev.generation = rec.u.job_stopped.generation;
    break;
  case KSNAP_CONTROL_JOB_FINISHED:
    ev.checkpoint_id = rec.u.job_finished.checkpoint_id;
    ev.generation = rec.u.job_finished.generation;
    break;
  }
  ksnap_control_record_cleanup(&rec);
  pthread_mutex_lock(&ft->lock);
  if (ft->nev == ft->cap) {
    ft->cap = ft->cap ? 2 * ft->cap : 64;
    ft->ev = realloc(ft->ev, (size_t)ft->cap * sizeof(*ft->ev));
  }
  ft->ev[ft->nev++] = ev;
  pthread_mutex_unlock(&ft->lock);
  return 0;
}

static void *run(void *arg) {
  ksnap_fake_tasks_t *ft = arg;
  ksnap_error_t error;
  ksnap_kafka_consumer_t *c =
      ksnap__coord_consumer_open(ft->conf, ft->ctl, KSNAP_OFFSET_BEGINNING, 0,
                                 &error);
  int64_t next_hb = 0;

  if (!c) {
    fprintf(stderr, "fake tasks: %s\n", error.msg);
    return NULL;
  }
  register_all(ft, 0);
  for (;;) {
    pthread_mutex_lock(&ft->lock);
    int stop = ft->stop;
    int64_t g = ft->generation;
    pthread_mutex_unlock(&ft->lock);
    if (stop)
      break;
    if (ksnap__now_us() >= next_hb) {
      heartbeats(ft, g);
      next_hb = ksnap__now_us() + 100 * 1000;
    }
    ksnap__coord_consumer_poll(c, 50, on_control, ft, &error);
    rd_kafka_poll(ft->prod, 0);
  }
  ksnap_kafka_consumer_destroy(c);
  return NULL;
}

ksnap_fake_tasks_t *ksnap_fake_tasks_start(const ksnap_conf_t *conf,
                                           const char *stage, int n) {
  ksnap_fake_tasks_t *ft = calloc(1, sizeof(*ft));
  const char *job = NULL;
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, NULL, NULL, NULL, NULL};
  ksnap_error_t error;

  ck_assert_ptr_nonnull(ft);
  ck_assert_int_le(n, MAX_TASKS);
  ft->conf = conf;
  ft->n = n;
  ft->decline_id = -2;
  snprintf(ft->stage, sizeof(ft->stage), "%s", stage);
  ck_assert_int_eq(ksnap_conf_get_str(conf, "job.name", &job), 0);
  snprintf(ft->job, sizeof(ft->job), "%s", job);
  ksnap__coord_topic(ft->ctl, sizeof(ft->ctl), job,
                     KSNAP_COORD_CONTROL_SUFFIX);
  ksnap__coord_topic(ft->acks, sizeof(ft->acks), job,
                     KSNAP_COORD_ACKS_SUFFIX);
  ck_assert_msg(!ksnap__coord_storage_open(conf, &ft->st, &error), "%s",
                error.msg);
  ft->prod = ksnap__kafka_new(conf, &opts, &error);
  ck_assert_msg(ft->prod != NULL, "%s", error.msg);
  pthread_mutex_init(&ft->lock, NULL);
  ck_assert_int_eq(pthread_create(&ft->thread, NULL, run, ft), 0);
  return ft;
}

void ksnap_fake_tasks_stop(ksnap_fake_tasks_t *ft) {
  if (!ft)
    return;
  pthread_mutex_lock(&ft->lock);
  ft->stop = 1;
  pthread_mutex_unlock(&ft->lock);
  pthread_join(ft->thread, NULL);
  rd_kafka_flush(ft->prod, 5000);
  ksnap__kafka_destroy(ft->prod);
  ksnap_storage_destroy(ft->st);
  pthread_mutex_destroy(&ft->lock);
  free(ft->ev);
  free(ft);
}

void ksnap_fake_tasks_decline(ksnap_fake_tasks_t *ft, int64_t id) {
  pthread_mutex_lock(&ft->lock);
  ft->decline_id = id;
  pthread_mutex_unlock(&ft->lock);
}

void ksnap_fake_tasks_position(ksnap_fake_tasks_t *ft, int task,
                               const char *topic, int64_t offset) {
  pthread_mutex_lock(&ft->lock);
  snprintf(ft->pos_topic, sizeof(ft->pos_topic), "%s", topic);
  ft->pos[task] = offset;
  pthread_mutex_unlock(&ft->lock);
}

void ksnap_fake_tasks_silence(ksnap_fake_tasks_t *ft, int task) {
  pthread_mutex_lock(&ft->lock);
  ft->silent[task] = 1;
  pthread_mutex_unlock(&ft->lock);
}

int ksnap_fake_tasks_wait(ksnap_fake_tasks_t *ft, ksnap_control_type_t type,
                          int64_t generation, int cnt, int timeout_ms) {
  int64_t deadline = ksnap__now_us() + (int64_t)timeout_ms * 1000;

  do {
    int seen = 0;
    pthread_mutex_lock(&ft->lock);
    for (int i = 0; i < ft->nev; i++)
      seen += ft->ev[i].type == type &&
              (generation < 0 || ft->ev[i].generation == generation);
    pthread_mutex_unlock(&ft->lock);
    if (seen >= cnt)
      return 1;
    usleep(20 * 1000);
  } while (ksnap__now_us() < deadline);
  return 0;
}

int ksnap_fake_tasks_events(ksnap_fake_tasks_t *ft, ksnap_fake_event_t **evp) {
  int n;

  pthread_mutex_lock(&ft->lock);
  n = ft->nev;
  *evp = malloc((size_t)(n ? n : 1) * sizeof(**evp));
  memcpy(*evp, ft->ev, (size_t)n * sizeof(**evp));
  pthread_mutex_unlock(&ft->lock);
  return n;
}
