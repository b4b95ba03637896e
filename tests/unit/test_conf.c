/* Configuration (ksnap/conf.h): typed values at their edges, exact error
 * lines, ${VAR} substitution, secrets, kafka.* and stage.* keys. */
#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <unistd.h>

#include "conf/conf_int.h"
#include "conftest.h"

START_TEST(defaults_and_typed_getters) {
  const char *s;
  int b = -1;
  int64_t i;

  ck_assert_int_eq(get_dur("execution.checkpointing.interval"), 10000);
  ck_assert_int_eq(get_dur("execution.checkpointing.timeout"), 600000);
  ck_assert_int_eq(get_dur("s3.retry-deadline"), 120000);
  ck_assert_int_eq(get_size("s3.part-size"), 16 * 1024 * 1024);
  ck_assert_int_eq(get_int("pipeline.max-parallelism"), 128);
  ck_assert_int_eq(get_int("sink.producer-pool-size"), 4);
  ck_assert_int_eq(ksnap_conf_get_bool(conf, "s3.path-style", &b),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(b, 1);
  ck_assert_str_eq(get_str("s3.region"), "us-east-1");
  ck_assert_str_eq(get_str("execution.checkpointing.mode"), "EXACTLY_ONCE");
  ck_assert_str_eq(get_str("s3.part-size"), "16MiB");
  /* no default, unknown, wrong type */
  ck_assert_int_eq(ksnap_conf_get_str(conf, "job.name", &s),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap_conf_get_str(conf, "no.such", &s),
                   KSNAP_ERR_NOT_FOUND);
  ck_assert_int_eq(ksnap_conf_get_int(conf, "s3.part-size", &i),
                   KSNAP_ERR_INVALID_ARG);
  ck_assert_int_eq(ksnap_conf_is_set(conf, "s3.part-size"), 0);
  SET_OK("s3.part-size", "32mb");
  ck_assert_int_eq(ksnap_conf_is_set(conf, "s3.part-size"), 1);
}
END_TEST

START_TEST(durations_at_their_edges) {
  const char *k = "execution.checkpointing.interval";
  const char *range = "is outside allowed range 10ms..168h";
  char msg[256];

  SET_OK(k, "10ms");
  ck_assert_int_eq(get_dur(k), 10);
  SET_OK(k, "168h");
  ck_assert_int_eq(get_dur(k), 168LL * 3600 * 1000);
  ck_assert_str_eq(get_str(k), "168h");
  SET_OK(k, "500"); /* bare number: milliseconds, as in Flink */
  ck_assert_int_eq(get_dur(k), 500);
  SET_OK(k, "10 s");
  ck_assert_int_eq(get_dur(k), 10000);
  SET_OK(k, "2MIN");
  ck_assert_int_eq(get_dur(k), 120000);
  ck_assert_str_eq(get_str(k), "2min");
  SET_OK(k, "90s");
  ck_assert_str_eq(get_str(k), "90s");
  snprintf(msg, sizeof(msg), "%s: value 9ms %s", k, range);
  SET_BAD(k, "9ms", msg);
  snprintf(msg, sizeof(msg), "%s: value 169h %s", k, range);
  SET_BAD(k, "169h", msg);
  snprintf(msg, sizeof(msg), "%s: value 0ms %s", k, range);
  SET_BAD(k, "0", msg);
  SET_OK("execution.checkpointing.min-pause", "0");
  ck_assert_int_eq(get_dur("execution.checkpointing.min-pause"), 0);
  SET_OK(k, " 90s \t"); /* typed values ignore surrounding blanks */
  ck_assert_int_eq(get_dur(k), 90000);
  static const char *const bad[] = {"10 parsecs", "1.5s", "-1s", "s", "",
                                    "1 0s", "99999999999999999999ms",
                                    "9223372036854775807h", "10sec"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    snprintf(msg, sizeof(msg), "%s: invalid duration \"%s\" (expected a "
             "number with unit ms, s, min or h)", k, bad[i]);
    SET_BAD(k, bad[i], msg);
  }
  ck_assert_int_eq(get_dur(k), 90000); /* a bad set changes nothing */
}
END_TEST

START_TEST(sizes_at_their_edges) {
  const char *k = "s3.part-size";

  SET_OK(k, "5MiB");
  ck_assert_int_eq(get_size(k), 5 * 1048576);
  SET_OK(k, "5242880");
  ck_assert_str_eq(get_str(k), "5MiB");
  SET_OK(k, "5gib");
  ck_assert_int_eq(get_size(k), 5LL << 30);
  SET_OK(k, "5120 MB");
  ck_assert_int_eq(get_size(k), 5LL << 30);
  SET_OK(k, "8192k");
  ck_assert_int_eq(get_size(k), 8 << 20);
  SET_OK(k, "1g");
  SET_BAD(k, "6g",
          "s3.part-size: value 6GiB is outside allowed range 5MiB..5GiB");
  SET_BAD(k, "5242879",
          "s3.part-size: value 5242879 is outside allowed range 5MiB..5GiB");
  SET_BAD(k, "5121mb",
          "s3.part-size: value 5121MiB is outside allowed range 5MiB..5GiB");
  SET_BAD(k, "16 furlongs",
          "s3.part-size: invalid size \"16 furlongs\" (expected a number "
          "with optional unit b, kb, mb, gb, kib, mib or gib)");
}
END_TEST

START_TEST(ints_bools_enums_urls_strings) {
  const char *k = "execution.checkpointing.max-concurrent-checkpoints";
  int b = -1;

  SET_OK(k, "1");
  SET_OK(k, "100");
  SET_BAD(k, "0", "execution.checkpointing.max-concurrent-checkpoints: value "
                  "0 is outside allowed range 1..100");
  SET_BAD(k, "101", NULL);
  SET_BAD(k, "ten", "execution.checkpointing.max-concurrent-checkpoints: "
                    "invalid int \"ten\" (expected an integer)");
  SET_OK(k, " 5 ");
  ck_assert_int_eq(get_int(k), 5);
  SET_BAD(k, "5 5", NULL);
  SET_BAD(k, "5x", NULL);
  SET_BAD("execution.checkpointing.tolerable-failed-checkpoints", "-1",
          "execution.checkpointing.tolerable-failed-checkpoints: value -1 is "
          "outside allowed range 0..2147483647");

  SET_OK("state.backend.incremental", "TRUE");
  ck_assert_int_eq(ksnap_conf_get_bool(conf, "state.backend.incremental", &b),
                   KSNAP_ERR_OK);
  ck_assert_int_eq(b, 1);
  SET_BAD("state.backend.incremental", "yes",
          "state.backend.incremental: invalid boolean \"yes\" (expected true "
          "or false)");

  SET_OK("execution.checkpointing.mode", "at_least_once");
  ck_assert_str_eq(get_str("execution.checkpointing.mode"), "AT_LEAST_ONCE");
  SET_BAD("execution.checkpointing.mode", "SOMETIMES",
          "execution.checkpointing.mode: invalid value \"SOMETIMES\" "
          "(expected one of EXACTLY_ONCE, AT_LEAST_ONCE)");
  SET_OK("log.level", "debug");

  SET_OK("state.checkpoints.dir", "s3://ksnap-test/jobs/a");
  SET_OK("state.checkpoints.dir", "file:///var/lib/ksnap");
  SET_OK("state.checkpoints.dir", "relative/dir");
  SET_BAD("state.checkpoints.dir", "http://x/y",
          "state.checkpoints.dir: invalid URL \"http://x/y\" (expected "
          "s3://BUCKET/PREFIX, file:///PATH or a path)");
  SET_BAD("state.checkpoints.dir", "s3://ab/x", NULL);
  SET_BAD("state.checkpoints.dir", "s3://Upper/x", NULL);
  SET_BAD("state.checkpoints.dir", "file://relative", NULL);

  SET_OK("job.name", "word-count_1.v2");
  SET_BAD("job.name", "my job",
          "job.name: invalid value \"my job\" (1 to 200 characters of A-Z "
          "a-z 0-9 . _ -)");
  SET_BAD("job.name", "", NULL);
  SET_BAD("s3.endpoint", "127.0.0.1:9000",
          "s3.endpoint: invalid URL \"127.0.0.1:9000\" (expected "
          "http://HOST[:PORT] or https://HOST[:PORT])");
  SET_OK("log.debug", "storage,barrier");
  SET_BAD("log.debug", "storage,bogus",
          "log.debug: unknown debug context \"bogus\"");
}
END_TEST

/* Doubles are held to six decimal places; the restart strategy's keys
 * (Flink's names, defaults and aliases). */
START_TEST(doubles_and_restart_strategy_keys) {
  const char *k = "restart-strategy.exponential-delay.backoff-multiplier";
  const char *j = "restart-strategy.exponential-delay.jitter-factor";
  double d = -1;

  ck_assert_int_eq(ksnap_conf_get_double(conf, k, &d), KSNAP_ERR_OK);
  ck_assert(d == 1.5);
  ck_assert_str_eq(get_str(j), "0.1");
  ck_assert_str_eq(get_str("restart-strategy.type"), "exponential-delay");
  ck_assert_int_eq(get_dur("restart-strategy.exponential-delay."
                           "initial-backoff"), 1000);
  ck_assert_int_eq(get_dur("restart-strategy.exponential-delay.max-backoff"),
                   60000);
  ck_assert_int_eq(get_dur("restart-strategy.exponential-delay."
                           "reset-backoff-threshold"), 3600000);
  ck_assert_int_eq(get_int("restart-strategy.exponential-delay."
                           "attempts-before-reset-backoff"), 2147483647);
  ck_assert_int_eq(get_int("restart-strategy.fixed-delay.attempts"), 1);
  ck_assert_int_eq(get_dur("restart-strategy.fixed-delay.delay"), 1000);
  ck_assert_int_eq(get_int("restart-strategy.failure-rate."
                           "max-failures-per-interval"), 1);
  ck_assert_int_eq(get_dur("restart-strategy.failure-rate."
                           "failure-rate-interval"), 60000);
  SET_OK(k, "2");
  ck_assert_str_eq(get_str(k), "2");
  SET_OK(k, " 1.25 ");
  ck_assert_int_eq(ksnap_conf_get_double(conf, k, &d), KSNAP_ERR_OK);
  ck_assert(d == 1.25);
  SET_OK(j, "0.0000004"); /* rounded to millionths */
  ck_assert_str_eq(get_str(j), "0");
  SET_OK(j, "1e-1");
  ck_assert_str_eq(get_str(j), "0.1");
  SET_BAD(j, "1.5", "restart-strategy.exponential-delay.jitter-factor: "
                    "value 1.5 is outside allowed range 0..1");
  SET_BAD(k, "0.5", "restart-strategy.exponential-delay.backoff-multiplier: "
                    "value 0.5 is outside allowed range 1..1000");
  static const char *const bad[] = {"", "x", "1.5x", "nan", "inf", "0x1p3",
                                    "1e99"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char msg[256];
    snprintf(msg, sizeof(msg), "%s: invalid double \"%s\" (expected a "
             "decimal number)", k, bad[i]);
    SET_BAD(k, bad[i], msg);
  }
  ck_assert_int_eq(ksnap_conf_get_int(conf, k, (int64_t[1]){0}),
                   KSNAP_ERR_INVALID_ARG);
  SET_OK("restart-strategy.type", "FixedDelay"); /* Flink's aliases */
  ck_assert_str_eq(get_str("restart-strategy.type"), "fixeddelay");
  SET_OK("restart-strategy.type", "off");
  SET_BAD("restart-strategy.type", "sometimes",
          "restart-strategy.type: invalid value \"sometimes\" (expected one "
          "of exponential-delay, fixed-delay, failure-rate, none, "
          "exponentialdelay, fixeddelay, failurerate, off, disable)");
}
END_TEST

START_TEST(unknown_keys_with_and_without_suggestion) {
  set_expect("execution.checkpointing.intervall", "1s",
             KSNAP_ERR_CONF_UNKNOWN,
             "No such configuration property: "
             "\"execution.checkpointing.intervall\" (did you mean "
             "\"execution.checkpointing.interval\"?)");
  set_expect("totally.unknown", "1", KSNAP_ERR_CONF_UNKNOWN,
             "No such configuration property: \"totally.unknown\"");
  set_expect("bootstrap.servers", "x", KSNAP_ERR_CONF_UNKNOWN,
             "No such configuration property: \"bootstrap.servers\" (did you "
             "mean \"kafka.bootstrap.servers\"?)");
  set_expect("kafka.", "x", KSNAP_ERR_CONF_UNKNOWN,
             "No such configuration property: \"kafka.\"");
}
END_TEST

static int collect_kafka(void *opaque, const char *name, const char *value) {
  ksnap_buf_appendf(opaque, "%s=%s;", name, value);
  return 0;
}

START_TEST(kafka_keys_use_librdkafkas_own_error) {
  rd_kafka_conf_t *rk = rd_kafka_conf_new();
  char rkerr[512], expect[700];
  ksnap_buf_t buf;

  SET_OK("kafka.bootstrap.servers", "127.0.0.1:1");
  SET_OK("kafka.acks", "all");
  SET_OK("kafka.bootstrap.servers", "127.0.0.1:2"); /* later wins */
  /* the expected text is whatever this librdkafka says, verbatim */
  ck_assert_int_ne(rd_kafka_conf_set(rk, "acks", "maybe", rkerr,
                                     sizeof(rkerr)), RD_KAFKA_CONF_OK);
  snprintf(expect, sizeof(expect), "kafka.acks: %s", rkerr);
  SET_BAD("kafka.acks", "maybe", expect);
  ck_assert_int_ne(rd_kafka_conf_set(rk, "no.such.thing", "1", rkerr,
                                     sizeof(rkerr)), RD_KAFKA_CONF_OK);
  snprintf(expect, sizeof(expect), "kafka.no.such.thing: %s", rkerr);
  SET_BAD("kafka.no.such.thing", "1", expect);
  ck_assert_str_eq(expect, "kafka.no.such.thing: No such configuration "
                           "property: \"no.such.thing\"");
  rd_kafka_conf_destroy(rk);

  ksnap_buf_init(&buf);
  ksnap_conf_foreach_kafka(conf, collect_kafka, &buf);
  ck_assert_str_eq((char *)buf.data,
                   "bootstrap.servers=127.0.0.1:2;acks=all;");
  ksnap_buf_cleanup(&buf);
  ck_assert_int_eq(ksnap_conf_is_set(conf, "kafka.acks"), 1);
}
END_TEST

START_TEST(stage_keys) {
  int64_t v;

  SET_OK("stage.map.parallelism", "4");
  SET_OK("stage.map.operator", "uppercase");
  SET_OK("stage.sink_1.output", "out");
  SET_OK("stage.map.partitions", "12");
  ck_assert_int_eq(get_int("stage.map.parallelism"), 4);
  ck_assert_str_eq(get_str("stage.map.operator"), "uppercase");
  ck_assert_int_eq(get_int("stage.other.parallelism"), 1); /* default */
  ck_assert_int_eq(ksnap_conf_get_int(conf, "stage.other.partitions", &v),
                   KSNAP_ERR_NOT_FOUND);
  set_expect("stage.map.paralelism", "4", KSNAP_ERR_CONF_UNKNOWN,
             "No such configuration property: \"stage.map.paralelism\" (did "
             "you mean \"stage.map.parallelism\"?)");
  set_expect("stage.map", "4", KSNAP_ERR_CONF_UNKNOWN,
             "No such configuration property: \"stage.map\"");
  set_expect("stage.map.colour", "red", KSNAP_ERR_CONF_UNKNOWN,
             "No such configuration property: \"stage.map.colour\"");
  SET_BAD("stage.m p.parallelism", "1",
          "stage.m p.parallelism: invalid stage name \"m p\" (1 to 100 "
          "characters of A-Z a-z 0-9 _ -)");
  SET_BAD("stage.map.parallelism", "0",
          "stage.map.parallelism: value 0 is outside allowed range 1..32768");
}
END_TEST

START_TEST(env_substitution) {
  const ksnap_conf_t *c = conf;

  setenv("KSNAP_T_REGION", "eu-west-3", 1);
  setenv("KSNAP_T_EMPTY", "", 1);
  unsetenv("KSNAP_T_NOPE");
  SET_OK("s3.region", "${KSNAP_T_REGION}");
  ck_assert_str_eq(get_str("s3.region"), "eu-west-3");
  SET_OK("s3.region", "pre-${KSNAP_T_REGION}-${KSNAP_T_NOPE:-x}-post");
  ck_assert_str_eq(get_str("s3.region"), "pre-eu-west-3-x-post");
  SET_OK("s3.region", "${KSNAP_T_EMPTY:-fallback}");
  ck_assert_str_eq(get_str("s3.region"), "fallback");
  SET_OK("s3.region", "a$${KSNAP_T_REGION}");
  ck_assert_str_eq(get_str("s3.region"), "a${KSNAP_T_REGION}");
  SET_OK("s3.region", "${KSNAP_T_NOPE:-}");
  ck_assert_str_eq(get_str("s3.region"), "");
  /* substitution happens before validation */
  setenv("KSNAP_T_DUR", "2min", 1);
  SET_OK("heartbeat.timeout", "${KSNAP_T_DUR}");
  ck_assert_int_eq(get_dur("heartbeat.timeout"), 120000);
  setenv("KSNAP_T_DUR", "2 fortnights", 1);
  SET_BAD("heartbeat.timeout", "${KSNAP_T_DUR}",
          "heartbeat.timeout: invalid duration \"2 fortnights\" (expected a "
          "number with unit ms, s, min or h)");
  SET_BAD("s3.region", "${KSNAP_T_NOPE}",
          "s3.region: environment variable \"KSNAP_T_NOPE\" is not set");
  SET_BAD("s3.region", "${KSNAP_T_REGION", "s3.region: unterminated \"${\"");
  SET_BAD("s3.region", "${A-B}",
          "s3.region: invalid variable reference \"${A-B}\"");
  SET_BAD("s3.region", "${}", "s3.region: invalid variable reference \"${}\"");

  ck_assert_int_eq(ksnap_conf_load_string(conf, "job.properties",
                                          "job.name=x\n"
                                          "s3.secret-key=${KSNAP_T_NOPE}\n",
                                          collect, NULL),
                   KSNAP_ERR_CONF_VALUE);
  ck_assert_str_eq(errors, "job.properties:2: s3.secret-key: environment "
                           "variable \"KSNAP_T_NOPE\" is not set\n");
  (void)c;
}
END_TEST

/* ${file:/PATH}: a secret kept in a file (e.g. a mounted secret). */
START_TEST(file_substitution) {
  char path[] = "/tmp/ksnap-conf-secret-XXXXXX", ref[128], *text;
  int fd = mkstemp(path);

  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, "pw-from-file\n", 13), 13);
  close(fd);
  snprintf(ref, sizeof(ref), "${file:%s}", path);
  SET_OK("kafka.sasl.password", ref);
  snprintf(ref, sizeof(ref), "[${file:%s}]", path);
  SET_OK("s3.region", ref);
  ck_assert_str_eq(get_str("s3.region"), "[pw-from-file]");
  text = dump(1);
  ck_assert_ptr_null(strstr(text, "pw-from-file\n"));
  ck_assert_ptr_null(strstr(text, "sasl.password=pw-from-file"));
  free(text);
  unlink(path);
  {
    char want[256];
    snprintf(ref, sizeof(ref), "${file:%s}", path);
    snprintf(want, sizeof(want), "kafka.sasl.password: %s: cannot open: No "
             "such file or directory", ref);
    SET_BAD("kafka.sasl.password", ref, want);
  }
  SET_BAD("s3.region", "${file:relative/path}",
          "s3.region: ${file:relative/path}: the path must be absolute");
  SET_BAD("s3.region", "${file:}",
          "s3.region: invalid file reference \"${file:}\"");
}
END_TEST

