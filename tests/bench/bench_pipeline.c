/*
 * Pipeline benchmark against the real broker (KSNAP_TEST_BOOTSTRAP), one
 * process: source stage t_split (P=2, 4 source partitions) -> keyed
 * t_count (P=2) -> sink topic (transactional). The same N pre-produced
 * lines are processed by fresh jobs, in two rounds (off, on / on, off):
 *   off: no checkpoint (the sink's first transaction stays open);
 *   on:  a coordinator thread triggers a checkpoint every second, waits for
 *        the 4 ACKs and completes it (the sink commits each epoch).
 * Prints both throughputs (lines/s from "all tasks running" to "every
 * word counted"), their ratio, and the p50/p99/max barrier alignment time
 * of the t_count tasks (from their ACKs). Checkpoint state goes to a
 * temporary directory (file://). The coordinator thread keeps one
 * checkpoint in flight (max-concurrent 1): under full backpressure a
 * checkpoint takes longer than the interval (the barrier queues behind
 * the exchange backlog, the sink's pre-commit flushes its local queue),
 * so fewer checkpoints than seconds complete; BENCH_VERBOSE=1 prints each
 * one's trigger-to-last-ACK time.
 *
 *   build/tests/bench_pipeline [N]      default N = 100000
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>

#include "kafka_testutil.h"
#include "ksnap/log.h"
#include "ksnap/conf.h"
#include "pipeops.h"
#include "pipetest.h"
#include "testutil.h"
#include "task/worker.h"

#define NSRC_PARTS 4
#define MAX_ALIGN 4096

static const char *bs;
static char *src;

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_pipeline: %s: %s\n", what, msg);
  exit(1);
}

static void set(ksnap_conf_t *conf, const char *k, const char *v) {
  char errstr[512];
  if (ksnap_conf_set(conf, k, v, errstr, sizeof(errstr)))
    die(k, errstr);
}

static void produce_input(size_t n) {
  rd_kafka_t *rk = ksnap_test_kafka_new(RD_KAFKA_PRODUCER, bs, NULL);
  char buf[64];

  for (size_t i = 0; i < n; i++) {
    pt_line(i, buf, sizeof(buf));
    while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(src),
                             RD_KAFKA_V_PARTITION((int32_t)(i % NSRC_PARTS)),
                             RD_KAFKA_V_VALUE(buf, strlen(buf)),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_END))
      rd_kafka_poll(rk, 10);
  }
  rd_kafka_flush(rk, 60000);
  rd_kafka_destroy(rk);
}

typedef struct coord_s {
  const char *job;
  atomic_int stop;
  int64_t align_us[MAX_ALIGN];
  size_t nalign;
  int64_t completed;
} coord_t;

/* Trigger every second; ACKs of all 4 tasks; COMPLETE. */
static void *coord_main(void *arg) {
  coord_t *c = arg;
  pt_acks_t *acks = pt_acks_new(bs, c->job);
  int64_t id = 1;

  while (!atomic_load(&c->stop)) {
    const ksnap_ack_record_t **recs;
    int64_t t0 = now_us();
    size_t n;
    pt_trigger(bs, c->job, id, PT_G0);
    n = pt_acks_wait(acks, KSNAP_ACKT_ACK, id, PT_G0, 4, 30000, &recs);
    if (n != 4)
      die("checkpoint", "not acknowledged by every task");
    for (size_t i = 0; i < n; i++)
      if (!strcmp(recs[i]->u.ack.snapshot.task.stage, "count") &&
          c->nalign < MAX_ALIGN)
        c->align_us[c->nalign++] =
            recs[i]->u.ack.snapshot.timings.alignment_us;
    pt_complete(bs, c->job, id, PT_G0);
    if (getenv("BENCH_VERBOSE"))
      fprintf(stderr, "checkpoint %lld acknowledged after %lld ms\n",
              (long long)id, (long long)(now_us() - t0) / 1000);
    c->completed = id++;
    while (!atomic_load(&c->stop) && now_us() - t0 < 1000000)
      usleep(10 * 1000);
  }
  pt_acks_destroy(acks);
  return NULL;
}

static int64_t counted(ksnap_worker_t *w) {
  int64_t n = 0;
  for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++) {
    ksnap_task_t *t = ksnap_worker_task(w, i);
    if (!strncmp(ksnap_task_id(t), "count[", 6))
      n += ksnap_task_records_in(t);
  }
  return n;
}

