/*
 * The pieces of bench_product (what it measures: bench_product.c).
 *   product_kafka.c    clients, topics, the source lines, the sink counter
 *   product_raw.c      the raw librdkafka loops (plain and transactional)
 *   product_ksnap.c    a `ksnap run` of the word count as a child process
 *   product_latency.c  probe lines: source append to read_committed output
 *   product_stats.c    percentiles, /proc figures, checkpoint statistics
 *   product_windows.c  --windows: the event-time window job of examples/clicks
 * Everything runs on the main thread except a raw loop and the probe
 * producer, each a thread of its own that only the run starting it joins.
 */
#ifndef KSNAP_BENCH_PRODUCT_H
#define KSNAP_BENCH_PRODUCT_H

#include <limits.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

#include <librdkafka/rdkafka.h>

#define NPARTS 4
#define MAX_SAMPLES 65536
/* Probe words start with this letter; the workloads' words with 'w'. */
#define PROBE_LETTER 'q'
/* Probe lines per second while a run's latency is measured. */
#define PROBE_RATE 100

extern const char *bs;
extern char ksnap_bin[PATH_MAX + 64];
extern char oplib[PATH_MAX + 64];
extern char clickslib[PATH_MAX + 64]; /* "" when not built */
/* The job's stages, reading @p src, writing @p sink (NULL: the word
 * count's split and count). */
extern void (*job_graph)(FILE *f, const char *src, const char *sink);
extern char tmpdir[512];
extern long run_seq;

typedef struct {
  double cpu_s;
  long hwm_kib;
} proc_stats_t;

typedef struct {
  double wps;        /* words per second, first to last sink arrival */
  double total_s;    /* start of the run to the last sink arrival */
  proc_stats_t proc; /* ksnap runs only */
  int ckpts;
  double e2e_p50, e2e_p99, align_p99, sync_p99; /* ms, ms, ms, us */
  int64_t last_wall_ms; /* wall clock of the last sink record */
  /* --backlog: checkpoints triggered before / after last_wall_ms */
  int nb, ni;
  double b_p50, b_p99, i_p50, i_p99, b_gap_ms;
  /* probe latency, ms: to read_committed visibility (lat_n probes seen,
   * lat_lost never seen) and to the record's arrival read_uncommitted */
  int lat_n, lat_lost;
  double lat_p50, lat_p99, wr_p50, wr_p99;
} result_t;

/* What a run does after its sink holds every word: @p probe_s seconds of
 * probes (0: none), whose output is awaited @p grace_s more seconds, then
 * @p idle_s seconds of nothing (--backlog). */
typedef struct {
  int probe_s, grace_s, idle_s;
} phase_t;

/* product_kafka.c */
int64_t now_us(void);
int64_t wall_ms(void);
void die(const char *what, const char *msg);
rd_kafka_t *client(rd_kafka_type_t type, const char *const *kv);
void create_topic(const char *topic);
void produce_source(const char *topic, long lines, int distinct);
/* Line @p i of a source (into @p buf, at most @p cap bytes): its length. */
typedef int line_fn(char *buf, size_t cap, long i, void *arg);
/* Produces @p n lines, line i to partition i % NPARTS. */
void produce_lines(const char *topic, long n, line_fn *line, void *arg);
rd_kafka_t *assigned_consumer(const char *topic, const char *group,
                              const char *isolation, const int64_t *start);
int is_probe(const rd_kafka_message_t *m);
int count_sink(const char *sink, long words, int64_t t0, result_t *r,
               pid_t pid);

/* product_raw.c */
int run_raw(const char *src, long lines, int txn, const phase_t *ph,
            result_t *r);

/* product_ksnap.c */
void locate(const char *argv0);
int run_ksnap_x(const char *tag, const char *src, long words,
                const char *mode, const char *ival, const char *extra,
                const phase_t *ph, result_t *r);

/* product_latency.c */
int probe_latency(const char *src, const char *sink, const phase_t *ph,
                  result_t *r);

/* product_windows.c */
int windows_bench(long clicks);

/* product_stats.c */
double pct(double *v, int n, double p);
int read_proc(pid_t pid, proc_stats_t *ps);
void checkpoint_stats(const char *job_file, result_t *r);

#endif
