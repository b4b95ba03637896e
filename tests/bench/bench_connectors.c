/*
 * Connector benchmark against the real broker (KSNAP_TEST_BOOTSTRAP):
 *  1. exchange writer: N records of 100 bytes to a 4-partition topic with
 *     a barrier every B records; a waiter thread calls wait_delivered for
 *     each barrier as soon as it is broadcast. Prints throughput with and
 *     without barriers (ratio, same run) and the p50/p99/max time from
 *     broadcast to "all delivered" (last round).
 *  2. transactional sink: E epochs of R records each; p50/p99 of
 *     pre-commit (flush) and commit (progress record + commit_transaction).
 *     BENCH_NO_WARM=1 skips ksnap_sink_warm_topic() (shows the ~1 s first
 *     transaction per producer); BENCH_VERBOSE=1 prints every epoch.
 *
 *   build/tests/bench_connectors [N [B [E [R]]]]
 *   defaults: 200000 10000 20 1000
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exchange/exchange.h"
#include "ksnap/conf.h"
#include "sink/sink.h"
#include "kafka/topics.h"

#define MAX_BARRIERS 4096

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *what, const ksnap_error_t *e) {
  fprintf(stderr, "bench: %s: %s\n", what, e ? e->msg : "");
  exit(1);
}

static int cmp64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static void pct(const char *what, int64_t *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp64);
  printf("%-34s p50 %7.2f ms  p99 %7.2f ms  max %7.2f ms  (n=%d)\n", what,
         v[n / 2] / 1000.0, v[(n * 99) / 100 >= n ? n - 1 : (n * 99) / 100] /
                                1000.0,
         v[n - 1] / 1000.0, n);
}

typedef struct waiter_s {
  ksnap_exchange_t *ex;
  int nbarriers;
  _Atomic int64_t sent_at[MAX_BARRIERS];
  int64_t latency[MAX_BARRIERS];
} waiter_t;

static void *wait_main(void *arg) {
  waiter_t *w = arg;
  ksnap_error_t e;

  for (int b = 1; b <= w->nbarriers; b++) {
    int64_t t0;
    while (!(t0 = atomic_load(&w->sent_at[b])))
      usleep(100);
    if (ksnap_exchange_wait_delivered(w->ex, b, 60000, &e))
      die("wait_delivered", &e);
    w->latency[b - 1] = now_us() - t0;
  }
  return NULL;
}

/* Produces @p n records; a barrier every @p every (0: none). */
static double run_exchange(ksnap_conf_t *conf, const char *topic, int n,
                           int every, waiter_t *w) {
  const char *topics[] = {topic};
  char value[100], key[16];
  ksnap_error_t e;
  ksnap_exchange_t *ex = ksnap_exchange_new(conf, "bench[0]", 1, topics, 1,
                                            30000, &e);
  pthread_t th;
  int64_t t0;
  int nb = 0;

  if (!ex)
    die("exchange", &e);
  memset(value, 'v', sizeof(value));
  w->ex = ex;
  w->nbarriers = every ? n / every : 1;
  pthread_create(&th, NULL, wait_main, w);
  t0 = now_us();
  for (int i = 1; i <= n; i++) {
    snprintf(key, sizeof(key), "%d", i % 1000);
    while (ksnap_exchange_produce(ex, topic, -1, key, strlen(key), value,
                                  sizeof(value), 0, NULL, 0, &e)) {
      if (!e.retriable)
        die("produce", &e);
      usleep(1000); /* local queue full */
    }
    if ((every && i % every == 0) || (!every && i == n)) {
      int64_t t = now_us();
      if (ksnap_exchange_broadcast_barrier(ex, ++nb, "B", 1, &e))
        die("barrier", &e);
      atomic_store(&w->sent_at[nb], t); /* after: the id now exists */
    }
  }
  pthread_join(th, NULL);
  t0 = now_us() - t0;
  ksnap_exchange_destroy(ex);
  return n / (t0 / 1e6);
}

