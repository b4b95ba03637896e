/*
 * A consumer whose position was deleted by retention fails loudly
 * (auto.offset.reset=error by default) instead of jumping to the end of
 * the partition and silently skipping the lost records. Retention is the
 * embedded mock cluster's: it keeps about 5 MB per partition.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka/consumer.h"
#include "kafka/devio.h"
#include "kafka/embedded.h"
#include "ksnap/conf.h"
#include "testutil.h"
#include "kafka/topics.h"

static int count_cb(void *opaque, const struct rd_kafka_message_s *msg) {
  (void)msg;
  (*(int *)opaque)++;
  return 0;
}

/* Fills partition 0 of @p topic with 8 MB, so offset 0 is gone. */
static void overfill(const ksnap_conf_t *conf, const char *topic,
                     const char *dir) {
  char path[512], line[1025];
  ksnap_error_t error;
  int64_t n = 0;
  FILE *f;

  snprintf(path, sizeof(path), "%s/big.txt", dir);
  ck_assert_ptr_nonnull(f = fopen(path, "w"));
  memset(line, 'x', 1024);
  line[1024] = '\0';
  for (int i = 0; i < 8192; i++)
    fprintf(f, "%s\n", line);
  fclose(f);
  ksnap_error_clear(&error);
  ck_assert_msg(!ksnap_devio_produce_file(conf, topic, path, 30000, NULL, NULL,
                                          &n, &error), "%s", error.msg);
  ck_assert_int_eq(n, 8192);
}

static ksnap_conf_t *conf_for(const ksnap_embedded_t *emb, const char *reset) {
  ksnap_conf_t *conf = ksnap_conf_new();
  char errstr[256];

  ck_assert_int_eq(ksnap_conf_set(conf, "job.name", "reset", errstr,
                                  sizeof(errstr)), 0);
  ck_assert_int_eq(ksnap_conf_set(conf, "kafka.bootstrap.servers",
                                  ksnap_embedded_bootstraps(emb), errstr,
                                  sizeof(errstr)), 0);
  if (reset)
    ck_assert_int_eq(ksnap_conf_set(conf, "kafka.auto.offset.reset", reset,
                                    errstr, sizeof(errstr)), 0);
  return conf;
}

/* Polls from offset 0 for up to 10 s: @returns records read, or -1 with
 * @p error set. */
static int read_from_zero(const ksnap_conf_t *conf, ksnap_error_t *error) {
  ksnap_kafka_pos_t pos = {"t", 0, 0};
  ksnap_kafka_consumer_t *c =
      ksnap_kafka_consumer_new(conf, "read_uncommitted", "g", 0, error);
  int cnt = 0, r = 0;

  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(ksnap_kafka_consumer_assign(c, &pos, 1, error), 0);
  for (int i = 0; i < 100 && r >= 0 && cnt < 100; i++)
    r = ksnap__consumer_poll(c, 100, count_cb, &cnt, error);
  ksnap_kafka_consumer_destroy(c);
  return r < 0 ? -1 : cnt;
}

START_TEST(deleted_position_fails_loudly) {
  char *dir = ksnap_test_tmpdir("consumer-reset");
  ksnap_error_t error;
  ksnap_embedded_t *emb = ksnap_embedded_start(&error);
  ksnap_topic_spec_t spec = {"t", 1, 0};
  ksnap_conf_t *conf, *earliest;

  ck_assert_ptr_nonnull(emb);
  conf = conf_for(emb, NULL);
  ck_assert_int_eq(ksnap_topics_ensure(conf, &spec, 1, 10000, &error), 0);
  overfill(conf, "t", dir);

  ksnap_error_clear(&error);
  ck_assert_int_eq(read_from_zero(conf, &error), -1);
  ck_assert_msg(strstr(error.msg, "t [0]") &&
                    strstr(error.msg, "AUTO_OFFSET_RESET"),
                "%s", error.msg);

  /* the user may choose otherwise (kafka.auto.offset.reset) */
  earliest = conf_for(emb, "earliest");
  ksnap_error_clear(&error);
  ck_assert_int_gt(read_from_zero(earliest, &error), 0);

  ksnap_conf_destroy(earliest);
  ksnap_conf_destroy(conf);
  ksnap_embedded_stop(emb);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("consumer_reset");
  TCase *tc = tcase_create("consumer_reset");

  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, deleted_position_fails_loudly);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
