/*
 * Exchange topics against the real broker: headers and record timestamps
 * round trip, barrier
 * broadcast order per partition, delivery tracking (wait_delivered only
 * after every ack; a failed delivery fails the epoch; bounded timeouts
 * for a missing topic or an unreachable broker), reader seek/pause.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kafka/consumer.h"
#include "conntest.h"
#include "exchange/exchange.h"
#include "kafka_testutil.h"
#include "testutil.h"

#define WAIT_MS 30000

typedef struct rec_s {
  int32_t partition;
  int64_t offset;
  char writer[64];
  int64_t gen;
  int ctl;
  char kind[16];
  char value[64];
  char extra[32]; /* value of header "x", if any */
  int64_t ts;     /* the Kafka timestamp */
} rec_t;

typedef struct recs_s {
  rec_t v[4096];
  size_t n;
} recs_t;

static int collect_cb(void *opaque, const ksnap_exchange_msg_t *m) {
  recs_t *r = opaque;
  rec_t *rec = &r->v[r->n++];

  ck_assert(r->n < 4096);
  memset(rec, 0, sizeof(*rec));
  rec->partition = m->partition;
  rec->offset = m->offset;
  snprintf(rec->writer, sizeof(rec->writer), "%s", m->writer);
  rec->gen = m->generation;
  rec->ctl = m->is_control;
  rec->ts = m->timestamp_ms;
  snprintf(rec->kind, sizeof(rec->kind), "%s", m->ctl);
  snprintf(rec->value, sizeof(rec->value), "%.*s", (int)m->value_len,
           (const char *)m->value);
  return 0;
}

/* Reads @p topic (all @p partitions from the start) until @p want records. */
static recs_t *read_all(ksnap_conf_t *conf, const char *topic,
                        int partitions, size_t want) {
  ksnap_kafka_pos_t pos[16];
  ksnap_error_t error;
  recs_t *r = calloc(1, sizeof(*r));
  ksnap_exchange_reader_t *rd;

  for (int p = 0; p < partitions; p++)
    pos[p] = (ksnap_kafka_pos_t){topic, p, KSNAP_OFFSET_BEGINNING};
  rd = ksnap_exchange_reader_new(conf, pos, (size_t)partitions, &error);
  ck_assert_msg(rd != NULL, "reader: %s", error.msg);
  for (int i = 0; i < 300 && r->n < want; i++)
    ck_assert_msg(ksnap_exchange_reader_poll(rd, 100, collect_cb, r,
                                             &error) >= 0,
                  "poll: %s", error.msg);
  ksnap_exchange_reader_destroy(rd);
  ck_assert_msg(r->n == want, "read %zu records, want %zu", r->n, want);
  return r;
}

static ksnap_exchange_t *writer(ksnap_conf_t *conf, const char *id, int64_t g,
                                const char *const *topics, size_t n) {
  ksnap_error_t error;
  ksnap_exchange_t *ex =
      ksnap_exchange_new(conf, id, g, topics, n, WAIT_MS, &error);

  ck_assert_msg(ex != NULL, "exchange: %s", error.msg);
  return ex;
}

static void produce(ksnap_exchange_t *ex, const char *topic, int32_t p,
                    const char *key, const char *value) {
  ksnap_error_t error;
  ksnap_kafka_header_t x = {"x", "extra", 5};

  ck_assert_msg(!ksnap_exchange_produce(ex, topic, p, key,
                                        key ? strlen(key) : 0, value,
                                        strlen(value), 0, &x, 1, &error),
                "produce: %s", error.msg);
}

static void barrier(ksnap_exchange_t *ex, int64_t n) {
  ksnap_error_t error;
  char payload[32];

  snprintf(payload, sizeof(payload), "B%" PRId64, n);
  ck_assert_msg(!ksnap_exchange_broadcast_barrier(ex, n, payload,
                                                  strlen(payload), &error),
                "barrier: %s", error.msg);
}

