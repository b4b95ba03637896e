/*
 * `ksnap topics create` against the real broker: new topics are created
 * with the asked partition counts; an existing topic is reported as
 * existing with its real partition count and left as it is; fewer
 * partitions than asked is an error (exit 1) while more is not; a bad
 * argument is a usage error (exit 2); NAME:PARTITIONS:compact creates it
 * with cleanup.policy=compact.
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
static int partitions_of(const char *topic) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs, NULL);
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

/* The topic's cleanup.policy from the broker (DescribeConfigs), copied
 * into @p buf; "" if it could not be read. */
static const char *cleanup_policy_of(const char *topic, char *buf,
                                     size_t size) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs, NULL);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_ConfigResource_t *res =
      rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic);
  rd_kafka_event_t *ev;

  buf[0] = '\0';
  rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
  ev = rd_kafka_queue_poll(q, 20000);
  if (ev && !rd_kafka_event_error(ev)) {
    const rd_kafka_DescribeConfigs_result_t *r =
        rd_kafka_event_DescribeConfigs_result(ev);
    size_t nres = 0, nent = 0;
    const rd_kafka_ConfigResource_t **rs =
        rd_kafka_DescribeConfigs_result_resources(r, &nres);
    const rd_kafka_ConfigEntry_t **es =
        nres == 1 ? rd_kafka_ConfigResource_configs(rs[0], &nent) : NULL;
    for (size_t i = 0; i < nent; i++)
      if (!strcmp(rd_kafka_ConfigEntry_name(es[i]), "cleanup.policy") &&
          rd_kafka_ConfigEntry_value(es[i]))
        snprintf(buf, size, "%s", rd_kafka_ConfigEntry_value(es[i]));
  }
  if (ev)
    rd_kafka_event_destroy(ev);
  rd_kafka_ConfigResource_destroy(res);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
  return buf;
}

static char *dir;
static char job[512];
static char *out, *err;

static void setup(void) {
  dir = ksnap_test_tmpdir("topics");
  snprintf(job, sizeof(job), "%s/job.properties", dir);
  ksnap_test_job_file(job, "topics", NULL, NULL);
  out = err = NULL;
}

static void teardown(void) {
  free(out);
  free(err);
  ksnap_test_rmtree(dir);
  free(dir);
}

/* Runs `ksnap topics create JOB SPECS` into out/err. @returns its exit. */
static int topics_create(const char *specs) {
  char args[2048]; /* the job file's path (600) and the specs */

  free(out);
  free(err);
  if (snprintf(args, sizeof(args), "topics create %s %s", job, specs) >=
      (int)sizeof(args))
    ck_abort_msg("topics create: arguments too long");
  return ksnap_test_cli("", args, &out, &err);
}

/* A new topic @p name with @p partitions partitions (the test fails
 * otherwise). */
static char *new_topic(const char *prefix, int partitions) {
  char *name = ksnap_test_unique_name(prefix), spec[300];

  snprintf(spec, sizeof(spec), "%s:%d", name, partitions);
  ck_assert_msg(topics_create(spec) == 0, "stderr: %s", err);
  ck_assert_int_eq(partitions_of(name), partitions);
  return name;
}

START_TEST(creates_new_topics) {
  char *a = ksnap_test_unique_name("lines"), *b = ksnap_test_unique_name("counts");
  char specs[600], want[1024];

  snprintf(specs, sizeof(specs), "%s:3 %s:1", a, b);
  ck_assert_msg(topics_create(specs) == 0, "stderr: %s", err);
  snprintf(want, sizeof(want), "%s: created, 3 partitions\n"
           "%s: created, 1 partition\n", a, b);
  ck_assert_str_eq(out, want);
  ck_assert_int_eq(partitions_of(a), 3);
  ck_assert_int_eq(partitions_of(b), 1);
  free(a);
  free(b);
}
END_TEST

