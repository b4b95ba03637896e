/*
 * `ksnap verify`: the output topics of a run, read with read_committed to
 * their end, and the comparison of two runs (see cmd_verify.h).
 *
 * Each output topic is compared as a multiset of (key, value) records.
 * Their order is not compared, not even one key's: across keys and
 * partitions it depends on timing (which upstream task's records arrive
 * first), and within a partition a sink task's consecutive epochs are
 * transactions on different producers of its pool, open at the same
 * time (epoch N+1 begins at barrier N, epoch N is flushed by its
 * pre-commit later), so their records may interleave in the partition
 * even in a run without faults: a key's values can be out of order for
 * read_committed readers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cmd_verify.h"
#include "kafka/devio.h"

#define READ_TIMEOUT_MS 30000
#define SHOW_MAX 160

static void on_record(void *opaque, const void *key, size_t key_len,
                      const void *value, size_t value_len) {
  verify_topic_t *t = opaque;
  verify_rec_t *r;

  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 1024;
    verify_rec_t *v = realloc(t->recs, cap * sizeof(*v));
    if (!v)
      return; /* the digest and the counts will show the loss */
    t->recs = v;
    t->cap = cap;
  }
  r = &t->recs[t->n];
  r->has_key = key != NULL;
  r->has_value = value != NULL;
  r->key_len = key ? key_len : 0;
  r->value_len = value ? value_len : 0;
  r->key = cli_dup_bytes(key, r->key_len);
  r->value = cli_dup_bytes(value, r->value_len);
  r->seq = t->n;
  if (r->key && r->value)
    t->n++;
  else {
    free(r->key);
    free(r->value);
  }
}

static void topic_clear(verify_topic_t *t) {
  for (size_t i = 0; i < t->n; i++) {
    free(t->recs[i].key);
    free(t->recs[i].value);
  }
  free(t->recs);
  t->recs = NULL;
  t->n = t->cap = 0;
}

void verify_out_clear(verify_run_t *run) {
  for (size_t i = 0; run->outputs && i < run->noutputs; i++)
    topic_clear(&run->outputs[i]);
}

int verify_out_read(verify_run_t *run) {
  ksnap_error_t error;

  verify_out_clear(run);
  for (size_t i = 0; i < run->noutputs; i++) {
    verify_topic_t *t = &run->outputs[i];
    ksnap_error_clear(&error);
    if (ksnap_devio_read_topic(run->conf, t->name, READ_TIMEOUT_MS,
                               on_record, t, &error)) {
      fprintf(stderr, "ksnap verify: reading %s: %s\n", t->name, error.msg);
      return -1;
    }
  }
  return 0;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *s = p;

  for (size_t i = 0; i < n; i++)
    h = (h ^ s[i]) * 0x100000001b3ULL;
  return h;
}

uint64_t verify_out_digest(const verify_run_t *run) {
  uint64_t sum = 0, n = 0;

  for (size_t i = 0; i < run->noutputs; i++)
    for (size_t j = 0; j < run->outputs[i].n; j++, n++) {
      const verify_rec_t *r = &run->outputs[i].recs[j];
      uint64_t h = fnv(0xcbf29ce484222325ULL ^ i, &r->has_key, 1);
      h = fnv(fnv(h, r->key, r->key_len + 1), &r->has_value, 1);
      sum += fnv(h, r->value, r->value_len + 1); /* + : order-free */
    }
  return sum ^ (n * 0x9e3779b97f4a7c15ULL);
}

/* Orders absent before present, then bytes, then length. */
static int bytes_cmp(int ha, const char *a, size_t an, int hb, const char *b,
                     size_t bn) {
  int c;

  if (ha != hb)
    return ha - hb;
  c = memcmp(a, b, an < bn ? an : bn);
  return c ? c : (an > bn) - (an < bn);
}

static int key_cmp(const verify_rec_t *x, const verify_rec_t *y) {
  return bytes_cmp(x->has_key, x->key, x->key_len, y->has_key, y->key,
                   y->key_len);
}

static int value_cmp(const verify_rec_t *x, const verify_rec_t *y) {
  return bytes_cmp(x->has_value, x->value, x->value_len, y->has_value,
                   y->value, y->value_len);
}

static int by_key_value(const void *a, const void *b) {
  const verify_rec_t *x = *(verify_rec_t *const *)a;
  const verify_rec_t *y = *(verify_rec_t *const *)b;
  int c = key_cmp(x, y);

  return c ? c : value_cmp(x, y);
}

