/* bench_snapshot: what a full snapshot costs in memory and time, against
 * the storage's own sequential write speed, and what a key costs.
 *
 *   source tests/.run/env   # for S3 (the shared s3rver); file:// always
 *   build/tests/bench_snapshot [--keys N[,N...]] [--buffer BYTES]
 *                              [--no-s3] [--no-file] [--buffered]
 *                              [--rounds R]
 *   default: --keys 1000000,10000000
 *
 * Each N runs in a child process of its own (a clean heap, so RSS figures
 * of one N do not leak into the next):
 *   bytes/key   VmRSS growth while loading N keys of one value state with
 *               8-byte keys and 8-byte values, divided by N
 *   snapshot    N keys of 16-byte keys and 100-byte values (one value
 *               state, P = 1, M = 128); the processing thread is idle
 *               during the async phase, so the figures are the snapshot's
 *               own (copy-on-write copies made by concurrent updates are
 *               bench_state's subject). Per storage (file:// in a
 *               temporary directory, S3 at KSNAP_TEST_S3_ENDPOINT):
 *                 rss+     peak RSS during the async phase (VmHWM, reset
 *                          through /proc/self/clear_refs before it) minus
 *                          VmRSS before it
 *                 async    the async phase: serialize and store, and
 *                          the process's CPU seconds (user + sys) in it
 *                 MB/s     snapshot bytes / async time
 *                 raw      the same bytes (read back first) written by the
 *                          storage alone: "stream" through a storage
 *                          writer in buffer-sized chunks with the same
 *                          buffers and writer thread (the storage's
 *                          sequential write), "put" as one
 *                          ksnap_storage_put() (file: one write; S3: a
 *                          parallel multipart upload)
 *                 ratio    MB/s / raw stream MB/s (time of the raw
 *                          stream / async time)
 *               R rounds (--rounds, default 3) of (snapshot, raw stream),
 *               who goes first alternating; medians, and the median of
 *               the per-round ratios (the machine's load drifts).
 *   modes: "buffered" serializes the whole file into memory, then puts it
 *          (ksnap_state_snapshot_write + ksnap_storage_put), as snapshots
 *          were stored before they streamed;
 *          "streamed" (always; "buffered" too with --buffered) writes it
 *          to storage as it is serialized, with the task runtime's own
 *          call (ksnap__task_storage_put_snapshot: a writer with the
 *          header written last and a writer thread, --buffer bytes per
 *          buffer, default 2 MiB as state.backend.write-buffer-size).
 */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ksnap/state.h"
#include "ksnap/storage.h"
#include "task/task_storage.h"
#include "testutil.h"

#define MIB (1024.0 * 1024.0)

static size_t buffer_size = 2u << 20;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A field of /proc/self/status in kB ("VmRSS", "VmHWM"). */
static long status_kb(const char *field) {
  char line[256];
  size_t n = strlen(field);
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");

  while (f && fgets(line, sizeof(line), f))
    if (!strncmp(line, field, n) && line[n] == ':')
      kb = strtol(line + n + 1, NULL, 10);
  if (f)
    fclose(f);
  return kb;
}

/* Returns freed heap pages to the kernel and resets VmHWM to VmRSS, so
 * that the next phase's peak is its own. */
static long rss_baseline_kb(void) {
  FILE *f;

  malloc_trim(0);
  if ((f = fopen("/proc/self/clear_refs", "w"))) {
    fputs("5", f);
    fclose(f);
  }
  return status_kb("VmRSS");
}

static void die(const char *what, const ksnap_error_t *err) {
  fprintf(stderr, "%s: %s\n", what, err->msg);
  exit(1);
}

static void mkkey(uint64_t i, uint8_t *key, size_t klen) {
  uint64_t h = i * 0xff51afd7ed558ccdull;
  memcpy(key, &i, 8);
  if (klen > 8)
    memcpy(key + 8, &h, klen - 8 < 8 ? klen - 8 : 8);
}

static ksnap_state_t *load(uint64_t n, size_t klen, size_t vlen, int *idp) {
  ksnap_state_conf_t conf;
  ksnap_state_t *st;
  ksnap_error_t err;
  uint8_t key[16], val[128];

  memset(val, 'v', sizeof(val));
  ksnap_state_conf_init(&conf);
  if (ksnap_state_new(&conf, &st, &err) ||
      ksnap_state_register(st, "v", KSNAP_STATE_VALUE, 0, idp, &err))
    die("state", &err);
  for (uint64_t i = 0; i < n; i++) {
    mkkey(i, key, klen);
    memcpy(val, &i, 8);
    if (ksnap_state_set_key(st, key, klen, &err) ||
        ksnap_state_value_put(st, *idp, val, vlen, &err))
      die("load", &err);
  }
  return st;
}

static void bytes_per_key(uint64_t n) {
  long rss0 = rss_baseline_kb(), rss1;
  double t0 = now_s();
  int id;
  ksnap_state_t *st = load(n, 8, 8, &id);

  rss1 = status_kb("VmRSS");
  printf("N=%-9" PRIu64 " bytes/key (8-byte keys and values): %.1f "
         "(RSS +%.1f MiB, loaded in %.1f s)\n",
         n, (double)(rss1 - rss0) * 1024 / (double)n,
         (double)(rss1 - rss0) / 1024, now_s() - t0);
  fflush(stdout);
  ksnap_state_destroy(st);
}