START_TEST(headers_round_trip) {
  char *topic = ksnap_test_unique_name("xch-hdr");
  char *job = ksnap_test_unique_name("job");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, NULL);
  const char *topics[] = {topic};
  ksnap_exchange_t *ex;
  ksnap_error_t error;
  int64_t stamp;
  recs_t *r;

  ksnap_test_create_topic(ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"),
                          topic, 2);
  ex = writer(conf, "map[1]", 7, topics, 1);
  ck_assert_int_eq(ksnap_exchange_partitions(ex, topic), 2);
  produce(ex, topic, 0, "k", "hello");
  /* an emit's timestamp (an hour ago: the broker keeps it) */
  stamp = ((int64_t)time(NULL) - 3600) * 1000 + 123;
  ck_assert_msg(!ksnap_exchange_produce(ex, topic, 1, "k", 1, "stamped", 7,
                                        stamp, NULL, 0, &error),
                "produce: %s", error.msg);
  barrier(ex, 1);
  ck_assert_msg(!ksnap_exchange_broadcast_marker(ex, "cancel", "C1", 2,
                                                 &error),
                "%s", error.msg);
  ck_assert_int_eq(ksnap_exchange_broadcast_marker(ex, "barrier", "x", 1,
                                                   &error),
                   KSNAP_ERR_INVALID_ARG);
  barrier(ex, 2);
  ck_assert_int_eq(ksnap_exchange_broadcast_barrier(ex, 2, "x", 1, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_msg(!ksnap_exchange_wait_delivered(ex, 2, WAIT_MS, &error), "%s",
                error.msg);
  ck_assert_msg(!ksnap_exchange_wait_delivered(ex, 1, WAIT_MS, &error), "%s",
                error.msg);
  r = read_all(conf, topic, 2, 8);
  for (size_t i = 0; i < r->n; i++) {
    const rec_t *x = &r->v[i];
    ck_assert_str_eq(x->writer, "map[1]");
    ck_assert_int_eq(x->gen, 7);
    if (!strcmp(x->value, "hello"))
      ck_assert_msg(!x->ctl && !*x->kind && x->ts > stamp,
                    "data record marked control, or timestamp %" PRId64
                    " not the producer's clock", x->ts);
    else if (!strcmp(x->value, "stamped"))
      ck_assert_msg(!x->ctl && x->ts == stamp,
                    "record \"stamped\": timestamp %" PRId64 ", want %" PRId64,
                    x->ts, stamp);
    else if (!strcmp(x->value, "C1"))
      ck_assert_msg(x->ctl && !strcmp(x->kind, "cancel"), "kind %s",
                    x->kind);
    else
      ck_assert_msg(x->ctl && !strcmp(x->kind, "barrier") &&
                        (!strcmp(x->value, "B1") || !strcmp(x->value, "B2")),
                    "unexpected record %s", x->value);
  }
  free(r);
  ksnap_exchange_destroy(ex);
  ksnap_conf_destroy(conf);
  free(topic);
  free(job);
}
END_TEST

/* Epoch of a record value "e<N>-<i>" or barrier "B<N>". */
static void check_partition_order(const recs_t *r, int32_t p, int nbar) {
  int64_t last_off = -1;
  int seen_bar = 0;

  for (size_t i = 0; i < r->n; i++) {
    const rec_t *x = &r->v[i];
    if (x->partition != p)
      continue;
    ck_assert_int_gt(x->offset, last_off); /* reader hands offsets in order */
    last_off = x->offset;
    if (x->ctl) {
      ck_assert_int_eq(atoi(x->value + 1), seen_bar + 1);
      seen_bar++;
    } else {
      /* a record of epoch N lies after barrier N-1 and before barrier N */
      ck_assert_msg(atoi(x->value + 1) == seen_bar + 1,
                    "partition %d: %s at offset %" PRId64 " after %d barriers",
                    (int)p, x->value, x->offset, seen_bar);
    }
  }
  ck_assert_int_eq(seen_bar, nbar);
}

START_TEST(barrier_reaches_every_partition_after_records) {
  char *t1 = ksnap_test_unique_name("xch-bar1");
  char *t2 = ksnap_test_unique_name("xch-bar2");
  char *job = ksnap_test_unique_name("job");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, NULL);
  const char *topics[] = {t1, t2};
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  ksnap_exchange_t *ex;
  ksnap_error_t error;
  char key[32], val[32];
  recs_t *r;

  ksnap_test_create_topic(bs, t1, 3);
  ksnap_test_create_topic(bs, t2, 2);
  ex = writer(conf, "src[0]", 1, topics, 2);
  for (int e = 1; e <= 2; e++) {
    for (int i = 0; i < 200; i++) {
      snprintf(key, sizeof(key), "k%d", i);
      snprintf(val, sizeof(val), "e%d-%d", e, i);
      produce(ex, topics[i % 2], -1, key, val);
    }
    barrier(ex, e);
  }
  ck_assert_msg(!ksnap_exchange_wait_delivered(ex, 2, WAIT_MS, &error), "%s",
                error.msg);
  /* 200 records + 2 barriers x 3 partitions on t1, same x 2 on t2 */
  r = read_all(conf, t1, 3, 200 + 6);
  for (int p = 0; p < 3; p++)
    check_partition_order(r, p, 2);
  free(r);
  r = read_all(conf, t2, 2, 200 + 4);
  for (int p = 0; p < 2; p++)
    check_partition_order(r, p, 2);
  free(r);
  ksnap_exchange_destroy(ex);
  ksnap_conf_destroy(conf);
  free(t1);
  free(t2);
  free(job);
}
END_TEST

