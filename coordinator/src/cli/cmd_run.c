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
#include "control/coord_io.h"
#include "base/util.h"

#define RUN_TOPICS_TIMEOUT_MS 30000
#define RUN_IO_TIMEOUT_MS 60000
#define RUN_PLAIN_EVERY_MS 5000
/* --input on the embedded broker: the file is produced before the job
 * starts (source.stop-at=latest takes the ends then), and the mock cluster
 * keeps ~5 MB per partition and drops older data: a larger file is
 * refused. */
#define RUN_EMBEDDED_MAX_BYTES (4L * 1024 * 1024)

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
          "It keeps about 5 MB per partition: an --input FILE there may\n"
          "have 4 MB at most.\n"
          "\n"
          "Operator libraries are looked up next to the job file, then along\n"
          "$KSNAP_OPERATOR_PATH (directories separated by ':').\n"
          "\n"
          "Options:\n"
          "  --input FILE    produce FILE's lines to the job's (single) source\n"
          "                  topic, then run the job as a bounded one\n"
          "                  (source.stop-at=latest): it ends by itself once\n"
          "                  every task finished, the final checkpoint\n"
          "                  completed and the sinks committed it (FINISHED)\n"
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

/* Runs until a signal, the duration, or the job's end by itself (with
 * --input: FINISHED, or a stop with a savepoint).
 * @returns 1 if the run ended by itself, 0 on a signal, -1 on failure. */
static int drive(ksnap_run_t *r, const run_opts_t *o) {
  int tty = isatty(STDERR_FILENO);
  int64_t start = ksnap__wallclock_ms(), next_line = 0;
  ksnap_run_stats_t st;
  ksnap_error_t error;
  int ended = 0;

  while (!cli_stop_requested && !ended) {
    int64_t now = ksnap__wallclock_ms();
    if (ksnap_run_wait(r, 0)) { /* ended by itself */
      if (tty)
        fputc('\n', stderr);
      if (!ksnap_run_result(r, &error))
        return 1; /* finished, or stopped with a savepoint */
      fprintf(stderr, "ksnap run: the job failed: %s\n", error.msg);
      return -1;
    }
    ksnap_run_stats(r, &st, sizeof(st));
    ended = o->duration_ms && now - start >= o->duration_ms;
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

/* While --input is produced: @returns non-zero to stop (a signal). */
static int pace(void *opaque, int64_t produced) {
  (void)opaque;
  (void)produced;
  return cli_stop_requested;
}

/* Control history callback: the last end of the job (JOB_FINISHED's final
 * checkpoint id, or 0 once a RESTORE follows it). */
static int on_history(void *opaque, const void *buf, size_t len, int64_t ts) {
  int64_t *finished = opaque;
  ksnap_control_record_t rec;
  ksnap_error_t error;

  (void)ts;
  if (ksnap_codec_control_decode(buf, len, &rec, &error))
    return 0;
  if (rec.type == KSNAP_CONTROL_JOB_FINISHED)
    *finished = rec.u.job_finished.checkpoint_id > 0
                    ? rec.u.job_finished.checkpoint_id : 1;
  else if (rec.type == KSNAP_CONTROL_RESTORE)
    *finished = 0;
  ksnap_control_record_cleanup(&rec);
  return 0;
}

/* --input of a job that already FINISHED: its coordinator would run
 * nothing, so the lines would be produced and never read. Refused before
 * they are. @returns 0 (not finished), -1 (finished or unreadable: said). */
static int refuse_finished(const ksnap_conf_t *conf, const ksnap_job_t *job) {
  char topic[512];
  int64_t finished = 0;
  ksnap_error_t error;

  ksnap_error_clear(&error);
  ksnap__coord_topic(topic, sizeof(topic), ksnap_job_name(job),
                     KSNAP_COORD_CONTROL_SUFFIX);
  if (ksnap_topics_ensure_job(conf, NULL, 0, RUN_TOPICS_TIMEOUT_MS, &error) ||
      ksnap__coord_read_history(conf, topic, RUN_IO_TIMEOUT_MS, on_history,
                                &finished, &error)) {
    fprintf(stderr, "ksnap run: %s\n", error.msg);
    return -1;
  }
  if (!finished)
    return 0;
  fprintf(stderr, "ksnap run: job %s finished (final checkpoint %" PRId64
          "): a finished job does not run again, so --input is not "
          "produced; give the run a new job.name\n", ksnap_job_name(job),
          finished);
  return -1;
}

/* --input: FILE's lines to @p source before the job starts, so that the
 * bounded job's ends (source.stop-at=latest) cover them.
 * @returns 0, 1 on a signal, -1 on failure (said). */
static int produce_input(ksnap_conf_t *conf, const char *source,
                         const run_opts_t *o, int embedded) {
  ksnap_error_t error;
  int64_t cnt = 0;
  char errstr[512];
  FILE *f;
  long size = -1;
  ksnap_err_t err;

  ksnap_error_clear(&error);
  if ((f = fopen(o->input, "rb"))) {
    if (!fseek(f, 0, SEEK_END))
      size = ftell(f);
    fclose(f);
  }
  if (embedded && size > RUN_EMBEDDED_MAX_BYTES) {
    fprintf(stderr, "ksnap run: --input %s: %ld bytes, more than the "
            "embedded broker keeps (%ld); use a real Kafka broker\n",
            o->input, size, RUN_EMBEDDED_MAX_BYTES);
    return -1;
  }
  if (ksnap_conf_set(conf, "source.stop-at", "latest", errstr,
                     sizeof(errstr))) {
    fprintf(stderr, "ksnap run: %s\n", errstr);
    return -1;
  }
  err = ksnap_devio_produce_file(conf, source, o->input, RUN_IO_TIMEOUT_MS,
                                 pace, NULL, &cnt, &error);
  if (err == KSNAP_ERR_INTERRUPTED && cli_stop_requested)
    return 1;
  if (err) {
    fprintf(stderr, "ksnap run: --input: %s\n", error.msg);
    return -1;
  }
  fprintf(stderr, "ksnap run: produced %" PRId64 " lines of %s to %s; the "
          "job ends once it finished them\n", cnt, o->input, source);
  return 0;
}

static int run(ksnap_conf_t *conf, const ksnap_job_t *job,
               const run_opts_t *o, int embedded) {
  ksnap_run_t *r = NULL;
  ksnap_error_t error;
  const char *source = NULL;
  int rc = KSNAP_EXIT_FAIL, ended;

  ksnap_error_clear(&error);
  if (o->input && !(source = cli_job_single_source(job, "run")))
    goto out;
  if (embedded && create_external_topics(conf, job))
    goto out;
  if (o->input && refuse_finished(conf, job))
    goto out;
  if (o->input && (ended = produce_input(conf, source, o, embedded))) {
    rc = ended > 0 ? KSNAP_EXIT_OK : KSNAP_EXIT_FAIL; /* > 0: a signal */
    goto out;
  }
  if (ksnap_run_start(conf, KSNAP_RUN_ALL, NULL, &r, &error)) {
    fprintf(stderr, "ksnap run: %s\n", error.msg);
    goto out;
  }
  cli_stop_run_on_signals(r);
  ended = drive(r, o);
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
