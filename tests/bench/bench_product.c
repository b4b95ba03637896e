/*
 * The product path against its physical limit, on the test broker
 * (KSNAP_TEST_BOOTSTRAP; `source tests/.run/env`). For each workload the
 * same pre-produced source topic (4 partitions) is processed five times,
 * each time into a fresh sink topic (4 partitions):
 *   ksnap EO   `ksnap run` of the word count (split P=2 -> count P=2),
 *              EXACTLY_ONCE, checkpoints every second to file://
 *   ksnap ALO  the same, AT_LEAST_ONCE
 *   ksnap off  the same, no checkpoint in the run (interval 200s)
 *   raw        one thread of this process: a librdkafka consumer of the
 *              source, split into words, one produce per word (no state)
 *   raw txn    the same with a transactional producer committing the
 *              consumed offsets in its transaction every second
 * Every run is measured the same way: a read_uncommitted consumer of the
 * sink counts the records until it has one per word of the input;
 * throughput is words / (arrival of the last sink record - arrival of the
 * first). For ksnap runs also: CPU seconds (utime + stime of the ksnap
 * process) per million words, its peak RSS (VmHWM), and checkpoint
 * end-to-end duration, alignment and sync pause p50/p99 from
 * `ksnap checkpoints list --json`. Ratios: EO / raw txn, ALO and off /
 * raw.
 * Workloads: (a) word count, 10 words a line from 1000 distinct words;
 * (b) distinct keys, 10 words a line all distinct (LINES * 10 keys).
 *
 *   build/tests/bench_product [LINES]      default 100000 (1M words)
 *
 * With --backlog (checkpoints behind a backlog): the word count only, its
 * input produced up front, run three times with EXACTLY_ONCE and
 * checkpoints every second: aligned, unaligned, and unaligned with
 * snapshot-on-trigger. Each run goes on BACKLOG_IDLE_S seconds after its
 * last sink record (idle). Printed per run: throughput and its ratio to
 * the aligned run, the completed checkpoints triggered before the last
 * sink record (backlog) and after it (idle) with their end-to-end
 * duration p50/p99, p99 backlog / p99 idle, and the longest time between
 * two checkpoint completions under the backlog (output bursts).
 *
 *   build/tests/bench_product --backlog [LINES]   default 200000
 *
 * ksnap and libwordcount.so are looked up next to this program
 * (../bin/ksnap, ../examples/wordcount/), or $KSNAP_BIN.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>


#define NPARTS 4
#define MAX_SAMPLES 65536

static const char *bs;
static char ksnap_bin[PATH_MAX + 64];
static char oplib[PATH_MAX + 64];
static char tmpdir[512];
static long run_seq;

static int64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void die(const char *what, const char *msg) {
  fprintf(stderr, "bench_product: %s: %s\n", what, msg);
  exit(1);
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *const *kv) {
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

static void create_topic(const char *topic) {
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

static void produce_source(const char *topic, long lines, int distinct) {
  static const char *const kv[] = {"linger.ms", "20", "acks", "all",
                                   "queue.buffering.max.messages", "500000",
                                   NULL};
  rd_kafka_t *p = client(RD_KAFKA_PRODUCER, kv);
  char line[256];
  for (long i = 0; i < lines; i++) {
    int n = make_line(line, sizeof(line), i, distinct);
    rd_kafka_resp_err_t err;
    while ((err = rd_kafka_producev(
                p, RD_KAFKA_V_TOPIC(topic),
                RD_KAFKA_V_PARTITION((int32_t)(i % NPARTS)),
                RD_KAFKA_V_VALUE(line, (size_t)n),
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

static rd_kafka_t *assigned_consumer(const char *topic, const char *group,
                                     const char *isolation) {
  const char *const kv[] = {"group.id", group, "isolation.level", isolation,
                            "enable.auto.commit", "false",
                            "fetch.wait.max.ms", "10", NULL};
  rd_kafka_t *c = client(RD_KAFKA_CONSUMER, kv);
  rd_kafka_poll_set_consumer(c);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(NPARTS);
  for (int32_t p = 0; p < NPARTS; p++)
    rd_kafka_topic_partition_list_add(l, topic, p)->offset =
        RD_KAFKA_OFFSET_BEGINNING;
  if (rd_kafka_assign(c, l))
    die("assign", topic);
  rd_kafka_topic_partition_list_destroy(l);
  return c;
}

/* ---- the raw loop ------------------------------------------------------ */

typedef struct {
  const char *src, *sink;
  long lines;
  int txn;
} raw_args_t;

