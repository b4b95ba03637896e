/*
 * The product path against its physical limit, on the test broker
 * (KSNAP_TEST_BOOTSTRAP; `source tests/.run/env`). For each workload the
 * same pre-produced source topic (4 partitions) is processed five times,
 * each time into a fresh sink topic (4 partitions):
 *   ksnap EO   `ksnap run` of the word count (split P=2 -> count P=2),
 *              EXACTLY_ONCE, checkpoints every I seconds to file://
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
 * Then, the job still running with its state built, its end-to-end
 * latency: for max(10 s, 3 I) seconds probe lines (PROBE_RATE a second,
 * one word each) are appended to the source, and the time from each
 * line's send to its output's visibility to a read_committed consumer of
 * the sink ("visible") gives p50/p99, and to its arrival at a
 * read_uncommitted one ("written": processing alone) too
 * (product_latency.c). Output in a transaction becomes visible at its
 * commit: a checkpoint's for every ksnap run (the sink is transactional
 * in AT_LEAST_ONCE too, so "off" shows none), each second for raw txn;
 * that period, not processing, bounds such latency.
 * Later runs of a workload also read the earlier runs' probes (one word
 * a line, under 1% of the words), which they do not count.
 * Workloads: (a) word count, 10 words a line from 1000 distinct words,
 * I = 1 s; (b) distinct keys, 10 words a line all distinct (LINES * 10
 * keys), I = 1 s; (c) KEYS distinct keys of state (KEYS / 10 lines of
 * distinct words), I = 5 s (checkpoint timeout 120 s, 30 s otherwise).
 *
 *   build/tests/bench_product [--keys KEYS] [LINES]
 *       LINES default 100000 (1M words); KEYS default 1000000 (0: no (c));
 *       the full workload (c): --keys 10000000
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
 * With --windows: the event-time window job of examples/clicks against
 * the same job without checkpoints (product_windows.c).
 *
 *   build/tests/bench_product --windows [CLICKS]   default 1000000
 *
 * ksnap and libwordcount.so are looked up next to this program
 * (../bin/ksnap, ../examples/wordcount/), or $KSNAP_BIN. The pieces are
 * in tests/bench/product/ (product.h lists them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "product.h"

#define KEYS_DEFAULT 1000000L

static void print_row(const char *name, const result_t *r, double limit,
                      long words, int ksnap) {
  printf("  %-10s %9.0f words/s  %5.2fx  %6.1f s", name, r->wps,
         r->wps / limit, r->total_s);
  if (r->lat_n)
    printf("  visible p50 %5.0f p99 %5.0f ms", r->lat_p50, r->lat_p99);
  else
    printf("  visible   never (no commit)   ");
  if (r->lat_lost && r->lat_n)
    printf(" (%d of %d probes never)", r->lat_lost, r->lat_n + r->lat_lost);
  printf("  written p50 %4.0f p99 %5.0f ms", r->wr_p50, r->wr_p99);
  if (ksnap)
    printf("  cpu %5.2f s/M  rss %5.0f MiB", r->proc.cpu_s * 1e6 / words,
           r->proc.hwm_kib / 1024.0);
  if (r->ckpts > 0)
    printf("  ckpt n=%d p50 %.0f p99 %.0f ms, align p99 %.1f ms, sync p99 "
           "%.0f us",
           r->ckpts, r->e2e_p50, r->e2e_p99, r->align_p99, r->sync_p99);
  printf("\n");
}

static int workload(const char *name, long lines, int distinct,
                    int ival_s) {
  char src[128], ival[16];
  snprintf(src, sizeof(src), "bp%ld.%s.lines", (long)getpid(), name);
  snprintf(ival, sizeof(ival), "%ds", ival_s);
  long words = lines * 10;
  create_topic(src);
  produce_source(src, lines, distinct);
  int probe_s = 3 * ival_s > 10 ? 3 * ival_s : 10;
  phase_t ph = {probe_s, 2 * ival_s + 20, 0};
  phase_t ph_off = {probe_s, 5, 0}; /* nothing commits: waits 5 s only */
  result_t raw = {0}, rawtx = {0}, eo = {0}, alo = {0}, off = {0};
  /* ratios against the limit measured right before */
  if (run_raw(src, lines, 0, &ph, &raw) ||
      run_raw(src, lines, 1, &ph, &rawtx) ||
      run_ksnap_x("eo", src, words, "EXACTLY_ONCE", ival, NULL, &ph, &eo) ||
      run_ksnap_x("alo", src, words, "AT_LEAST_ONCE", ival, NULL, &ph,
                  &alo) ||
      run_ksnap_x("off", src, words, "AT_LEAST_ONCE", "200s", NULL,
                  &ph_off, &off))
    return -1;
  printf("(%s) %ld lines, %ld words, %s distinct keys, checkpoints every "
         "%d s; ratio vs raw (EO vs raw txn); s = start to last record; "
         "visible / written = probe line sent to its output read_committed "
         "/ read_uncommitted, p50 p99 of %d probes over %d "
         "s\n",
         name, lines, words, distinct ? "all" : "1000", ival_s,
         probe_s * PROBE_RATE, probe_s);
  print_row("raw", &raw, raw.wps, words, 0);
  print_row("raw txn", &rawtx, raw.wps, words, 0);
  print_row("ksnap EO", &eo, rawtx.wps, words, 1);
  print_row("ksnap ALO", &alo, raw.wps, words, 1);
  print_row("ksnap off", &off, raw.wps, words, 1);
  printf("  EO / ALO %.2f, EO / off %.2f; latency p99 EO / raw txn %.2f, "
         "EO / ALO %.2f\n",
         eo.wps / alo.wps, eo.wps / off.wps, eo.lat_p99 / rawtx.lat_p99,
         eo.lat_p99 / alo.lat_p99);
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
  phase_t ph = {0, 0, BACKLOG_IDLE_S};
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
  if (run_ksnap_x("al", src, words, "EXACTLY_ONCE", "1s", NULL, &ph, &al) ||
      run_ksnap_x("un", src, words, "EXACTLY_ONCE", "1s", unaligned, &ph,
                  &un) ||
      run_ksnap_x("tr", src, words, "EXACTLY_ONCE", "1s", trigger, &ph, &tr))
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

