/*
 * bench_product's end-to-end latency: while a run's job goes on after the
 * pre-produced lines, a producer thread appends PROBE_RATE probe lines a
 * second to its source for ph->probe_s seconds, each line one word
 *   q<tag>x<seq>x<send time, monotonic us>
 * (letters and digits only: the word count's split keeps it whole)
 * (linger.ms=0, acks=all: the send time is the line's CreateTime and a
 * few ms before its append), and the main thread's two consumers of the
 * sink, started at the sink's end offsets, note when the output of each
 * probe becomes visible read_committed and when it arrives
 * read_uncommitted (the word is the output's key in the ksnap word count
 * and in the raw loops alike). Latency = first sight - send time. <tag> is the run's number: probes of earlier runs, read
 * again from the shared source, are not counted. Probes not seen
 * ph->grace_s seconds after the last one was sent are counted as lost.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "product.h"

typedef struct {
  const char *src;
  long tag, count;
} probe_args_t;

static void sleep_until(rd_kafka_t *p, int64_t due) {
  int64_t t;
  while ((t = now_us()) < due) {
    if (due - t >= 2000) {
      rd_kafka_poll(p, (int)((due - t) / 1000) - 1);
    } else {
      struct timespec ts = {0, (long)(due - t) * 1000};
      nanosleep(&ts, NULL);
    }
  }
}

static void *probe_loop(void *arg) {
  const probe_args_t *a = arg;
  static const char *const kv[] = {"linger.ms", "0", "acks", "all", NULL};
  rd_kafka_t *p = client(RD_KAFKA_PRODUCER, kv);
  int64_t t0 = now_us(), period = 1000000 / PROBE_RATE;
  char line[96];
  for (long i = 0; i < a->count; i++) {
    sleep_until(p, t0 + i * period);
    int n = snprintf(line, sizeof(line), "%c%ldx%ldx%" PRId64, PROBE_LETTER,
                     a->tag, i, now_us());
    rd_kafka_resp_err_t err = rd_kafka_producev(
        p, RD_KAFKA_V_TOPIC(a->src),
        RD_KAFKA_V_PARTITION((int32_t)(i % NPARTS)),
        RD_KAFKA_V_VALUE(line, (size_t)n),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    if (err)
      die("probe produce", rd_kafka_err2str(err));
    rd_kafka_poll(p, 0);
  }
  if (rd_kafka_flush(p, 30000))
    die("probe flush", "not flushed in 30 s");
  rd_kafka_destroy(p);
  return NULL;
}

/* A consumer of @p sink from its current end offsets. */
static rd_kafka_t *sink_tail(const char *sink, const char *isolation) {
  char group[160];
  snprintf(group, sizeof(group), "%s.latency.%s", sink, isolation);
  rd_kafka_t *q = client(RD_KAFKA_CONSUMER, NULL);
  int64_t end[NPARTS];
  for (int32_t p = 0; p < NPARTS; p++) {
    int64_t lo = 0;
    rd_kafka_resp_err_t err =
        rd_kafka_query_watermark_offsets(q, sink, p, &lo, &end[p], 10000);
    if (err)
      die(sink, rd_kafka_err2str(err));
  }
  rd_kafka_destroy(q);
  return assigned_consumer(sink, group, isolation, end);
}

/* The probe number of @p m if it is a probe of run @p tag, else -1. */
static long probe_seq(const rd_kafka_message_t *m, long tag, int64_t *sent) {
  char key[96];
  long t = -1, seq = -1;
  if (!is_probe(m) || m->key_len >= sizeof(key))
    return -1;
  memcpy(key, m->key, m->key_len);
  key[m->key_len] = 0;
  if (sscanf(key + 1, "%ldx%ldx%" SCNd64, &t, &seq, sent) != 3 || t != tag)
    return -1;
  return seq;
}

/* The probes of one sink consumer: when each was first seen. */
typedef struct {
  rd_kafka_t *c;
  unsigned char *seen;
  int n;
  double lat[MAX_SAMPLES]; /* ms */
} watch_t;

static void watch_open(watch_t *w, const char *sink, const char *isolation,
                       long count) {
  w->c = sink_tail(sink, isolation);
  w->seen = calloc((size_t)count, 1);
  w->n = 0;
  if (!w->seen)
    die("probe_latency", "out of memory");
}

/* Takes one record of @p w's consumer if one is there; returns whether
 * one was. */
static int watch_poll(watch_t *w, long tag, long count) {
  rd_kafka_message_t *m = rd_kafka_consumer_poll(w->c, 0);
  if (!m)
    return 0;
  int64_t at = now_us(), sent = 0;
  long seq = m->err ? -1 : probe_seq(m, tag, &sent);
  if (seq >= 0 && seq < count && !w->seen[seq]) {
    w->seen[seq] = 1;
    w->lat[w->n++] = (double)(at - sent) / 1000.0;
  }
  rd_kafka_message_destroy(m);
  return 1;
}

static void watch_close(watch_t *w) {
  rd_kafka_consumer_close(w->c);
  rd_kafka_destroy(w->c);
  free(w->seen);
}

int probe_latency(const char *src, const char *sink, const phase_t *ph,
                  result_t *r) {
  static watch_t vis, wr; /* read_committed, read_uncommitted */
  probe_args_t a = {src, ++run_seq, (long)ph->probe_s * PROBE_RATE};
  if (a.count > MAX_SAMPLES)
    a.count = MAX_SAMPLES;
  watch_open(&vis, sink, "read_committed", a.count);
  watch_open(&wr, sink, "read_uncommitted", a.count);
  /* a second of polling first: the consumers fetch when probes go */
  for (int64_t warm = now_us() + 1000000; now_us() < warm;)
    if (!watch_poll(&vis, -1, 0) && !watch_poll(&wr, -1, 0))
      usleep(1000);
  pthread_t th;
  if (pthread_create(&th, NULL, probe_loop, &a))
    die("pthread_create", "probe producer");
  int64_t deadline =
      now_us() + (int64_t)(ph->probe_s + ph->grace_s) * 1000000;
  while ((vis.n < a.count || wr.n < a.count) && now_us() < deadline) {
    int got = watch_poll(&vis, a.tag, a.count);
    got |= watch_poll(&wr, a.tag, a.count);
    if (!got)
      usleep(1000);
  }
  pthread_join(th, NULL);
  r->lat_n = vis.n;
  r->lat_lost = (int)(a.count - vis.n);
  r->lat_p50 = pct(vis.lat, vis.n, 0.50);
  r->lat_p99 = pct(vis.lat, vis.n, 0.99);
  r->wr_p50 = pct(wr.lat, wr.n, 0.50);
  r->wr_p99 = pct(wr.lat, wr.n, 0.99);
  if (vis.n < a.count || wr.n < a.count)
    fprintf(stderr, "bench_product: %s: %d (read_committed) and %d "
            "(read_uncommitted) of %ld probes seen %d s after the last was "
            "sent\n", sink, vis.n, wr.n, a.count, ph->grace_s);
  watch_close(&vis);
  watch_close(&wr);
  return 0;
}
