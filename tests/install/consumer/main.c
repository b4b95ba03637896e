/*
 * A program that embeds an installed ksnap (ksnap/ksnap.h only): it
 * registers a word count's two operators by function pointer (no shared
 * library), builds the job from a .properties file and from code, runs
 * the whole job in this process (ksnap/run.h), stops it once its input is
 * processed and committed, and prints its checkpoint statistics.
 *
 *   consumer                        checks the library's version only
 *   consumer JOB.properties NLINES  runs the job until NLINES lines of its
 *                                   source topic were read and two
 *                                   checkpoints completed after that
 *
 * The job file names the topics, the broker and the checkpoint directory;
 * the operators and the checkpoint interval are set from code. SIGINT or
 * SIGTERM stop the run (ksnap_run_stop() is async-signal-safe).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime() */

#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ksnap/ksnap.h>

#define TIMEOUT_S 90

/* split: a line -> (word, "1") per word (runs of letters and digits). */
static ksnap_err_t split_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  const char *s = rec->value;
  size_t start = 0;
  ksnap_err_t err;

  (void)inst;
  for (size_t i = 0; i <= rec->value_len; i++) {
    if (i < rec->value_len && isalnum((unsigned char)s[i]))
      continue;
    if (i > start &&
        (err = ksnap_ctx_emit(ctx, s + start, i - start, "1", 1, NULL, 0,
                              error)))
      return err;
    start = i + 1;
  }
  return KSNAP_ERR_OK;
}

static const ksnap_operator_t split_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "split",
    .process = split_process,
};

/* count: keyed state "n" per word; emits (word, running count). */
static ksnap_err_t count_open(ksnap_operator_ctx_t *ctx, void **instp,
                              ksnap_error_t *error) {
  int *id = malloc(sizeof(*id));
  ksnap_state_t *state;
  ksnap_err_t err;

  if (!id)
    return ksnap_error_set(error, KSNAP_ERR_NOMEM, "out of memory");
  if ((err = ksnap_ctx_state(ctx, &state, error)) ||
      (err = ksnap_state_register(state, "n", KSNAP_STATE_VALUE, 0, id,
                                  error))) {
    free(id);
    return err;
  }
  *instp = id;
  return KSNAP_ERR_OK;
}

static void count_close(ksnap_operator_ctx_t *ctx, void *inst) {
  (void)ctx;
  free(inst);
}

static ksnap_err_t count_process(ksnap_operator_ctx_t *ctx, void *inst,
                                 const ksnap_record_t *rec,
                                 ksnap_error_t *error) {
  int id = *(int *)inst;
  ksnap_state_t *state;
  const void *v;
  size_t len;
  char buf[32];
  long long n = 1;
  ksnap_err_t err;

  if ((err = ksnap_ctx_state(ctx, &state, error)))
    return err;
  if (!ksnap_state_value_get(state, id, &v, &len) && len < sizeof(buf)) {
    memcpy(buf, v, len);
    buf[len] = '\0';
    n += strtoll(buf, NULL, 10);
  }
  len = (size_t)snprintf(buf, sizeof(buf), "%lld", n);
  if ((err = ksnap_state_value_put(state, id, buf, len, error)))
    return err;
  return ksnap_ctx_emit(ctx, rec->key, rec->key_len, buf, len, NULL, 0,
                        error);
}

static const ksnap_operator_t count_op = {
    .abi_version = KSNAP_OPERATOR_ABI_VERSION,
    .name = "count",
    .open = count_open,
    .process = count_process,
    .close = count_close,
};

static ksnap_run_t *volatile the_run;

static void on_signal(int sig) {
  (void)sig;
  if (the_run)
    ksnap_run_stop(the_run);
}

static int fail(const char *what, const char *msg) {
  fprintf(stderr, "consumer: %s: %s\n", what, msg);
  return 1;
}

/* The operators from code; the rest from @p path. */
static int build_conf(const char *path, ksnap_conf_t **confp) {
  static const char *const set[][2] = {
      {"stage.split.operator", "split"},
      {"stage.count.operator", "count"},
      {"execution.checkpointing.interval", "500ms"},
  };
  char errstr[512];

  if (!(*confp = ksnap_conf_new()))
    return fail("ksnap_conf_new", "out of memory");
  if (ksnap_conf_load_file(*confp, path, NULL, NULL))
    return fail(path, "refused (problems logged above)");
  for (size_t i = 0; i < sizeof(set) / sizeof(set[0]); i++)
    if (ksnap_conf_set(*confp, set[i][0], set[i][1], errstr, sizeof(errstr)))
      return fail("ksnap_conf_set", errstr);
  return 0;
}

/* 1 once @p nlines were read and two checkpoints triggered after that
 * completed (the second leaves the sinks time to commit the first). */
static int done(const ksnap_run_stats_t *st, long long nlines,
                long long *read_ms, long long *first) {
  struct timespec ts;
  long long now;

  clock_gettime(CLOCK_REALTIME, &ts);
  now = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;

  if (*read_ms < 0 && st->records_in >= nlines)
    *read_ms = now;
  if (*read_ms < 0 || st->checkpoints_completed == 0 ||
      st->last_completed_ms - st->last_duration_ms < *read_ms)
    return 0;
  if (*first < 0)
    *first = st->last_completed_id;
  return st->last_completed_id > *first;
}

static int run_job(ksnap_conf_t *conf, long long nlines) {
  ksnap_run_stats_t st;
  ksnap_error_t error;
  ksnap_run_t *run;
  long long read_ms = -1, first = -1;
  time_t deadline = time(NULL) + TIMEOUT_S;

  if (ksnap_run_start(conf, KSNAP_RUN_ALL, NULL, &run, &error))
    return fail("ksnap_run_start", error.msg);
  the_run = run;
  do {
    ksnap_run_stats(run, &st, sizeof(st));
    if (done(&st, nlines, &read_ms, &first) || time(NULL) > deadline)
      ksnap_run_stop(run);
  } while (!ksnap_run_wait(run, 100));
  the_run = NULL;
  ksnap_run_stats(run, &st, sizeof(st));
  printf("consumer: %d tasks, %lld records in, %lld out; checkpoints: "
         "%lld completed, %lld failed, last %lld (%lld ms, %lld bytes)\n",
         (int)st.tasks, (long long)st.records_in, (long long)st.records_out,
         (long long)st.checkpoints_completed,
         (long long)st.checkpoints_failed, (long long)st.last_completed_id,
         (long long)st.last_duration_ms, (long long)st.last_state_size);
  if (ksnap_run_result(run, &error)) {
    ksnap_run_destroy(run);
    return fail("the run", error.msg);
  }
  ksnap_run_destroy(run);
  if (first < 0)
    return fail("the run", "stopped before its input was processed");
  return 0;
}

int main(int argc, char **argv) {
  ksnap_conf_t *conf = NULL;
  ksnap_error_t error;
  int rc;

  printf("ksnap %s\n", ksnap_version());
  if (strcmp(ksnap_version(), KSNAP_VERSION_STR))
    return fail("version", "the header and the library differ");
  if (argc == 1)
    return 0;
  if (argc != 3)
    return fail("usage", "consumer [JOB.properties NLINES]");
  if (ksnap_operator_register("split", &split_op, &error) ||
      ksnap_operator_register("count", &count_op, &error))
    return fail("ksnap_operator_register", error.msg);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  rc = build_conf(argv[1], &conf);
  if (!rc)
    rc = run_job(conf, atoll(argv[2]));
  ksnap_conf_destroy(conf);
  return rc;
}
