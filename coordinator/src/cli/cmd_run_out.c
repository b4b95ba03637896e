/* `ksnap run`'s output: the progress line and the sink topics' content
 * (see cmd_run.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_run.h"
#include "kafka/devio.h"

/* The sink content: every record, then the last value per key. */
typedef struct kv_s {
  char *key, *value;
  size_t seq;
} kv_t;

typedef struct kv_list_s {
  kv_t *v;
  size_t n, cap;
} kv_list_t;

char *cli_dup_bytes(const void *p, size_t len) {
  char *s = malloc(len + 1);

  if (s) {
    if (len)
      memcpy(s, p, len);
    s[len] = '\0';
  }
  return s;
}

static void on_record(void *opaque, const void *key, size_t key_len,
                      const void *value, size_t value_len) {
  kv_list_t *l = opaque;

  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 256;
    kv_t *v = realloc(l->v, cap * sizeof(*v));
    if (!v)
      return;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n].key = cli_dup_bytes(key ? key : "", key ? key_len : 0);
  l->v[l->n].value = cli_dup_bytes(value ? value : "", value ? value_len : 0);
  l->v[l->n].seq = l->n;
  l->n++;
}

static int kv_cmp(const void *a, const void *b) {
  const kv_t *x = a, *y = b;
  int c = strcmp(x->key, y->key);

  return c ? c : (x->seq < y->seq ? -1 : x->seq > y->seq);
}

static int print_sink(const ksnap_conf_t *conf, const char *topic,
                      int timeout_ms) {
  kv_list_t l = {NULL, 0, 0};
  ksnap_error_t error;
  int rc = 0;

  ksnap_error_clear(&error);
  if (ksnap_devio_read_topic(conf, topic, timeout_ms, on_record, &l,
                             &error)) {
    fprintf(stderr, "ksnap run: reading %s: %s\n", topic, error.msg);
    rc = -1;
  } else {
    qsort(l.v, l.n, sizeof(*l.v), kv_cmp);
    for (size_t i = 0; i < l.n; i++)
      if (i + 1 == l.n || strcmp(l.v[i].key, l.v[i + 1].key))
        printf("%s %s %s\n", topic, l.v[i].key, l.v[i].value);
    fflush(stdout);
  }
  for (size_t i = 0; i < l.n; i++) {
    free(l.v[i].key);
    free(l.v[i].value);
  }
  free(l.v);
  return rc;
}

int cli_run_print_sinks(const ksnap_conf_t *conf, const ksnap_job_t *job,
                        int timeout_ms) {
  int rc = 0;

  for (size_t i = 0; i < ksnap_job_topic_cnt(job); i++) {
    const ksnap_job_topic_t *t = ksnap_job_topic(job, i);
    if (ksnap_job_topic_kind(t) == KSNAP_JOB_TOPIC_SINK &&
        print_sink(conf, ksnap_job_topic_name(t), timeout_ms))
      rc = -1;
  }
  return rc;
}

static void human_size(int64_t b, char *buf, size_t size) {
  if (b < 1024)
    snprintf(buf, size, "%" PRId64 " B", b);
  else if (b < 1024 * 1024)
    snprintf(buf, size, "%.1f KiB", (double)b / 1024);
  else
    snprintf(buf, size, "%.1f MiB", (double)b / (1024 * 1024));
}

void cli_run_progress(const ksnap_run_stats_t *st, int tty) {
  char size[32], ckpt[160];

  if (st->checkpoints_completed > 0) {
    human_size(st->last_state_size, size, sizeof(size));
    snprintf(ckpt, sizeof(ckpt),
             "checkpoint %" PRId64 " (%" PRId64 " ms, %s), %" PRId64
             " completed, %" PRId64 " failed",
             st->last_completed_id, st->last_duration_ms, size,
             st->checkpoints_completed, st->checkpoints_failed);
  } else {
    snprintf(ckpt, sizeof(ckpt), "no checkpoint completed yet");
  }
  if (tty)
    fprintf(stderr, "\r\033[Kin %" PRId64 "  out %" PRId64 "  %s%s",
            st->records_in, st->records_out, ckpt,
            st->tasks_failed ? "  (a task failed)" : "");
  else
    fprintf(stderr, "ksnap run: records in %" PRId64 ", out %" PRId64
                    ", %s\n", st->records_in, st->records_out, ckpt);
  fflush(stderr);
}
