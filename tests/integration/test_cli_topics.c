/*
 * `ksnap topics create` against the real broker: the topics exist with
 * the asked partition counts, a second run leaves them as they are, and
 * a bad argument is a usage error.
 */
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "kafka_testutil.h"
#include "testnames.h"
#include "testutil.h"

/* Partition count of @p topic from the broker's metadata, -1 if absent. */
static int partitions_of(const char *bootstrap, const char *topic) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bootstrap, NULL);
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
  const struct rd_kafka_metadata *md = NULL;
  int n = -1;

  if (!rd_kafka_metadata(rk, 0, rkt, &md, 10000) && md->topic_cnt == 1 &&
      !md->topics[0].err)
    n = md->topics[0].partition_cnt;
  if (md)
    rd_kafka_metadata_destroy(md);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  return n;
}

START_TEST(creates_topics_idempotently) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  char *dir = ksnap_test_tmpdir("topics");
  char *a = ksnap_test_unique_name("lines"), *b = ksnap_test_unique_name("counts");
  char job[512], args[1024], *out, *err;

  snprintf(job, sizeof(job), "%s/job.properties", dir);
  ksnap_test_job_file(job, "topics", NULL, NULL);
  snprintf(args, sizeof(args), "topics create %s %s:3 %s:1", job, a, b);
  ck_assert_msg(ksnap_test_cli("", args, &out, &err) == 0, "stderr: %s", err);
  ck_assert_ptr_nonnull(strstr(out, ": 3 partitions"));
  free(out);
  free(err);
  ck_assert_int_eq(partitions_of(bs, a), 3);
  ck_assert_int_eq(partitions_of(bs, b), 1);

  /* again, with another count: the existing topic is left as it is */
  snprintf(args, sizeof(args), "topics create %s %s:5", job, a);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 0);
  free(out);
  free(err);
  ck_assert_int_eq(partitions_of(bs, a), 3);

  snprintf(args, sizeof(args), "topics create %s %s", job, a);
  ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 2);
  ck_assert_ptr_nonnull(strstr(err, "expected NAME:PARTITIONS"));
  free(out);
  free(err);
  ksnap_test_rmtree(dir);
  free(dir);
  free(a);
  free(b);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_topics");
  TCase *tc = tcase_create("topics");

  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, creates_topics_idempotently);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
