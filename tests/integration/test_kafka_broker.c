/*
 * What ksnap relies on from the test broker, on every tested Kafka
 * version (tests/servers/kafka.sh: 3.9.x, and 4.x with
 * KSNAP_TEST_KAFKA_VERSION=4.x tests/run.sh), checked from the client:
 *
 *  - protocol_for_transactions: librdkafka enables a protocol feature
 *    only if the broker accepts the one request version the feature
 *    checks. Its ApiVersions negotiation must enable MsgVer2 (record
 *    batches: idempotent and transactional produce, transaction markers,
 *    read_committed) and IdempotentProducer; a transaction, a
 *    read_committed read, a group offset commit and a watermark query
 *    then run with Produce >= v3 and Fetch >= v4. Kafka 4.0 removed Fetch
 *    v0-v3, so librdkafka 2.0.2 turns MsgVer1 and ThrottleTime off
 *    against 4.x; with MsgVer2 on neither is used. The suite prints the
 *    broker's version range and the version sent of every request kind
 *    it saw.
 *  - transaction_version: the finalized transaction.version as Kafka's own
 *    kafka-features tool reports it: none (0) on 3.9, 2 on 4.x (the
 *    default its storage tool formats with). Version 2 (KIP-890) applies
 *    to clients that send EndTxn v5 or later; librdkafka sends older
 *    versions (checked here), so the broker runs ksnap's transactions as
 *    before, and test_kafka_txn's fencing and read_committed proofs run
 *    under that setting.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "kafka_testutil.h"
#include "testutil.h"

#define TIMEOUT_MS 30000
#define MAX_APIS 100

static const char *bootstrap(void) {
  return ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
}

/* --- librdkafka's debug log, collected ------------------------------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static char *log_text;
static size_t log_len;

static void log_cb(const rd_kafka_t *rk, int level, const char *fac,
                   const char *buf) {
  size_t n = strlen(buf);

  (void)rk, (void)level, (void)fac;
  pthread_mutex_lock(&log_mu);
  if (!(log_text = realloc(log_text, log_len + n + 2)))
    abort(); /* a librdkafka thread: no Check assertion here */
  memcpy(log_text + log_len, buf, n);
  log_len += n;
  log_text[log_len++] = '\n';
  log_text[log_len] = '\0';
  pthread_mutex_unlock(&log_mu);
}

/* A client with feature and protocol debugging into log_cb. */
static rd_kafka_t *debug_client(rd_kafka_type_t type, const char *const *kv) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  const char *base[] = {"bootstrap.servers", bootstrap(), "debug",
                        "feature,protocol", NULL};
  rd_kafka_t *rk;

  for (int pass = 0; pass < 2; pass++)
    for (const char *const *p = pass ? kv : base; p && *p; p += 2)
      ck_assert_msg(rd_kafka_conf_set(conf, p[0], p[1], errstr,
                                      sizeof(errstr)) == RD_KAFKA_CONF_OK,
                    "%s: %s", p[0], errstr);
  rd_kafka_conf_set_log_cb(conf, log_cb);
  ck_assert_msg(rk = rd_kafka_new(type, conf, errstr, sizeof(errstr)), "%s",
                errstr);
  return rk;
}

/* --- what the log says ---------------------------------------------- */

typedef struct api_s {
  char name[64];
  int broker_min, broker_max; /* -1: not in the broker's list */
  int sent;                   /* highest version sent, -1: never */
} api_t;

typedef struct negotiation_s {
  api_t apis[MAX_APIS];
  int napis;
  char enabled[512], disabled[512]; /* feature names, ",a,b," */
} negotiation_t;

/* The entry of @p name, added if new. */
static api_t *api(negotiation_t *ng, const char *name) {
  api_t *a;

  for (int i = 0; i < ng->napis; i++)
    if (!strcmp(ng->apis[i].name, name))
      return &ng->apis[i];
  ck_assert_int_lt(ng->napis, MAX_APIS);
  a = &ng->apis[ng->napis++];
  snprintf(a->name, sizeof(a->name), "%s", name);
  a->broker_min = a->broker_max = a->sent = -1;
  return a;
}

/* True if @p list (",a,b," or "") holds @p item. */
static int has_item(const char *list, const char *item) {
  char key[80];

  snprintf(key, sizeof(key), ",%s,", item);
  return strstr(list, key) != NULL;
}

static void add_item(char *list, size_t size, const char *item) {
  size_t len = strlen(list);

  if (!has_item(list, item))
    snprintf(list + len, size - len, "%s%s,", len ? "" : ",", item);
}

/* One line of librdkafka's debug log: a version range the broker
 * supports, a request sent, or a feature turned on or off. */