START_TEST(wait_delivered_waits_for_acks) {
  char *topic = ksnap_test_unique_name("xch-wait");
  char *job = ksnap_test_unique_name("job");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, NULL);
  const char *topics[] = {topic};
  ksnap_exchange_t *ex;
  ksnap_error_t error;
  recs_t *r;

  ksnap_test_create_topic(ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"),
                          topic, 1);
  ex = writer(conf, "w[0]", 1, topics, 1);
  for (int i = 0; i < 2000; i++)
    produce(ex, topic, 0, NULL, "e1-x");
  barrier(ex, 1);
  /* nothing can be acked within 0 ms of producing (linger.ms=5) */
  ck_assert_int_eq(ksnap_exchange_wait_delivered(ex, 1, 0, &error),
                   KSNAP_ERR_TIMEOUT);
  ck_assert_int_eq(error.retriable, 1);
  ck_assert_int_eq(ksnap_exchange_wait_delivered(ex, 2, 0, &error),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_msg(!ksnap_exchange_wait_delivered(ex, 1, WAIT_MS, &error), "%s",
                error.msg);
  /* once OK, every record is in the log */
  r = read_all(conf, topic, 1, 2001);
  free(r);
  ksnap_exchange_destroy(ex);
  ksnap_conf_destroy(conf);
  free(topic);
  free(job);
}
END_TEST

/* The end of input: after every record on every partition, once; no
 * barrier after it; the delivery wait of a later id covers every record. */
START_TEST(end_of_input_closes_the_writer) {
  char *topic = ksnap_test_unique_name("xch-end");
  char *job = ksnap_test_unique_name("job");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, NULL);
  const char *topics[] = {topic};
  ksnap_exchange_t *ex;
  ksnap_error_t error;
  recs_t *r;

  ksnap_test_create_topic(ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"),
                          topic, 2);
  ex = writer(conf, "w[0]", 1, topics, 1);
  produce(ex, topic, 0, NULL, "e1-a");
  barrier(ex, 1);
  produce(ex, topic, 1, NULL, "e2-b");
  ck_assert_int_eq(ksnap_exchange_wait_delivered(ex, 2, 0, &error),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_msg(!ksnap_exchange_broadcast_end(ex, &error), "%s", error.msg);
  ck_assert_msg(!ksnap_exchange_broadcast_end(ex, &error), "%s", error.msg);
  ck_assert_int_eq(ksnap_exchange_broadcast_barrier(ex, 2, "b", 1, &error),
                   KSNAP_ERR_STATE);
  ck_assert_str_eq(error.msg, "w[0]: barrier 2 after the end of input");
  ck_assert_msg(!ksnap_exchange_wait_delivered(ex, 5, WAIT_MS, &error), "%s",
                error.msg);
  /* once OK, everything is in the log: 2 records, barrier 1 and one end
   * marker per partition, the end last */
  r = read_all(conf, topic, 2, 6);
  ck_assert_int_eq(r->n, 6);
  for (int p = 0; p < 2; p++) {
    int ends = 0;
    const rec_t *last = NULL;
    for (size_t i = 0; i < r->n; i++)
      if (r->v[i].partition == p) {
        ends += r->v[i].ctl && !strcmp(r->v[i].kind, "end");
        last = &r->v[i];
      }
    ck_assert_int_eq(ends, 1);
    ck_assert_str_eq(last->kind, "end");
  }
  free(r);
  ksnap_exchange_destroy(ex);
  ksnap_conf_destroy(conf);
  free(topic);
  free(job);
}
END_TEST