START_TEST(reports_existing_topic_with_same_count) {
  char *a = new_topic("lines", 3), spec[300], want[600];

  snprintf(spec, sizeof(spec), "%s:3", a);
  ck_assert_msg(topics_create(spec) == 0, "stderr: %s", err);
  snprintf(want, sizeof(want), "%s: exists, 3 partitions\n", a);
  ck_assert_str_eq(out, want);
  ck_assert_int_eq(partitions_of(a), 3);
  free(a);
}
END_TEST

/* More partitions than asked: Kafka cannot remove partitions and the
 * source tasks share any number, so it is reported and succeeds. */
START_TEST(accepts_existing_topic_with_more_partitions) {
  char *a = new_topic("lines", 3), spec[300], want[600];

  snprintf(spec, sizeof(spec), "%s:2", a);
  ck_assert_msg(topics_create(spec) == 0, "stderr: %s", err);
  snprintf(want, sizeof(want), "%s: exists, 3 partitions (2 asked)\n", a);
  ck_assert_str_eq(out, want);
  ck_assert_str_eq(err, "");
  ck_assert_int_eq(partitions_of(a), 3);
  free(a);
}
END_TEST

/* The case of the bug report: `in:4` for an existing `in` with 3 used to
 * print "in: 4 partitions" and succeed. The other topics of the same
 * command are still created and reported. */
START_TEST(fails_on_existing_topic_with_fewer_partitions) {
  char *a = new_topic("in", 3), *b = ksnap_test_unique_name("out");
  char specs[600], want[1024];

  snprintf(specs, sizeof(specs), "%s:4 %s:2", a, b);
  ck_assert_int_eq(topics_create(specs), 1);
  snprintf(want, sizeof(want),
           "ksnap topics create: %s exists with 3 partitions, fewer than the "
           "4 asked: add partitions (kafka-topics.sh --alter --topic %s "
           "--partitions 4) or ask for 3\n", a, a);
  ck_assert_str_eq(err, want);
  snprintf(want, sizeof(want), "%s: created, 2 partitions\n", b);
  ck_assert_str_eq(out, want);
  ck_assert_int_eq(partitions_of(a), 3);
  ck_assert_int_eq(partitions_of(b), 2);
  free(a);
  free(b);
}
END_TEST

/* NAME:PARTITIONS:compact: a reference table for a join keeps the last
 * value per key; the other topics of the command keep the default. */
START_TEST(creates_compacted_topic) {
  char *a = ksnap_test_unique_name("refs"), *b = ksnap_test_unique_name("ev");
  char specs[600], want[1024], policy[64];

  snprintf(specs, sizeof(specs), "%s:2:compact %s:1", a, b);
  ck_assert_msg(topics_create(specs) == 0, "stderr: %s", err);
  snprintf(want, sizeof(want), "%s: created, 2 partitions, "
           "cleanup.policy=compact\n%s: created, 1 partition\n", a, b);
  ck_assert_str_eq(out, want);
  ck_assert_int_eq(partitions_of(a), 2);
  ck_assert_str_eq(cleanup_policy_of(a, policy, sizeof(policy)), "compact");
  ck_assert_str_eq(cleanup_policy_of(b, policy, sizeof(policy)), "delete");
  ck_assert_int_eq(topics_create("refs:compact"), 2);
  ck_assert_ptr_nonnull(strstr(err, "\"refs:compact\": expected "
                               "NAME:PARTITIONS[:compact]"));
  free(a);
  free(b);
}
END_TEST

START_TEST(rejects_spec_without_partitions) {
  ck_assert_int_eq(topics_create("lines"), 2);
  ck_assert_ptr_nonnull(strstr(err, "\"lines\": expected NAME:PARTITIONS"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli_topics");
  TCase *tc = tcase_create("topics");

  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, creates_new_topics);
  tcase_add_test(tc, reports_existing_topic_with_same_count);
  tcase_add_test(tc, accepts_existing_topic_with_more_partitions);
  tcase_add_test(tc, fails_on_existing_topic_with_fewer_partitions);
  tcase_add_test(tc, creates_compacted_topic);
  tcase_add_test(tc, rejects_spec_without_partitions);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
