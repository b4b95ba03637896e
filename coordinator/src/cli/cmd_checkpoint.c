/*
 * `ksnap checkpoint trigger JOB`, `ksnap savepoint JOB [--stop
 * [--drain]]`: a REQUEST record on the job's ack topic (the coordinator's
 * request channel, no network port needed), then, unless --no-wait, the
 * control topic is followed until the requested checkpoint completes or
 * aborts (with --stop: until the job's JOB_STOPPED record after it; with
 * --drain the savepoint is the one triggered with drain once every input
 * ended, and an aborted one, or one a restore took again, is waited for
 * again: the coordinator retakes it; the stop may name a later one).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "kafka/consumer.h"
#include "control/coord_io.h"
#include "base/util.h"

typedef struct wait_s {
  int savepoint;     /* wait for a savepoint's TRIGGER */
  int stop;          /* and then for JOB_STOPPED */
  int drain;         /* the savepoint is the drain's (TRIGGER drain) */
  int draining;      /* a drain TRIGGER was seen */
  int64_t id;        /* the triggered checkpoint, or NONE */
  int completed, done, failed;
} wait_t;

static int on_control(void *opaque, const void *buf, size_t len,
                      int64_t ts) {
  wait_t *w = opaque;
  ksnap_control_record_t rec;
  ksnap_error_t error;

  (void)ts;
  if (ksnap_codec_control_decode(buf, len, &rec, &error))
    return 0;
  if (rec.type == KSNAP_CONTROL_TRIGGER && w->drain && !w->draining &&
      rec.u.trigger.options.drain) {
    printf("Draining: every input ends at checkpoint %" PRId64 "\n",
           rec.u.trigger.checkpoint_id);
    fflush(stdout);
    w->draining = 1;
  }
  if (rec.type == KSNAP_CONTROL_TRIGGER &&
      (w->id == KSNAP_CHECKPOINT_NONE ||
       (w->drain && rec.u.trigger.checkpoint_id > w->id)) &&
      rec.u.trigger.options.is_savepoint == (w->savepoint != 0) &&
      (!w->drain || rec.u.trigger.options.drain)) {
    w->id = rec.u.trigger.checkpoint_id;
    printf("Triggered %s %" PRId64 "\n",
           w->savepoint ? "savepoint" : "checkpoint", w->id);
  } else if (rec.type == KSNAP_CONTROL_COMPLETE &&
             rec.u.complete.checkpoint_id == w->id) {
    printf("Completed %s %" PRId64 ": %s\n",
           w->savepoint ? "savepoint" : "checkpoint", w->id,
           rec.u.complete.metadata_path);
    fflush(stdout);
    w->completed = 1;
    w->done = !w->stop;
  } else if (rec.type == KSNAP_CONTROL_JOB_STOPPED &&
             (rec.u.job_stopped.checkpoint_id == w->id || w->drain)) {
    w->id = rec.u.job_stopped.checkpoint_id;
    printf("Job stopped with savepoint %" PRId64 ": %s\n", w->id,
           rec.u.job_stopped.savepoint_url);
    w->done = 1;
  } else if (rec.type == KSNAP_CONTROL_ABORT &&
             rec.u.abort.checkpoint_id == w->id) {
    fprintf(stderr, "%s %" PRId64 " aborted: %s%s\n",
            w->savepoint ? "Savepoint" : "Checkpoint", w->id,
            rec.u.abort.reason,
            w->drain ? " (the drain takes it again)" : "");
    if (w->drain)
      w->id = KSNAP_CHECKPOINT_NONE;
    else
      w->done = w->failed = 1;
  }
  ksnap_control_record_cleanup(&rec);
  return w->done;
}