START_TEST(failed_delivery_fails_the_epoch) {
  char *topic = ksnap_test_unique_name("xch-fail");
  char *missing = ksnap_test_unique_name("xch-missing");
  char *job = ksnap_test_unique_name("job");
  /* the client accepts 2 MB records, the broker (1 MB default) refuses */
  const char *kv[] = {"kafka.message.max.bytes", "3000000", NULL};
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, kv);
  const char *topics[] = {topic};
  size_t big_len = 2000000;
  char *big = calloc(1, big_len + 1);
  ksnap_exchange_t *ex;
  ksnap_error_t error;

  ksnap_test_create_topic(ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"),
                          topic, 1);
  ex = writer(conf, "w[0]", 1, topics, 1);
  memset(big, 'x', big_len);
  produce(ex, topic, 0, NULL, "e1-ok");
  ck_assert(!ksnap_exchange_produce(ex, topic, 0, NULL, 0, big, big_len, 0,
                                    NULL, 0, &error));
  barrier(ex, 1);
  produce(ex, topic, 0, NULL, "e2-ok");
  barrier(ex, 2);
  ck_assert_int_eq(ksnap_exchange_wait_delivered(ex, 1, WAIT_MS, &error),
                   KSNAP_ERR_KAFKA);
  ck_assert_msg(strstr(error.msg, "epoch 1: delivery to ") &&
                    strstr(error.msg, topic),
                "%s", error.msg);
  /* the lost record is before barrier 2 too */
  ck_assert_int_eq(ksnap_exchange_wait_delivered(ex, 2, WAIT_MS, &error),
                   KSNAP_ERR_KAFKA);
  /* records only go to the writer's outputs */
  ck_assert_int_eq(ksnap_exchange_produce(ex, missing, 0, NULL, 0, "v", 1, 0,
                                          NULL, 0, &error),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_exchange_produce(ex, topic, 1, NULL, 0, "v", 1, 0,
                                          NULL, 0, &error),
                   KSNAP_ERR_INVALID_ARG);
  ksnap_exchange_destroy(ex);
  free(big);

  /* a missing output topic is refused at creation */
  topics[0] = missing;
  ck_assert_ptr_null(ksnap_exchange_new(conf, "w[0]", 1, topics, 1, 5000,
                                        &error));
  ck_assert_int_eq(error.code, KSNAP_ERR_NOT_FOUND);
  ck_assert_msg(strstr(error.msg, missing) != NULL, "%s", error.msg);
  ksnap_conf_destroy(conf);
  free(topic);
  free(missing);
  free(job);
}
END_TEST

