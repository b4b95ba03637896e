/*
 * Kafka client wrapper without a broker: the error classifier's mapping
 * (fatal / fenced / retriable / not found / connect) and the masking of
 * secret kafka.* values in librdkafka's log lines.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka/kafka_client.h"
#include "ksnap/log.h"
#include "testutil.h"

START_TEST(resp_errors_are_classified) {
  ksnap_error_t e;

  ck_assert_int_eq(ksnap__kafka_resp_error(&e, NULL, 0, "x"), KSNAP_ERR_OK);
  ck_assert_int_eq(ksnap__kafka_resp_error(&e, NULL,
                                           RD_KAFKA_RESP_ERR__TRANSPORT, "x"),
                   KSNAP_ERR_CONNECT);
  ck_assert(e.retriable && !e.fatal);
  ck_assert_int_eq(ksnap__kafka_resp_error(&e, NULL,
                                           RD_KAFKA_RESP_ERR__TIMED_OUT, "x"),
                   KSNAP_ERR_TIMEOUT);
  ck_assert(e.retriable);
  ck_assert_int_eq(
      ksnap__kafka_resp_error(&e, NULL,
                              RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, "t"),
      KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(
      ksnap__kafka_resp_error(&e, NULL, RD_KAFKA_RESP_ERR_PRODUCER_FENCED,
                              "commit"),
      KSNAP_ERR_FENCED);
  ck_assert(e.fatal && !e.retriable);
  ck_assert_int_eq(
      ksnap__kafka_resp_error(&e, NULL,
                              RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, "x"),
      KSNAP_ERR_KAFKA);
  ck_assert(e.retriable);
  ck_assert_int_eq(
      ksnap__kafka_resp_error(&e, NULL, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
                              "produce"),
      KSNAP_ERR_KAFKA);
  ck_assert(!e.retriable && !e.fatal);
  ck_assert_str_eq(e.msg, "produce: MSG_SIZE_TOO_LARGE: Broker: Message size "
                          "too large");
}
END_TEST

START_TEST(error_objects_are_classified_and_destroyed) {
  ksnap_error_t e;

  ck_assert_int_eq(ksnap__kafka_error(&e, NULL, "x"), KSNAP_ERR_OK);
  ck_assert_int_eq(
      ksnap__kafka_error(&e, rd_kafka_error_new(RD_KAFKA_RESP_ERR__FENCED,
                                                "fenced by %s", "a newer one"),
                         "init"),
      KSNAP_ERR_FENCED);
  ck_assert(e.fatal);
  ck_assert_msg(strstr(e.msg, "init: ") == e.msg, "%s", e.msg);
  ck_assert_int_eq(
      ksnap__kafka_error(
          &e, rd_kafka_error_new(RD_KAFKA_RESP_ERR__STATE, "bad state"), "b"),
      KSNAP_ERR_KAFKA);
  ck_assert(!e.fatal && !e.retriable);
}
END_TEST

static pthread_mutex_t lines_lock = PTHREAD_MUTEX_INITIALIZER;
static int lines, leaked, masked;

static void capture(void *opaque, int level, const char *fac,
                    const char *msg) {
  (void)opaque;
  (void)level;
  (void)fac;
  pthread_mutex_lock(&lines_lock);
  lines++;
  if (strstr(msg, "hunter2"))
    leaked++;
  if (strstr(msg, "id-********"))
    masked++;
  pthread_mutex_unlock(&lines_lock);
}

START_TEST(secrets_are_masked_in_librdkafka_logs) {
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, NULL, NULL, NULL, NULL};
  char errstr[256];
  ksnap_error_t error;
  rd_kafka_t *rk;
  int n = 0;

  ck_assert(!ksnap_conf_set(conf, "kafka.bootstrap.servers", "127.0.0.1:1",
                            errstr, sizeof(errstr)));
  /* the same value as a secret and inside every line (client.id) */
  ck_assert(!ksnap_conf_set(conf, "kafka.sasl.password", "hunter2", errstr,
                            sizeof(errstr)));
  ck_assert(!ksnap_conf_set(conf, "kafka.client.id", "id-hunter2", errstr,
                            sizeof(errstr)));
  ksnap_log_set_callback(capture, NULL);
  rk = ksnap__kafka_new(conf, &opts, &error);
  ck_assert_msg(rk != NULL, "%s", error.msg);
  for (int i = 0; i < 50 && n == 0; i++) { /* connection refused lines */
    rd_kafka_poll(rk, 100);
    pthread_mutex_lock(&lines_lock);
    n = lines;
    pthread_mutex_unlock(&lines_lock);
  }
  ksnap__kafka_destroy(rk);
  ksnap_log_set_callback(NULL, NULL);
  ck_assert_int_gt(n, 0);
  ck_assert_int_eq(leaked, 0);
  ck_assert_int_gt(masked, 0); /* the lines did name the client */
  ksnap_conf_destroy(conf);
}
END_TEST

START_TEST(bad_kafka_property_names_the_key) {
  ksnap__kafka_opts_t opts = {RD_KAFKA_PRODUCER, NULL, NULL, NULL, NULL};
  const char *forced[] = {"linger.ms", "-5", NULL};
  ksnap_error_t error;

  opts.forced = forced;
  ck_assert_ptr_null(ksnap__kafka_new(NULL, &opts, &error));
  ck_assert_int_eq(error.code, KSNAP_ERR_CONF_VALUE);
  ck_assert_msg(strstr(error.msg, "linger.ms: ") == error.msg, "%s",
                error.msg);
}
END_TEST

int main(void) {
  Suite *s = suite_create("kafka_client");
  TCase *tc = tcase_create("kafka_client");

  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, resp_errors_are_classified);
  tcase_add_test(tc, error_objects_are_classified_and_destroyed);
  tcase_add_test(tc, secrets_are_masked_in_librdkafka_logs);
  tcase_add_test(tc, bad_kafka_property_names_the_key);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