/* A consumer of the control topic positioned at its current end. */
static ksnap_kafka_consumer_t *open_tail(const ksnap_conf_t *conf,
                                         const char *topic,
                                         ksnap_error_t *error) {
  ksnap_kafka_consumer_t *c;
  ksnap_kafka_pos_t pos = {topic, 0, 0};
  int64_t lo;

  if (!(c = ksnap__coord_consumer_open(conf, topic, KSNAP_OFFSET_BEGINNING,
                                       0, error)))
    return NULL;
  if (ksnap__consumer_watermarks(c, topic, 0, &lo, &pos.offset, 10000,
                                 error) ||
      ksnap_kafka_consumer_assign(c, &pos, 1, error)) {
    ksnap_kafka_consumer_destroy(c);
    return NULL;
  }
  return c;
}

static int request(const char *cmd, const char *path,
                   ksnap_request_kind_t kind, int wait, int timeout_s) {
  wait_t w = {kind != KSNAP_REQUEST_CHECKPOINT,
              kind == KSNAP_REQUEST_SAVEPOINT_STOP ||
                  kind == KSNAP_REQUEST_SAVEPOINT_DRAIN,
              kind == KSNAP_REQUEST_SAVEPOINT_DRAIN, 0,
              KSNAP_CHECKPOINT_NONE, 0, 0, 0};
  ksnap_kafka_consumer_t *c = NULL;
  ksnap_conf_t *conf = NULL;
  const char *job = NULL;
  char topic[300], who[300], host[200] = "?";
  ksnap_error_t error;
  int64_t deadline;
  int rc;

  if ((rc = cli_conf_load(path, &conf)) || (rc = cli_log_from_conf(conf))) {
    ksnap_conf_destroy(conf);
    return rc;
  }
  ksnap_conf_get_str(conf, "job.name", &job);
  ksnap__coord_topic(topic, sizeof(topic), job, KSNAP_COORD_CONTROL_SUFFIX);
  gethostname(host, sizeof(host) - 1);
  snprintf(who, sizeof(who), "ksnap-cli@%s:%d", host, (int)getpid());
  if (wait && !(c = open_tail(conf, topic, &error)))
    goto fail;
  if (ksnap_coord_request_send(conf, kind, who, 10000, &error))
    goto fail;
  printf("Requested %s of job %s\n", ksnap_request_kind_name(kind), job);
  rc = KSNAP_EXIT_OK;
  deadline = ksnap__now_us() + (int64_t)timeout_s * 1000000;
  while (c && !w.done && ksnap__now_us() < deadline) {
    if (ksnap__coord_consumer_poll(c, 200, on_control, &w, &error) < 0)
      goto fail;
  }
  if (c && !w.done) {
    fprintf(stderr, "ksnap %s: %s within %d s (is `ksnap coordinator` "
            "running for job %s?)\n", cmd,
            w.id == KSNAP_CHECKPOINT_NONE ? "nothing was triggered"
            : w.completed ? "the savepoint completed but the job did not "
                            "stop (it may still be running)"
                          : "not completed",
            timeout_s, job);
    rc = KSNAP_EXIT_FAIL;
  } else if (w.failed) {
    rc = KSNAP_EXIT_FAIL;
  }
  ksnap_kafka_consumer_destroy(c);
  ksnap_conf_destroy(conf);
  return rc;
fail:
  fprintf(stderr, "ksnap %s: %s\n", cmd, error.msg);
  ksnap_kafka_consumer_destroy(c);
  ksnap_conf_destroy(conf);
  return KSNAP_EXIT_FAIL;
}

/* Parses [--no-wait] [--timeout SEC] [--stop [--drain]]; *stop is 2 with
 * --drain; @returns the path or NULL. */
static const char *parse(int argc, char **argv, int first, int allow_stop,
                         int *wait, int *timeout_s, int *stop) {
  int drain = 0;

  const char *path = NULL;

  for (int i = first; i < argc; i++) {
    if (!strcmp(argv[i], "--no-wait"))
      *wait = 0;
    else if (!strcmp(argv[i], "--timeout") && i + 1 < argc)
      *timeout_s = atoi(argv[++i]);
    else if (allow_stop && !strcmp(argv[i], "--stop"))
      *stop = *stop ? *stop : 1;
    else if (allow_stop && !strcmp(argv[i], "--drain"))
      drain = 1;
    else if (argv[i][0] == '-' || path)
      return NULL;
    else
      path = argv[i];
  }
  if (drain && !*stop)
    return NULL; /* --drain only with --stop */
  if (drain)
    *stop = 2;
  return *timeout_s > 0 ? path : NULL;
}

