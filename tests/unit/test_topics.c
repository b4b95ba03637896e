/*
 * ksnap_topics_ensure_report() on the embedded cluster (librdkafka's mock,
 * whose topics are created through rd_kafka_mock_topic_create rather than
 * the Admin API): which topics existed, and the partition count the
 * metadata shows, not the one asked. The same against a real broker:
 * tests/integration/test_cli_topics.c.
 */
#include <stdlib.h>

#include "kafka/embedded.h"
#include "kafka/topics.h"
#include "ksnap/conf.h"
#include "testutil.h"

START_TEST(reports_created_and_existing_topics) {
  ksnap_error_t error;
  ksnap_embedded_t *emb = ksnap_embedded_start(&error);
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_topic_spec_t first = {"a", 3, 0}, again[2] = {{"b", 2, 0}, {"a", 5, 0}};
  ksnap_topic_result_t r1, r2[2];
  char errstr[256];

  ck_assert_ptr_nonnull(emb);
  ck_assert_int_eq(ksnap_conf_set(conf, "kafka.bootstrap.servers",
                                  ksnap_embedded_bootstraps(emb), errstr,
                                  sizeof(errstr)), 0);
  ksnap_error_clear(&error);
  ck_assert_msg(!ksnap_topics_ensure_report(conf, &first, 1, 10000, &r1,
                                            &error), "%s", error.msg);
  ck_assert_int_eq(r1.existed, 0);
  ck_assert_int_eq(r1.partitions, 3);

  ck_assert_msg(!ksnap_topics_ensure_report(conf, again, 2, 10000, r2, &error),
                "%s", error.msg);
  ck_assert_int_eq(r2[0].existed, 0);
  ck_assert_int_eq(r2[0].partitions, 2);
  ck_assert_int_eq(r2[1].existed, 1);
  ck_assert_int_eq(r2[1].partitions, 3);

  ksnap_conf_destroy(conf);
  ksnap_embedded_stop(emb);
}
END_TEST

int main(void) {
  Suite *s = suite_create("topics");
  TCase *tc = tcase_create("topics");

  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, reports_created_and_existing_topics);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
