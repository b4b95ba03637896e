#include "kafka_testutil.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

static int64_t now_ms(void) {
  struct timespec ts;

  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void conf_set(rd_kafka_conf_t *conf, const char *key,
                     const char *value) {
  char errstr[512];

  if (rd_kafka_conf_set(conf, key, value, errstr, sizeof(errstr)) !=
      RD_KAFKA_CONF_OK)
    ck_abort_msg("config %s=%s: %s", key, value, errstr);
}

rd_kafka_t *ksnap_test_kafka_new(rd_kafka_type_t type, const char *bootstrap,
                                 const char *const *kv) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_t *rk;

  conf_set(conf, "bootstrap.servers", bootstrap);
  if (type == RD_KAFKA_CONSUMER) {
    conf_set(conf, "fetch.wait.max.ms", "10");
    conf_set(conf, "enable.partition.eof", "true");
    conf_set(conf, "enable.auto.commit", "false");
  }
  for (size_t i = 0; kv && kv[i]; i += 2) {
    ck_assert_msg(kv[i + 1] != NULL, "property %s has no value", kv[i]);
    conf_set(conf, kv[i], kv[i + 1]);
  }
  rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
  ck_assert_msg(rk != NULL, "rd_kafka_new: %s", errstr);
  return rk;
}

/* Waits until the metadata shows @p topic with @p partitions. */
static void wait_for_topic(rd_kafka_t *rk, const char *topic, int partitions) {
  int64_t deadline = now_ms() + KSNAP_TEST_KAFKA_TIMEOUT_MS;
  rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);

  for (;;) {
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 5000);
    int ready = !err && md->topic_cnt == 1 && !md->topics[0].err &&
                md->topics[0].partition_cnt == partitions;

    if (md)
      rd_kafka_metadata_destroy(md);
    if (ready)
      break;
    ck_assert_msg(now_ms() < deadline, "topic %s did not appear", topic);
    usleep(100 * 1000);
  }
  rd_kafka_topic_destroy(rkt);
}

void ksnap_test_create_topic(const char *bootstrap, const char *topic,
                             int partitions) {
  char errstr[512];
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bootstrap, NULL);
  rd_kafka_queue_t *queue = rd_kafka_queue_new(rk);
  rd_kafka_NewTopic_t *new_topic =
      rd_kafka_NewTopic_new(topic, partitions, 1, errstr, sizeof(errstr));
  rd_kafka_event_t *ev;
  const rd_kafka_CreateTopics_result_t *res;
  const rd_kafka_topic_result_t **results;
  size_t cnt;

  ck_assert_msg(new_topic != NULL, "NewTopic %s: %s", topic, errstr);
  rd_kafka_CreateTopics(rk, &new_topic, 1, NULL, queue);
  ev = rd_kafka_queue_poll(queue, KSNAP_TEST_KAFKA_TIMEOUT_MS + 5000);
  ck_assert_msg(ev != NULL, "CreateTopics %s: no answer", topic);
  ck_assert_msg(!rd_kafka_event_error(ev), "CreateTopics %s: %s", topic,
                rd_kafka_event_error_string(ev));
  res = rd_kafka_event_CreateTopics_result(ev);
  ck_assert_msg(res != NULL, "CreateTopics %s: unexpected event %s", topic,
                rd_kafka_event_name(ev));
  results = rd_kafka_CreateTopics_result_topics(res, &cnt);
  ck_assert_int_eq(cnt, 1);
  ck_assert_msg(!rd_kafka_topic_result_error(results[0]),
                "CreateTopics %s: %s", topic,
                rd_kafka_topic_result_error_string(results[0]));
  rd_kafka_event_destroy(ev);
  rd_kafka_NewTopic_destroy(new_topic);
  wait_for_topic(rk, topic, partitions);
  rd_kafka_queue_destroy(queue);
  rd_kafka_destroy(rk);
}