typedef struct result_s {
  double secs;     /* async phase */
  double cpu_secs; /* process CPU (user + sys) during it */
  long rss_plus_kb;
  uint64_t bytes;
} result_t;

static double cpu_now(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
         (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* The old path: the whole file in memory, then one put. */
static result_t snap_buffered(ksnap_state_t *st, ksnap_storage_t *sto,
                              const char *key, int64_t id) {
  ksnap_state_snapshot_t *snap;
  ksnap_error_t err;
  ksnap_buf_t buf;
  result_t r;
  long rss0;
  double t0;

  ksnap_buf_init(&buf);
  if (ksnap_state_snapshot_begin(st, id, key, &snap, &err))
    die("begin", &err);
  rss0 = rss_baseline_kb();
  t0 = now_s();
  r.cpu_secs = cpu_now();
  if (ksnap_state_snapshot_write(snap, &buf, &err))
    die("write", &err);
  if (ksnap_storage_put(sto, key, buf.data, buf.len, &err))
    die("put", &err);
  r.secs = now_s() - t0;
  r.cpu_secs = cpu_now() - r.cpu_secs;
  r.rss_plus_kb = status_kb("VmHWM") - rss0;
  r.bytes = buf.len;
  ksnap_state_snapshot_end(snap, 1);
  ksnap_buf_cleanup(&buf);
  return r;
}

static result_t snap_streamed(ksnap_state_t *st, ksnap_storage_t *sto,
                              const char *key, int64_t id) {
  ksnap_state_snapshot_t *snap;
  ksnap_error_t err;
  ksnap_storage_stat_t stat;
  result_t r;
  long rss0;
  double t0;

  if (ksnap_state_snapshot_begin(st, id, key, &snap, &err))
    die("begin", &err);
  rss0 = rss_baseline_kb();
  t0 = now_s();
  r.cpu_secs = cpu_now();
  if (ksnap__task_storage_put_snapshot(sto, key, snap, buffer_size, &stat,
                                       &err))
    die("streamed snapshot", &err);
  r.secs = now_s() - t0;
  r.cpu_secs = cpu_now() - r.cpu_secs;
  r.rss_plus_kb = status_kb("VmHWM") - rss0;
  r.bytes = stat.size;
  ksnap_state_snapshot_end(snap, 1);
  return r;
}

/* The storage alone: the same bytes, from memory, through a writer with
 * the same buffers (and thread) as a streamed snapshot. */
static double raw_stream(ksnap_storage_t *sto, const char *key,
                         const ksnap_buf_t *b) {
  ksnap_storage_writer_t *w;
  ksnap_error_t err;
  double t0 = now_s();

  ksnap_storage_writer_opts_t o = {0, buffer_size};

  if (ksnap_storage_writer_open_opts(sto, key, &o, &w, &err))
    die("writer open", &err);
  for (size_t off = 0; off < b->len; off += buffer_size) {
    size_t n = b->len - off < buffer_size ? b->len - off : buffer_size;
    if (ksnap_storage_writer_write(w, b->data + off, n, &err))
      die("writer write", &err);
  }
  if (ksnap_storage_writer_commit(w, &err))
    die("writer commit", &err);
  return now_s() - t0;
}

static double raw_put(ksnap_storage_t *sto, const char *key,
                      const ksnap_buf_t *b) {
  ksnap_error_t err;
  double t0 = now_s();

  if (ksnap_storage_put(sto, key, b->data, b->len, &err))
    die("put", &err);
  return now_s() - t0;
}

static double median(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int rounds = 3;

/* @p rounds rounds of (snapshot, raw stream of the same bytes), the
 * order alternating, then one raw put: medians, and the median of the
 * per-round ratios (robust to load drifting on a shared machine). */
static void run_storage(ksnap_state_t *st, uint64_t n, const char *name,
                        ksnap_storage_t *sto, int streamed) {
  static int64_t id;
  const char *mode = streamed ? "streamed" : "buffered";
  ksnap_buf_t back;
  ksnap_error_t err;
  double secs[16], cpu[16], rss[16], raw[16], ratio[16], put_s, mb = 0;

  ksnap_buf_init(&back);
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < 2; k++) {
      if ((r + k) % 2 == 0) {
        result_t res = streamed ? snap_streamed(st, sto, "snap", ++id)
                                : snap_buffered(st, sto, "snap", ++id);
        secs[r] = res.secs;
        cpu[r] = res.cpu_secs;
        rss[r] = (double)res.rss_plus_kb / 1024;
        mb = (double)res.bytes / 1e6;
      } else { /* round 0 starts with the snapshot: read it back */
        if (!back.len && ksnap_storage_get(sto, "snap", &back, &err))
          die("read back", &err);
        raw[r] = raw_stream(sto, "raw-stream", &back);
      }
    }
    ratio[r] = raw[r] / secs[r];
  }
  printf("N=%-9" PRIu64 " %-4s %-8s rounds (async s / raw stream s):", n,
         name, mode);
  for (int r = 0; r < rounds; r++)
    printf(" %.2f/%.2f", secs[r], raw[r]);
  printf("\n");
  put_s = raw_put(sto, "raw-put", &back);
  ksnap_buf_cleanup(&back);
  ksnap_storage_delete(sto, "snap", &err);
  ksnap_storage_delete(sto, "raw-stream", &err);
  ksnap_storage_delete(sto, "raw-put", &err);
  printf("N=%-9" PRIu64 " %-4s %-8s %.1f MB: rss+ %.1f MiB, async %.2f s "
         "(%.2f CPU s), %.0f MB/s | raw stream %.0f MB/s, put %.0f MB/s | "
         "ratio %.2f (median of %d)\n",
         n, name, mode, mb, median(rss, rounds), median(secs, rounds),
         median(cpu, rounds), mb / median(secs, rounds),
         mb / median(raw, rounds), mb / put_s, median(ratio, rounds),
         rounds);
  fflush(stdout);
}

static int use_s3 = 1, use_file = 1, with_buffered = 0;

static void snapshots(uint64_t n) {
  int id;
  double t0 = now_s();
  ksnap_state_t *st = load(n, 16, 100, &id);
  ksnap_storage_t *sto;
  ksnap_error_t err;

  fprintf(stderr, "N=%" PRIu64 ": 16/100-byte entries loaded in %.1f s, "
          "RSS %.0f MiB\n", n, now_s() - t0,
          (double)status_kb("VmRSS") / 1024);
  if (use_file) {
    char *dir = ksnap_test_tmpdir("bench-snapshot"), url[512];
    snprintf(url, sizeof(url), "file://%s", dir);
    if (ksnap_storage_open(url, NULL, &sto, &err))
      die("open", &err);
    run_storage(st, n, "file", sto, 1);
    if (with_buffered)
      run_storage(st, n, "file", sto, 0);
    ksnap_storage_destroy(sto);
    ksnap_test_rmtree(dir);
    free(dir);
  }
  if (use_s3 && getenv("KSNAP_TEST_S3_ENDPOINT")) {
    ksnap_storage_opts_t opts;
    char url[512];
    ksnap_storage_opts_init(&opts);
    opts.endpoint = getenv("KSNAP_TEST_S3_ENDPOINT");
    opts.region = getenv("KSNAP_TEST_S3_REGION");
    opts.access_key = getenv("KSNAP_TEST_S3_ACCESS_KEY");
    opts.secret_key = getenv("KSNAP_TEST_S3_SECRET_KEY");
    snprintf(url, sizeof(url), "s3://%s/bench-snapshot-%d",
             getenv("KSNAP_TEST_S3_BUCKET"), (int)getpid());
    if (ksnap_storage_open(url, &opts, &sto, &err))
      die("open", &err);
    run_storage(st, n, "s3", sto, 1);
    if (with_buffered)
      run_storage(st, n, "s3", sto, 0);
    ksnap_storage_destroy(sto);
  } else if (use_s3) {
    printf("N=%-9" PRIu64 " s3: skipped (KSNAP_TEST_S3_ENDPOINT not set: "
           "source tests/.run/env)\n", n);
  }
  ksnap_state_destroy(st);
}

static void in_child(void (*fn)(uint64_t), uint64_t n) {
  pid_t pid = fork();
  int status;

  if (pid == 0) {
    fn(n);
    fflush(stdout);
    _exit(0);
  }
  if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
      WEXITSTATUS(status)) {
    fprintf(stderr, "N=%" PRIu64 ": child failed\n", n);
    exit(1);
  }
}

