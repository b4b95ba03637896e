/*
 * Kafka source against the real broker: assignment p mod P, start
 * positions from the caller (never from committed offsets), positions,
 * and the explicit commit to the job's consumer group.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "conntest.h"
#include "kafka_testutil.h"
#include "source/source.h"
#include "testutil.h"

#define NPART 5
#define PER_PART 5

static const char *bs(void) {
  return ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
}

/* Topic with NPART partitions, values "p<P>-<i>" at offsets i. */
static char *make_topic(void) {
  char *topic = ksnap_test_unique_name("src");
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs(), NULL);
  char val[32];

  ksnap_test_create_topic(bs(), topic, NPART);
  for (int p = 0; p < NPART; p++)
    for (int i = 0; i < PER_PART; i++) {
      snprintf(val, sizeof(val), "p%d-%d", p, i);
      ck_assert(!rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                                   RD_KAFKA_V_PARTITION(p),
                                   RD_KAFKA_V_VALUE(val, strlen(val)),
                                   RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                   RD_KAFKA_V_END));
    }
  ck_assert(!rd_kafka_flush(rk, 30000));
  rd_kafka_destroy(rk);
  return topic;
}

typedef struct seen_s {
  int count[NPART];
  int64_t first[NPART];
  int bad;
} seen_t;

static int seen_cb(void *opaque, const ksnap_source_msg_t *m) {
  seen_t *s = opaque;
  char want[32];

  snprintf(want, sizeof(want), "p%d-%d", (int)m->partition, (int)m->offset);
  if (m->value_len != strlen(want) || memcmp(m->value, want, m->value_len))
    s->bad++;
  if (s->count[m->partition]++ == 0)
    s->first[m->partition] = m->offset;
  return 0;
}

static int total(const seen_t *s) {
  int n = 0;
  for (int p = 0; p < NPART; p++)
    n += s->count[p];
  return n;
}

static void drain(ksnap_source_t *src, seen_t *s, int want) {
  ksnap_error_t error;

  for (int i = 0; i < 100 && total(s) < want; i++)
    ck_assert_msg(ksnap_source_poll(src, 100, seen_cb, s, &error) >= 0, "%s",
                  error.msg);
  /* and nothing more arrives */
  for (int i = 0; i < 5; i++)
    ck_assert(ksnap_source_poll(src, 100, seen_cb, s, &error) >= 0);
  ck_assert_int_eq(total(s), want);
  ck_assert_int_eq(s->bad, 0);
}

START_TEST(assignment_is_p_mod_P) {
  int32_t out[16];

  ck_assert_uint_eq(ksnap_source_partitions_for_task(5, 0, 2, out), 3);
  ck_assert(out[0] == 0 && out[1] == 2 && out[2] == 4);
  ck_assert_uint_eq(ksnap_source_partitions_for_task(5, 1, 2, out), 2);
  ck_assert(out[0] == 1 && out[1] == 3);
  ck_assert_uint_eq(ksnap_source_partitions_for_task(2, 2, 3, out), 0);
  ck_assert_uint_eq(ksnap_source_partitions_for_task(5, 3, 3, out), 0);
  ck_assert_uint_eq(ksnap_source_partitions_for_task(5, -1, 3, out), 0);
}
END_TEST

START_TEST(tasks_read_their_partitions) {
  char *topic = make_topic();
  char *job = ksnap_test_unique_name("job");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, NULL);
  const char *topics[] = {topic};
  ksnap_error_t error;

  for (int task = 0; task < 2; task++) {
    seen_t s = {{0}, {0}, 0};
    ksnap_source_t *src =
        ksnap_source_new(conf, topics, 1, task, 2, NULL, 0, 30000, &error);
    ck_assert_msg(src != NULL, "%s", error.msg);
    drain(src, &s, task == 0 ? 3 * PER_PART : 2 * PER_PART);
    for (int p = 0; p < NPART; p++)
      ck_assert_int_eq(s.count[p], p % 2 == task ? PER_PART : 0);
    ksnap_source_destroy(src);
  }
  ck_assert_ptr_null(
      ksnap_source_new(conf, topics, 1, 2, 2, NULL, 0, 30000, &error));
  ck_assert_int_eq(error.code, KSNAP_ERR_INVALID_ARG);
  ksnap_conf_destroy(conf);
  free(topic);
  free(job);
}
END_TEST

