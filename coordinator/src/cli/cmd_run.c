/*
 * `ksnap run JOB.properties [--input FILE] [--duration D]`: the whole job
 * in one process with the public API (ksnap/run.h, KSNAP_RUN_ALL): the
 * coordinator and every task as threads. With
 * kafka.bootstrap.servers=embedded it hosts librdkafka's mock cluster
 * (connectors/src/kafka/embedded.h), creates the job's topics on it and
 * defaults state.checkpoints.dir to a fresh local directory.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_run.h"
#include "kafka/devio.h"
#include "kafka/embedded.h"
#include "ksnap/job.h"
#include "ksnap/log.h"
#include "kafka/topics.h"
#include "base/util.h"

#define RUN_TOPICS_TIMEOUT_MS 30000
#define RUN_IO_TIMEOUT_MS 60000
#define RUN_PLAIN_EVERY_MS 5000
/* --input on the embedded broker: lines produced but not yet read by the
 * source tasks, at most (the mock cluster keeps ~5 MB per partition and
 * drops older data: an input produced all at once would be lost). */
#define RUN_EMBEDDED_WINDOW 10000

typedef struct run_opts_s {
  const char *file, *input;
  int64_t duration_ms; /* 0: none */
  cli_restore_opts_t restore;
} run_opts_t;

static void usage(FILE *out) {
  fprintf(out,
          "Usage: ksnap run [--input FILE] [--duration D] [--from-savepoint URL\n"
          "                 [--allow-non-restored-state]] JOB.properties\n"
          "\n"
          "Runs the whole job in this process: the checkpoint coordinator\n"
          "and every task of the job as threads, for development and small\n"
          "deployments. Stops cleanly on SIGINT/SIGTERM (exit 0).\n"
          "\n"
          "With kafka.bootstrap.servers=embedded it starts an embedded Kafka\n"
          "cluster (librdkafka's mock cluster) in this process, creates the\n"
          "job's source, sink, exchange and control topics on it, and\n"
          "defaults state.checkpoints.dir to a new directory under $TMPDIR\n"
          "(or /tmp). The embedded cluster does NOT enforce read_committed\n"
          "or fencing: it demonstrates the mechanics of checkpoints, not\n"
          "exactly-once guarantees. Use a real Kafka broker for those.\n"
          "It keeps about 5 MB per partition: --input is paced to the\n"
          "source tasks (at most 10000 lines ahead).\n"
          "\n"
          "Operator libraries are looked up next to the job file, then along\n"
          "$KSNAP_OPERATOR_PATH (directories separated by ':').\n"
          "\n"
          "Options:\n"
          "  --input FILE    produce FILE's lines to the job's (single) source\n"
          "                  topic; the run ends once they are processed and\n"
          "                  a checkpoint completed after them\n"
          "  --duration D    end the run after D (e.g. 30s, 2min)\n"
          CLI_RESTORE_OPTS_HELP
          "A run that ends by itself (--input or --duration) prints the\n"
          "sink topics' committed content, the last value per key, as\n"
          "\"TOPIC KEY VALUE\" lines sorted by key, on stdout.\n"
          "On a terminal a progress line shows records in/out and the last\n"
          "completed checkpoint; otherwise plain log lines.\n");
}

static int parse_args(int argc, char **argv, run_opts_t *o) {
  int r;

  memset(o, 0, sizeof(*o));
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--input") && i + 1 < argc) {
      o->input = argv[++i];
    } else if (!strcmp(argv[i], "--duration") && i + 1 < argc) {
      if (cli_parse_duration(argv[++i], &o->duration_ms) ||
          o->duration_ms <= 0) {
        fprintf(stderr, "ksnap run: --duration: \"%s\" is not a duration "
                        "(e.g. 30s, 2min)\n", argv[i]);
        return KSNAP_EXIT_USAGE;
      }
    } else if ((r = cli_restore_opt(argc, argv, &i, &o->restore))) {
      if (r < 0)
        return KSNAP_EXIT_USAGE;
    } else if (argv[i][0] == '-' || o->file) {
      usage(stderr);
      return KSNAP_EXIT_USAGE;
    } else {
      o->file = argv[i];
    }
  }
  if (!o->file) {
    usage(stderr);
    return KSNAP_EXIT_USAGE;
  }
  return KSNAP_EXIT_OK;
}

/* Creates the job's source and sink topics on the embedded cluster: each
 * with the largest parallelism of its readers or writers. */
