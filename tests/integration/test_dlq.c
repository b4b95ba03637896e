/*
 * Poison records on the real broker and S3 server: the word count of
 * libksnap_test_poison.so (split fails on a line with "POISON" before it
 * emits; count fails on a word poison* after it wrote its state and
 * emitted) run by `ksnap run` with errors.tolerance=all.
 *  - with a dead-letter topic: the sink's read_committed content is the
 *    failure-free word count of the good records (each word's counts
 *    exactly 1..n, no poison word), and the dead-letter topic's holds
 *    every poison line (from split) and every poison word (from count)
 *    exactly once, with their context headers; the checkpoint statistics
 *    count them, and count's state in the final checkpoint has no entry
 *    for a poison word (what a failed record wrote was undone); a second
 *    `ksnap run --input` of the finished job is refused before it
 *    produces, and changes nothing;
 *  - without a dead-letter topic: the same output, the failed records
 *    only counted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clitest.h"
#include "kafka_testutil.h"
#include "testnames.h"
#include "testutil.h"

#define NWORDS 8
#define NPOISON 3   /* poison1 .. poison3: fail in count */
#define MAXLINES 4000

static const char *const words[NWORDS] = {"one",  "two", "three", "four",
                                          "five", "six", "seven", "eight"};

/* The model of one or more inputs: counts of the good words, the poison
 * lines (for split), the poison words in good lines (for count). */
typedef struct model_s {
  long counts[NWORDS];
  long poison_words[NPOISON];
  char *poison_lines[MAXLINES];
  size_t npoison_lines;
} model_t;

/* Writes @p lines lines to @p path, drawn from @p seed, into @p m. */
static void make_input(const char *path, int lines, unsigned seed,
                       model_t *m) {
  FILE *f = fopen(path, "w");

  ck_assert_ptr_nonnull(f);
  for (int l = 0; l < lines; l++) {
    char line[256];
    int n = 1 + rand_r(&seed) % 5, len = 0, bad = rand_r(&seed) % 20 == 0;
    long add[NWORDS] = {0}, padd[NPOISON] = {0};
    for (int w = 0; w < n; w++) {
      int r = rand_r(&seed) % (NWORDS + 1);
      if (r < NWORDS) {
        add[r]++;
        len += snprintf(line + len, sizeof(line) - (size_t)len, "%s%s",
                        w ? " " : "", words[r]);
      } else {
        int p = rand_r(&seed) % NPOISON;
        padd[p]++;
        len += snprintf(line + len, sizeof(line) - (size_t)len,
                        "%spoison%d", w ? " " : "", p + 1);
      }
    }
    if (bad) { /* unique, so that each one can be found once */
      len += snprintf(line + len, sizeof(line) - (size_t)len, " POISON%u-%d",
                      seed % 1000, l);
      ck_assert_uint_lt(m->npoison_lines, MAXLINES);
      m->poison_lines[m->npoison_lines++] = strdup(line);
    }
    for (int i = 0; !bad && i < NWORDS; i++)
      m->counts[i] += add[i];
    for (int i = 0; !bad && i < NPOISON; i++)
      m->poison_words[i] += padd[i];
    fprintf(f, "%s\n", line);
  }
  fclose(f);
}

static void model_free(model_t *m) {
  for (size_t i = 0; i < m->npoison_lines; i++)
    free(m->poison_lines[i]);
}

typedef struct fix_s {
  char *dir, *job, *src, *sink, *dlq;
  char path[512];
} fix_t;

static void run_cli(const char *env, const char *args) {
  char *out, *err;
  int rc = ksnap_test_cli(env, args, &out, &err);

  ck_assert_msg(rc == 0, "ksnap %s: exit %d\nstdout:\n%s\nstderr:\n%s", args,
                rc, out, err);
  free(out);
  free(err);
}

