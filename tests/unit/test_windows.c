/*
 * The event-time windows of ksnap/window.h (plugin/src/window/window.c)
 * through a whole job: `ksnap run --input` (the embedded broker, no
 * servers) of examples/clicks with its window stage running tumbling
 * (window), sliding (window_sliding) and session (window_session)
 * windows. The clicks are out of order by less than the watermark's
 * bound, so none is late: every window fires once, with its final count,
 * and the job's output (the last record per key) equals a model of the
 * input computed here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "testutil.h"

#define EXAMPLE KSNAP_SOURCE_DIR "/examples/clicks/embedded.properties"
#define OPS "KSNAP_OPERATOR_PATH=" KSNAP_BINARY_DIR "/examples/clicks"
#define NCLICKS 2000
#define NPAGES 5
#define BASE_MS 1700000000000LL
#define MINUTE 60000
#define SLIDE 20000 /* window_sliding: 60 s windows every 20 s */
#define GAP 10000   /* window_session */

typedef struct click_s {
  int page;
  long long ts;
} click_t;

typedef struct result_s {
  char key[64];
  long long count;
} result_t;

typedef struct model_s {
  result_t *v;
  size_t n, cap;
} model_t;

static void model_add(model_t *m, const char *key, long long by) {
  for (size_t i = 0; i < m->n; i++)
    if (!strcmp(m->v[i].key, key)) {
      m->v[i].count += by;
      return;
    }
  if (m->n == m->cap) {
    m->cap = m->cap ? m->cap * 2 : 256;
    m->v = realloc(m->v, m->cap * sizeof(*m->v));
    ck_assert_ptr_nonnull(m->v);
  }
  snprintf(m->v[m->n].key, sizeof(m->v[m->n].key), "%s", key);
  m->v[m->n++].count = by;
}

/* Clicks with pauses (sessions end) and a disorder under 3 s. */
static void make_clicks(click_t *c, const char *path) {
  FILE *f = fopen(path, "w");
  unsigned seed = 7;
  long long t = BASE_MS;

  ck_assert_ptr_nonnull(f);
  for (int i = 0; i < NCLICKS; i++) {
    t += rand_r(&seed) % 10 == 0 ? 25000 + rand_r(&seed) % 40000
                                 : rand_r(&seed) % 1500;
    c[i].page = rand_r(&seed) % NPAGES;
    c[i].ts = t - rand_r(&seed) % 3000;
    fprintf(f, "page%d %lld %d\n", c[i].page, c[i].ts, i);
  }
  fclose(f);
}

static long long floor_to(long long t, long long d) { return t - t % d; }

static void model_tumbling(const click_t *c, model_t *m) {
  char key[64];

  for (int i = 0; i < NCLICKS; i++) {
    snprintf(key, sizeof(key), "page%d@%lld", c[i].page,
             floor_to(c[i].ts, MINUTE));
    model_add(m, key, 1);
  }
}

static void model_sliding(const click_t *c, model_t *m) {
  char key[64];

  for (int i = 0; i < NCLICKS; i++)
    for (long long s = floor_to(c[i].ts, SLIDE); s > c[i].ts - MINUTE;
         s -= SLIDE) {
      snprintf(key, sizeof(key), "page%d@%lld", c[i].page, s);
      model_add(m, key, 1);
    }
}

static int by_time(const void *a, const void *b) {
  long long x = *(const long long *)a, y = *(const long long *)b;

  return x < y ? -1 : x > y;
}

/* Per page, the clicks in time order: a click at or after the current
 * session's end (last click + gap) starts a new one. */
static void model_session(const click_t *c, model_t *m) {
  static long long ts[NCLICKS];
  char key[64];

  for (int p = 0; p < NPAGES; p++) {
    size_t n = 0;
    for (int i = 0; i < NCLICKS; i++)
      if (c[i].page == p)
        ts[n++] = c[i].ts;
    qsort(ts, n, sizeof(*ts), by_time);
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && ts[j] < ts[j - 1] + GAP)
        j++;
      snprintf(key, sizeof(key), "page%d@%lld-%lld", p, ts[i],
               ts[j - 1] + GAP);
      model_add(m, key, (long long)(j - i));
      i = j;
    }
  }
}

static const char *const ops[] = {"window", "window_sliding",
                                  "window_session"};

/* The example's job file with the window stage's operator @p op. */
static void write_job(const char *path, const char *op) {
  FILE *in = fopen(EXAMPLE, "r"), *out = fopen(path, "w");
  char line[512];

  ck_assert_ptr_nonnull(in);
  ck_assert_ptr_nonnull(out);
  while (fgets(line, sizeof(line), in))
    if (!strncmp(line, "stage.window.operator=", 22))
      fprintf(out, "stage.window.operator=libclicks.so:%s\n", op);
    else if (!strncmp(line, "job.name=", 9))
      fprintf(out, "job.name=windows-%s\n", op);
    else
      fputs(line, out);
  fclose(in);
  fclose(out);
}

START_TEST(windows_equal_model) {
  char *dir = ksnap_test_tmpdir("windows");
  char input[512], job[512], env[1024], args[1200], *out = NULL, *err = NULL;
  static click_t clicks[NCLICKS];
  model_t m = {0};
  size_t lines = 0;
  int rc;

  snprintf(input, sizeof(input), "%s/clicks.txt", dir);
  snprintf(job, sizeof(job), "%s/job.properties", dir);
  make_clicks(clicks, input);
  write_job(job, ops[_i]);
  if (_i == 0)
    model_tumbling(clicks, &m);
  else if (_i == 1)
    model_sliding(clicks, &m);
  else
    model_session(clicks, &m);
  snprintf(env, sizeof(env), "%s TMPDIR=%s", OPS, dir);
  snprintf(args, sizeof(args), "run --input %s %s", input, job);
  rc = ksnap_test_cli(env, args, &out, &err);
  ck_assert_msg(rc == 0, "%s: exit %d; stderr:\n%s", ops[_i], rc, err);
  /* every line a window result of the model, none late or bad */
  for (char *p = out; *p; lines++) {
    char topic[64], key[64];
    long long n;
    size_t i = 0;
    ck_assert_int_eq(sscanf(p, "%63s %63s %lld", topic, key, &n), 3);
    ck_assert_msg(!strcmp(topic, "clicks-per-minute"), "%s: %s %s %lld",
                  ops[_i], topic, key, n);
    while (i < m.n && strcmp(m.v[i].key, key))
      i++;
    ck_assert_msg(i < m.n, "%s: unexpected window %s (%lld)", ops[_i], key,
                  n);
    ck_assert_msg(n == m.v[i].count, "%s: %s: %lld, model %lld", ops[_i],
                  key, n, m.v[i].count);
    p = strchr(p, '\n');
    ck_assert_ptr_nonnull(p);
    p++;
  }
  ck_assert_msg(lines == m.n, "%s: %zu windows, model %zu", ops[_i], lines,
                m.n);
  free(m.v);
  free(out);
  free(err);
  ksnap_test_rmtree(dir);
  free(dir);
}
END_TEST

int main(void) {
  Suite *s = suite_create("windows");
  TCase *tc = tcase_create("windows");

  tcase_set_timeout(tc, 110);
  tcase_add_loop_test(tc, windows_equal_model, 0, 3);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