START_TEST(secrets_are_masked_wherever_they_come_from) {
  char *text;

  setenv("KSNAP_T_SECRET", "s3cr3t-from-env", 1);
  ck_assert_int_eq(
      ksnap_conf_load_string(conf, "job.properties",
                             "job.name=demo\n"
                             "s3.access-key=AK\n"
                             "s3.secret-key=${KSNAP_T_SECRET}\n"
                             "s3.session-token=tok-in-file\n"
                             "kafka.sasl.password=pw-in-file\n"
                             "kafka.ssl.key.password=pw2-in-file\n"
                             "kafka.client.id=visible-id\n",
                             collect, NULL),
      KSNAP_ERR_OK);
  ck_assert_str_eq(errors, "");
  ck_assert_int_eq(ksnap_conf_is_secret("s3.secret-key"), 1);
  ck_assert_int_eq(ksnap_conf_is_secret("s3.access-key"), 0);
  ck_assert_int_eq(ksnap_conf_is_secret("kafka.sasl.oauthbearer.client.secret"),
                   1);
  ck_assert_int_eq(ksnap_conf_is_secret("kafka.ssl.key.pem"), 1);
  ck_assert_int_eq(ksnap_conf_is_secret("kafka.client.id"), 0);
  text = dump(1);
  ck_assert_ptr_null(strstr(text, "s3cr3t"));
  ck_assert_ptr_null(strstr(text, "in-file"));
  ck_assert_ptr_nonnull(strstr(text, "# job.properties:3\n"
                                     "s3.secret-key=********\n"));
  ck_assert_ptr_nonnull(strstr(text, "\ns3.session-token=********\n"));
  ck_assert_ptr_nonnull(strstr(text, "\nkafka.sasl.password=********\n"));
  ck_assert_ptr_nonnull(strstr(text, "\nkafka.ssl.key.password=********\n"));
  ck_assert_ptr_nonnull(strstr(text, "\nkafka.client.id=visible-id\n"));
  ck_assert_ptr_nonnull(strstr(text, "\ns3.access-key=AK\n"));
  free(text);
  text = dump(0);
  ck_assert_ptr_nonnull(strstr(text, "\ns3.secret-key=s3cr3t-from-env\n"));
  free(text);
}
END_TEST