static int by_key_seq(const void *a, const void *b) {
  const verify_rec_t *x = *(verify_rec_t *const *)a;
  const verify_rec_t *y = *(verify_rec_t *const *)b;
  int c = key_cmp(x, y);

  return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* @returns the records of @p t sorted by @p cmp (free() it), or NULL. */
static const verify_rec_t **sorted(const verify_topic_t *t,
                                   int (*cmp)(const void *, const void *)) {
  const verify_rec_t **v = malloc((t->n + 1) * sizeof(*v));

  for (size_t i = 0; v && i < t->n; i++)
    v[i] = &t->recs[i];
  if (v)
    qsort(v, t->n, sizeof(*v), cmp);
  return v;
}

/* The difference of one topic between the reference and the crash run. */
typedef struct diff_s {
  size_t missing, extra; /* records the crash run lacks / has too many */
  const verify_rec_t *first; /* the first differing (key, value) */
  size_t first_ref, first_crash; /* its count in each run */
} diff_t;

/* Walks (key, value) groups of both sorted lists in step. */
static void multiset_diff(const verify_rec_t **a, size_t na,
                          const verify_rec_t **b, size_t nb, diff_t *d) {
  size_t i = 0, j = 0;

  while (i < na || j < nb) {
    const verify_rec_t *g = i == na ? b[j] : j == nb ? a[i]
                            : by_key_value(&a[i], &b[j]) <= 0 ? a[i] : b[j];
    size_t ca = 0, cb = 0;
    while (i < na && !by_key_value(&a[i], &g))
      i++, ca++;
    while (j < nb && !by_key_value(&b[j], &g))
      j++, cb++;
    if (ca == cb)
      continue;
    if (!d->first) {
      d->first = g;
      d->first_ref = ca;
      d->first_crash = cb;
    }
    d->missing += ca > cb ? ca - cb : 0;
    d->extra += cb > ca ? cb - ca : 0;
  }
}

/* @returns 1 if topic @p a (reference) and @p b (crash) differ. */
static int topic_diff(const verify_topic_t *a, const verify_topic_t *b,
                      diff_t *d) {
  const verify_rec_t **sa = sorted(a, by_key_value);
  const verify_rec_t **sb = sorted(b, by_key_value);
  int nomem = !sa || !sb;

  memset(d, 0, sizeof(*d));
  if (!nomem)
    multiset_diff(sa, a->n, sb, b->n, d);
  else
    fprintf(stderr, "ksnap verify: out of memory comparing %s\n", a->base);
  free(sa);
  free(sb);
  return nomem || d->missing || d->extra; /* no memory: not a pass */
}

int verify_out_equal(const verify_run_t *a, const verify_run_t *b) {
  diff_t d;

  for (size_t i = 0; i < a->noutputs; i++)
    if (topic_diff(&a->outputs[i], &b->outputs[i], &d))
      return 0;
  return 1;
}

/* Prints @p s quoted, non-printable bytes as \xNN, cut after @p max. */
static void show_to(FILE *fp, int has, const char *s, size_t n, size_t max) {
  if (!has) {
    fputs("(none)", fp);
    return;
  }
  fputc('"', fp);
  for (size_t i = 0; i < n && i < max; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '"' || c == '\\')
      fprintf(fp, "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      fprintf(fp, "\\x%02x", c);
    else
      fputc(c, fp);
  }
  fprintf(fp, "%s\"", n > max ? "..." : "");
}

static void show(int has, const char *s, size_t n) {
  show_to(stdout, has, s, n, SHOW_MAX);
}

int verify_out_save(const verify_run_t *run) {
  int rc = 0;

  for (size_t i = 0; i < run->noutputs; i++) {
    const verify_topic_t *t = &run->outputs[i];
    const verify_rec_t **v = sorted(t, by_key_seq);
    char path[4400];
    FILE *fp;
    snprintf(path, sizeof(path), "%s/%s.out", run->dir, t->base);
    if (!v || !(fp = fopen(path, "w"))) {
      free(v);
      rc = -1;
      continue;
    }
    for (size_t j = 0; j < t->n; j++) {
      show_to(fp, v[j]->has_key, v[j]->key, v[j]->key_len, (size_t)-1);
      fputc(' ', fp);
      show_to(fp, v[j]->has_value, v[j]->value, v[j]->value_len,
              (size_t)-1);
      fputc('\n', fp);
    }
    rc |= fclose(fp) ? -1 : 0;
    free(v);
  }
  return rc;
}

static void show_first(const char *topic, const diff_t *d) {
  const verify_rec_t *r = d->first;

  if (!r)
    return;
  printf("  first differing record: topic %s, key ", topic);
  show(r->has_key, r->key, r->key_len);
  printf(", value ");
  show(r->has_value, r->value, r->value_len);
  printf(": %zu in the reference run, %zu in the crash run\n", d->first_ref,
         d->first_crash);
}

void verify_out_report(const verify_run_t *ref, const verify_run_t *crash) {
  int shown = 0;
  diff_t d;

  for (size_t i = 0; i < ref->noutputs; i++) {
    const verify_topic_t *a = &ref->outputs[i], *b = &crash->outputs[i];
    int differ = topic_diff(a, b, &d);
    printf("  topic %s: %zu records in the reference run, %zu in the crash "
           "run", a->base, a->n, b->n);
    if (differ)
      printf(": %zu missing and %zu extra in the crash run\n", d.missing,
             d.extra);
    else
      printf(", the same\n");
    if (differ && !shown++)
      show_first(a->base, &d);
    if (differ)
      printf("  both runs' records, by key in read order: %s/%s.out and "
             "%s/%s.out\n", ref->dir, a->base, crash->dir, a->base);
  }
}