static void txn_check(rd_kafka_error_t *e, const char *what) {
  if (e)
    die(what, rd_kafka_error_string(e));
}

static void *raw_loop(void *arg) {
  raw_args_t *a = arg;
  char group[128], txid[128];
  snprintf(group, sizeof(group), "%s.raw", a->sink);
  snprintf(txid, sizeof(txid), "%s.txid", a->sink);
  rd_kafka_t *c = assigned_consumer(a->src, group, "read_committed");
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
  long seen = 0;
  while (seen < a->lines) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
    if (m && !m->err) {
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
                    p, RD_KAFKA_V_TOPIC(a->sink), RD_KAFKA_V_KEY(v + s, i - s),
                    RD_KAFKA_V_VALUE("1", 1),
                    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                    RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
          rd_kafka_poll(p, 5);
        if (err)
          die("raw produce", rd_kafka_err2str(err));
      }
      pos[m->partition] = m->offset + 1;
      seen++;
    } else if (m && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      die("raw consume", rd_kafka_message_errstr(m));
    }
    if (m)
      rd_kafka_message_destroy(m);
    rd_kafka_poll(p, 0);
    if (a->txn && (now_us() - last_commit >= 1000000 || seen == a->lines)) {
      rd_kafka_topic_partition_list_t *l =
          rd_kafka_topic_partition_list_new(NPARTS);
      for (int32_t q = 0; q < NPARTS; q++)
        if (pos[q])
          rd_kafka_topic_partition_list_add(l, a->src, q)->offset = pos[q];
      rd_kafka_consumer_group_metadata_t *md =
          rd_kafka_consumer_group_metadata(c);
      txn_check(rd_kafka_send_offsets_to_transaction(p, l, md, 30000),
                "send_offsets_to_transaction");
      rd_kafka_consumer_group_metadata_destroy(md);
      rd_kafka_topic_partition_list_destroy(l);
      txn_check(rd_kafka_commit_transaction(p, 60000), "commit_transaction");
      if (seen < a->lines)
        txn_check(rd_kafka_begin_transaction(p), "begin_transaction");
      last_commit = now_us();
    }
  }
  if (!a->txn && rd_kafka_flush(p, 60000))
    die("raw flush", "not flushed in 60 s");
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  rd_kafka_destroy(p);
  return NULL;
}

/* ---- a ksnap process ---------------------------------------------------- */

typedef struct {
  double cpu_s;
  long hwm_kib;
} proc_stats_t;

static int read_proc(pid_t pid, proc_stats_t *ps) {
  char path[64], buf[4096];
  snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = 0;
  char *s = strrchr(buf, ')');
  unsigned long ut = 0, st = 0;
  /* after ")": state ppid pgrp session tty tpgid flags minflt cminflt
   * majflt cmajflt utime stime */
  if (!s || sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                   &ut, &st) != 2)
    return -1;
  ps->cpu_s = (double)(ut + st) / (double)sysconf(_SC_CLK_TCK);
  snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
  if (!(f = fopen(path, "r")))
    return -1;
  while (fgets(buf, sizeof(buf), f))
    if (!strncmp(buf, "VmHWM:", 6))
      ps->hwm_kib = atol(buf + 6);
  fclose(f);
  return 0;
}

static void write_job(const char *path, const char *job, const char *src,
                      const char *sink, const char *mode, const char *ival,
                      const char *extra) {
  FILE *f = fopen(path, "w");
  if (!f)
    die(path, strerror(errno));
  fprintf(f,
          "job.name=%s\n"
          "execution.checkpointing.interval=%s\n"
          "execution.checkpointing.mode=%s\n"
          "execution.checkpointing.timeout=30s\n"
          "kafka.transaction.timeout.ms=900000\n"
          "state.checkpoints.dir=file://%s/%s\n"
          "kafka.bootstrap.servers=%s\n"
          "stage.split.operator=%s:split\n"
          "stage.split.parallelism=2\n"
          "stage.split.input=source:%s\n"
          "stage.count.operator=%s:count\n"
          "stage.count.parallelism=2\n"
          "stage.count.input=stage:split\n"
          "stage.count.output=sink:%s\n",
          job, ival, mode, tmpdir, job, bs, oplib, src, oplib, sink);
  fputs(extra ? extra : "", f);
  fclose(f);
}

static pid_t spawn(char *const argv[], const char *log) {
  pid_t pid = fork();
  if (pid < 0)
    die("fork", strerror(errno));
  if (pid == 0) {
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    }
    execv(argv[0], argv);
    _exit(127);
  }
  return pid;
}

