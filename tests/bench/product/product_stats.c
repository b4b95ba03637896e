/*
 * bench_product's statistics: percentiles, the ksnap process's CPU time
 * and peak RSS from /proc, and the checkpoint figures of
 * `ksnap checkpoints list --json`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "product.h"

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The @p p quantile of @p v (sorted in place), or -1 if @p n is 0. */
double pct(double *v, int n, double p) {
  if (n <= 0)
    return -1;
  qsort(v, (size_t)n, sizeof(*v), cmp_d);
  int i = (int)(p * (n - 1) + 0.5);
  return v[i];
}

int read_proc(pid_t pid, proc_stats_t *ps) {
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

void checkpoint_stats(const char *job_file, result_t *r) {
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
