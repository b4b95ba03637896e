/*
 * bench_product's Kafka helpers: clients, topics, the pre-produced source
 * lines, and the sink counter every run is measured with.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "product.h"

const char *bs;
char ksnap_bin[PATH_MAX + 64];
char oplib[PATH_MAX + 64];
char clickslib[PATH_MAX + 64];
void (*job_graph)(FILE *f, const char *src, const char *sink);
char tmpdir[512];
long run_seq;

int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_product: %s: %s\n", what, msg);
  exit(1);
}

rd_kafka_t *client(rd_kafka_type_t type, const char *const *kv) {
  char errstr[512];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", bs, errstr,
                        sizeof(errstr)))
    die("bootstrap.servers", errstr);
  for (; kv && kv[0]; kv += 2)
    if (rd_kafka_conf_set(conf, kv[0], kv[1], errstr, sizeof(errstr)))
      die(kv[0], errstr);
  rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof(errstr));
  if (!rk)
    die("rd_kafka_new", errstr);
  return rk;
}

void create_topic(const char *topic) {
  char errstr[512];
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_NewTopic_t *nt =
      rd_kafka_NewTopic_new(topic, NPARTS, 1, errstr, sizeof(errstr));
  if (!nt)
    die(topic, errstr);
  rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
  if (!ev)
    die(topic, "CreateTopics: no answer in 30 s");
  if (rd_kafka_event_error(ev))
    die(topic, rd_kafka_event_error_string(ev));
  size_t cnt = 0;
  const rd_kafka_topic_result_t **res = rd_kafka_CreateTopics_result_topics(
      rd_kafka_event_CreateTopics_result(ev), &cnt);
  if (cnt != 1 || rd_kafka_topic_result_error(res[0]))
    die(topic, cnt ? rd_kafka_topic_result_error_string(res[0]) : "no result");
  rd_kafka_event_destroy(ev);
  rd_kafka_NewTopic_destroy(nt);
  rd_kafka_queue_destroy(q);
  rd_kafka_destroy(rk);
}

/* Line i of workload @p distinct: 10 words. */
static int make_line(char *buf, size_t cap, long i, int distinct) {
  int n = 0;
  for (int w = 0; w < 10; w++) {
    long id = distinct ? i * 10 + w : (i * 7919 + w * 104729) % 1000;
    n += snprintf(buf + n, cap - (size_t)n, "%sw%ld", w ? " " : "", id);
  }
  return n;
}

void produce_lines(const char *topic, long n, line_fn *line, void *arg) {
  static const char *const kv[] = {"linger.ms", "20", "acks", "all",
                                   "queue.buffering.max.messages", "500000",
                                   NULL};
  rd_kafka_t *p = client(RD_KAFKA_PRODUCER, kv);
  char buf[256];
  for (long i = 0; i < n; i++) {
    int len = line(buf, sizeof(buf), i, arg);
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(
                p, RD_KAFKA_V_TOPIC(topic),
                RD_KAFKA_V_PARTITION((int32_t)(i % NPARTS)),
                RD_KAFKA_V_VALUE(buf, (size_t)len),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) ==
           RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(p, 10);
    if (err)
      die("produce", rd_kafka_err2str(err));
    rd_kafka_poll(p, 0);
  }
  if (rd_kafka_flush(p, 60000))
    die("flush", "source not flushed in 60 s");
  rd_kafka_destroy(p);
}

static int word_line(char *buf, size_t cap, long i, void *arg) {
  return make_line(buf, cap, i, *(const int *)arg);
}

void produce_source(const char *topic, long lines, int distinct) {
  produce_lines(topic, lines, word_line, &distinct);
}

/* A consumer of all of @p topic's partitions from @p start (per
 * partition; NULL: the beginning). */
rd_kafka_t *assigned_consumer(const char *topic, const char *group,
                              const char *isolation, const int64_t *start) {
  const char *const kv[] = {"group.id", group, "isolation.level", isolation,
                            "enable.auto.commit", "false",
                            "fetch.wait.max.ms", "10", NULL};
  rd_kafka_t *c = client(RD_KAFKA_CONSUMER, kv);
  rd_kafka_poll_set_consumer(c);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(NPARTS);
  for (int32_t p = 0; p < NPARTS; p++)
    rd_kafka_topic_partition_list_add(l, topic, p)->offset =
        start ? start[p] : RD_KAFKA_OFFSET_BEGINNING;
  if (rd_kafka_assign(c, l))
    die("assign", topic);
  rd_kafka_topic_partition_list_destroy(l);
  return c;
}

/* Whether a sink record is the output of a probe line (its key is the
 * word), not of the workload. */
int is_probe(const rd_kafka_message_t *m) {
  return m->key_len > 0 && ((const char *)m->key)[0] == PROBE_LETTER;
}

/* Counts the workload's sink records (not the probes' of earlier runs)
 * until @p words; returns 0 or -1 on timeout (600 s, or words / 10k
 * seconds beyond 6M words). */
int count_sink(const char *sink, long words, int64_t t0, result_t *r,
               pid_t pid) {
  char group[128];
  snprintf(group, sizeof(group), "%s.count", sink);
  rd_kafka_t *c = assigned_consumer(sink, group, "read_uncommitted", NULL);
  long got = 0;
  long limit_s = words / 10000 > 600 ? words / 10000 : 600;
  int64_t first = 0, last = 0, deadline = now_us() + limit_s * 1000000LL;
  while (got < words && now_us() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
    if (pid > 0 && !m && waitpid(pid, NULL, WNOHANG) == pid) {
      fprintf(stderr, "bench_product: ksnap exited\n");
      break;
    }
    if (!m)
      continue;
    if (!m->err && !is_probe(m)) {
      last = now_us();
      r->last_wall_ms = wall_ms();
      if (!got++)
        first = last;
    } else if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
               m->err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
      fprintf(stderr, "bench_product: %s: %s\n", sink,
              rd_kafka_message_errstr(m));
    }
    rd_kafka_message_destroy(m);
  }
  if (pid > 0)
    read_proc(pid, &r->proc);
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  if (got < words) {
    fprintf(stderr, "bench_product: %s: %ld of %ld records in %ld s\n", sink,
            got, words, limit_s);
    return -1;
  }
  r->wps = (double)(words - 1) * 1e6 / (double)(last - first);
  r->total_s = (double)(last - t0) / 1e6;
  return 0;
}