/* ---- one run ------------------------------------------------------------ */

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
} result_t;

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Counts sink records until @p words; returns 0 or -1 on timeout. */
static int count_sink(const char *sink, long words, int64_t t0, result_t *r,
                      pid_t pid) {
  char group[128];
  snprintf(group, sizeof(group), "%s.count", sink);
  rd_kafka_t *c = assigned_consumer(sink, group, "read_uncommitted");
  long got = 0;
  int64_t first = 0, last = 0, deadline = now_us() + 600 * 1000000LL;
  while (got < words && now_us() < deadline) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 100);
    if (pid > 0 && !m && waitpid(pid, NULL, WNOHANG) == pid) {
      fprintf(stderr, "bench_product: ksnap exited\n");
      break;
    }
    if (!m)
      continue;
    if (!m->err) {
      last = now_us();
      r->last_wall_ms = wall_ms();
      if (!got++)
        first = last;
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
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
    fprintf(stderr, "bench_product: %s: %ld of %ld records in 600 s\n", sink,
            got, words);
    return -1;
  }
  r->wps = (double)(words - 1) * 1e6 / (double)(last - first);
  r->total_s = (double)(last - t0) / 1e6;
  return 0;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
  if (n <= 0)
    return -1;
  qsort(v, (size_t)n, sizeof(*v), cmp_d);
  int i = (int)(p * (n - 1) + 0.5);
  return v[i];
}

/* Collects the numbers after each @p key in @p json into @p v. */
static int collect(const char *json, const char *key, double *v) {
  int n = 0;
  size_t kl = strlen(key);
  for (const char *s = strstr(json, key); s && n < MAX_SAMPLES;
       s = strstr(s + kl, key)) {
    const char *q = s + kl;
    if (*q >= '0' && *q <= '9')
      v[n++] = strtod(q, NULL);
  }
  return n;
}

static double json_num(const char *from, const char *key) {
  const char *s = strstr(from, key);
  return s ? strtod(s + strlen(key), NULL) : -1;
}

/* --backlog: the completed checkpoints of the history @p hist, split at
 * r->last_wall_ms by trigger time; the longest gap between two
 * completions (or the run's start and the first) under the backlog. */
static void backlog_split(const char *hist, result_t *r) {
  static double b[MAX_SAMPLES], id[MAX_SAMPLES], ends[MAX_SAMPLES];
  int nb = 0, ni = 0;
  const char *key = "{\"id\": ";
  for (const char *s = strstr(hist, key); s && nb < MAX_SAMPLES &&
                                          ni < MAX_SAMPLES;
       s = strstr(s + 1, key)) {
    if (strncmp(strstr(s, "\"status\": ") + 10, "\"COMPLETED\"", 11))
      continue;
    double t = json_num(s, "\"trigger_timestamp_ms\": ");
    double e = json_num(s, "\"end_timestamp_ms\": ");
    double d = json_num(s, "\"end_to_end_duration_ms\": ");
    if (t <= (double)r->last_wall_ms) {
      ends[nb] = e;
      b[nb++] = d;
    } else {
      id[ni++] = d;
    }
  }
  r->nb = nb;
  r->ni = ni;
  qsort(ends, (size_t)nb, sizeof(*ends), cmp_d);
  r->b_gap_ms = 0;
  for (int i = 1; i < nb; i++)
    if (ends[i] - ends[i - 1] > r->b_gap_ms)
      r->b_gap_ms = ends[i] - ends[i - 1];
  r->b_p50 = pct(b, nb, 0.50);
  r->b_p99 = pct(b, nb, 0.99);
  r->i_p50 = pct(id, ni, 0.50);
  r->i_p99 = pct(id, ni, 0.99);
}

