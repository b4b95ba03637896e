/* bench_incremental: a checkpoint of N keys of which a fraction changed
 * since the previous one, incremental against full, and what a restore of
 * the resulting chain costs against a restore of one full file.
 *
 *   build/tests/bench_incremental [--keys N] [--changed PERCENT]
 *                                 [--rounds R] [--dir PATH]
 *   default: --keys 10000000 --changed 1 --rounds 3, file:// in a
 *   temporary directory (or PATH)
 *
 * One value state of N keys (16-byte keys, 100-byte values, P = 1,
 * M = 128), state.backend.incremental on. A full snapshot first (the
 * chain's base); then R rounds of: PERCENT of the keys rewritten (spread
 * over all key groups), one incremental snapshot, and the same state
 * forced full (ksnap_state_snapshot_next_full) after rewriting the same
 * number of keys again. Each snapshot is stored as the task runtime
 * stores it (ksnap__task_storage_put_snapshot, 2 MiB buffers, header
 * last) and timed in its two phases: sync (snapshot_begin, the pause of
 * the processing thread) and async (serialize and store), with the
 * file's bytes. Medians over the rounds. Then a restore into a fresh
 * state of: the last full file alone, and the base plus R deltas (the
 * chain a task restores from after R incremental checkpoints), each
 * file read whole into memory first (the read is in the time).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ksnap/state.h"
#include "ksnap/storage.h"
#include "task/task_storage.h"
#include "testutil.h"

#define MIB (1024.0 * 1024.0)
#define MAX_ROUNDS 32
#define BUFFER (2u << 20)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const ksnap_error_t *err) {
  fprintf(stderr, "%s: %s\n", what, err->msg);
  exit(1);
}

static void put(ksnap_state_t *st, int id, uint64_t i, uint64_t version) {
  uint8_t key[16], val[100];
  uint64_t h = i * 0xff51afd7ed558ccdull;
  ksnap_error_t err;

  memcpy(key, &i, 8);
  memcpy(key + 8, &h, 8);
  memset(val, 'v', sizeof(val));
  memcpy(val, &version, 8);
  if (ksnap_state_set_key(st, key, sizeof(key), &err) ||
      ksnap_state_value_put(st, id, val, sizeof(val), &err))
    die("put", &err);
}

/* Rewrites @p count keys, spread over all of them (a stride through the
 * key space, so every key group has its share). */
static void change(ksnap_state_t *st, int id, uint64_t n, uint64_t count,
                   uint64_t round) {
  uint64_t stride = count ? n / count : 1;

  for (uint64_t k = 0; k < count; k++)
    put(st, id, (k * stride + round * 7919) % n, round + 1);
}

typedef struct figure_s {
  double sync_us, async_s;
  uint64_t bytes;
} figure_t;

static figure_t snapshot(ksnap_storage_t *fs, ksnap_state_t *st, int64_t id,
                         char *key, size_t keysize, int *incremental) {
  ksnap_state_snapshot_t *snap;
  ksnap_storage_stat_t stat;
  ksnap_error_t err;
  figure_t f;
  double t0;

  snprintf(key, keysize, "bench/chk-%" PRId64 "/task-0", id);
  t0 = now_s();
  if (ksnap_state_snapshot_begin(st, id, key, &snap, &err))
    die("snapshot_begin", &err);
  f.sync_us = (now_s() - t0) * 1e6;
  *incremental = ksnap_state_snapshot_is_incremental(snap);
  t0 = now_s();
  if (ksnap__task_storage_put_snapshot(fs, key, snap, BUFFER, &stat, &err))
    die("put_snapshot", &err);
  f.async_s = now_s() - t0;
  f.bytes = stat.size;
  ksnap_state_snapshot_end(snap, 1);
  return f;
}

