/* bench_state: the state backend's snapshot costs.
 *
 *   build/tests/bench_state [--async-nice K] [N ...]
 *                                 default N: 10000 100000 1000000 10000000
 *   --async-nice K runs the serializer thread at niceness K (the way a
 *   runtime would run its snapshot pool below the processing threads).
 *
 * For each N (16-byte keys, 100-byte values, one value state, P = 1):
 *   sync pause   ksnap_state_snapshot_begin() time over 200 snapshots,
 *                each after 2000 random updates (p50 / p99 / max, us)
 *   async        ksnap_state_snapshot_write() of a full snapshot on a
 *                second thread, MB/s of file bytes (idle processing thread)
 *   updates      random overwrites per second on the processing thread:
 *                  base     no snapshot
 *                  cow      a snapshot held (copy-on-write active), no
 *                           serializer running
 *                  flight   while the async thread serializes the snapshot
 *                ratio = cow/base and flight/base; flight also pays for CPU
 *                contention (2 shared cores here)
 *   memory       superseded versions retained at the end of the flight
 *                window, the async phase's file buffer, and the RSS growth
 *                during the snapshot.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ksnap/state.h"
#include "state/state_internal.h"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rs = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return rs;
}

static void mkkey(uint64_t i, uint8_t key[16]) {
  uint64_t h = i * 0xff51afd7ed558ccdull;
  memcpy(key, &i, 8);
  memcpy(key + 8, &h, 8);
}

static long rss_kb(void) {
  long pages = 0, rss = 0;
  FILE *f = fopen("/proc/self/statm", "r");
  if (f) {
    if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
      rss = 0;
    fclose(f);
  }
  return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct {
  ksnap_state_snapshot_t *snap;
  ksnap_buf_t out;
  double secs, cpu;
  atomic_int done;
} async_t;

static double cpu_s(void);

static int async_nice; /* --async-nice N: niceness of the async thread */

static void *async_write(void *arg) {
  async_t *a = arg;
  ksnap_error_t err;
  if (async_nice)
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), async_nice);
  double t0 = now_s(), c0 = cpu_s();
  if (ksnap_state_snapshot_write(a->snap, &a->out, &err))
    fprintf(stderr, "write failed: %s\n", err.msg);
  a->secs = now_s() - t0;
  a->cpu = cpu_s() - c0;
  atomic_store(&a->done, 1);
  return NULL;
}

static int cmp_double(const void *a, const void *b);

static void update(ksnap_state_t *st, int id, uint64_t n, uint8_t *val) {
  uint8_t key[16];
  ksnap_error_t err;

  mkkey(rnd() % n, key);
  val[0]++;
  ksnap_state_set_key(st, key, 16, &err);
  ksnap_state_value_put(st, id, val, 100, &err);
}

static double cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct {
  double wall, cpu, secs; /* updates per wall / CPU second; window */
} rate_t;

/* Updates for @p secs seconds or until *stop. */
static rate_t update_rate(ksnap_state_t *st, int id, uint64_t n, uint8_t *val,
                          double secs, atomic_int *stop) {
  double t0 = now_s(), c0 = cpu_s(), t;
  uint64_t ops = 0;
  rate_t r;

  do {
    for (int i = 0; i < 1000; i++)
      update(st, id, n, val);
    ops += 1000;
    t = now_s() - t0;
  } while (t < secs && !(stop && atomic_load(stop)));
  r.wall = (double)ops / t;
  r.cpu = (double)ops / (cpu_s() - c0);
  r.secs = t;
  return r;
}

static int cmp_rate(const void *a, const void *b) {
  return cmp_double(&((const rate_t *)a)->cpu, &((const rate_t *)b)->cpu);
}