/* "name=value\n" per header of @p msg, malloc'd ("" without headers). */
static char *headers_text(rd_kafka_message_t *msg) {
  rd_kafka_headers_t *hdrs = NULL;
  const char *name;
  const void *val;
  size_t len, cap = 1, n = 0;
  char *out = calloc(1, 1);

  ck_assert(out != NULL);
  if (rd_kafka_message_headers(msg, &hdrs) || !hdrs)
    return out;
  for (size_t i = 0; !rd_kafka_header_get_all(hdrs, i, &name, &val, &len);
       i++) {
    size_t need = n + strlen(name) + len + 3;
    if (need > cap) {
      cap = need * 2;
      ck_assert((out = realloc(out, cap)) != NULL);
    }
    n += (size_t)sprintf(out + n, "%s=", name);
    if (len)
      memcpy(out + n, val, len);
    n += len;
    out[n++] = '\n';
    out[n] = '\0';
  }
  return out;
}

static void records_append(ksnap_test_records_t *records,
                           rd_kafka_message_t *msg) {
  size_t n = records->cnt + 1;
  char *value = malloc(msg->len + 1), *key = NULL;

  records->values = realloc(records->values, n * sizeof(*records->values));
  records->offsets = realloc(records->offsets, n * sizeof(*records->offsets));
  records->keys = realloc(records->keys, n * sizeof(*records->keys));
  records->headers = realloc(records->headers, n * sizeof(*records->headers));
  ck_assert(value && records->values && records->offsets && records->keys &&
            records->headers);
  if (msg->len)
    memcpy(value, msg->payload, msg->len);
  value[msg->len] = '\0';
  if (msg->key) {
    ck_assert((key = malloc(msg->key_len + 1)) != NULL);
    memcpy(key, msg->key, msg->key_len);
    key[msg->key_len] = '\0';
  }
  records->values[records->cnt] = value;
  records->offsets[records->cnt] = msg->offset;
  records->keys[records->cnt] = key;
  records->headers[records->cnt] = headers_text(msg);
  records->cnt = n;
}

ksnap_test_records_t *ksnap_test_consume_all(const char *bootstrap,
                                             const char *topic, int partition,
                                             const char *isolation_level) {
  char *group = ksnap_test_unique_name("ksnap-test-reader");
  const char *kv[] = {"isolation.level", isolation_level, "group.id", group,
                      NULL};
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_CONSUMER, bootstrap, kv);
  rd_kafka_topic_partition_list_t *parts =
      rd_kafka_topic_partition_list_new(1);
  ksnap_test_records_t *records = calloc(1, sizeof(*records));
  int64_t deadline = now_ms() + KSNAP_TEST_KAFKA_TIMEOUT_MS;
  rd_kafka_resp_err_t err;

  ck_assert(records != NULL);
  rd_kafka_topic_partition_list_add(parts, topic, partition)->offset =
      RD_KAFKA_OFFSET_BEGINNING;
  err = rd_kafka_assign(rk, parts);
  ck_assert_msg(!err, "assign %s [%d]: %s", topic, partition,
                rd_kafka_err2str(err));
  rd_kafka_topic_partition_list_destroy(parts);

  /* enable.partition.eof: librdkafka reports the end (the last stable
   * offset under read_committed) once the fetch position reaches it. */
  for (;;) {
    rd_kafka_message_t *msg;

    ck_assert_msg(now_ms() < deadline,
                  "%s [%d] (%s): no end of partition after %d ms", topic,
                  partition, isolation_level, KSNAP_TEST_KAFKA_TIMEOUT_MS);
    msg = rd_kafka_consumer_poll(rk, 200);
    if (!msg)
      continue;
    if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      rd_kafka_message_destroy(msg);
      break;
    }
    ck_assert_msg(!msg->err, "consume %s [%d]: %s", topic, partition,
                  rd_kafka_message_errstr(msg));
    records_append(records, msg);
    rd_kafka_message_destroy(msg);
  }
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  free(group);
  return records;
}