/* The files @p keys (a chain, oldest first) restored into a new state. */
static double restore(ksnap_storage_t *fs, char keys[][128], size_t n,
                      uint64_t *bytes) {
  ksnap_state_file_t files[MAX_ROUNDS + 1];
  ksnap_buf_t bufs[MAX_ROUNDS + 1];
  ksnap_state_chain_t chain = {files, n};
  ksnap_state_conf_t conf;
  ksnap_state_t *st;
  ksnap_error_t err;
  double t0 = now_s(), secs;

  *bytes = 0;
  ksnap_state_conf_init(&conf);
  conf.incremental = 1;
  if (ksnap_state_new(&conf, &st, &err))
    die("state", &err);
  for (size_t i = 0; i < n; i++) {
    ksnap_buf_init(&bufs[i]);
    if (ksnap_storage_get(fs, keys[i], &bufs[i], &err))
      die("get", &err);
    files[i] = (ksnap_state_file_t){bufs[i].data, bufs[i].len, NULL, NULL,
                                    0};
    *bytes += bufs[i].len;
  }
  if (ksnap_state_restore(st, &chain, 1, &err))
    die("restore", &err);
  secs = now_s() - t0;
  for (size_t i = 0; i < n; i++)
    ksnap_buf_cleanup(&bufs[i]);
  ksnap_state_destroy(st);
  return secs;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(*v), cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void report(const char *what, figure_t *f, int n) {
  double sync[MAX_ROUNDS], async[MAX_ROUNDS], bytes[MAX_ROUNDS];

  for (int i = 0; i < n; i++) {
    sync[i] = f[i].sync_us;
    async[i] = f[i].async_s;
    bytes[i] = (double)f[i].bytes;
  }
  printf("  %-12s sync %8.1f us  async %8.3f s  file %9.1f MiB\n", what,
         median(sync, n), median(async, n), median(bytes, n) / MIB);
}

int main(int argc, char **argv) {
  uint64_t n = 10000000, bytes;
  double changed = 1.0, t0, full_restore, chain_restore;
  int rounds = 3, inc, sid;
  const char *dir = NULL;
  char url[600], keys[MAX_ROUNDS + 1][128], last_full[128];
  figure_t fi[MAX_ROUNDS], ff[MAX_ROUNDS], base;
  ksnap_storage_opts_t o;
  ksnap_storage_t *fs;
  ksnap_state_conf_t conf;
  ksnap_state_t *st;
  ksnap_error_t err;
  int64_t id = 1;
  uint64_t count;

  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--keys") && i + 1 < argc)
      n = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--changed") && i + 1 < argc)
      changed = atof(argv[++i]);
    else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
      rounds = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else {
      fprintf(stderr, "usage: %s [--keys N] [--changed PERCENT] [--rounds "
              "R] [--dir PATH]\n", argv[0]);
      return 2;
    }
  }
  if (rounds < 1 || rounds > MAX_ROUNDS || !n || changed <= 0) {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  count = (uint64_t)((double)n * changed / 100.0);
  snprintf(url, sizeof(url), "file://%s",
           dir ? dir : ksnap_test_tmpdir("bench-incremental"));
  ksnap_storage_opts_init(&o);
  if (ksnap_storage_open(url, &o, &fs, &err))
    die("storage", &err);
  ksnap_state_conf_init(&conf);
  conf.incremental = 1;
  conf.max_chain = MAX_ROUNDS + 2;
  if (ksnap_state_new(&conf, &st, &err) ||
      ksnap_state_register(st, "v", KSNAP_STATE_VALUE, 0, &sid, &err))
    die("state", &err);
  t0 = now_s();
  for (uint64_t i = 0; i < n; i++)
    put(st, sid, i, 0);
  printf("N=%" PRIu64 " keys (16-byte keys, 100-byte values), %.2f%% "
         "(%" PRIu64 " keys) changed per checkpoint, %d rounds, %s; "
         "loaded in %.1f s\n", n, changed, count, rounds, url, now_s() - t0);
  base = snapshot(fs, st, id++, keys[0], sizeof(keys[0]), &inc);
  printf("  base (full)  sync %8.1f us  async %8.3f s  file %9.1f MiB\n",
         base.sync_us, base.async_s, (double)base.bytes / MIB);
  for (int r = 0; r < rounds; r++) {
    change(st, sid, n, count, (uint64_t)(2 * r));
    fi[r] = snapshot(fs, st, id++, keys[r + 1], sizeof(keys[r + 1]), &inc);
    if (!inc) {
      fprintf(stderr, "round %d: the snapshot is not incremental\n", r);
      return 1;
    }
  }
  /* the full ones after the chain (forcing full restarts the chain) */
  for (int r = 0; r < rounds; r++) {
    change(st, sid, n, count, (uint64_t)(2 * r + 1));
    ksnap_state_snapshot_next_full(st);
    ff[r] = snapshot(fs, st, id++, last_full, sizeof(last_full), &inc);
    if (inc) {
      fprintf(stderr, "round %d: the forced snapshot is incremental\n", r);
      return 1;
    }
  }
  report("incremental", fi, rounds);
  report("full", ff, rounds);
  {
    double a[MAX_ROUNDS], b[MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
      a[r] = fi[r].async_s;
      b[r] = ff[r].async_s;
    }
    printf("  async time incremental / full: %.3f\n",
           median(a, rounds) / median(b, rounds));
  }
  ksnap_state_destroy(st);
  {
    char one[1][128];
    snprintf(one[0], sizeof(one[0]), "%s", last_full);
    full_restore = restore(fs, one, 1, &bytes);
    printf("  restore of one full file          %8.3f s  (%.1f MiB)\n",
           full_restore, (double)bytes / MIB);
    chain_restore = restore(fs, keys, (size_t)rounds + 1, &bytes);
    printf("  restore of full + %2d deltas       %8.3f s  (%.1f MiB)\n",
           rounds, chain_restore, (double)bytes / MIB);
  }
  ksnap_storage_destroy(fs);
  if (!dir)
    ksnap_test_rmtree(url + 7);
  return 0;
}
