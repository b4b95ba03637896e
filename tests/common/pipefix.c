/* Fixture of the pipeline tests (see pipefix.h). */
#include "pipefix.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conntest.h"
#include "kafka_testutil.h"
#include "pipeops.h"
#include "pipetest.h"
#include "testutil.h"


const char *pf_bs(void) {
  return ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
}


/* @p url: checkpoint storage (NULL: a temporary directory). */
void pf_setup_url(pf_fixture_t *f, const char *url) {
  char in[300], outs[300];
  ksnap_error_t error;

  f->st = NULL;
  f->job = ksnap_test_unique_name("pipe");
  f->src = ksnap_test_unique_name("pipe-src");
  f->out = ksnap_test_unique_name("pipe-out");
  f->dir = ksnap_test_tmpdir("pipeline");
  if (url)
    snprintf(f->url, sizeof(f->url), "%s", url);
  else
    snprintf(f->url, sizeof(f->url), "file://%s", f->dir);
  snprintf(in, sizeof(in), "source:%s", f->src);
  snprintf(outs, sizeof(outs), "sink:%s", f->out);
  {
    const char *kv[] = {"state.checkpoints.dir", f->url,
                        "kafka.transaction.timeout.ms", "60000",
                        "execution.checkpointing.interval", "1s",
                        "execution.checkpointing.timeout", "30s",
                        "stage.src.operator", "t_split",
                        "stage.src.parallelism", "2",
                        "stage.src.input", in,
                        "stage.mid.operator", "t_count",
                        "stage.mid.parallelism", "3",
                        "stage.mid.input", "stage:src",
                        "stage.fin.operator", "t_max",
                        "stage.fin.parallelism", "2",
                        "stage.fin.input", "stage:mid",
                        "stage.fin.output", outs,
                        NULL};
    f->conf = ksnap_test_conn_conf(f->job, kv);
  }
  if (url) {
    ksnap_test_conn_set(f->conf, "s3.endpoint",
                        ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT"));
    ksnap_test_conn_set(f->conf, "s3.region",
                        ksnap_test_require_env("KSNAP_TEST_S3_REGION"));
    ksnap_test_conn_set(f->conf, "s3.access-key",
                        ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY"));
    ksnap_test_conn_set(f->conf, "s3.secret-key",
                        ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY"));
    ksnap_test_conn_set(f->conf, "s3.max-retries", "1");
  }
  ck_assert_int_eq(ksnap_conf_finalize(f->conf, NULL, NULL), KSNAP_ERR_OK);
  ksnap_test_create_topic(pf_bs(), f->src, NSRC_PARTS);
  ksnap_test_create_topic(pf_bs(), f->out, 2);
  if (!url)
    ck_assert_msg(!ksnap_storage_open(f->url, NULL, &f->st, &error), "%s",
                  error.msg);
}

void pf_setup(pf_fixture_t *f) { pf_setup_url(f, NULL); }

void pf_teardown(pf_fixture_t *f) {
  ksnap_storage_destroy(f->st);
  ksnap_conf_destroy(f->conf);
  ksnap_test_rmtree(f->dir);
  free(f->dir);
  free(f->job);
  free(f->src);
  free(f->out);
}

/* Lines [from, to) go to partition i mod NSRC_PARTS. */
void pf_produce_lines(pf_fixture_t *f, size_t from, size_t to) {
  for (int p = 0; p < NSRC_PARTS; p++) {
    char **vals = calloc(to - from + 1, sizeof(*vals)), buf[64];
    size_t n = 0;
    for (size_t i = from; i < to; i++)
      if (i % NSRC_PARTS == (size_t)p) {
        pt_line(i, buf, sizeof(buf));
        vals[n++] = strdup(buf);
      }
    pt_produce(pf_bs(), f->src, p, (const char *const *)vals, n);
    for (size_t i = 0; i < n; i++)
      free(vals[i]);
    free(vals);
  }
}

/* The model: word counts of the lines before the source offsets. */
void pf_model_n(const ksnap_ack_record_t *const *acks, size_t n,
                    size_t nlines, long long *counts) {
  int64_t off[NSRC_PARTS] = {0};

  for (size_t i = 0; i < n; i++) {
    const ksnap_task_snapshot_t *ts = &acks[i]->u.ack.snapshot;
    if (strcmp(ts->task.stage, "src"))
      continue;
    for (size_t k = 0; k < ts->offset_cnt; k++)
      if (ts->offsets[k].offset > 0)
        off[ts->offsets[k].partition] = ts->offsets[k].offset;
  }
  memset(counts, 0, PT_NWORDS * sizeof(*counts));
  for (size_t i = 0; i < nlines; i++)
    if ((int64_t)(i / NSRC_PARTS) < off[i % NSRC_PARTS])
      pt_line_count(i, counts);
}

void pf_model(const ksnap_ack_record_t *const *acks, size_t n,
                  long long *counts) {
  pf_model_n(acks, n, NLINES, counts);
}

typedef struct state_check_s {
  const char *state;
  long long counts[PT_NWORDS];
  int seen[PT_NWORDS];
} state_check_t;

static int on_entry(void *opaque, const ksnap_state_entry_t *e) {
  state_check_t *sc = opaque;
  char buf[32];
  int w;

  if (strcmp(e->state, sc->state))
    return 0;
  ck_assert_int_lt(e->klen, sizeof(buf));
  ck_assert_int_lt(e->vlen, sizeof(buf));
  memcpy(buf, e->key, e->klen);
  buf[e->klen] = '\0';
  ck_assert_int_eq(buf[0], 'w');
  w = atoi(buf + 1);
  ck_assert_int_eq(sc->seen[w], 0); /* each key in one task only */
  sc->seen[w] = 1;
  memcpy(buf, e->value, e->vlen);
  buf[e->vlen] = '\0';
  sc->counts[w] = atoll(buf);
  return 0;
}

/* Decodes the state files of @p stage's ACKs and compares to @p expect. */
void pf_state_counts(pf_fixture_t *f, const ksnap_ack_record_t *const *acks,
                     size_t n, const char *stage, const char *state,
                     long long *counts) {
  state_check_t sc = {state, {0}, {0}};
  ksnap_error_t error;

  for (size_t i = 0; i < n; i++) {
    const ksnap_task_snapshot_t *ts = &acks[i]->u.ack.snapshot;
    ksnap_buf_t buf;
    if (strcmp(ts->task.stage, stage))
      continue;
    ck_assert_int_eq(ts->handle_cnt, 1);
    ksnap_buf_init(&buf);
    ck_assert_msg(!ksnap_storage_get(f->st, ts->handles[0].path, &buf,
                                     &error), "%s", error.msg);
    ck_assert_int_eq(ts->handles[0].size, (int64_t)buf.len);
    ck_assert_msg(!ksnap_state_file_decode(buf.data, buf.len, NULL, on_entry,
                                           &sc, &error), "%s", error.msg);
    ksnap_buf_cleanup(&buf);
  }
  memcpy(counts, sc.counts, sizeof(sc.counts));
}

void pf_check_state(pf_fixture_t *f, const ksnap_ack_record_t *const *acks,
                    size_t n, const char *stage, const char *state,
                    const long long *expect) {
  long long counts[PT_NWORDS];

  pf_state_counts(f, acks, n, stage, state, counts);
  for (int w = 0; w < PT_NWORDS; w++)
    ck_assert_msg(counts[w] == expect[w],
                  "%s state %s of w%d: %lld, model %lld", stage, state, w,
                  counts[w], expect[w]);
}

int64_t pf_fin_out(ksnap_worker_t *w) {
  int64_t n = 0;

  for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++) {
    ksnap_task_t *t = ksnap_worker_task(w, i);
    if (!strncmp(ksnap_task_id(t), "fin[", 4))
      n += ksnap_task_records_out(t);
  }
  return n;
}

void pf_wait_running(ksnap_worker_t *w) {
  for (int tries = 0; tries < 600; tries++) {
    size_t up = 0;
    for (size_t i = 0; i < ksnap_worker_task_cnt(w); i++)
      up += ksnap_task_running(ksnap_worker_task(w, i)) != 0;
    if (up == ksnap_worker_task_cnt(w))
      return;
    ksnap_worker_tick(w);
    usleep(100 * 1000);
  }
  ck_abort_msg("tasks did not start");
}