static int create_external_topics(const ksnap_conf_t *conf,
                                  const ksnap_job_t *job) {
  ksnap_topic_spec_t specs[64];
  size_t n = cli_job_external_topics(job, specs, 64);
  ksnap_error_t error;

  ksnap_error_clear(&error);
  if (ksnap_topics_ensure(conf, specs, n, RUN_TOPICS_TIMEOUT_MS, &error)) {
    fprintf(stderr, "ksnap run: %s\n", error.msg);
    return -1;
  }
  return 0;
}

/* 1 once the input is processed (@p done_ms: when every line was read)
 * and two checkpoints triggered after that completed (the second leaves
 * the sinks time to commit the first); @p first_after remembers the
 * first of them. */
static int input_done(const ksnap_run_stats_t *st, int64_t done_ms,
                      int64_t *first_after) {
  if (done_ms < 0 || st->checkpoints_completed <= 0 ||
      st->last_completed_ms - st->last_duration_ms < done_ms)
    return 0;
  if (*first_after < 0)
    *first_after = st->last_completed_id;
  return st->last_completed_id > *first_after;
}

/* Runs until a signal, the duration, or (with --input) the input being
 * processed (input_done()).
 * @returns 1 if the run ended by itself, 0 on a signal, -1 on failure. */
static int drive(ksnap_run_t *r, const run_opts_t *o, int64_t input_cnt) {
  int tty = isatty(STDERR_FILENO);
  int64_t start = ksnap__wallclock_ms(), next_line = 0, done_ms = -1;
  int64_t first_after = -1;
  ksnap_run_stats_t st;
  ksnap_error_t error;
  int ended = 0;

  while (!cli_stop_requested && !ended) {
    int64_t now = ksnap__wallclock_ms();
    if (ksnap_run_wait(r, 0)) { /* ended by itself */
      if (tty)
        fputc('\n', stderr);
      if (!ksnap_run_result(r, &error))
        return 1; /* stopped with a savepoint */
      fprintf(stderr, "ksnap run: the job failed: %s\n", error.msg);
      return -1;
    }
    ksnap_run_stats(r, &st, sizeof(st));
    if (o->input && done_ms < 0 && st.records_in >= input_cnt)
      done_ms = now;
    ended = input_done(&st, done_ms, &first_after) ||
            (o->duration_ms && now - start >= o->duration_ms);
    if (now >= next_line || ended) {
      cli_run_progress(&st, tty);
      next_line = now + (tty ? 250 : RUN_PLAIN_EVERY_MS);
    }
    if (!ended)
      ksnap_run_wait(r, 100);
  }
  if (tty)
    fputc('\n', stderr);
  if (cli_stop_requested)
    fprintf(stderr, "ksnap run: stopping on a signal\n");
  return ended;
}

typedef struct pace_s {
  ksnap_run_t *run;
  int embedded, tty;
  int64_t next_line;
} pace_t;

/* Shows progress while --input is produced and, on the embedded broker,
 * holds the producer RUN_EMBEDDED_WINDOW lines ahead of the source tasks
 * at most. @returns non-zero to stop producing. */
static int pace(void *opaque, int64_t produced) {
  pace_t *p = opaque;
  ksnap_run_stats_t st;

  for (;;) {
    int64_t now = ksnap__wallclock_ms();
    if (cli_stop_requested || ksnap_run_wait(p->run, 0))
      return 1;
    ksnap_run_stats(p->run, &st, sizeof(st));
    if (now >= p->next_line) {
      cli_run_progress(&st, p->tty);
      p->next_line = now + (p->tty ? 250 : RUN_PLAIN_EVERY_MS);
    }
    if (!p->embedded || produced - st.records_in <= RUN_EMBEDDED_WINDOW)
      return 0;
    ksnap_run_wait(p->run, 50);
  }
}

