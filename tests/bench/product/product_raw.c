/*
 * bench_product's limit: a raw librdkafka consume-transform-produce loop
 * on a thread of its own (one produce per word, no state), plain or with
 * a transactional producer committing the consumed offsets in its
 * transaction every second. It reads until the run sets `stop`, so that
 * the probes appended after the pre-produced lines go through it too.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "product.h"

typedef struct {
  const char *src, *sink;
  int txn;
  int stop; /* set by the run (atomic), read by the loop */
} raw_args_t;

static void txn_check(rd_kafka_error_t *e, const char *what) {
  if (e)
    die(what, rd_kafka_error_string(e));
}

/* One produce per word of @p m's value. */
static void split_produce(rd_kafka_t *p, const char *sink,
                          const rd_kafka_message_t *m) {
  const char *v = m->payload;
  size_t len = m->len, i = 0;
  while (i < len) {
    while (i < len && v[i] == ' ')
      i++;
    size_t s = i;
    while (i < len && v[i] != ' ')
      i++;
    if (i == s)
      break;
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(
                p, RD_KAFKA_V_TOPIC(sink), RD_KAFKA_V_KEY(v + s, i - s),
                RD_KAFKA_V_VALUE("1", 1),
                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
      rd_kafka_poll(p, 5);
    if (err)
      die("raw produce", rd_kafka_err2str(err));
  }
}

/* Commits the open transaction with the offsets @p pos and begins the
 * next one unless @p last. */
static void raw_commit(rd_kafka_t *c, rd_kafka_t *p, const char *src,
                       const int64_t *pos, int last) {
  rd_kafka_topic_partition_list_t *l =
      rd_kafka_topic_partition_list_new(NPARTS);
  for (int32_t q = 0; q < NPARTS; q++)
    if (pos[q])
      rd_kafka_topic_partition_list_add(l, src, q)->offset = pos[q];
  rd_kafka_consumer_group_metadata_t *md = rd_kafka_consumer_group_metadata(c);
  txn_check(rd_kafka_send_offsets_to_transaction(p, l, md, 30000),
            "send_offsets_to_transaction");
  rd_kafka_consumer_group_metadata_destroy(md);
  rd_kafka_topic_partition_list_destroy(l);
  txn_check(rd_kafka_commit_transaction(p, 60000), "commit_transaction");
  if (!last)
    txn_check(rd_kafka_begin_transaction(p), "begin_transaction");
}

static void *raw_loop(void *arg) {
  raw_args_t *a = arg;
  char group[128], txid[128];
  snprintf(group, sizeof(group), "%s.raw", a->sink);
  snprintf(txid, sizeof(txid), "%s.txid", a->sink);
  rd_kafka_t *c = assigned_consumer(a->src, group, "read_committed", NULL);
  const char *const pkv[] = {"linger.ms", "5", "acks", "all",
                             "queue.buffering.max.messages", "1000000",
                             a->txn ? "transactional.id" : NULL, txid, NULL};
  rd_kafka_t *p = client(RD_KAFKA_PRODUCER, pkv);
  if (a->txn) {
    txn_check(rd_kafka_init_transactions(p, 30000), "init_transactions");
    txn_check(rd_kafka_begin_transaction(p), "begin_transaction");
  }
  int64_t pos[NPARTS] = {0};
  int64_t last_commit = now_us();
  int dirty = 0; /* consumed since the last commit */
  while (!__atomic_load_n(&a->stop, __ATOMIC_ACQUIRE)) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 10);
    if (m && !m->err) {
      split_produce(p, a->sink, m);
      pos[m->partition] = m->offset + 1;
      dirty = 1;
    } else if (m && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      die("raw consume", rd_kafka_message_errstr(m));
    }
    if (m)
      rd_kafka_message_destroy(m);
    rd_kafka_poll(p, 0);
    if (a->txn && dirty && now_us() - last_commit >= 1000000) {
      raw_commit(c, p, a->src, pos, 0);
      last_commit = now_us();
      dirty = 0;
    }
  }
  if (a->txn)
    raw_commit(c, p, a->src, pos, 1);
  else if (rd_kafka_flush(p, 60000))
    die("raw flush", "not flushed in 60 s");
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  rd_kafka_destroy(p);
  return NULL;
}

int run_raw(const char *src, long lines, int txn, const phase_t *ph,
            result_t *r) {
  char sink[128];
  snprintf(sink, sizeof(sink), "bp%ld%ld.raw%s.out", (long)getpid(),
           ++run_seq, txn ? "txn" : "");
  create_topic(sink);
  raw_args_t a = {src, sink, txn, 0};
  pthread_t th;
  int64_t t0 = now_us();
  if (pthread_create(&th, NULL, raw_loop, &a))
    die("pthread_create", "raw loop");
  int rc = count_sink(sink, lines * 10, t0, r, 0);
  if (!rc && ph->probe_s > 0)
    rc = probe_latency(src, sink, ph, r);
  __atomic_store_n(&a.stop, 1, __ATOMIC_RELEASE);
  pthread_join(th, NULL);
  return rc;
}