/* @returns lines/s. */
static double run(size_t nlines, int checkpoints, coord_t *c, char *dir) {
  ksnap_conf_t *conf = ksnap_conf_new();
  char *job = ksnap_test_unique_name("bench-pipe");
  char *out = ksnap_test_unique_name("bench-pipe-out");
  char url[600], in[300], outs[300];
  ksnap_worker_t *w;
  ksnap_error_t error;
  pthread_t th;
  int64_t t0, t1;

  snprintf(url, sizeof(url), "file://%s", dir);
  snprintf(in, sizeof(in), "source:%s", src);
  snprintf(outs, sizeof(outs), "sink:%s", out);
  set(conf, "job.name", job);
  set(conf, "kafka.bootstrap.servers", bs);
  set(conf, "state.checkpoints.dir", url);
  set(conf, "kafka.transaction.timeout.ms", "300000");
  set(conf, "execution.checkpointing.interval", "1s");
  set(conf, "execution.checkpointing.timeout", "30s");
  set(conf, "stage.split.operator", "t_split");
  set(conf, "stage.split.parallelism", "2");
  set(conf, "stage.split.input", in);
  set(conf, "stage.count.operator", "t_count");
  set(conf, "stage.count.parallelism", "2");
  set(conf, "stage.count.input", "stage:split");
  set(conf, "stage.count.output", outs);
  if (ksnap_conf_finalize(conf, NULL, NULL))
    die("conf", "finalize failed");
  ksnap_test_create_topic(bs, out, 2);
  if (ksnap_worker_new(conf, NULL, NULL, &w, &error) ||
      ksnap_worker_start(w, &error))
    die("worker", error.msg);
  for (int up = 0; up < 4;) {
    up = 0;
    for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++)
      up += ksnap_task_running(ksnap_worker_task(w, i)) != 0;
    usleep(1000);
  }
  t0 = now_us();
  c->job = job;
  atomic_store(&c->stop, 0);
  if (checkpoints)
    pthread_create(&th, NULL, coord_main, c);
  while (counted(w) < (int64_t)nlines * 3) {
    ksnap_worker_tick(w);
    usleep(1000);
  }
  t1 = now_us();
  if (checkpoints) {
    atomic_store(&c->stop, 1);
    pthread_join(th, NULL);
  }
  ksnap_worker_destroy(w);
  ksnap_conf_destroy(conf);
  free(job);
  free(out);
  return (double)nlines * 1e6 / (double)(t1 - t0);
}

static int cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static size_t nlines = 100000;

/* Runs as a Check test: the shared helpers assert with ck_assert. */
START_TEST(bench) {
  size_t n = nlines;
  static coord_t c;
  char *dir;
  double off = 0, on = 0, ratio = 0;
  int64_t ckpts = 0;

  if (!(bs = getenv("KSNAP_TEST_BOOTSTRAP")))
    die("KSNAP_TEST_BOOTSTRAP", "not set (source tests/.run/env)");
  ksnap_log_set_level(KSNAP_LOG_WARNING);
  pt_register_operators();
  src = ksnap_test_unique_name("bench-pipe-src");
  ksnap_test_create_topic(bs, src, NSRC_PARTS);
  produce_input(n);
  dir = ksnap_test_tmpdir("bench-pipeline");
  /* two rounds, the order alternating (the second run of a round finds
   * warmer caches): ratio = mean of the two paired ratios */
  for (int round = 0; round < 2; round++) {
    double r_off, r_on;
    if (round == 0) {
      r_off = run(n, 0, &c, dir);
      r_on = run(n, 1, &c, dir);
    } else {
      r_on = run(n, 1, &c, dir);
      r_off = run(n, 0, &c, dir);
    }
    off += r_off / 2;
    on += r_on / 2;
    ratio += r_on / r_off / 2;
    ckpts += c.completed;
    printf("round %d: off %.0f lines/s, on %.0f lines/s, ratio %.2f\n",
           round + 1, r_off, r_on, r_on / r_off);
  }
  printf("pipeline split(P=2) -> count(P=2) -> sink, %zu lines "
         "(%zu words), 2 rounds\n", n, n * 3);
  printf("  checkpoints off:       %10.0f lines/s\n", off);
  printf("  checkpoints every 1 s: %10.0f lines/s (%lld checkpoints)\n", on,
         (long long)ckpts);
  printf("  ratio on/off:          %10.2f (mean of the rounds' ratios)\n",
         ratio);
  if (c.nalign) {
    qsort(c.align_us, c.nalign, sizeof(c.align_us[0]), cmp);
    printf("  alignment (count tasks, %zu snapshots): p50 %.1f ms, p99 %.1f "
           "ms, max %.1f ms\n", c.nalign,
           c.align_us[c.nalign / 2] / 1000.0,
           c.align_us[(c.nalign * 99) / 100] / 1000.0,
           c.align_us[c.nalign - 1] / 1000.0);
  }
  ksnap_test_rmtree(dir);
  free(dir);
  free(src);
}
END_TEST

int main(int argc, char **argv) {
  Suite *s = suite_create("bench_pipeline");
  TCase *tc = tcase_create("bench");

  if (argc > 1)
    nlines = strtoul(argv[1], NULL, 10);
  setenv("CK_FORK", "no", 1);
  tcase_set_timeout(tc, 1200);
  tcase_add_test(tc, bench);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