static void bench_sink(ksnap_conf_t *conf, const char *out, int epochs,
                       int records) {
  ksnap_error_t e;
  ksnap_sink_t *sink = ksnap_sink_new(conf, "bench", 0, 30000, &e);
  int64_t *pre = calloc((size_t)epochs, sizeof(int64_t));
  int64_t *com = calloc((size_t)epochs, sizeof(int64_t));
  char value[100];

  if (!sink)
    die("sink", &e);
  if (!getenv("BENCH_NO_WARM"))
    ksnap_sink_warm_topic(sink, out, 30000);
  memset(value, 's', sizeof(value));
  for (int n = 1; n <= epochs; n++) {
    int64_t t0;
    if (ksnap_sink_begin(sink, n, &e))
      die("begin", &e);
    for (int i = 0; i < records; i++)
      if (ksnap_sink_produce(sink, out, -1, &i, sizeof(i), value,
                             sizeof(value), 0, NULL, 0, &e))
        die("sink produce", &e);
    t0 = now_us();
    if (ksnap_sink_precommit(sink, n, 30000, &e))
      die("precommit", &e);
    pre[n - 1] = now_us() - t0;
    t0 = now_us();
    if (ksnap_sink_commit(sink, n, "progress", 8, 30000, &e))
      die("commit", &e);
    com[n - 1] = now_us() - t0;
    if (getenv("BENCH_VERBOSE"))
      printf("epoch %d: pre-commit %.2f ms commit %.2f ms\n", n,
             pre[n - 1] / 1000.0, com[n - 1] / 1000.0);
  }
  printf("sink: %d epochs of %d records (first epoch: pre-commit %.2f ms, "
         "commit %.2f ms; not in the percentiles)\n",
         epochs, records, pre[0] / 1000.0, com[0] / 1000.0);
  pct("  pre-commit (flush)", pre + 1, epochs - 1);
  pct("  commit (progress + commit_txn)", com + 1, epochs - 1);
  ksnap_sink_destroy(sink);
  free(pre);
  free(com);
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  int every = argc > 2 ? atoi(argv[2]) : 10000;
  int epochs = argc > 3 ? atoi(argv[3]) : 20;
  int records = argc > 4 ? atoi(argv[4]) : 1000;
  const char *bs = getenv("KSNAP_TEST_BOOTSTRAP");
  char job[64], xch[96], out[96], errstr[512];
  ksnap_conf_t *conf = ksnap_conf_new();
  ksnap_topic_spec_t specs[2];
  static waiter_t w1, w2;
  ksnap_error_t e;
  double plain, with;

  if (!bs || !*bs || n <= 0 || every <= 0 || n / every >= MAX_BARRIERS ||
      epochs < 2 || records < 0) {
    fprintf(stderr, "usage: KSNAP_TEST_BOOTSTRAP=HOST:PORT %s [N [B [E "
                    "[R]]]] (N/B < %d)\n", argv[0], MAX_BARRIERS);
    return 2;
  }
  snprintf(job, sizeof(job), "bench-%ld-%ld", (long)getpid(), (long)time(NULL));
  snprintf(xch, sizeof(xch), "%s.xch", job);
  snprintf(out, sizeof(out), "%s.out", job);
  if (ksnap_conf_set(conf, "job.name", job, errstr, sizeof(errstr)) ||
      ksnap_conf_set(conf, "kafka.bootstrap.servers", bs, errstr,
                     sizeof(errstr)) ||
      ksnap_conf_set(conf, "kafka.transaction.timeout.ms", "900000", errstr,
                     sizeof(errstr))) {
    fprintf(stderr, "bench: %s\n", errstr);
    return 1;
  }
  specs[0] = (ksnap_topic_spec_t){xch, 4, 0};
  specs[1] = (ksnap_topic_spec_t){out, 4, 0};
  if (ksnap_topics_ensure_job(conf, specs, 2, 30000, &e))
    die("topics", &e);
  /* warm-up (topic metadata, connections), then alternate twice and keep
   * the best of each: runs here vary by +-30% */
  run_exchange(conf, xch, n / 10 > 0 ? n / 10 : 1, 0, &w1);
  plain = with = 0;
  for (int round = 0; round < 2; round++) {
    double a, b;
    memset(&w1, 0, sizeof(w1));
    a = run_exchange(conf, xch, n, 0, &w1);
    memset(&w2, 0, sizeof(w2));
    b = run_exchange(conf, xch, n, every, &w2);
    plain = a > plain ? a : plain;
    with = b > with ? b : with;
  }
  printf("exchange: %d records x 100 B, 4 partitions (best of 2 rounds)\n",
         n);
  printf("  no barriers           %10.0f rec/s\n", plain);
  printf("  barrier every %-7d %10.0f rec/s  (ratio %.2f)\n", every, with,
         with / plain);
  pct("  broadcast -> all delivered", w2.latency, w2.nbarriers);
  bench_sink(conf, out, epochs, records);
  ksnap_conf_destroy(conf);
  return 0;
}