static void parse_line(negotiation_t *ng, const char *line) {
  char name[64];
  const char *p;
  int lo, hi, v;

  if ((p = strstr(line, "ApiKey ")) &&
      sscanf(p, "ApiKey %63s (%*d) Versions %d..%d", name, &lo, &hi) == 3) {
    api(ng, name)->broker_min = lo;
    api(ng, name)->broker_max = hi;
  } else if ((p = strstr(line, "Sent ")) &&
             sscanf(p, "Sent %63[A-Za-z] (v%d,", name, &v) == 2 &&
             strlen(name) > 7 && !strcmp(name + strlen(name) - 7, "Request")) {
    api_t *a;
    name[strlen(name) - 7] = '\0'; /* "ProduceRequest": ApiKey Produce */
    a = api(ng, name);
    if (v > a->sent)
      a->sent = v;
  } else if ((p = strstr(line, "Enabling feature ")) &&
             sscanf(p, "Enabling feature %63s", name) == 1) {
    add_item(ng->enabled, sizeof(ng->enabled), name);
  } else if ((p = strstr(line, "Disabling feature ")) &&
             sscanf(p, "Disabling feature %63s", name) == 1) {
    add_item(ng->disabled, sizeof(ng->disabled), name);
  }
}

static void parse_log(negotiation_t *ng) {
  char *save = NULL;

  memset(ng, 0, sizeof(*ng));
  pthread_mutex_lock(&log_mu);
  for (char *line = strtok_r(log_text, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save))
    parse_line(ng, line);
  free(log_text);
  log_text = NULL;
  log_len = 0;
  pthread_mutex_unlock(&log_mu);
}


/* Prints @p list (",a,b,") as "a,b", or "none". */
static void print_items(const char *label, const char *list) {
  size_t n = strlen(list);

  printf(" %s %.*s", label, n > 2 ? (int)(n - 2) : 4,
         n > 2 ? list + 1 : "none");
}

static void print_negotiation(const negotiation_t *ng) {
  printf("Kafka %s, librdkafka %s: features",
         getenv("KSNAP_TEST_KAFKA_VERSION"), rd_kafka_version_str());
  print_items("enabled", ng->enabled);
  print_items("disabled", ng->disabled);
  printf("\n");
  for (int i = 0; i < ng->napis; i++)
    if (ng->apis[i].sent >= 0)
      printf("  %-20s broker v%d..v%d, sent v%d\n", ng->apis[i].name,
             ng->apis[i].broker_min, ng->apis[i].broker_max, ng->apis[i].sent);
  fflush(stdout); /* before a failed assertion ends the test's process */
}

/* --- the client side of a ksnap job, once --------------------------- */

static void ok(rd_kafka_error_t *error, const char *what) {
  if (error) {
    char msg[512];

    snprintf(msg, sizeof(msg), "%s: %s", what, rd_kafka_error_string(error));
    rd_kafka_error_destroy(error);
    ck_abort_msg("%s", msg);
  }
}

/* One committed transaction of one record to @p topic. */
static void produce_transaction(const char *topic) {
  char *txn_id = ksnap_test_unique_name("ksnap-proto-txn");
  const char *kv[] = {"transactional.id", txn_id, NULL};
  rd_kafka_t *rk = debug_client(RD_KAFKA_PRODUCER, kv);

  ok(rd_kafka_init_transactions(rk, TIMEOUT_MS), "init_transactions");
  ok(rd_kafka_begin_transaction(rk), "begin");
  ck_assert(!rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                               RD_KAFKA_V_PARTITION(0),
                               RD_KAFKA_V_VALUE("v", 1), RD_KAFKA_V_END));
  ok(rd_kafka_commit_transaction(rk, TIMEOUT_MS), "commit");
  rd_kafka_destroy(rk);
  free(txn_id);
}

/* Reads @p topic [0] read_committed to its end, commits the position to
 * a group, reads it back and queries the watermarks. */