/* A job of the poison word count; @p dlq: with a dead-letter topic. */
static void fix_setup(fix_t *f, const char *name, int dlq) {
  char props[4096], ckpt[600], args[2048];
  const char *lib = KSNAP_BINARY_DIR "/tests/operators/"
                                     "libksnap_test_poison.so";

  f->dir = ksnap_test_tmpdir(name);
  f->job = ksnap_test_unique_name(name);
  f->src = ksnap_test_unique_name("dlq-lines");
  f->sink = ksnap_test_unique_name("dlq-counts");
  f->dlq = ksnap_test_unique_name("dlq-dead");
  snprintf(f->path, sizeof(f->path), "%s/job.properties", f->dir);
  snprintf(ckpt, sizeof(ckpt), "s3://%s/dlq/%s",
           ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"), f->job);
  snprintf(props, sizeof(props),
           "kafka.transaction.timeout.ms=60000\n"
           "execution.checkpointing.interval=1s\n"
           "execution.checkpointing.timeout=30s\n"
           "errors.tolerance=all\n"
           "%s%s%s"
           "errors.deadletterqueue.context.headers.enable=true\n"
           "stage.split.operator=%s:split\n"
           "stage.split.parallelism=2\n"
           "stage.split.input=source:%s\n"
           "stage.count.operator=%s:count\n"
           "stage.count.parallelism=2\n"
           "stage.count.input=stage:split\n"
           "stage.count.output=sink:%s\n",
           dlq ? "errors.deadletterqueue.topic.name=" : "", dlq ? f->dlq : "",
           dlq ? "\n" : "", lib, f->src, lib, f->sink);
  ksnap_test_job_file(f->path, f->job, ckpt, props);
  snprintf(args, sizeof(args), "topics create %s %s:2 %s:2 %s:2", f->path,
           f->src, f->sink, f->dlq);
  run_cli("", args);
}

static void fix_teardown(fix_t *f) {
  ksnap_test_rmtree(f->dir);
  free(f->dir);
  free(f->job);
  free(f->src);
  free(f->sink);
  free(f->dlq);
}

static void run_input(fix_t *f, const char *input) {
  char args[2048];

  snprintf(args, sizeof(args), "run --input %s %s", input, f->path);
  run_cli("", args);
}

/* Every partition of @p topic, read_committed, into one list. */
static ksnap_test_records_t *consume(const char *topic) {
  const char *bs = ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  ksnap_test_records_t *all = calloc(1, sizeof(*all));

  ck_assert_ptr_nonnull(all);
  for (int p = 0; p < 2; p++) {
    ksnap_test_records_t *r = ksnap_test_consume_all(bs, topic, p,
                                                     "read_committed");
    for (size_t i = 0; i < r->cnt; i++) {
      size_t n = all->cnt + 1;
      all->values = realloc(all->values, n * sizeof(char *));
      all->keys = realloc(all->keys, n * sizeof(char *));
      all->headers = realloc(all->headers, n * sizeof(char *));
      all->offsets = realloc(all->offsets, n * sizeof(int64_t));
      ck_assert(all->values && all->keys && all->headers && all->offsets);
      all->values[all->cnt] = r->values[i];
      all->keys[all->cnt] = r->keys[i];
      all->headers[all->cnt] = r->headers[i];
      all->offsets[all->cnt] = r->offsets[i];
      all->cnt = n;
      r->values[i] = r->keys[i] = r->headers[i] = NULL;
    }
    ksnap_test_records_free(r);
  }
  return all;
}

/* The value of header @p name in "name=value\n" text, copied into @p out
 * ("" if absent). */
static const char *header(const char *hdrs, const char *name, char *out,
                          size_t size) {
  size_t n = strlen(name);

  out[0] = '\0';
  for (const char *p = hdrs; p && *p; p = strchr(p, '\n') + 1) {
    const char *end = strchr(p, '\n');
    if (!strncmp(p, name, n) && p[n] == '=') {
      snprintf(out, size, "%.*s", (int)(end - p - n - 1), p + n + 1);
      return out;
    }
    if (!end)
      break;
  }
  return out;
}

/* The sink: each good word's counts exactly 1..n, in order; nothing
 * else (no poison word). */
static void check_sink(const fix_t *f, const model_t *m) {
  ksnap_test_records_t *r = consume(f->sink);
  long seen[NWORDS] = {0};
  size_t total = 0;

  for (size_t i = 0; i < r->cnt; i++) {
    int w = 0;
    ck_assert_ptr_nonnull(r->keys[i]);
    while (w < NWORDS && strcmp(words[w], r->keys[i]))
      w++;
    ck_assert_msg(w < NWORDS, "unexpected key %s (value %s) in the sink",
                  r->keys[i], r->values[i]);
    ck_assert_msg(atol(r->values[i]) == seen[w] + 1,
                  "%s: value %s after %ld: duplicate or gap", r->keys[i],
                  r->values[i], seen[w]);
    seen[w]++;
  }
  for (int w = 0; w < NWORDS; w++) {
    ck_assert_msg(seen[w] == m->counts[w], "%s: %ld committed counts, "
                  "model %ld", words[w], seen[w], m->counts[w]);
    total += (size_t)seen[w];
  }
  ck_assert_uint_eq(total, r->cnt);
  ksnap_test_records_free(r);
}

/* The dead-letter topic: every poison line once (split), every poison
 * word of a good line (count), with the context headers. */
static void check_dlq(const fix_t *f, const model_t *m, size_t *totalp) {
  ksnap_test_records_t *r = consume(f->dlq);
  int found[MAXLINES] = {0};
  long words_seen[NPOISON] = {0};
  char stage[32], topic[256], code[32], msg[512], off[32], part[16],
      want[300];

  for (size_t i = 0; i < r->cnt; i++) {
    header(r->headers[i], "ksnap.errors.stage", stage, sizeof(stage));
    header(r->headers[i], "ksnap.errors.topic", topic, sizeof(topic));
    header(r->headers[i], "ksnap.errors.code", code, sizeof(code));
    header(r->headers[i], "ksnap.errors.message", msg, sizeof(msg));
    header(r->headers[i], "ksnap.errors.offset", off, sizeof(off));
    header(r->headers[i], "ksnap.errors.partition", part, sizeof(part));
    ck_assert_str_eq(code, "OPERATOR");
    ck_assert_msg(*off && *part, "no offset/partition: %s", r->headers[i]);
    if (!strcmp(stage, "split")) {
      size_t k = 0;
      ck_assert_str_eq(topic, f->src);
      snprintf(want, sizeof(want), "split: poison line at offset %s", off);
      ck_assert_str_eq(msg, want);
      while (k < m->npoison_lines && strcmp(m->poison_lines[k], r->values[i]))
        k++;
      ck_assert_msg(k < m->npoison_lines, "not a poison line: %s",
                    r->values[i]);
      ck_assert_msg(!found[k]++, "poison line twice: %s", r->values[i]);
    } else {
      int p;
      ck_assert_str_eq(stage, "count");
      snprintf(want, sizeof(want), "%s.split", f->job);
      ck_assert_str_eq(topic, want);
      ck_assert_ptr_nonnull(r->keys[i]);
      ck_assert_int_eq(sscanf(r->keys[i], "poison%d", &p), 1);
      ck_assert_str_eq(r->values[i], "1");
      snprintf(want, sizeof(want), "count: poison word \"%s\"", r->keys[i]);
      ck_assert_str_eq(msg, want);
      words_seen[p - 1]++;
    }
  }
  for (size_t k = 0; k < m->npoison_lines; k++)
    ck_assert_msg(found[k] == 1, "poison line missing: %s",
                  m->poison_lines[k]);
  for (int p = 0; p < NPOISON; p++)
    ck_assert_msg(words_seen[p] == m->poison_words[p], "poison%d: %ld in "
                  "the dead-letter topic, model %ld", p + 1, words_seen[p],
                  m->poison_words[p]);
  *totalp = r->cnt;
  ksnap_test_records_free(r);
}

/* `ksnap checkpoints list --json`: the latest completed checkpoint and
 * its failed-record counts. */
static long latest_counts(const fix_t *f, long *failed, long *dead) {
  char args[1024], *out, *err, *p;
  long id = -1;

  snprintf(args, sizeof(args), "checkpoints list %s --json", f->path);
  ck_assert_msg(ksnap_test_cli("", args, &out, &err) == 0, "%s", err);
  ck_assert_ptr_nonnull(p = strstr(out, "\"latest\": {\"completed\": "));
  ck_assert_int_eq(sscanf(p, "\"latest\": {\"completed\": %ld", &id), 1);
  ck_assert_ptr_nonnull(p = strstr(p, "\"records_failed\": "));
  ck_assert_int_eq(sscanf(p, "\"records_failed\": %ld, "
                          "\"records_dead_lettered\": %ld", failed, dead), 2);
  free(out);
  free(err);
  return id;
}

/* count's state in checkpoint @p id: no key of a poison word. */
static void check_no_poison_state(const fix_t *f, long id) {
  char env[1024], args[1024], *out, *err;
  size_t entries = 0;

  snprintf(env, sizeof(env), "AWS_ACCESS_KEY_ID=%s AWS_SECRET_ACCESS_KEY=%s",
           ksnap_test_require_env("KSNAP_TEST_S3_ACCESS_KEY"),
           ksnap_test_require_env("KSNAP_TEST_S3_SECRET_KEY"));
  snprintf(args, sizeof(args),
           "inspect --state --endpoint %s s3://%s/dlq/%s/%s/chk-%ld",
           ksnap_test_require_env("KSNAP_TEST_S3_ENDPOINT"),
           ksnap_test_require_env("KSNAP_TEST_S3_BUCKET"), f->job, f->job,
           id);
  ck_assert_msg(ksnap_test_cli(env, args, &out, &err) == 0, "%s", err);
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
    if (strstr(line, "\"state\":\"count\"")) {
      entries++;
      ck_assert_msg(!strstr(line, "poison"),
                    "a failed record's state write survived: %s", line);
    }
  ck_assert_uint_eq(entries, NWORDS); /* every good word has its count */
  free(out);
  free(err);
}

START_TEST(poison_records_to_the_dead_letter_topic_exactly_once) {
  fix_t f;
  model_t m;
  char input[600];
  size_t dead;
  long id, failed, dl;

  memset(&m, 0, sizeof(m));
  fix_setup(&f, "dlq", 1);
  snprintf(input, sizeof(input), "%s/input1.txt", f.dir);
  make_input(input, 1500, 11, &m);
  run_input(&f, input);
  check_sink(&f, &m);
  check_dlq(&f, &m, &dead);
  ck_assert_uint_eq(dead, m.npoison_lines + (size_t)(m.poison_words[0] +
                                                     m.poison_words[1] +
                                                     m.poison_words[2]));
  id = latest_counts(&f, &failed, &dl);
  ck_assert_int_eq(dl, (long)dead);
  ck_assert_int_eq(failed, (long)dead);
  check_no_poison_state(&f, id);
  /* the bounded run FINISHED the job: a second `ksnap run --input` of it
   * is refused before it produces anything (its coordinator would run
   * nothing), and the outputs stay as they were */
  {
    model_t m2;
    char args[2048], want[512], *out, *err;
    memset(&m2, 0, sizeof(m2));
    snprintf(input, sizeof(input), "%s/input2.txt", f.dir);
    make_input(input, 800, 23, &m2);
    model_free(&m2);
    snprintf(args, sizeof(args), "run --input %s %s", input, f.path);
    ck_assert_int_eq(ksnap_test_cli("", args, &out, &err), 1);
    snprintf(want, sizeof(want), "ksnap run: job %s finished (final "
             "checkpoint ", f.job);
    ck_assert_msg(strstr(err, want), "%s", err);
    ck_assert_msg(strstr(err, "so --input is not produced; give the run a "
                              "new job.name"), "%s", err);
    free(out);
    free(err);
  }
  check_sink(&f, &m);
  check_dlq(&f, &m, &dead);
  ck_assert_int_eq(latest_counts(&f, &failed, &dl), id);
  model_free(&m);
  fix_teardown(&f);
}
END_TEST

START_TEST(tolerated_records_without_a_dead_letter_topic_are_counted) {
  fix_t f;
  model_t m;
  char input[600];
  long failed, dl;

  memset(&m, 0, sizeof(m));
  fix_setup(&f, "dlq-none", 0);
  snprintf(input, sizeof(input), "%s/input.txt", f.dir);
  make_input(input, 600, 5, &m);
  run_input(&f, input);
  check_sink(&f, &m);
  latest_counts(&f, &failed, &dl);
  ck_assert_int_eq(failed, (long)m.npoison_lines + m.poison_words[0] +
                               m.poison_words[1] + m.poison_words[2]);
  ck_assert_int_eq(dl, 0);
  model_free(&m);
  fix_teardown(&f);
}
END_TEST

int main(void) {
  Suite *s = suite_create("dlq");
  TCase *tc = tcase_create("dlq");

  ksnap_test_require_env("KSNAP_TEST_BOOTSTRAP");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, poison_records_to_the_dead_letter_topic_exactly_once);
  tcase_add_test(tc, tolerated_records_without_a_dead_letter_topic_are_counted);
  suite_add_tcase(s, tc);
  return ksnap_test_run(s);
}