static int run(ksnap_conf_t *conf, const ksnap_job_t *job,
               const run_opts_t *o, int embedded) {
  ksnap_run_t *r = NULL;
  ksnap_error_t error;
  const char *source = NULL;
  int64_t input_cnt = 0;
  int rc = KSNAP_EXIT_FAIL, ended;

  ksnap_error_clear(&error);
  if (o->input && !(source = cli_job_single_source(job, "run")))
    goto out;
  if (embedded && create_external_topics(conf, job))
    goto out;
  if (ksnap_run_start(conf, KSNAP_RUN_ALL, NULL, &r, &error)) {
    fprintf(stderr, "ksnap run: %s\n", error.msg);
    goto out;
  }
  cli_stop_run_on_signals(r);
  if (o->input) {
    pace_t p = {r, embedded, isatty(STDERR_FILENO), 0};
    ksnap_err_t err = ksnap_devio_produce_file(
        conf, source, o->input, RUN_IO_TIMEOUT_MS, pace, &p, &input_cnt,
        &error);
    if (err == KSNAP_ERR_INTERRUPTED && cli_stop_requested) {
      rc = KSNAP_EXIT_OK; /* a signal while producing */
      goto out;
    }
    if (err && err != KSNAP_ERR_INTERRUPTED) { /* else drive() says why */
      if (p.tty)
        fputc('\n', stderr);
      fprintf(stderr, "ksnap run: --input: %s\n", error.msg);
      goto out;
    }
    fprintf(stderr, "ksnap run: produced %" PRId64 " lines of %s to %s\n",
            input_cnt, o->input, source);
  }
  ended = drive(r, o, input_cnt);
  cli_stop_run_on_signals(NULL);
  ksnap_run_destroy(r);
  r = NULL;
  if (ended < 0)
    goto out;
  if (ended > 0 && cli_run_print_sinks(conf, job, RUN_IO_TIMEOUT_MS))
    goto out;
  rc = KSNAP_EXIT_OK;
out:
  cli_stop_run_on_signals(NULL);
  ksnap_run_destroy(r);
  return rc;
}

/* Starts the embedded cluster and points the job at it. */
static ksnap_embedded_t *embedded_start(ksnap_conf_t *conf) {
  ksnap_embedded_t *emb;
  ksnap_error_t error;
  char errstr[512];

  fprintf(stderr,
          "ksnap run: WARNING: kafka.bootstrap.servers=embedded runs "
          "librdkafka's mock cluster in this process. It does NOT enforce "
          "read_committed or fencing: this run demonstrates the mechanics "
          "of checkpoints, not exactly-once guarantees (use a real Kafka "
          "broker for those).\n");
  ksnap_error_clear(&error);
  if (!(emb = ksnap_embedded_start(&error))) {
    fprintf(stderr, "ksnap run: %s\n", error.msg);
    return NULL;
  }
  fprintf(stderr, "ksnap run: embedded broker at %s\n",
          ksnap_embedded_bootstraps(emb));
  if (ksnap_conf_set(conf, "kafka.bootstrap.servers",
                     ksnap_embedded_bootstraps(emb), errstr,
                     sizeof(errstr))) {
    fprintf(stderr, "ksnap run: %s\n", errstr);
    ksnap_embedded_stop(emb);
    return NULL;
  }
  return emb;
}

int cmd_run(int argc, char **argv) {
  ksnap_conf_t *conf = NULL;
  ksnap_embedded_t *emb = NULL;
  ksnap_job_t *job = NULL;
  const char *dir = NULL;
  run_opts_t o;
  int rc, embedded, dir_set;

  if (cli_wants_help(argc, argv)) {
    usage(stdout);
    return KSNAP_EXIT_OK;
  }
  if ((rc = parse_args(argc, argv, &o)))
    return rc;
  if ((rc = cli_conf_read(o.file, &conf)))
    return rc;
  if ((rc = cli_restore_apply(&o.restore, conf))) {
    ksnap_conf_destroy(conf);
    return rc;
  }
  rc = KSNAP_EXIT_FAIL;
  embedded = cli_is_embedded(conf);
  dir_set = ksnap_conf_is_set(conf, "state.checkpoints.dir");
  /* every check before the embedded cluster or anything else starts */
  if (cli_job_check(conf, o.file, CLI_JOB_EMBEDDED_RUN, &job) ||
      cli_log_from_conf(conf))
    goto out;
  if (embedded && !(emb = embedded_start(conf)))
    goto out;
  if (embedded && !dir_set &&
      !ksnap_conf_get_str(conf, "state.checkpoints.dir", &dir))
    fprintf(stderr, "ksnap run: checkpoints go to %s\n", dir);
  if (isatty(STDERR_FILENO) && !ksnap_conf_is_set(conf, "log.level")) {
    /* the progress line shows what the info lines would */
    ksnap_log_set_level(KSNAP_LOG_WARNING);
    fprintf(stderr, "ksnap run: log.level=warning on a terminal (set "
                    "log.level=info in the job file for every log line)\n");
  }
  cli_stop_on_signals();
  rc = run(conf, job, &o, embedded);
out:
  ksnap_job_destroy(job);
  ksnap_conf_destroy(conf);
  ksnap_embedded_stop(emb);
  return rc;
}