static void consume_and_commit(const char *topic) {
  char *group = ksnap_test_unique_name("ksnap-proto-group");
  const char *kv[] = {"group.id", group, "isolation.level", "read_committed",
                      "enable.partition.eof", "true", "enable.auto.commit",
                      "false", NULL};
  rd_kafka_t *rk = debug_client(RD_KAFKA_CONSUMER, kv);
  rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
  int64_t lo, hi;
  int records = 0;

  rd_kafka_topic_partition_list_add(parts, topic, 0)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  ck_assert(!rd_kafka_assign(rk, parts));
  for (int eof = 0; !eof;) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, TIMEOUT_MS);
    ck_assert_msg(m != NULL, "no record nor end of %s", topic);
    eof = m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF;
    ck_assert_msg(eof || !m->err, "%s", rd_kafka_message_errstr(m));
    records += !eof;
    rd_kafka_message_destroy(m);
  }
  ck_assert_int_eq(records, 1);
  parts->elems[0].offset = 1;
  ck_assert(!rd_kafka_commit(rk, parts, 0));
  parts->elems[0].offset = RD_KAFKA_OFFSET_INVALID;
  ck_assert(!rd_kafka_committed(rk, parts, TIMEOUT_MS));
  ck_assert_int_eq(parts->elems[0].offset, 1);
  ck_assert(!rd_kafka_query_watermark_offsets(rk, topic, 0, &lo, &hi,
                                              TIMEOUT_MS));
  ck_assert_int_eq(hi, 2); /* the record and the commit marker */
  rd_kafka_topic_partition_list_destroy(parts);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  free(group);
}

static void assert_sent(negotiation_t *ng, const char *name, int min_version) {
  api_t *a = api(ng, name);

  ck_assert_msg(a->sent >= min_version, "%sRequest: sent v%d, need >= v%d",
                name, a->sent, min_version);
  ck_assert_msg(a->sent >= a->broker_min && a->sent <= a->broker_max,
                "%sRequest v%d outside the broker's v%d..v%d", name, a->sent,
                a->broker_min, a->broker_max);
}

START_TEST(protocol_for_transactions) {
  char *topic = ksnap_test_unique_name("ksnap-proto");
  negotiation_t ng;

  ksnap_test_create_topic(bootstrap(), topic, 1);
  produce_transaction(topic);
  consume_and_commit(topic);
  parse_log(&ng);
  print_negotiation(&ng);

  for (int i = 0; i < 2; i++) {
    const char *need = i ? "IdempotentProducer" : "MsgVer2";
    ck_assert_msg(has_item(ng.enabled, need) && !has_item(ng.disabled, need),
                  "feature %s: enabled %s, disabled %s", need, ng.enabled,
                  ng.disabled);
  }
  assert_sent(&ng, "Produce", 3);        /* record batch v2 */
  assert_sent(&ng, "Fetch", 4);          /* isolation level */
  assert_sent(&ng, "FindCoordinator", 1); /* transaction coordinators */
  assert_sent(&ng, "InitProducerId", 0);
  assert_sent(&ng, "AddPartitionsToTxn", 0);
  assert_sent(&ng, "EndTxn", 0);
  assert_sent(&ng, "OffsetCommit", 0);
  assert_sent(&ng, "OffsetFetch", 0);
  assert_sent(&ng, "ListOffsets", 1);
  /* Transaction version 2 needs EndTxn v5: not sent by this librdkafka. */
  ck_assert_int_lt(api(&ng, "EndTxn")->sent, 5);
  free(topic);
}
END_TEST

/* --- the broker's transaction version ------------------------------- */

/* The finalized level of @p feature in kafka-features' describe output
 * ("Feature: NAME ... FinalizedVersionLevel: N ..."); 0 if absent. */
static int finalized_level(const char *out, const char *feature) {
  char name[128];
  int level = 0;

  for (const char *line = out; line && *line;
       line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    const char *f = strstr(line, "FinalizedVersionLevel:");
    if (sscanf(line, "Feature: %127s", name) == 1 && !strcmp(name, feature) &&
        f)
      level = atoi(f + strlen("FinalizedVersionLevel:"));
  }
  return level;
}

START_TEST(transaction_version) {
  const char *version = ksnap_test_require_env("KSNAP_TEST_KAFKA_VERSION");
  char args[512], *out;
  int tv, expected = atoi(version) >= 4 ? 2 : 0;

  snprintf(args, sizeof(args), "--bootstrap-server %s describe", bootstrap());
  ck_assert_int_eq(ksnap_test_kafka_tool(
                       "org.apache.kafka.tools.FeatureCommand", args, &out),
                   0);
  tv = finalized_level(out, "transaction.version");
  printf("Kafka %s: transaction.version %d\n%s", version, tv, out);
  ck_assert_msg(tv == expected,
                "Kafka %s runs transaction.version %d; the tests expect %d "
                "(tests/servers/kafka.sh formats with the version's default)",
                version, tv, expected);
  free(out);
}
END_TEST

int main(void) {
  Suite *s = suite_create("kafka_broker");
  TCase *tc = tcase_create("kafka_broker");

  if (ksnap_test_broker_is_mock(bootstrap()) != 0) {
    fprintf(stderr, "%s is not a real Kafka broker (or does not answer)\n",
            bootstrap());
    return 1;
  }
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, protocol_for_transactions);
  tcase_add_test(tc, transaction_version);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