void ksnap_test_records_free(ksnap_test_records_t *records) {
  if (!records)
    return;
  for (size_t i = 0; i < records->cnt; i++) {
    free(records->values[i]);
    free(records->keys[i]);
    free(records->headers[i]);
  }
  free(records->values);
  free(records->offsets);
  free(records->keys);
  free(records->headers);
  free(records);
}

int ksnap_test_broker_is_mock(const char *bootstrap) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  rd_kafka_t *rk;
  char *cluster_id;
  int is_mock;

  if (rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap, errstr,
                        sizeof(errstr)) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return -1;
  }
  rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
  if (!rk)
    return -1;
  cluster_id = rd_kafka_clusterid(rk, KSNAP_TEST_KAFKA_TIMEOUT_MS);
  is_mock = !cluster_id ? -1 : !strncmp(cluster_id, "mockCluster", 11);
  if (cluster_id)
    rd_kafka_mem_free(rk, cluster_id);
  rd_kafka_destroy(rk);
  return is_mock;
}

int ksnap_test_kafka_tool(const char *main_class, const char *args,
                          char **outp) {
  const char *libs = getenv("KSNAP_TEST_KAFKA_LIBS");
  char cmd[4096];
  FILE *fp;
  int status;

  ck_assert_msg(libs && *libs,
                "KSNAP_TEST_KAFKA_LIBS is not set: the servers were started "
                "by an older tests/servers/kafka.sh; restart them "
                "(tests/servers/down.sh && tests/servers/up.sh)");
  snprintf(cmd, sizeof(cmd), "java -cp '%s/*' %s %s", libs, main_class, args);
  ck_assert_ptr_nonnull(fp = popen(cmd, "r"));
  *outp = ksnap_test_read_all(fp);
  status = pclose(fp);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void ksnap_test_produce_word_lines(const char *topic, int lines) {
  static const char *const line[] = {"one two three", "four five six",
                                     "seven eight", "nine ten one two"};
  rd_kafka_t *p = ksnap_test_kafka_new(
      RD_KAFKA_PRODUCER, ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP"), NULL);

  for (int i = 0; i < lines; i++) {
    const char *l = line[i % 4];
    while (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic),
                             RD_KAFKA_V_VALUE((void *)l, strlen(l)),
                             RD_KAFKA_V_END) ==
           RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(p, 10);
  }
  ck_assert_int_eq(rd_kafka_flush(p, KSNAP_TEST_KAFKA_TIMEOUT_MS), 0);
  rd_kafka_destroy(p);
}

long ksnap_test_word_count(const char *topic, int nparts, const char *word,
                           int check) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  long count = 0;

  for (int p = 0; p < nparts; p++) {
    ksnap_test_records_t *r =
        ksnap_test_consume_all(bs, topic, p, "read_committed");
    char seen[32][16];
    long last[32];
    int nw = 0;
    for (size_t i = 0; i < r->cnt; i++) {
      const char *k = r->keys[i] ? r->keys[i] : "";
      long v = strtol(r->values[i], NULL, 10);
      int w = 0;
      while (w < nw && strcmp(seen[w], k))
        w++;
      if (w == nw) {
        ck_assert_int_lt(nw, 32);
        snprintf(seen[nw], sizeof(seen[nw]), "%s", k);
        last[nw++] = 0;
      }
      if (check)
        ck_assert_msg(v == last[w] + 1,
                      "word %s: count %ld after %ld at offset %lld of %s[%d]: "
                      "%s", k, v, last[w], (long long)r->offsets[i], topic,
                      p, v <= last[w] ? "a duplicate" : "a loss");
      last[w] = v;
      if (!strcmp(k, word))
        count = v;
    }
    ksnap_test_records_free(r);
  }
  return count;
}

void ksnap_test_wait_word_count(const char *topic, int nparts,
                                const char *word, long want, int wait_s) {
  long n = 0;

  for (int i = 0; i < wait_s * 4 &&
                  (n = ksnap_test_word_count(topic, nparts, word, 0)) < want;
       i++)
    usleep(250 * 1000);
  ck_assert_msg(n == want, "count of \"%s\" is %ld, want %ld", word, n, want);
}