static int64_t committed(const char *group, const char *topic, int p) {
  const char *kv[] = {"group.id", group, NULL};
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_CONSUMER, bs(), kv);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  int64_t off;

  rd_kafka_topic_partition_list_add(l, topic, p);
  ck_assert(!rd_kafka_committed(rk, l, 30000));
  off = l->elems[0].offset;
  rd_kafka_topic_partition_list_destroy(l);
  rd_kafka_destroy(rk);
  return off;
}

START_TEST(start_positions_and_commit) {
  char *topic = make_topic();
  char *job = ksnap_test_unique_name("job");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, NULL);
  const char *topics[] = {topic};
  ksnap_kafka_pos_t start[] = {{topic, 2, 3}, {"other", 0, 1}};
  ksnap_kafka_pos_t *pos;
  ksnap_error_t error;
  ksnap_source_t *src;
  seen_t s = {{0}, {0}, 0};
  size_t n;

  src = ksnap_source_new(conf, topics, 1, 0, 2, start, 2, 30000, &error);
  ck_assert_msg(src != NULL, "%s", error.msg);
  ck_assert(!ksnap_source_positions(src, &pos, &n, &error));
  ck_assert_uint_eq(n, 3);
  ck_assert_int_eq(pos[0].offset, KSNAP_OFFSET_BEGINNING);
  ck_assert_int_eq(pos[1].partition, 2);
  ck_assert_int_eq(pos[1].offset, 3);
  ksnap_kafka_pos_free(pos, n);
  drain(src, &s, PER_PART + 2 + PER_PART);
  ck_assert_int_eq(s.first[0], 0);
  ck_assert_int_eq(s.first[2], 3);
  ck_assert_int_eq(s.count[2], 2);
  ck_assert(!ksnap_source_positions(src, &pos, &n, &error));
  for (size_t i = 0; i < n; i++)
    ck_assert_int_eq(pos[i].offset, PER_PART);
  /* commit the "checkpoint's" positions to group <job> */
  pos[0].offset = 4;
  ck_assert_msg(!ksnap_source_commit(src, pos, n, &error), "%s", error.msg);
  ksnap_kafka_pos_free(pos, n);
  ksnap_source_destroy(src);
  ck_assert_int_eq(committed(job, topic, 0), 4);
  ck_assert_int_eq(committed(job, topic, 2), PER_PART);
  ck_assert_int_eq(committed(job, topic, 1), RD_KAFKA_OFFSET_INVALID);

  /* committed offsets are never a start position */
  memset(&s, 0, sizeof(s));
  src = ksnap_source_new(conf, topics, 1, 0, 2, NULL, 0, 30000, &error);
  ck_assert_msg(src != NULL, "%s", error.msg);
  drain(src, &s, 3 * PER_PART);
  ck_assert_int_eq(s.first[0], 0);
  ksnap_source_destroy(src);
  ksnap_conf_destroy(conf);
  free(topic);
  free(job);
}
END_TEST

START_TEST(missing_topic_is_refused) {
  char *job = ksnap_test_unique_name("job");
  char *topic = ksnap_test_unique_name("src-missing");
  ksnap_conf_t *conf = ksnap_test_conn_conf(job, NULL);
  const char *topics[] = {topic};
  ksnap_error_t error;

  ck_assert_ptr_null(
      ksnap_source_new(conf, topics, 1, 0, 1, NULL, 0, 10000, &error));
  ck_assert_int_eq(error.code, KSNAP_ERR_NOT_FOUND);
  ck_assert_msg(strstr(error.msg, topic) != NULL, "%s", error.msg);
  ksnap_conf_destroy(conf);
  free(topic);
  free(job);
}
END_TEST

int main(void) {
  Suite *s = suite_create("source");
  TCase *tc = tcase_create("source");

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, assignment_is_p_mod_P);
  tcase_add_test(tc, tasks_read_their_partitions);
  tcase_add_test(tc, start_positions_and_commit);
  tcase_add_test(tc, missing_topic_is_refused);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