START_TEST(unreachable_broker_times_out) {
  ksnap_conf_t *conf = ksnap_conf_new();
  const char *topics[] = {"any"};
  ksnap_error_t error;
  int64_t t0 = time(NULL);

  ksnap_test_conn_set(conf, "job.name", "j");
  ksnap_test_conn_set(conf, "kafka.bootstrap.servers", "127.0.0.1:1");
  ck_assert_ptr_null(ksnap_exchange_new(conf, "w[0]", 1, topics, 1, 2000,
                                        &error));
  /* librdkafka reports the refused connection, or the timeout */
  ck_assert_msg(error.code == KSNAP_ERR_CONNECT ||
                    error.code == KSNAP_ERR_TIMEOUT,
                "%s", error.msg);
  ck_assert_int_eq(error.retriable, 1);
  ck_assert_int_le(time(NULL) - t0, 10);
  ksnap_conf_destroy(conf);
}
END_TEST

typedef struct first_s {
  int n;
  int64_t first_off;
} first_t;

static int first_cb(void *opaque, const ksnap_exchange_msg_t *m) {
  first_t *f = opaque;

  if (f->n++ == 0)
    f->first_off = m->offset;
  return 0;
}

static first_t poll_for(ksnap_exchange_reader_t *rd, int ms) {
  first_t f = {0, -1};
  ksnap_error_t error;

  for (int i = 0; i < ms / 100; i++)
    ck_assert(ksnap_exchange_reader_poll(rd, 100, first_cb, &f, &error) >= 0);
  return f;
}

START_TEST(reader_start_seek_pause_resume) {
  char *topic = ksnap_test_unique_name("xch-seek");
  char *job = ksnap_test_unique_name("job");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, NULL);
  const char *topics[] = {topic};
  ksnap_kafka_pos_t pos = {topic, 0, 5};
  ksnap_exchange_reader_t *rd;
  ksnap_kafka_consumer_t *c;
  ksnap_exchange_t *ex;
  ksnap_error_t error;
  int64_t off;
  first_t f;

  ksnap_test_create_topic(ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"),
                          topic, 1);
  ex = writer(conf, "w[0]", 1, topics, 1);
  for (int i = 0; i < 10; i++)
    produce(ex, topic, 0, NULL, "e1");
  barrier(ex, 1);
  ck_assert(!ksnap_exchange_wait_delivered(ex, 1, WAIT_MS, &error));
  rd = ksnap_exchange_reader_new(conf, &pos, 1, &error);
  ck_assert_msg(rd != NULL, "%s", error.msg);
  c = ksnap_exchange_reader_consumer(rd);
  f = poll_for(rd, 1500);
  ck_assert_int_eq(f.first_off, 5);
  ck_assert_int_eq(f.n, 6); /* 5..9 and the barrier at 10 */
  ck_assert(!ksnap_kafka_consumer_position(c, topic, 0, &off));
  ck_assert_int_eq(off, 11);
  ck_assert_msg(!ksnap_kafka_consumer_seek(c, topic, 0, 2, 5000, &error),
                "%s", error.msg);
  ck_assert_msg(!ksnap_kafka_consumer_pause(c, topic, 0, 1, &error), "%s",
                error.msg);
  f = poll_for(rd, 1000);
  ck_assert_int_eq(f.n, 0);
  ck_assert(!ksnap_kafka_consumer_pause(c, topic, 0, 0, &error));
  f = poll_for(rd, 1500);
  ck_assert_int_eq(f.first_off, 2);
  ck_assert_int_eq(f.n, 9);
  ck_assert_int_eq(ksnap_kafka_consumer_pause(c, "nope", 0, 1, &error),
                   KSNAP_ERR_NOT_FOUND);
  ksnap_exchange_reader_destroy(rd);
  ksnap_exchange_destroy(ex);
  ksnap_conf_destroy(conf);
  free(topic);
  free(job);
}
END_TEST

int main(void) {
  Suite *s = suite_create("exchange");
  TCase *tc = tcase_create("exchange");

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, headers_round_trip);
  tcase_add_test(tc, barrier_reaches_every_partition_after_records);
  tcase_add_test(tc, wait_delivered_waits_for_acks);
  tcase_add_test(tc, end_of_input_closes_the_writer);
  tcase_add_test(tc, failed_delivery_fails_the_epoch);
  tcase_add_test(tc, unreachable_broker_times_out);
  tcase_add_test(tc, reader_start_seek_pause_resume);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