static void bench(uint64_t n) {
  ksnap_state_conf_t conf;
  ksnap_state_t *st;
  ksnap_error_t err;
  ksnap_state_snapshot_t *snap;
  uint8_t key[16], val[100];
  double pauses[200], first[200], t0, rss_growth = 0, file_mb = 0;
  rate_t base[3], cow[3], flight[3];
  async_t a;
  pthread_t th;
  long rss0 = 0;
  size_t retired = 0;
  int id;
  char name[32];

  memset(val, 'v', sizeof(val));
  ksnap_state_conf_init(&conf);
  ksnap_state_new(&conf, &st, &err);
  ksnap_state_register(st, "v", KSNAP_STATE_VALUE, 0, &id, &err);
  t0 = now_s();
  for (uint64_t i = 0; i < n; i++) {
    mkkey(i, key);
    ksnap_state_set_key(st, key, 16, &err);
    ksnap_state_value_put(st, id, val, 100, &err);
  }
  fprintf(stderr, "N=%llu loaded in %.1f s\n", (unsigned long long)n,
          now_s() - t0);

  for (int s = 0; s < 200; s++) {
    for (int i = 0; i < 2000; i++)
      update(st, id, n, val);
    snprintf(name, sizeof(name), "chk-%d", s);
    t0 = now_s();
    ksnap_state_snapshot_begin(st, s, name, &snap, &err);
    pauses[s] = (now_s() - t0) * 1e6;
    t0 = now_s(); /* first write after the sync point copies the dir */
    update(st, id, n, val);
    first[s] = (now_s() - t0) * 1e6;
    ksnap_state_snapshot_end(snap, 1);
  }
  qsort(pauses, 200, sizeof(double), cmp_double);
  qsort(first, 200, sizeof(double), cmp_double);

  /* async serialization with an idle processing thread */
  ksnap_state_snapshot_begin(st, 1001, "idle", &snap, &err);
  memset(&a, 0, sizeof(a));
  a.snap = snap;
  ksnap_buf_init(&a.out);
  async_write(&a);
  ksnap_state_snapshot_end(snap, 1);
  printf("N=%-9llu sync pause us p50 %.2f p99 %.2f max %.2f | first update "
         "after sync us p50 %.1f p99 %.1f max %.1f | async %.0f MB/s wall, %.0f MB/s CPU "
         "(%.1f MB in %.2f s)\n",
         (unsigned long long)n, pauses[100], pauses[197], pauses[199],
         first[100], first[197], first[199], (double)a.out.len / 1e6 / a.secs,
         (double)a.out.len / 1e6 / a.cpu, (double)a.out.len / 1e6, a.secs);
  ksnap_buf_cleanup(&a.out);

  /* Updates while the async phase runs (flight), with a snapshot held
   * for as long but no serializer (cow), and without any (base); three
   * rounds, interleaved, medians by CPU rate. */
  for (int r = 0; r < 3; r++) {
    rss0 = rss_kb();
    snprintf(name, sizeof(name), "flight-%d", r);
    ksnap_state_snapshot_begin(st, 2000 + r, name, &snap, &err);
    memset(&a, 0, sizeof(a));
    a.snap = snap;
    ksnap_buf_init(&a.out);
    atomic_init(&a.done, 0);
    pthread_create(&th, NULL, async_write, &a);
    flight[r] = update_rate(st, id, n, val, 1e9, &a.done);
    pthread_join(th, NULL);
    retired = ksnap__state_map_retired_bytes(st->states[id].map);
    rss_growth = (double)(rss_kb() - rss0) / 1024;
    file_mb = (double)a.out.len / 1e6;
    ksnap_state_snapshot_end(snap, 1);
    ksnap_buf_cleanup(&a.out);
    ksnap__state_map_reclaim(st->states[id].map);

    ksnap_state_snapshot_begin(st, 3000 + r, "cow", &snap, &err);
    cow[r] = update_rate(st, id, n, val, flight[r].secs, NULL);
    ksnap_state_snapshot_end(snap, 1);
    ksnap__state_map_reclaim(st->states[id].map);

    base[r] = update_rate(st, id, n, val, flight[r].secs, NULL);
  }
  qsort(base, 3, sizeof(rate_t), cmp_rate);
  qsort(cow, 3, sizeof(rate_t), cmp_rate);
  qsort(flight, 3, sizeof(rate_t), cmp_rate);
  printf("N=%-9llu updates/s (per CPU s) base %.2fM cow %.2fM (%.2fx) "
         "flight %.2fM (%.2fx); per wall s: base %.2fM flight %.2fM "
         "(%.2fx) | window %.2f s\n",
         (unsigned long long)n, base[1].cpu / 1e6, cow[1].cpu / 1e6,
         cow[1].cpu / base[1].cpu, flight[1].cpu / 1e6,
         flight[1].cpu / base[1].cpu, base[1].wall / 1e6,
         flight[1].wall / 1e6, flight[1].wall / base[1].wall,
         flight[1].secs);
  printf("N=%-9llu memory during snapshot: superseded versions %.1f MB, "
         "file buffer %.1f MB, RSS +%.1f MB (state %.1f MB before)\n",
         (unsigned long long)n, (double)retired / 1e6, file_mb, rss_growth,
         (double)rss0 / 1024);
  fflush(stdout);
  ksnap_state_destroy(st);
}

int main(int argc, char **argv) {
  static const uint64_t defaults[] = {10000, 100000, 1000000, 10000000};

  int ran = 0;

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--async-nice") && i + 1 < argc) {
      async_nice = atoi(argv[++i]);
      continue;
    }
    bench(strtoull(argv[i], NULL, 10));
    ran = 1;
  }
  if (!ran) {
    for (size_t i = 0; i < 4; i++)
      bench(defaults[i]);
  }
  return 0;
}