int cmd_checkpoint(int argc, char **argv) {
  static const char help[] =
      "Usage: ksnap checkpoint trigger JOB.properties [--no-wait] "
      "[--timeout SEC]\n"
      "\n"
      "Asks the running coordinator of the job for a checkpoint now (a\n"
      "REQUEST record on <job>.ksnap.acks). It is triggered as soon as\n"
      "max-concurrent-checkpoints and min-pause allow. Waits (default 60 s)\n"
      "for the first checkpoint triggered after the request (a periodic one\n"
      "may come first: TRIGGER records do not say why) to complete and\n"
      "prints its _metadata path; exit 1 if it aborts or nothing happens\n"
      "in time.\n";
  const char *path;
  int wait = 1, timeout_s = 60, stop = 0;

  if (cli_wants_help(argc, argv)) {
    fputs(help, stdout);
    return KSNAP_EXIT_OK;
  }
  if (argc < 3 || strcmp(argv[1], "trigger") ||
      !(path = parse(argc, argv, 2, 0, &wait, &timeout_s, &stop))) {
    fputs(help, stderr);
    return KSNAP_EXIT_USAGE;
  }
  return request("checkpoint trigger", path, KSNAP_REQUEST_CHECKPOINT, wait,
                 timeout_s);
}

int cmd_savepoint(int argc, char **argv) {
  static const char help[] =
      "Usage: ksnap savepoint JOB.properties [--stop [--drain]] [--no-wait] "
      "[--timeout SEC]\n"
      "\n"
      "Asks the running coordinator of the job for a savepoint: always\n"
      "aligned, full (never incremental), triggered at once, never\n"
      "retired, copied into a self-contained directory\n"
      "savepoint-<job>-<id>-<random> of state.savepoints.dir (default:\n"
      "<state.checkpoints.dir>/<job>/). Waits (default 60 s) until it\n"
      "completes and prints the directory's URL. With --stop the whole job\n"
      "ends after it: once every sink committed it, the coordinator\n"
      "records the stop on the control topic and exits 0, and so does\n"
      "every worker; the command waits for that too (\"Job stopped with\n"
      "savepoint N: URL\") and fails if the job did not stop in time.\n"
      "Resume with `ksnap coordinator --from-savepoint URL`.\n"
      "With --stop --drain every input first ends where its source task\n"
      "is at the next checkpoint (\"Draining: ...\"); each task then runs\n"
      "its operator's finish (which may emit what it buffered) and passes\n"
      "the end on; once every task ended, the savepoint is taken and the\n"
      "job stops after it as above. A start from that savepoint keeps\n"
      "those ends (the job finishes at once): drain to end a job for\n"
      "good. Records behind the ends are left in the input topics. A\n"
      "restore while draining drains on from the restored positions.\n";
  const char *path;
  int wait = 1, timeout_s = 60, stop = 0;

  if (cli_wants_help(argc, argv)) {
    fputs(help, stdout);
    return KSNAP_EXIT_OK;
  }
  if (!(path = parse(argc, argv, 1, 1, &wait, &timeout_s, &stop))) {
    fputs(help, stderr);
    return KSNAP_EXIT_USAGE;
  }
  return request("savepoint", path,
                 stop == 2 ? KSNAP_REQUEST_SAVEPOINT_DRAIN
                 : stop    ? KSNAP_REQUEST_SAVEPOINT_STOP
                           : KSNAP_REQUEST_SAVEPOINT,
                 wait, timeout_s);
}