int main(int argc, char **argv) {
  uint64_t keys[16] = {1000000, 10000000};
  size_t nkeys = 2;

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--keys") && i + 1 < argc) {
      char *p = argv[++i];
      nkeys = 0;
      while (*p && nkeys < 16) {
        keys[nkeys++] = strtoull(p, &p, 10);
        if (*p == ',')
          p++;
      }
    } else if (!strcmp(argv[i], "--buffer") && i + 1 < argc) {
      buffer_size = strtoull(argv[++i], NULL, 10);
    } else if (!strcmp(argv[i], "--no-s3")) {
      use_s3 = 0;
    } else if (!strcmp(argv[i], "--no-file")) {
      use_file = 0;
    } else if (!strcmp(argv[i], "--buffered")) {
      with_buffered = 1;
    } else if (!strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = atoi(argv[++i]);
      rounds = rounds < 1 ? 1 : rounds > 16 ? 16 : rounds;
    } else {
      fprintf(stderr, "usage: %s [--keys N[,N...]] [--buffer BYTES] "
              "[--no-s3] [--no-file] [--buffered] [--rounds R]\n",
              argv[0]);
      return 2;
    }
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  for (size_t i = 0; i < nkeys; i++)
    in_child(bytes_per_key, keys[i]);
  for (size_t i = 0; i < nkeys; i++)
    in_child(snapshots, keys[i]);
  return 0;
}
