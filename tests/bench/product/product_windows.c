/*
 * bench_product --windows: the event-time window job of examples/clicks
 * (parse P=2 -> window P=2, tumbling one-minute windows fired by the
 * watermark) on a pre-produced source of CLICKS clicks, run twice in one
 * process: EXACTLY_ONCE with checkpoints every second, and the same job
 * without checkpoints (AT_LEAST_ONCE, interval 200 s: none in the run).
 * The clicks are in event-time order per partition up to a disorder
 * under the job's bound (none is late), 100 pages, 2 ms of event time
 * per click, and end with one click per partition far ahead, which moves
 * every partition's watermark past the data: the sink then holds one
 * result per (page, window) of the data. Throughput: results per second
 * from the first result to the last (the windows fire as event time
 * goes, so it follows the clicks' rate without the start's cost), and
 * clicks per second from the start of the run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "product.h"

#define PAGES 100
#define STEP_MS 2
#define WINDOW_MS 60000 /* examples/clicks' CLICKS_WINDOW_MS */
#define DISORDER_MS 1000
#define BASE_MS 1700000000000LL

static const char *graph_lib;

/* The clicks job's stages, reading @p src, results to @p sink. */
static void clicks_graph(FILE *f, const char *src, const char *sink) {
  char late[160], bad[160];

  snprintf(late, sizeof(late), "%s.late", sink);
  snprintf(bad, sizeof(bad), "%s.bad", sink);
  create_topic(late);
  create_topic(bad);
  fprintf(f,
          "source.watermark.max-out-of-orderness=5s\n"
          "stage.parse.operator=%s:parse\n"
          "stage.parse.parallelism=2\n"
          "stage.parse.input=source:%s\n"
          "stage.parse.output.late=sink:%s\n"
          "stage.parse.output.bad=sink:%s\n"
          "stage.window.operator=%s:window\n"
          "stage.window.parallelism=2\n"
          "stage.window.input=stage:parse\n"
          "stage.window.output=sink:%s\n",
          graph_lib, src, late, bad, graph_lib, sink);
}

static int64_t click_time(long i) {
  return BASE_MS + i * STEP_MS - (i * 7919) % DISORDER_MS;
}

typedef struct clicks_s {
  long clicks, results;
  int64_t w0;          /* the first window's number */
  unsigned char *seen; /* per (window, page): a result is due */
} clicks_t;

/* Click @p i: "PAGE TIME SEQ"; the last NPARTS clicks are far ahead. */
static int click_line(char *buf, size_t cap, long i, void *arg) {
  clicks_t *c = arg;
  int64_t ts = i < c->clicks ? click_time(i)
                             : click_time(c->clicks) + 100LL * WINDOW_MS;
  long page = (i * 7919) % PAGES;

  if (i < c->clicks) { /* the far clicks' windows never fire */
    unsigned char *s = &c->seen[(ts / WINDOW_MS - c->w0) * PAGES + page];
    c->results += !*s;
    *s = 1;
  }
  return snprintf(buf, cap, "p%ld %lld %ld", page, (long long)ts, i);
}

/* Produces the clicks; @returns the number of (page, window) results. */
static long produce_clicks(const char *topic, long clicks) {
  clicks_t c = {clicks, 0, (click_time(0) - DISORDER_MS) / WINDOW_MS, NULL};
  long nwin = (long)(click_time(clicks) / WINDOW_MS - c.w0) + 2;

  if (!(c.seen = calloc((size_t)nwin * PAGES, 1)))
    die("produce", "out of memory");
  produce_lines(topic, clicks + NPARTS, click_line, &c);
  free(c.seen);
  return c.results;
}

static void print_run(const char *name, const result_t *r, long clicks,
                      const result_t *base) {
  printf("  %-22s %8.0f results/s %5.2fx  %8.0f clicks/s from the start "
         "(%5.1f s)  cpu %5.2f s/M clicks  rss %4.0f MiB",
         name, r->wps, r->wps / base->wps, clicks / r->total_s, r->total_s,
         r->proc.cpu_s * 1e6 / clicks, r->proc.hwm_kib / 1024.0);
  if (r->ckpts > 0)
    printf("  ckpt n=%d p50 %.0f p99 %.0f ms, align p99 %.1f ms", r->ckpts,
           r->e2e_p50, r->e2e_p99, r->align_p99);
  printf("\n");
}

int windows_bench(long clicks) {
  char src[128];
  result_t eo = {0}, off = {0};
  phase_t ph = {0, 0, 0};
  long results;

  if (!clickslib[0])
    die("libclicks.so", "not found next to this program (examples/clicks)");
  graph_lib = clickslib;
  job_graph = clicks_graph;
  snprintf(src, sizeof(src), "bp%ld.windows.clicks", (long)getpid());
  create_topic(src);
  results = produce_clicks(src, clicks);
  if (run_ksnap_x("woff", src, results, "AT_LEAST_ONCE", "200s", NULL, &ph,
                  &off) ||
      run_ksnap_x("weo", src, results, "EXACTLY_ONCE", "1s", NULL, &ph, &eo))
    return -1;
  printf("(windows) %ld clicks, %d pages, %ld window results, tumbling %d s "
         "event-time windows; ratio vs the same job without checkpoints\n",
         clicks, PAGES, results, WINDOW_MS / 1000);
  print_run("no checkpoints", &off, clicks, &off);
  print_run("EO, checkpoints 1 s", &eo, clicks, &off);
  printf("  EO / no checkpoints %.2f (results/s), %.2f (clicks/s from the "
         "start)\n", eo.wps / off.wps, off.total_s / eo.total_s);
  fflush(stdout);
  return 0;
}