START_TEST(secret_values_are_scrubbed_from_messages) {
  char msg[32];

  strcpy(msg, "bad \"pw\" and pw!");
  ksnap__conf_mask_in(msg, sizeof(msg), "pw");
  ck_assert_str_eq(msg, "bad \"********\" and ********!");
  strcpy(msg, "value \"a-longer-secret-xyz\"");
  ksnap__conf_mask_in(msg, sizeof(msg), "a-longer-secret-xyz");
  ck_assert_str_eq(msg, "value \"********\"");
  strcpy(msg, "0123456789012345678901234567 s");
  ksnap__conf_mask_in(msg, sizeof(msg), "s");
  ck_assert_str_eq(msg, "0123456789012345678901234567 ");
  strcpy(msg, "x");
  ksnap__conf_mask_in(msg, sizeof(msg), "");
  ck_assert_str_eq(msg, "x");
}
END_TEST

int main(void) {
  Suite *s = suite_create("conf");
  TCase *tv = tcase_create("values");
  TCase *tk = tcase_create("keys");

  tcase_add_checked_fixture(tv, setup, teardown);
  tcase_add_checked_fixture(tk, setup, teardown);
  suite_add_tcase(s, tv);
  suite_add_tcase(s, tk);
  tcase_add_test(tv, defaults_and_typed_getters);
  tcase_add_test(tv, durations_at_their_edges);
  tcase_add_test(tv, sizes_at_their_edges);
  tcase_add_test(tv, ints_bools_enums_urls_strings);
  tcase_add_test(tv, env_substitution);
  tcase_add_test(tv, file_substitution);
  tcase_add_test(tv, doubles_and_restart_strategy_keys);
  tcase_add_test(tk, unknown_keys_with_and_without_suggestion);
  tcase_add_test(tk, kafka_keys_use_librdkafkas_own_error);
  tcase_add_test(tk, stage_keys);
  tcase_add_test(tk, secrets_are_masked_wherever_they_come_from);
  tcase_add_test(tk, secret_values_are_scrubbed_from_messages);
  return ksnap_test_run(s);
}