/* A positive count from @p s, or die naming @p what. */
static long count_arg(const char *what, const char *s, int zero_ok) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || end == s || v < 0 || (!v && !zero_ok)) {
    fprintf(stderr, "bench_product: %s: \"%s\" is not a %s count\n", what, s,
            zero_ok ? "non-negative" : "positive");
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  int backlog_mode = 0, windows_mode = 0;
  long lines = 0, keys = KEYS_DEFAULT;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--backlog"))
      backlog_mode = 1;
    else if (!strcmp(argv[i], "--windows"))
      windows_mode = 1;
    else if (!strcmp(argv[i], "--keys"))
      keys = count_arg("--keys", i + 1 < argc ? argv[++i] : "", 1);
    else
      lines = count_arg("LINES", argv[i], 0);
  }
  if (!lines)
    lines = windows_mode ? 1000000 : backlog_mode ? 200000 : 100000;
  bs = getenv("KSNAP_TEST_BOOTSTRAP");
  if (!bs || !*bs)
    die("KSNAP_TEST_BOOTSTRAP", "not set: source tests/.run/env");
  locate(argv[0]);
  snprintf(tmpdir, sizeof(tmpdir), "%s/bench_product.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(tmpdir))
    die("mkdtemp", strerror(errno));
  printf("bench_product: broker %s, ksnap %s, logs and checkpoints in %s\n",
         bs, ksnap_bin, tmpdir);
  if (backlog_mode)
    return backlog(lines) ? 1 : 0;
  if (windows_mode)
    return windows_bench(lines) ? 1 : 0;
  if (workload("wordcount", lines, 0, 1) || workload("distinct", lines, 1, 1))
    return 1;
  if (keys > 0 && workload("keys", (keys + 9) / 10, 1, 5))
    return 1;
  return 0;
}