static void checkpoint_stats(const char *job_file, result_t *r) {
  char cmd[PATH_MAX * 2 + 256];
  snprintf(cmd, sizeof(cmd), "'%s' checkpoints list '%s' --json --history 10000",
           ksnap_bin, job_file);
  FILE *f = popen(cmd, "r");
  if (!f)
    return;
  size_t cap = 1 << 20, len = 0, n;
  char *json = malloc(cap);
  while (json && (n = fread(json + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (cap - len < 4096)
      json = realloc(json, cap *= 2);
  }
  pclose(f);
  if (!json)
    return;
  json[len] = 0;
  static double v[MAX_SAMPLES];
  /* only the history: "latest" repeats some of its entries */
  const char *hist = strstr(json, "\"history\": ");
  if (!hist) {
    free(json);
    return;
  }
  /* a checkpoint's own duration follows its end timestamp; a task's
   * follows its ack timestamp */
  int k = 0;
  const char *key = "\"end_timestamp_ms\": ";
  for (const char *s = strstr(hist, key); s && k < MAX_SAMPLES;
       s = strstr(s + 1, key)) {
    const char *d = strstr(s, "\"end_to_end_duration_ms\": ");
    if (d && s[strlen(key)] != 'n')
      v[k++] = strtod(d + strlen("\"end_to_end_duration_ms\": "), NULL);
  }
  r->ckpts = k;
  r->e2e_p50 = pct(v, k, 0.50);
  r->e2e_p99 = pct(v, k, 0.99);
  k = collect(hist, "\"alignment_duration_us\": ", v);
  r->align_p99 = pct(v, k, 0.99) / 1000.0;
  k = collect(hist, "\"sync_duration_us\": ", v);
  r->sync_p99 = pct(v, k, 0.99);
  backlog_split(hist, r);
  free(json);
}

static int run_ksnap_x(const char *tag, const char *src, long words,
                       const char *mode, const char *ival, const char *extra,
                       int idle_s, result_t *r) {
  char job[96], sink[128], job_file[1024], log[1024];
  snprintf(job, sizeof(job), "bp%ld%ld%s", (long)getpid(), ++run_seq, tag);
  snprintf(sink, sizeof(sink), "%s.out", job);
  snprintf(job_file, sizeof(job_file), "%s/%s.properties", tmpdir, job);
  snprintf(log, sizeof(log), "%s/%s.log", tmpdir, job);
  create_topic(sink);
  write_job(job_file, job, src, sink, mode, ival, extra);
  char *argv[] = {ksnap_bin, "run", job_file, NULL};
  int64_t t0 = now_us();
  pid_t pid = spawn(argv, log);
  int rc = count_sink(sink, words, t0, r, pid);
  if (!rc && idle_s > 0)
    sleep((unsigned)idle_s);
  kill(pid, SIGTERM);
  int status;
  waitpid(pid, &status, 0);
  if (rc)
    fprintf(stderr, "bench_product: see %s\n", log);
  else if (strcmp(ival, "200s"))
    checkpoint_stats(job_file, r);
  return rc;
}

static int run_ksnap(const char *tag, const char *src, long words,
                     const char *mode, const char *ival, result_t *r) {
  return run_ksnap_x(tag, src, words, mode, ival, NULL, 0, r);
}

static int run_raw(const char *src, long lines, int txn, result_t *r) {
  char sink[128];
  snprintf(sink, sizeof(sink), "bp%ld%ld.raw%s.out", (long)getpid(),
           ++run_seq, txn ? "txn" : "");
  create_topic(sink);
  raw_args_t a = {src, sink, lines, txn};
  pthread_t th;
  int64_t t0 = now_us();
  pthread_create(&th, NULL, raw_loop, &a);
  int rc = count_sink(sink, lines * 10, t0, r, 0);
  pthread_join(th, NULL);
  return rc;
}

/* ---- main --------------------------------------------------------------- */

static void locate(const char *argv0) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    die("readlink", argv0);
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  *slash = 0;
  const char *env = getenv("KSNAP_BIN");
  if (env)
    snprintf(ksnap_bin, sizeof(ksnap_bin), "%s", env);
  else
    snprintf(ksnap_bin, sizeof(ksnap_bin), "%s/../bin/ksnap", exe);
  snprintf(oplib, sizeof(oplib), "%s/../examples/wordcount/libwordcount.so",
           exe);
  if (access(ksnap_bin, X_OK) || access(oplib, R_OK))
    die("ksnap or libwordcount.so not found next to", exe);
}

static void print_row(const char *name, const result_t *r, double limit,
                      long words, int ksnap) {
  printf("  %-10s %9.0f words/s  %5.2fx  %6.1f s", name, r->wps,
         r->wps / limit, r->total_s);
  if (ksnap)
    printf("  cpu %5.2f s/M  rss %5.0f MiB", r->proc.cpu_s * 1e6 / words,
           r->proc.hwm_kib / 1024.0);
  if (r->ckpts > 0)
    printf("  ckpt n=%d p50 %.0f p99 %.0f ms, align p99 %.1f ms, sync p99 "
           "%.0f us",
           r->ckpts, r->e2e_p50, r->e2e_p99, r->align_p99, r->sync_p99);
  printf("\n");
}

static int workload(const char *name, long lines, int distinct) {
  char src[128];
  snprintf(src, sizeof(src), "bp%ld.%s.lines", (long)getpid(), name);
  long words = lines * 10;
  create_topic(src);
  produce_source(src, lines, distinct);
  result_t raw = {0}, rawtx = {0}, eo = {0}, alo = {0}, off = {0};
  /* ratios against the limit measured right before */
  if (run_raw(src, lines, 0, &raw) || run_raw(src, lines, 1, &rawtx) ||
      run_ksnap("eo", src, words, "EXACTLY_ONCE", "1s", &eo) ||
      run_ksnap("alo", src, words, "AT_LEAST_ONCE", "1s", &alo) ||
      run_ksnap("off", src, words, "AT_LEAST_ONCE", "200s", &off))
    return -1;
  printf("(%s) %ld lines, %ld words, %s distinct keys; ratio vs raw "
         "(EO vs raw txn); s = start to last record\n",
         name, lines, words, distinct ? "all" : "1000");
  print_row("raw", &raw, raw.wps, words, 0);
  print_row("raw txn", &rawtx, raw.wps, words, 0);
  print_row("ksnap EO", &eo, rawtx.wps, words, 1);
  print_row("ksnap ALO", &alo, raw.wps, words, 1);
  print_row("ksnap off", &off, raw.wps, words, 1);
  printf("  EO / ALO %.2f, EO / off %.2f\n", eo.wps / alo.wps,
         eo.wps / off.wps);
  fflush(stdout);
  return 0;
}

#define BACKLOG_IDLE_S 8

static void print_backlog(const char *name, const result_t *r,
                          const result_t *aligned) {
  printf("  %-22s %8.0f words/s %5.2fx  backlog: n=%d p50 %5.0f p99 %5.0f ms"
         ", longest gap %5.0f ms  idle: n=%d p50 %4.0f p99 %4.0f ms  "
         "p99 backlog/idle %5.1fx\n",
         name, r->wps, r->wps / aligned->wps, r->nb, r->b_p50, r->b_p99,
         r->b_gap_ms, r->ni, r->i_p50, r->i_p99,
         r->i_p99 > 0 ? r->b_p99 / r->i_p99 : -1.0);
}

static int backlog(long lines) {
  char src[128];
  long words = lines * 10;
  result_t al = {0}, un = {0}, tr = {0};
  static const char unaligned[] =
      "execution.checkpointing.unaligned.enabled=true\n"
      "execution.checkpointing.aligned-checkpoint-timeout=0\n";
  static const char trigger[] =
      "execution.checkpointing.unaligned.enabled=true\n"
      "execution.checkpointing.aligned-checkpoint-timeout=0\n"
      "execution.checkpointing.unaligned.snapshot-on-trigger=true\n";

  snprintf(src, sizeof(src), "bp%ld.backlog.lines", (long)getpid());
  create_topic(src);
  produce_source(src, lines, 0);
  if (run_ksnap_x("al", src, words, "EXACTLY_ONCE", "1s", NULL,
                  BACKLOG_IDLE_S, &al) ||
      run_ksnap_x("un", src, words, "EXACTLY_ONCE", "1s", unaligned,
                  BACKLOG_IDLE_S, &un) ||
      run_ksnap_x("tr", src, words, "EXACTLY_ONCE", "1s", trigger,
                  BACKLOG_IDLE_S, &tr))
    return -1;
  printf("(backlog) %ld lines, %ld words produced up front, EXACTLY_ONCE, "
         "checkpoints every 1 s, %d s idle after the last record; ratio vs "
         "aligned\n", lines, words, BACKLOG_IDLE_S);
  print_backlog("aligned", &al, &al);
  print_backlog("unaligned", &un, &al);
  print_backlog("unaligned on-trigger", &tr, &al);
  fflush(stdout);
  return 0;
}

int main(int argc, char **argv) {
  int backlog_mode = argc > 1 && !strcmp(argv[1], "--backlog");
  if (backlog_mode) {
    argv++;
    argc--;
  }
  long lines = argc > 1 ? atol(argv[1]) : backlog_mode ? 200000 : 100000;
  bs = getenv("KSNAP_TEST_BOOTSTRAP");
  if (!bs || !*bs)
    die("KSNAP_TEST_BOOTSTRAP", "not set: source tests/.run/env");
  if (lines < 1)
    die("LINES", "must be positive");
  locate(argv[0]);
  snprintf(tmpdir, sizeof(tmpdir), "%s/bench_product.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir))
    die("mkdtemp", strerror(errno));
  printf("bench_product: broker %s, ksnap %s, logs and checkpoints in %s\n",
         bs, ksnap_bin, tmpdir);
  if (backlog_mode)
    return backlog(lines) ? 1 : 0;
  if (workload("wordcount", lines, 0) || workload("distinct", lines, 1))
    return 1;
  return 0;
}
